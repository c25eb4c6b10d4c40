# -*- coding: utf-8 -*-
"""Revisions of the weights: one volume, one directory per source pulled (docs/design.md, "Revisions").

A revision is what one source left on the volume: ``revisions/<rid>/``, where ``<rid>`` is the first 12
hex digits of the sha256 of the source identity (``__llmmodel_source_id``, which never carries a
credential). A volume of the previous release holds its one revision at the root instead ("root").

The durable record of what the volume holds is the PVC annotation ``weights-revisions``, a JSON list,
the revision served (or last served) first::

    [{"rid": "3f1c0e9a2b4d", "source": "hf://acme/m@v2", "root": false, "revision": "<commit or sha256>",
      "gguf": "m.gguf", "size": 1073741824, "pulledAt": "2026-12-05T12:00:00Z"}, ...]

It lives on the volume, so it survives the pull Job and the model (``purgeWeightsOnDelete: false``).
A volume of the previous release has only the ``weights-source``, ``weights-file`` and ``weights-bytes``
annotations: read as one revision at the root.

Every rid used is derived again from its record's source here, so a record written by hand can
never name a path outside ``revisions/`` (the server mounts it as a subPath).
"""

from __future__ import annotations

import hashlib
import json

from ansible.module_utils.llmmodel_quantity import parse_quantity

ROOT = "root"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
REVISIONS_DIR = "revisions"


def revision_id(source):
    """The short, stable id of a source identity: the name of its directory on the volume."""
    return hashlib.sha256(str(source).encode("utf-8")).hexdigest()[:12]


def _annotations(obj):
    return ((obj or {}).get("metadata") or {}).get("annotations") or {}


def _size(value):
    try:
        return max(int(value or 0), 0)
    except (TypeError, ValueError):
        return 0


def _record(entry):
    """A record as the role uses it, or None for an entry that is not one."""
    if not isinstance(entry, dict) or not isinstance(entry.get("source"), str) or not entry["source"]:
        return None
    source = entry["source"]
    return {
        "rid": revision_id(source),
        "source": source,
        "root": entry.get("root") is True,
        "revision": str(entry.get("revision") or ""),
        "gguf": str(entry.get("gguf") or ""),
        "size": _size(entry.get("size")),
        "pulledAt": str(entry.get("pulledAt") or ""),
    }


def held(pvc, keys):
    """The revisions the volume holds, as its annotations record them (newest served first).

    ``keys``: the annotation names, {revisions, source, file, bytes}.
    """
    annotations = _annotations(pvc)
    raw = annotations.get(keys["revisions"])
    if raw is not None:
        try:
            entries = json.loads(raw)
        except ValueError:
            return []
        records, seen = [], set()
        for record in map(_record, entries if isinstance(entries, list) else []):
            if record and record["rid"] not in seen:
                seen.add(record["rid"])
                records.append(record)
        return records
    # A volume of the previous release: its one revision at the root, if it was complete.
    return [record for record in [_record({
        "source": annotations.get(keys["source"]) or "",
        "root": True,
        "gguf": annotations.get(keys["file"]) or "",
        "size": annotations.get(keys["bytes"]),
    })] if record]


def sub_path(record):
    """Where a revision is in the volume: the server's subPath ('' for the root of an old volume)."""
    return "" if record["root"] else "%s/%s" % (REVISIONS_DIR, record["rid"])


def keep_name(record):
    """How the puller's KEEP_REVISIONS names a revision."""
    return ROOT if record["root"] else record["rid"]


def served_rid(deployment, records, annotation):
    """The revision the live server mounts: its Deployment's annotation; a Deployment of the previous
    release (no annotation) mounts the root. '' without a Deployment."""
    if not deployment:
        return ""
    rid = _annotations(deployment).get(annotation)
    if rid is None:
        return next((record["rid"] for record in records if record["root"]), "")
    return str(rid)


