"""requeue_after: its validation, its result, and the event ansible-operator reads from a real run."""

from __future__ import annotations

import pytest

from unit_helpers import load_library_module, task_results

requeue_after = load_library_module("requeue_after")


@pytest.mark.parametrize(
    "text, nanoseconds",
    [
        ("10s", 10 * 10**9),
        ("1m30s", 90 * 10**9),
        ("1.5h", 5400 * 10**9),
        ("500ms", 500 * 10**6),
        ("2h45m", (2 * 3600 + 45 * 60) * 10**9),
        ("1h0m0s", 3600 * 10**9),
        (".5s", 5 * 10**8),
        ("300us", 300 * 10**3),
        ("300\u00b5s", 300 * 10**3),
        ("7ns", 7),
    ],
)
def test_go_durations_are_parsed(text, nanoseconds):
    assert requeue_after.parse_go_duration(text) == nanoseconds


@pytest.mark.parametrize("text", ["", "10", "10 s", "1d", "-5s", "+5s", "0s", "0", "s", "1.s5", "10S", "2562048h"])
def test_what_go_would_reject_or_would_not_requeue_is_refused(text):
    with pytest.raises(ValueError):
        requeue_after.parse_go_duration(text)


def test_result_is_period_unchanged(run_module):
    result = run_module(requeue_after, {"time": " 10s "})
    assert result["changed"] is False
    assert result["period"] == "10s"
    assert result["seconds"] == 10.0


def test_period_is_an_alias_and_check_mode_gives_the_same_result(run_module):
    result = run_module(requeue_after, {"period": "1m", "_ansible_check_mode": True})
    assert (result["changed"], result["period"]) == (False, "1m")


def test_invalid_period_fails_with_a_hint(run_module):
    result = run_module(requeue_after, {"time": "10"})
    assert result["failed"] is True
    assert "'10' is not a Go duration" in result["msg"]
    assert "period" not in result


def test_missing_time_fails(run_module):
    result = run_module(requeue_after, {})
    assert result["failed"] is True
    assert "time" in result["msg"]


ROLE_TASKS = """\
- name: Skipped requeue
  requeue_after:
    time: 5s
  when: false
- name: Requeue
  requeue_after:
    time: 10s
"""


def test_a_real_run_emits_the_event_ansible_operator_acts_on(run_probe_role):
    """ansible-operator (internal/ansible/controller/reconcile.go) requeues on an event whose
    event_data.task_action is "requeue_after" (and is not runner_on_failed) and whose
    event_data.res.period parses with Go's time.ParseDuration."""
    completed, events = run_probe_role(ROLE_TASKS)

    assert completed.returncode == 0, completed.stdout + completed.stderr
    acted_on = [
        e for e in events
        if e.get("event_data", {}).get("task_action") == "requeue_after"
        and e["event"] != "runner_on_failed"
        and isinstance(e["event_data"].get("res"), dict)
    ]
    assert [e["event"] for e in acted_on] == ["runner_on_ok"], "the skipped task must not count"
    assert acted_on[0]["event_data"]["res"]["period"] == "10s"
    assert acted_on[0]["event_data"]["res"]["changed"] is False
    assert events[-1]["event"] == "playbook_on_stats"
    assert events[-1]["event_data"]["changed"] == {}


def test_an_invalid_period_fails_the_task_and_does_not_requeue(run_probe_role):
    completed, events = run_probe_role("- name: Bad requeue\n  requeue_after:\n    time: 10\n")

    assert completed.returncode == 2
    assert [(name, res.get("period")) for name, res in task_results(events, "requeue_after")] == [("runner_on_failed", None)]
