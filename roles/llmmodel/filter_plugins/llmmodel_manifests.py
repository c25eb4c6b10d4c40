# -*- coding: utf-8 -*-
"""Filters over the role's rendered manifests."""

from __future__ import annotations

import json

DOCUMENTATION_NOTE = """
llmmodel_unapplied(manifests, live): the manifests that an apply would change. A manifest is left
out only when both hold:

- it is exactly what was applied last (the kubectl.kubernetes.io/last-applied-configuration
  annotation kubernetes.core.k8s's apply writes), so no field was added, changed or removed in the
  role's output; and
- every field it sets still has that value on the live object, so nobody changed the object since.

Anything else (a missing object, a new template, an edited object, a value the API server rewrote
in another spelling) is kept, and kubernetes.core.k8s decides. Leaving nothing to apply means no
module process at all, which is most of the cost of a reconcile that changes nothing.
"""

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _json_equal(left, right):
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


def contains(live, wanted):
    """Whether ``live`` holds every field of ``wanted`` with the same value (lists item by item)."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(key in live and contains(live[key], value) for key, value in wanted.items())
    if isinstance(wanted, list):
        return isinstance(live, list) and len(live) == len(wanted) and all(contains(a, b) for a, b in zip(live, wanted))
    return _json_equal(live, wanted)


def _key(obj):
    meta = obj.get("metadata") or {}
    return obj.get("apiVersion"), obj.get("kind"), meta.get("namespace"), meta.get("name")


def is_applied(manifest, live):
    """Whether ``live`` is the object ``manifest`` was last applied as, unchanged since."""
    if not live:
        return False
    annotation = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not annotation:
        return False
    try:
        last = json.loads(annotation)
    except ValueError:
        return False
    return _json_equal(last, manifest) and contains(live, manifest)


def llmmodel_unapplied(manifests, live):
    """The ``manifests`` that differ from the ``live`` objects (a list; empty entries are ignored)."""
    current = {_key(obj): obj for obj in live or [] if obj}
    return [manifest for manifest in manifests if not is_applied(manifest, current.get(_key(manifest)))]


class FilterModule:
    """llmmodel manifest filters."""

    def filters(self):
        return {"llmmodel_unapplied": llmmodel_unapplied}
