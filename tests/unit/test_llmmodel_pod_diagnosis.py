"""What one pod's state says (module_utils/llmmodel_pod_diagnosis.py), as the server's diagnosis
reports it: crash loops, memory, images, scheduling, startup, containers that cannot be created,
volumes, and the events that explain a stuck pod."""

from __future__ import annotations

import pytest
import unit_helpers  # noqa: F401 - makes the role's module_utils importable as ansible.module_utils.*
from diagnosis_objects import (
    HASH_KEY,
    MOUNT_TIMEOUT,
    MULTI_ATTACH,
    NON_NUMERIC_USER,
    NOW,
    RUNS_AS_ROOT,
    crash_looping,
    event,
    image_pull,
    server_pod,
    starting,
    unschedulable,
    waiting_pod,
)

from ansible.module_utils.llmmodel_diagnosis import diagnose_server
from ansible.module_utils.llmmodel_events import event_time, events_of, parse_time
from ansible.module_utils.llmmodel_pod_diagnosis import creating_since, diagnose_pod, startup_budget_seconds


def test_a_pod_that_is_starting_is_no_problem():
    assert diagnose_server([starting()], now=NOW) is None
    assert diagnose_server([], now=NOW) is None


def test_crash_loop_carries_the_last_termination_message():
    found = diagnose_server([crash_looping(message="ValueError: no model found in /model-weights")], now=NOW)
    assert found["reason"] == "CrashLoopBackOff"
    assert "ValueError: no model found in /model-weights" in found["message"]
    assert "exit code 1" in found["message"] and "restarted 5 times" in found["message"]
    assert "qwen-7d9c8b5f4-x2x7k" in found["message"]


def test_crash_loop_without_a_termination_message_names_the_exit():
    found = diagnose_server([crash_looping()], now=NOW)
    assert found["reason"] == "CrashLoopBackOff"
    assert "exit code 1: Error" in found["message"]


def test_crash_loop_between_two_back_offs_is_still_a_crash_loop():
    pod = crash_looping(message="segfault")
    status = pod["status"]["containerStatuses"][0]
    status["state"] = {"running": {"startedAt": "2026-03-01T11:59:55Z"}}
    assert diagnose_server([pod], now=NOW)["reason"] == "CrashLoopBackOff"


def test_oom_killed_wins_over_the_crash_loop_it_causes():
    found = diagnose_server([crash_looping(reason="OOMKilled", exit_code=137)], now=NOW)
    assert found["reason"] == "OOMKilled"
    assert "memory limit 16Gi" in found["message"] and "restarted 5 times" in found["message"]


def test_image_pull_back_off_and_err_image_pull():
    for reason in ("ImagePullBackOff", "ErrImagePull"):
        found = diagnose_server([image_pull(reason)], now=NOW)
        assert found["reason"] == "ImagePullFailed"
        assert reason in found["message"] and "registry.invalid/vllm:nope" in found["message"]


def test_unschedulable_quotes_the_scheduler():
    found = diagnose_server([unschedulable()], now=NOW)
    assert found["reason"] == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in found["message"]


def test_startup_budget_is_the_probe_s():
    assert startup_budget_seconds(server_pod()["spec"]["containers"][0]) == 1800
    assert startup_budget_seconds({"startupProbe": {"initialDelaySeconds": 5, "failureThreshold": 2}}) == 25
    assert startup_budget_seconds({"name": "x"}) is None


def test_startup_budget_ran_out_after_a_probe_kill():
    # The kubelet killed the container after 180 failed startup probes (30 min), then backs off.
    pod = crash_looping(exit_code=137, started="2026-03-01T11:20:00Z", finished="2026-03-01T11:50:05Z")
    found = diagnose_server([pod], now=NOW)
    assert found["reason"] == "StartupTimeout"
    assert "1800s" in found["message"]


