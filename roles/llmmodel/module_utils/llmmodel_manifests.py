# -*- coding: utf-8 -*-
"""Client-side apply of rendered manifests: what to send for each, decided without the API server.

The role applies its objects the way ``kubectl apply`` and ``kubernetes.core.k8s`` with
``apply: true`` do: the manifest sent is recorded in the ``kubectl.kubernetes.io/last-applied-configuration``
annotation, and a later apply compares three things: what was applied last, what the role renders
now, and the live object. Differences become one JSON merge patch (RFC 7386):

- a field the role renders with another value than the live object has is set (whoever changed it);
- a field the role applied last time and no longer renders is removed;
- fields the role never set (defaults, other controllers' fields, ownerReferences) are left alone.

Lists are replaced whole, as merge patch does; the API server applies its defaults again inside
them. An object applied as rendered and unchanged since needs no request at all.
"""

from __future__ import annotations

import json

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


def last_applied(live):
    """The manifest recorded on ``live`` by the last apply, or None."""
    annotation = (((live or {}).get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not annotation:
        return None
    try:
        recorded = json.loads(annotation)
    except ValueError:
        return None
    return recorded if isinstance(recorded, dict) else None


def three_way_patch(last, wanted, live):
    """The merge patch that takes ``live`` to ``wanted``, removing what only ``last`` had set."""
    patch = {}
    last = last if isinstance(last, dict) else {}
    for key, value in wanted.items():
        current = live.get(key)
        if isinstance(value, dict) and value and isinstance(current, dict):
            nested = three_way_patch(last.get(key), value, current)
            if nested:
                patch[key] = nested
        elif key not in live or not contains(current, value):
            patch[key] = value
    for key in last:
        if key not in wanted and key in live:
            patch[key] = None
    return patch


def with_record(manifest):
    """``manifest`` with the last-applied annotation that records it."""
    recorded = json.loads(json.dumps(manifest))
    metadata = recorded.setdefault("metadata", {})
    annotations = dict(metadata.get("annotations") or {})
    annotations[LAST_APPLIED] = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    metadata["annotations"] = annotations
    return recorded


def plan(manifest, live):
    """("create", body), ("patch", merge patch) or ("unchanged", None) for one rendered manifest."""
    if not live:
        return "create", with_record(manifest)
    last = last_applied(live)
    if last is not None and _json_equal(last, manifest) and contains(live, manifest):
        return "unchanged", None
    # The record annotation is part of what is wanted, so it changes exactly when the manifest does.
    patch = three_way_patch(with_record(last) if last is not None else None, with_record(manifest), live)
    return ("patch", patch) if patch else ("unchanged", None)