def plan(pvc, source, keys, history=1, deployment=None, job=None, job_state="absent", pulled=None,
         completed_at=""):
    """What the volume holds after this reconcile, and what a pull starting now keeps.

    - ``held``: the records the PVC annotation must carry now. A pull Job (running, failed or
      complete) has removed what it did not keep; a complete one for ``source`` added its revision.
      The revision of ``source``, when held, comes first (it is served next).
    - ``desired``: the record of ``source`` ({} when it is not held: a pull is due).
    - ``served``: the rid the live Deployment mounts ('' without one).
    - ``keep``: the revisions a new pull of ``source`` keeps, in KEEP_REVISIONS' names: the served one
      first, then the most recently served others, ``max(history, 1)`` in all; so the volume holds at
      most ``max(history, 1) + 1`` revisions, the new one included.

    ``keys``: annotation names {revisions, source, file, bytes, revision (on the Job and the
    Deployment: the rid), keep (on the Job: its KEEP_REVISIONS)}.
    """
    rid = revision_id(source)
    records = held(pvc, keys)
    served = served_rid(deployment, records, keys["revision"])
    job_annotations = _annotations(job)
    job_here = bool(job) and job_state != "absent"
    if job_here and keys["keep"] in job_annotations:
        kept = set(filter(None, str(job_annotations[keys["keep"]]).split(",")))
        job_rid = job_annotations.get(keys["revision"])
        records = [record for record in records if keep_name(record) in kept or record["rid"] == job_rid]
    if job_here and job_state == "complete" and job_annotations.get(keys["source"]) == source:
        # A Job of the previous release (no revision annotation) pulled into the root, replacing it.
        root = keys["revision"] not in job_annotations
        # The puller's record is read once, when the Job completes; later reconciles keep it as recorded.
        known = next((record for record in records if record["rid"] == rid), {})
        found = {key: value for key, value in (pulled or {}).items() if value}
        new = _record(dict(known, **found, source=source, root=root, pulledAt=completed_at or known.get("pulledAt", "")))
        records = [new] + [record for record in records if record["rid"] != rid and not (root and record["root"])]
    desired = next((record for record in records if record["rid"] == rid), {})
    if desired:
        records = [desired] + [record for record in records if record is not desired]
    others = [record for record in records if record["rid"] not in (served, rid)]
    kept = ([record for record in records if record["rid"] == served] + others)[:max(int(history), 1)]
    if not desired and not job_here:
        records = kept  # the pull about to start removes the others first
    keep = [keep_name(record) for record in kept]
    # What the live server mounts is kept even when no record names it (an annotation lost or edited):
    # its revision directory, or the root for a server of the previous release.
    mounted = served or (ROOT if deployment and keys["revision"] not in _annotations(deployment) else "")
    if mounted and mounted not in keep and not any(record["rid"] == mounted for record in kept):
        keep.append(mounted)
    return {
        "rid": rid,
        "held": records,
        "desired": desired,
        "served": served,
        "keep": keep,
    }


def volume_spec(live, access_mode, storage_class, storage_size):
    """The spec of the weights volume to apply: the model's for a new volume; for an existing one its
    own access modes, class and size (immutable, or refused when smaller: a kept 100Gi volume of
    another class serves as it is), except a size the model asks to grow it to. The apply is a
    three-way merge (library/llmmodel_apply.py): what equals the live object sends nothing."""
    spec = (live or {}).get("spec") or {}
    if not live:
        wanted = {"accessModes": [access_mode], "resources": {"requests": {"storage": str(storage_size)}}}
        if storage_class:
            wanted["storageClassName"] = storage_class
        return wanted
    requested = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    live_size, wanted_size = parse_quantity(requested), parse_quantity(str(storage_size))
    grow = live_size is not None and wanted_size is not None and wanted_size > live_size
    kept = {"accessModes": list(spec.get("accessModes") or [access_mode]),
            "resources": {"requests": {"storage": str(storage_size) if grow or requested is None else requested}}}
    # The class as it is, where an earlier apply sent one (left out, it would be removed: refused);
    # never sent otherwise, so that a claim made for the cluster's default never names it.
    if spec.get("storageClassName") is not None and "storageClassName" in _applied_spec(live):
        kept["storageClassName"] = spec["storageClassName"]
    return kept


def _applied_spec(live):
    """The spec of the last apply (kubectl's last-applied-configuration annotation), {} if none."""
    try:
        applied = json.loads(_annotations(live).get(LAST_APPLIED) or "{}")
    except ValueError:
        return {}
    return (applied.get("spec") or {}) if isinstance(applied, dict) else {}
