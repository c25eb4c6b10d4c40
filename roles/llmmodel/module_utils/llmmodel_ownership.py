# -*- coding: utf-8 -*-
"""Ownership before action: whether an object is the model's to patch or delete.

A namespace is shared: another team's Service ``chat`` or Role ``x-puller`` may already be there
when an LLMModel of that name arrives. The role's writing modules (llmmodel_apply, llmmodel_objects)
therefore change an existing object only when it is proven the model's, and report it otherwise:

- its ``ownerReferences`` hold the model's UID (ansible-operator's proxy adds that reference to
  every object the role creates), or
- it carries the label ``inference.ai.example.com/model-uid`` with the model's UID (the role puts it
  on every object it applies, so the proof survives an orphaning deletion, which strips owner
  references but leaves labels), or
- for the kinds the model may adopt (the weights volume a model of the same name kept): the
  operator's labels (``app.kubernetes.io/managed-by: llm-operator`` and
  ``inference.ai.example.com/model: <name>``) together with the annotation that records what the
  volume holds.

Everything else is foreign: never patched or deleted, whatever its name.
"""

from __future__ import annotations

UID_LABEL = "inference.ai.example.com/model-uid"
MODEL_LABEL = "inference.ai.example.com/model"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "llm-operator"


def _metadata(obj):
    return (obj or {}).get("metadata") or {}


def proven(live, owner):
    """Whether ``live`` names ``owner`` itself: the owner's reference or UID label."""
    meta = _metadata(live)
    uid = (owner or {}).get("uid")
    if not uid:
        return False
    if any(ref.get("uid") == uid for ref in meta.get("ownerReferences") or []):
        return True
    return (meta.get("labels") or {}).get(UID_LABEL) == uid


def owned(live, owner, adopt_annotation=None):
    """Whether ``live`` is the object of ``owner`` ({uid, name, ...}); see the module docstring."""
    meta = _metadata(live)
    if not (owner or {}).get("uid"):
        return False
    if proven(live, owner):
        return True
    labels = meta.get("labels") or {}
    if adopt_annotation:
        return (labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(MODEL_LABEL) == owner.get("name")
                and adopt_annotation in (meta.get("annotations") or {}))
    return False


def kept_mismatch(live, owner, adopt_annotation, source, records):
    """The KeptWeightsMismatch record of a kept volume (adoptable, not yet the owner's) whose records
    hold revisions and none of ``source``: {kind, name, reason, message}; None when it may be adopted.

    Adopting it would pull ``source`` over what its earlier model's user chose to keep, so it is left
    untouched until the user sets the source back or deletes the volume.
    """
    if not live or proven(live, owner) or not owned(live, owner, adopt_annotation):
        return None
    sources = [record["source"] for record in records]
    if not sources or source in sources:
        return None
    name = _metadata(live).get("name", "?")
    return {
        "kind": "PersistentVolumeClaim",
        "name": name,
        "reason": "KeptWeightsMismatch",
        "message": "PersistentVolumeClaim %s was kept from an earlier LLMModel %s and holds %s, not %s; the "
        "operator leaves it untouched. Set spec.source back to %s to serve it, or delete the PersistentVolumeClaim "
        "to pull %s into a new one" % (name, owner.get("name", "?"), " and ".join(sources), source,
                                       "one of these" if len(sources) > 1 else "it", source),
    }


def holder(live):
    """Who the object belongs to, as far as it says: its owner references, else the field manager
    that created it."""
    meta = _metadata(live)
    refs = meta.get("ownerReferences") or []
    if refs:
        return "owned by " + ", ".join("%s %s" % (ref.get("kind", "?"), ref.get("name", "?")) for ref in refs)
    managers = [entry.get("manager") for entry in meta.get("managedFields") or [] if entry.get("manager")]
    return "created by %s" % managers[0] if managers else "not created by the operator"


def conflict(kind, live, owner):
    """The NameConflict record of a foreign object: {kind, name, message}."""
    name = _metadata(live).get("name", "?")
    return {
        "kind": kind,
        "name": name,
        "message": "%s %s already exists and is not this LLMModel's (%s); the operator leaves it untouched. "
        "Delete or rename that %s, or give the LLMModel another name"
        % (kind, name, holder(live), kind),
    }


def stamped(manifest, owner):
    """``manifest`` with the owner's UID label, the proof that outlives owner references."""
    if not (owner or {}).get("uid"):
        return manifest
    metadata = dict(manifest.get("metadata") or {})
    metadata["labels"] = dict(metadata.get("labels") or {}, **{UID_LABEL: owner["uid"]})
    return dict(manifest, metadata=metadata)


def without_owner_reference(live, owner):
    """The live object's owner references without the owner's, or None when it holds none of his."""
    refs = _metadata(live).get("ownerReferences") or []
    kept = [ref for ref in refs if ref.get("uid") != (owner or {}).get("uid")]
    return kept if len(kept) != len(refs) else None
