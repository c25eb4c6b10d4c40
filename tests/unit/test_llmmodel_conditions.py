"""The status/condition logic of llmmodel_status, as pure functions."""

from __future__ import annotations

import re

import pytest
import unit_helpers  # noqa: F401 - makes the role's module_utils importable as ansible.module_utils.*

from ansible.module_utils.llmmodel_conditions import (
    apply_merge_patch,
    merge_conditions,
    now_rfc3339,
    plan_status,
    status_differs,
    validate_conditions,
)

T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-02T00:00:00Z"


def cond(ctype, status, reason="Because", message="", **extra):
    return dict(type=ctype, status=status, reason=reason, message=message, **extra)


def operator_condition(ctype, status="True"):
    """A condition as ansible-operator writes it: no observedGeneration, maybe ansibleResult."""
    return {"type": ctype, "status": status, "reason": "Running", "message": "Running reconciliation",
            "lastTransitionTime": T0, "ansibleResult": {"ok": 3, "changed": 0, "skipped": 1, "failures": 0}}


def test_now_has_the_layout_ansible_operator_parses():
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", now_rfc3339())


def test_new_condition_gets_transition_time_and_generation():
    merged = merge_conditions([], [cond("Ready", "False", "Pulling", "pulling")], generation=4, now=T1)
    assert merged == [{"type": "Ready", "status": "False", "reason": "Pulling", "message": "pulling",
                       "lastTransitionTime": T1, "observedGeneration": 4}]


def test_same_status_keeps_transition_time_but_takes_new_reason_message_and_generation():
    existing = [cond("Ready", "False", "Pulling", "old", lastTransitionTime=T0, observedGeneration=1)]
    merged = merge_conditions(existing, [cond("Ready", "False", "Starting", "new")], generation=2, now=T1)
    assert merged == [cond("Ready", "False", "Starting", "new", lastTransitionTime=T0, observedGeneration=2)]


def test_status_change_moves_transition_time():
    existing = [cond("Ready", "False", lastTransitionTime=T0, observedGeneration=1)]
    merged = merge_conditions(existing, [cond("Ready", "True")], generation=1, now=T1)
    assert merged[0]["lastTransitionTime"] == T1
    assert merged[0]["status"] == "True"


def test_stored_condition_without_transition_time_gets_one():
    merged = merge_conditions([cond("Ready", "True")], [cond("Ready", "True")], generation=1, now=T1)
    assert merged[0]["lastTransitionTime"] == T1


def test_other_types_are_kept_in_place_and_new_types_appended():
    running = operator_condition("Running")
    successful = operator_condition("Successful")
    existing = [running, cond("Ready", "False", lastTransitionTime=T0), successful]
    merged = merge_conditions(existing, [cond("Ready", "True"), cond("WeightsReady", "True")], generation=7, now=T1)
    assert [c["type"] for c in merged] == ["Running", "Ready", "Successful", "WeightsReady"]
    assert merged[0] == running and merged[2] == successful
    assert merged[0] is not running, "the input must not be shared or modified"


def test_no_generation_means_no_observed_generation():
    merged = merge_conditions([], [cond("Ready", "True")], generation=None, now=T1)
    assert "observedGeneration" not in merged[0]


def test_merge_does_not_modify_its_input():
    existing = [cond("Ready", "False", lastTransitionTime=T0)]
    snapshot = [dict(c) for c in existing]
    merge_conditions(existing, [cond("Ready", "True")], generation=1, now=T1)
    assert existing == snapshot


@pytest.mark.parametrize(
    "target, patch, expected",
    [
        ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
        ({"a": 1, "b": 2}, {"a": None}, {"b": 2}),
        ({"w": {"source": "x", "ready": False}}, {"w": {"ready": True}}, {"w": {"source": "x", "ready": True}}),
        ({"l": [1, 2]}, {"l": [3]}, {"l": [3]}),
        ({"a": {"b": 1}}, {"a": "flat"}, {"a": "flat"}),
        ({}, {"gone": None}, {}),
    ],
)
def test_apply_merge_patch_follows_rfc7386(target, patch, expected):
    assert apply_merge_patch(target, patch) == expected


def stored_status(generation=3):
    return {
        "phase": "Serving",
        "weights": {"source": "hf://o/m@main", "ready": True},
        "conditions": [
            operator_condition("Running"),
            cond("WeightsReady", "True", "PullSucceeded", lastTransitionTime=T0, observedGeneration=generation),
            cond("Ready", "True", "ServerAvailable", lastTransitionTime=T0, observedGeneration=generation),
        ],
    }


OWN = [cond("WeightsReady", "True", "PullSucceeded"), cond("Ready", "True", "ServerAvailable")]


