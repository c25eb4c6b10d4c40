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

A resource quantity is compared by value where the API types say a field is one (``QUANTITY_FIELDS``):
the API server returns ``cpu: 1`` as ``"1"`` and ``0.5Gi`` as ``"512Mi"``, which are no change.
Anywhere else a string stays a string: ``"1.0"`` and ``"1"`` in an env value, a label or an annotation
are different values, and the path decides, never the look of the text.

An object whose ``spec.replicas`` a scaler writes (the HPA, the router; ``bounds`` of ``plan``) is
created with the rendered count; afterwards the count is the scaler's alone: the apply neither sets it
nor removes it (whatever the record says), and writes it only when the live count is outside the
scaler's range, brought to the nearest bound, on the condition that the object is still the one read
(``metadata.resourceVersion``: a scaler's write in between wins, and the caller reads again).
"""

from __future__ import annotations

import json

from ansible.module_utils.llmmodel_quantity import same_quantity

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _json_equal(left, right):
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


def quantity_field(path):
    """Whether the field at ``path`` (keys from the object's root; list items count as one step)
    holds a resource quantity, and whether it is one of a ResourceList (the API server rounds those
    up to a milli). Returns None, "list" or "plain".

    - ``.../resources/limits/<name>`` and ``.../resources/requests/<name>``: the ResourceLists of any
      container, init container, pod-level resources or a PVC's ``spec.resources.requests.storage``;
    - ``.../target/value`` and ``.../target/averageValue``: a HorizontalPodAutoscaler's MetricTarget.
    """
    if len(path) >= 3 and path[-3] == "resources" and path[-2] in ("limits", "requests"):
        return "list"
    if len(path) >= 2 and path[-2] == "target" and path[-1] in ("value", "averageValue"):
        return "plain"
    return None


def _same_scalar(live, wanted, path):
    if _json_equal(live, wanted):
        return True
    kind = quantity_field(path)
    return kind is not None and same_quantity(live, wanted, resource_list=kind == "list")


def contains(live, wanted, path=()):
    """Whether ``live`` holds every field of ``wanted`` with the same value (lists item by item).

    ``path`` is where ``live`` and ``wanted`` sit in their object (a tuple of keys, "[]" for a list
    item): it tells which scalars are resource quantities, compared by value (``quantity_field``).
    """
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(
            key in live and contains(live[key], value, path + (key,)) for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(live, list)
            and len(live) == len(wanted)
            and all(contains(a, b, path + ("[]",)) for a, b in zip(live, wanted))
        )
    return _same_scalar(live, wanted, path)


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


def three_way_patch(last, wanted, live, path=()):
    """The merge patch that takes ``live`` to ``wanted``, removing what only ``last`` had set.
    ``path``: where these sit in their object (see ``contains``)."""
    patch = {}
    last = last if isinstance(last, dict) else {}
    for key, value in wanted.items():
        current = live.get(key)
        if isinstance(value, dict) and value and isinstance(current, dict):
            nested = three_way_patch(last.get(key), value, current, path + (key,))
            if nested:
                patch[key] = nested
        elif key not in live or not contains(current, value, path + (key,)):
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


def _without_replicas(obj):
    """``obj`` (a manifest or a record) without ``spec.replicas``; None stays None."""
    if not isinstance(obj, dict) or "replicas" not in (obj.get("spec") or {}):
        return obj
    spec = {key: value for key, value in obj["spec"].items() if key != "replicas"}
    return dict(obj, spec=spec)


def left_to_scaler(manifest, live, bounds):
    """``manifest`` for a live object whose ``spec.replicas`` a scaler writes within ``bounds``
    (minimum, maximum): without the count while the live one is within them, else with the live count
    brought to the nearest bound (a change of the range, or a switch from fixed replicas)."""
    wanted = _without_replicas(manifest)
    current = (live.get("spec") or {}).get("replicas")
    least, most = bounds
    if isinstance(current, int) and not least <= current <= most:
        wanted = dict(wanted, spec=dict(wanted.get("spec") or {}, replicas=min(max(current, least), most)))
    return wanted


def plan(manifest, live, bounds=None):
    """("create", body), ("patch", merge patch) or ("unchanged", None) for one rendered manifest.
    ``bounds``: (minimum, maximum) of a scaler that writes the object's ``spec.replicas``
    (``left_to_scaler``); a patch that writes the count then carries the live resourceVersion."""
    if not live:
        return "create", with_record(manifest)
    last = last_applied(live)
    if bounds is not None:
        manifest, last = left_to_scaler(manifest, live, bounds), _without_replicas(last)
    if last is not None and _json_equal(last, manifest) and contains(live, manifest):
        return "unchanged", None
    # The record annotation is part of what is wanted, so it changes exactly when the manifest does.
    patch = three_way_patch(with_record(last) if last is not None else None, with_record(manifest), live)
    if bounds is not None and "replicas" in (patch.get("spec") or {}):
        # Written over the count read, never over a scaler's later one (a 409 instead).
        patch.setdefault("metadata", {})["resourceVersion"] = live["metadata"]["resourceVersion"]
    return ("patch", patch) if patch else ("unchanged", None)
