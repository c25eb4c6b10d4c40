# -*- coding: utf-8 -*-
"""Pure functions behind the llmmodel_status module: validate conditions, merge them by type, and
compute the status an object should have. No Ansible and no Kubernetes imports, so they are easy to
test and to reason about.

Why the comparison tolerates a missing ``observedGeneration`` on a stored condition: ansible-operator
(manageStatus: true) rewrites every condition through its own Go struct, which has no such field,
at the start and at the end of every reconcile (internal/ansible/controller/status/types.go). The
field therefore never survives a reconcile; treating its absence as a difference would make every
reconcile write the status and report a change.
"""

from __future__ import annotations

import copy
import datetime
import re

CONDITION_STATUSES = ("True", "False", "Unknown")
CONDITION_KEYS = frozenset(("type", "status", "reason", "message"))
# metav1.Condition's validation rules (k8s.io/apimachinery/pkg/apis/meta/v1/types.go).
TYPE_PATTERN = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
TYPE_MAX_LENGTH = 316
REASON_PATTERN = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
REASON_MAX_LENGTH = 1024
MESSAGE_MAX_LENGTH = 32768


def now_rfc3339():
    """The current time as Kubernetes writes metav1.Time, to the second, in UTC with a Z.

    ansible-operator parses lastTransitionTime with exactly this layout; any other form (fractions,
    +00:00) would make it reset the time to "now" on each of its writes.
    """
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def validate_conditions(conditions):
    """Return a list of problems with the desired conditions (empty when they are valid)."""
    problems = []
    seen = set()
    for index, condition in enumerate(conditions):
        where = "conditions[%d]" % index
        if not isinstance(condition, dict):
            problems.append("%s must be a mapping with type, status, reason and message" % where)
            continue
        unknown = sorted(set(condition) - CONDITION_KEYS)
        if unknown:
            problems.append("%s has unsupported keys %s (allowed: %s)" % (where, unknown, sorted(CONDITION_KEYS)))
        ctype = condition.get("type")
        if not isinstance(ctype, str) or not TYPE_PATTERN.match(ctype) or len(ctype) > TYPE_MAX_LENGTH:
            problems.append("%s.type %r is not a valid condition type (CamelCase, e.g. Ready)" % (where, ctype))
        elif ctype in seen:
            problems.append("%s.type %r appears more than once" % (where, ctype))
        else:
            seen.add(ctype)
        if condition.get("status") not in CONDITION_STATUSES:
            problems.append("%s.status %r must be one of %s" % (where, condition.get("status"), list(CONDITION_STATUSES)))
        reason = condition.get("reason")
        if not isinstance(reason, str) or not REASON_PATTERN.match(reason) or len(reason) > REASON_MAX_LENGTH:
            problems.append("%s.reason %r must be a CamelCase identifier such as PullSucceeded" % (where, reason))
        message = condition.get("message", "")
        if message is not None and not isinstance(message, str):
            problems.append("%s.message must be a string" % where)
        elif message and len(message) > MESSAGE_MAX_LENGTH:
            problems.append("%s.message is longer than %d characters" % (where, MESSAGE_MAX_LENGTH))
    return problems


def merge_conditions(existing, desired, generation, now):
    """Return ``existing`` with each ``desired`` condition set, matched by type.

    - A desired condition replaces the stored one of its type. Its lastTransitionTime is kept when
      the status value did not change and set to ``now`` when it did (or when the type is new).
    - observedGeneration is set to ``generation`` (omitted when ``generation`` is None).
    - Conditions of other types (ansible-operator's Running, Successful, Failure) are kept as they
      are, in place; new types are appended in the order given.
    """
    merged = [copy.deepcopy(c) for c in existing or []]
    position = {c.get("type"): i for i, c in enumerate(merged) if isinstance(c, dict)}
    for wanted in desired:
        condition = {
            "type": wanted["type"],
            "status": wanted["status"],
            "reason": wanted["reason"],
            "message": wanted.get("message") or "",
        }
        index = position.get(condition["type"])
        previous = merged[index] if index is not None else None
        if previous is not None and previous.get("status") == condition["status"] and previous.get("lastTransitionTime"):
            condition["lastTransitionTime"] = previous["lastTransitionTime"]
        else:
            condition["lastTransitionTime"] = now
        if generation is not None:
            condition["observedGeneration"] = generation
        if index is None:
            position[condition["type"]] = len(merged)
            merged.append(condition)
        else:
            merged[index] = condition
    return merged


def apply_merge_patch(target, patch):
    """RFC 7386 JSON merge patch: maps merge recursively, null deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def _without_missing_generation(stored, wanted):
    """``wanted`` minus observedGeneration where ``stored`` (the same type) has none; see module doc."""
    by_type = {c.get("type"): c for c in stored or [] if isinstance(c, dict)}
    relaxed = []
    for condition in wanted or []:
        previous = by_type.get(condition.get("type"))
        if previous is not None and "observedGeneration" not in previous:
            condition = {k: v for k, v in condition.items() if k != "observedGeneration"}
        relaxed.append(condition)
    return relaxed


def status_differs(current, proposed):
    """Whether writing ``proposed`` would change ``current`` in a way that survives a reconcile."""
    current = current or {}
    if {k: v for k, v in current.items() if k != "conditions"} != {
        k: v for k, v in proposed.items() if k != "conditions"
    }:
        return True
    stored = current.get("conditions") or []
    wanted = proposed.get("conditions") or []
    return stored != _without_missing_generation(stored, wanted)


def plan_status(current, fields, conditions, generation, now, exclusive=False):
    """Compute what to write.

    Returns ``(proposed, patch)``: the status the object should have, and the body of the merge
    patch of ``/status`` that gets there, or None for ``patch`` when nothing would change.
    ``fields`` follows merge-patch rules (None deletes a field); ``conditions`` None leaves the
    conditions alone. ``exclusive``: the given conditions are all there are; a stored one of another
    type (which no writer of the caller's made) is removed.
    """
    current = current or {}
    proposed = apply_merge_patch(current, fields or {})
    patch_status = copy.deepcopy(fields or {})
    if conditions is not None:
        stored = current.get("conditions")
        if exclusive:
            given = {wanted["type"] for wanted in conditions}
            stored = [c for c in stored or [] if isinstance(c, dict) and c.get("type") in given]
        merged = merge_conditions(stored, conditions, generation, now)
        proposed["conditions"] = merged
        patch_status["conditions"] = merged
    if not status_differs(current, proposed):
        return current, None
    return proposed, {"status": patch_status}