def test_startup_budget_ran_out_while_still_running():
    assert diagnose_server([starting(started_at="2026-03-01T11:25:00Z")], now=NOW)["reason"] == "StartupTimeout"
    assert diagnose_server([starting(started_at="2026-03-01T11:45:00Z")], now=NOW) is None


def test_a_ready_pod_is_fine_even_after_restarts():
    pod = crash_looping()
    status = pod["status"]["containerStatuses"][0]
    status.update(ready=True, started=True, state={"running": {"startedAt": "2026-03-01T11:56:00Z"}})
    assert diagnose_server([pod], now=NOW) is None


def test_only_pods_of_the_current_configuration_count():
    old = crash_looping(message="old config")
    old["metadata"]["annotations"][HASH_KEY] = "old"
    assert diagnose_server([old, starting()], "abc", HASH_KEY, now=NOW) is None
    assert diagnose_server([old, starting()], None, None, now=NOW)["reason"] == "CrashLoopBackOff"


def test_a_terminating_pod_is_ignored():
    pod = crash_looping()
    pod["metadata"]["deletionTimestamp"] = "2026-03-01T11:59:00Z"
    assert diagnose_pod(pod) is None


def test_the_most_telling_problem_wins_across_pods():
    pods = [unschedulable(), crash_looping(message="boom")]
    pods[0]["metadata"]["creationTimestamp"] = "2026-03-01T11:58:00Z"
    assert diagnose_server(pods, now=NOW)["reason"] == "CrashLoopBackOff"


# --- containers that cannot be created or started ------------------------------------------------

@pytest.mark.parametrize("kubelet", [RUNS_AS_ROOT, NON_NUMERIC_USER])
def test_an_image_that_runs_as_root_under_run_as_non_root(kubelet):
    found = diagnose_server([waiting_pod("CreateContainerConfigError", kubelet)], now=NOW)
    assert found["reason"] == "ContainerConfigError"
    assert kubelet[:60] in found["message"]
    assert "spec.serve.securityContext.runAsUser" in found["message"] and "runAsNonRoot: false" in found["message"]


def test_other_container_config_errors_quote_the_kubelet():
    found = diagnose_server([waiting_pod("CreateContainerConfigError", 'configmap "qwen-chat-template" not found')], now=NOW)
    assert found["reason"] == "ContainerConfigError"
    assert 'configmap "qwen-chat-template" not found' in found["message"] and "create what it names" in found["message"]
    error = 'failed to generate container "5c1c" spec: failed to apply OCI options: no such file or directory'
    assert error in diagnose_server([waiting_pod("CreateContainerError", error)], now=NOW)["message"]


def test_containers_creating_past_the_grace_period():
    assert diagnose_server([waiting_pod("ContainerCreating")], now="2026-03-01T11:51:30Z") is None
    found = diagnose_server([waiting_pod("ContainerCreating")], now="2026-03-01T11:55:02Z")
    assert found["reason"] == "ContainerCreatingTooLong"
    assert found["message"] == ("pod qwen-7d9c8b5f4-x2x7k has been creating its containers for 300s: "
                                "kubectl describe pod qwen-7d9c8b5f4-x2x7k shows its events")
    assert diagnose_server([waiting_pod("ContainerCreating")], now="2026-03-01T11:55:02Z", grace_seconds=600) is None
    assert diagnose_server([waiting_pod("PodInitializing", init=True)], now=NOW)["reason"] == "ContainerCreatingTooLong"


def test_creating_counts_from_scheduling_and_only_while_every_container_waits():
    pod = waiting_pod("ContainerCreating", created="2026-03-01T11:40:00Z", scheduled="2026-03-01T11:59:00Z")
    assert creating_since(pod) == parse_time("2026-03-01T11:59:00Z")
    assert diagnose_server([pod], now=NOW) is None  # pending for 20 minutes, but scheduled one minute ago
    init_running = waiting_pod("PodInitializing", init=True)
    init_running["status"]["initContainerStatuses"][0]["state"] = {"running": {"startedAt": "2026-03-01T11:51:00Z"}}
    assert creating_since(init_running) is None  # an init container at work is not stuck
    assert creating_since(starting()) is None and creating_since(unschedulable()) is None