def test_plan_detects_a_no_op():
    current = stored_status()
    proposed, patch = plan_status(current, {"phase": "Serving", "weights": {"ready": True}}, OWN, 3, T1)
    assert patch is None
    assert proposed == current


def test_plan_is_a_no_op_when_ansible_operator_stripped_observed_generation():
    current = stored_status()
    for c in current["conditions"]:
        c.pop("observedGeneration", None)
    proposed, patch = plan_status(current, {"phase": "Serving"}, OWN, 3, T1)
    assert patch is None
    assert proposed == current


def test_plan_writes_when_the_stored_observed_generation_is_older():
    proposed, patch = plan_status(stored_status(generation=2), {}, OWN, 3, T1)
    assert patch is not None
    assert [c.get("observedGeneration") for c in patch["status"]["conditions"]] == [None, 3, 3]
    assert all(c["lastTransitionTime"] == T0 for c in proposed["conditions"])


def test_plan_patch_carries_fields_and_the_whole_condition_list():
    current = stored_status()
    proposed, patch = plan_status(current, {"phase": "Pulling", "inferenceURL": None}, [cond("Ready", "False", "Pulling")], 3, T1)
    assert patch["status"]["phase"] == "Pulling"
    assert patch["status"]["inferenceURL"] is None
    assert [c["type"] for c in patch["status"]["conditions"]] == ["Running", "WeightsReady", "Ready"]
    assert patch["status"]["conditions"][0] == operator_condition("Running")
    ready = proposed["conditions"][2]
    assert (ready["status"], ready["lastTransitionTime"]) == ("False", T1)
    assert proposed["weights"] == current["weights"]


def test_plan_without_conditions_leaves_them_alone():
    current = stored_status()
    proposed, patch = plan_status(current, {"phase": "Failed"}, None, 3, T1)
    assert patch == {"status": {"phase": "Failed"}}
    assert proposed["conditions"] == current["conditions"]


def test_an_exclusive_plan_removes_conditions_it_was_not_given():
    # A condition the caller never writes (one forged through another identity) does not stand.
    current = {"phase": "Serving", "conditions": [
        cond("Ready", "True", "Available", "serving", lastTransitionTime=T0, observedGeneration=3),
        cond("Forged", "True", "Because", "nobody of ours wrote this", lastTransitionTime=T0)]}
    proposed, patch = plan_status(current, {"phase": "Serving"}, [cond("Ready", "True", "Available", "serving")], 3, T1,
                                  exclusive=True)
    assert [c["type"] for c in patch["status"]["conditions"]] == ["Ready"]
    assert proposed["conditions"] == [cond("Ready", "True", "Available", "serving", lastTransitionTime=T0, observedGeneration=3)]
    same = {"phase": "Serving", "conditions": proposed["conditions"]}
    assert plan_status(same, {"phase": "Serving"}, [cond("Ready", "True", "Available", "serving")], 3, T1, exclusive=True)[1] is None


def test_plan_on_an_empty_status():
    proposed, patch = plan_status(None, {"phase": "Pending"}, [cond("Ready", "False", "Pending")], 1, T1)
    assert proposed == patch["status"] == {
        "phase": "Pending",
        "conditions": [cond("Ready", "False", "Pending", lastTransitionTime=T1, observedGeneration=1)],
    }


def test_status_differs_sees_field_changes_and_real_condition_changes():
    current = stored_status()
    assert not status_differs(current, stored_status())
    assert status_differs(current, dict(stored_status(), phase="Failed"))
    changed_message = stored_status()
    changed_message["conditions"][2]["message"] = "new"
    assert status_differs(current, changed_message)


def test_valid_conditions_have_no_problems():
    assert validate_conditions([cond("Ready", "True", "ServerAvailable", "ok"), cond("WeightsReady", "Unknown", "Pending")]) == []


@pytest.mark.parametrize(
    "conditions, problem",
    [
        ([cond("ready now", "True")], "not a valid condition type"),
        ([cond("Ready", "yes")], "must be one of"),
        ([cond("Ready", "True", reason="not camel")], "must be a CamelCase identifier"),
        ([cond("Ready", "True", reason="")], "must be a CamelCase identifier"),
        ([cond("Ready", "True"), cond("Ready", "False")], "appears more than once"),
        ([cond("Ready", "True", message="x" * 32769)], "longer than 32768"),
        ([dict(cond("Ready", "True"), lastTransitionTime=T0)], "unsupported keys ['lastTransitionTime']"),
        (["Ready"], "must be a mapping"),
    ],
)
def test_invalid_conditions_are_reported(conditions, problem):
    problems = validate_conditions(conditions)
    assert len(problems) == 1 and problem in problems[0], problems