# --- volumes and events -----------------------------------------------------------------------

def test_a_volume_attached_elsewhere_is_told_from_the_events():
    events = [event("FailedAttachVolume", MULTI_ATTACH, last="2026-03-01T11:56:00Z", source="attachdetach-controller"),
              event("FailedMount", MOUNT_TIMEOUT, last="2026-03-01T11:58:00Z"),
              event("Scheduled", "Successfully assigned models/qwen-7d9c8b5f4-x2x7k to gpu-1", last="2026-03-01T11:50:02Z",
                    kind_of="Normal", source="default-scheduler")]
    found = diagnose_server([waiting_pod("ContainerCreating")], now=NOW, events=events)
    assert found["reason"] == "VolumeMountFailed"
    assert MULTI_ATTACH in found["message"] and "ReadWriteOnce volume is attached to another node" in found["message"]


def test_a_mount_failure_without_multi_attach_names_the_claim():
    found = diagnose_server([waiting_pod("ContainerCreating")], now=NOW, events=[event("FailedMount", MOUNT_TIMEOUT)])
    assert found["reason"] == "VolumeMountFailed"
    assert MOUNT_TIMEOUT in found["message"] and "kubectl describe pvc qwen-weights" in found["message"]


def test_the_newest_event_wins():
    events = [event("FailedMount", MOUNT_TIMEOUT, last="2026-03-01T11:55:00Z"),
              event("Pulling", 'Pulling image "vllm/vllm-openai:v0.6.3"', last="2026-03-01T11:57:00Z", kind_of="Normal")]
    found = diagnose_server([waiting_pod("ContainerCreating")], now=NOW, events=events)
    assert found["reason"] == "ContainerCreatingTooLong"
    assert found["message"].endswith('for 598s: Pulling: Pulling image "vllm/vllm-openai:v0.6.3"')
    sandbox = event("FailedCreatePodSandBox", "Failed to create pod sandbox: rpc error: code = Unknown desc = no IP addresses available")
    assert "FailedCreatePodSandBox: Failed to create pod sandbox" in diagnose_server([waiting_pod("ContainerCreating")], now=NOW,
                                                                                     events=[sandbox])["message"]


def test_events_of_other_objects_and_of_an_earlier_pod_of_the_same_name_do_not_count():
    events = [event("FailedMount", MOUNT_TIMEOUT, name="another-pod"),
              event("FailedMount", MOUNT_TIMEOUT, uid="an-earlier-uid"),
              event("FailedMount", MOUNT_TIMEOUT, kind="Job")]
    assert diagnose_server([waiting_pod("ContainerCreating")], now=NOW, events=events)["reason"] == "ContainerCreatingTooLong"


def test_event_times_and_order():
    assert parse_time("2026-03-01T11:58:00.123456Z").microsecond == 123456
    assert parse_time("yesterday") is None and parse_time(None) is None
    micro = dict(event("FailedMount", "m"), lastTimestamp=None, eventTime="2026-03-01T11:59:00.500000Z")
    series = dict(event("FailedMount", "m"), series={"count": 9, "lastObservedTime": "2026-03-01T11:59:30.000000Z"})
    assert event_time(micro) == parse_time("2026-03-01T11:59:00.500000Z")
    assert event_time(series) == parse_time("2026-03-01T11:59:30.000000Z")
    older = event("FailedMount", "older", last="2026-03-01T11:51:00Z")
    assert [e["message"] for e in events_of([older, micro, series], "Pod", "qwen-7d9c8b5f4-x2x7k")] == ["m", "m", "older"]
    regarding = {"regarding": {"kind": "Pod", "name": "p"}, "reason": "FailedMount", "deprecatedLastTimestamp": None}
    assert events_of([regarding], "Pod", "p") == [regarding]
