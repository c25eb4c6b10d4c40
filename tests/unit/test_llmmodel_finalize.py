"""What the finalizer (roles/llmmodel/tasks/finalize.yml) says and does, without a cluster: the role's
own task file, run by a real ansible-playbook over cases of pods that stop in time, pods still
stopping, and pods that outlive llmmodel_finalize_timeout_seconds (a lost node). Stand-ins for the
role's API modules record what the finalizer asked for."""

from __future__ import annotations

import datetime

import pytest

from render_helpers import REPO, model, run_cases
from unit_helpers import task_results

FINALIZE_PLAYBOOK = REPO / "tests" / "unit" / "render" / "finalize.yml"
API_MODULES = ("llmmodel_objects", "llmmodel_selector_migration", "llmmodel_status", "requeue_after")
# The stand-in of each API module: it records its arguments; llmmodel_objects, asked to wait for
# pods, answers with those the case says are still there.
STAND_IN = '''
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        case = task_vars["render_case"]
        remaining = case["value"]["remaining"] if "wait_gone" in self._task.args else []
        return {"changed": False, "case": case["key"], "args": self._task.args, "remaining": remaining}
'''


def deleting(seconds_ago: float, purge: bool = False, phase: str | None = None) -> dict:
    obj = model(name="m", namespace="ns")
    stamp = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds_ago)
    obj["metadata"]["deletionTimestamp"] = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    obj["spec"]["purgeWeightsOnDelete"] = purge
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def case(obj: dict, remaining: int) -> dict:
    pvc = {"metadata": {"name": "m-weights", "ownerReferences": [{"uid": obj["metadata"]["uid"]}]}}
    return {"object": obj, "pvc": pvc, "remaining": [f"m-{i}" for i in range(remaining)]}


CASES = {
    "stopped in time": case(deleting(1), 0),
    "purged, stopped in time": case(deleting(1, purge=True), 0),
    "still stopping": case(deleting(5), 1),
    "still stopping, reported": case(deleting(30, phase="Terminating"), 1),
    "outlived the timeout": case(deleting(700, phase="Terminating"), 1),
    "purged, outlived the timeout": case(deleting(700, purge=True, phase="Terminating"), 2),
}


@pytest.fixture(scope="module")
def finalized(tmp_path_factory) -> dict:
    """{case: {module: [its arguments, one per call]}}."""
    tmp_path = tmp_path_factory.mktemp("finalize")
    stand_ins = tmp_path / "action_plugins"
    stand_ins.mkdir()
    for name in API_MODULES:
        (stand_ins / f"{name}.py").write_text(STAND_IN)
    run = tmp_path / "run"
    run.mkdir()
    runner = run_cases(FINALIZE_PLAYBOOK, CASES, run, action_plugins=stand_ins)
    calls = {name: {module: [] for module in API_MODULES} for name in CASES}
    for module in API_MODULES:
        for _, result in task_results(runner.events, module):
            calls[result["case"]][module].append(result["args"])
    return calls


def test_pods_gone_in_time_release_the_model_at_once(finalized):
    calls = finalized["stopped in time"]
    [status] = calls["llmmodel_status"]
    assert status["status"]["message"] == "keeping the weights volume m-weights"
    assert (status["event"]["reason"], status["event"].get("type", "Normal")) == ("Terminating", "Normal")
    assert status["event"]["message"] == "stopping the server and the pull; keeping the weights volume"
    # In a namespace being deleted the Event goes to the Namespace, and says what the namespace takes.
    assert status["event"]["namespace_terminating_message"] == (
        "its namespace is being deleted, and every PersistentVolumeClaim in it with it: the weights volume m-weights "
        "goes too although purgeWeightsOnDelete is false")
    [stop, remove] = calls["llmmodel_objects"]
    # Every child by name (an orphaning deletion leaves the garbage collector nothing to do), the volume last.
    assert [o["kind"] for o in remove["objects"]] == [
        "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "NetworkPolicy", "Deployment", "RoleBinding", "Role", "ServiceAccount",
        "PodMonitor", "InferencePool", "PersistentVolumeClaim"]
    # The PodMonitor and the InferencePool only where the cluster serves their kinds.
    assert remove["when_served"] == [{"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor"},
                                     {"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool"}]
    assert {o["name"] for o in remove["objects"][:5]} == {"m"} and {o["name"] for o in remove["objects"][5:8]} == {"m-puller"}
    assert remove["objects"][-1]["state"] == "patched" and remove["objects"][-1]["patch"]["metadata"]["ownerReferences"] == []
    # Only what is proven the model's is touched: both calls carry the owner, and the volume may be adopted.
    for call in (stop, remove):
        assert call["owner"] == {"name": "m", "uid": "u-1"}
        assert call["adopt"] == {"PersistentVolumeClaim": "inference.ai.example.com/weights-source"}
    assert "app.kubernetes.io/managed-by=llm-operator" in stop["wait_gone"]["label_selector"]
    assert calls["requeue_after"] == []


def test_a_purged_volume_is_deleted_and_the_namespace_event_says_it_goes(finalized):
    calls = finalized["purged, stopped in time"]
    [status] = calls["llmmodel_status"]
    assert status["status"]["message"] == "deleting the weights volume"
    assert status["event"]["namespace_terminating_message"].endswith("the weights volume m-weights goes too")
    assert calls["llmmodel_objects"][1]["objects"][-1]["state"] == "absent"


def test_pods_still_stopping_are_waited_for_by_requeue(finalized):
    first, later = finalized["still stopping"], finalized["still stopping, reported"]
    for calls in (first, later):
        [status] = calls["llmmodel_status"]
        assert status["status"]["message"] == "waiting for 1 pod(s) to stop before releasing the weights volume"
        assert len(calls["llmmodel_objects"]) == 1, "the children were removed while pods still run"
        assert len(calls["requeue_after"]) == 1
    # One Event per deletion, on its first report; none while it waits.
    assert first["llmmodel_status"][0]["event"]["reason"] == "Terminating"
    assert "event" not in later["llmmodel_status"][0]


def test_pods_that_outlive_the_timeout_do_not_hold_the_deletion_and_a_warning_says_so(finalized):
    calls = finalized["outlived the timeout"]
    [status] = calls["llmmodel_status"]
    gave_up = "gave up waiting for 1 pod(s) after 600s; "
    assert status["status"]["message"] == gave_up + "keeping the weights volume m-weights"
    event = status["event"]
    assert (event["type"], event["reason"]) == ("Warning", "DeletionTimedOut")
    assert event["message"] == (gave_up + "their node may be gone or unreachable. The deletion goes on without them "
                                "(keeping the weights volume m-weights); the cluster removes them once their node "
                                "answers again or is deleted.")
    assert event["namespace_terminating_message"].startswith(gave_up + "its namespace is being deleted")
    assert len(calls["llmmodel_objects"]) == 2 and calls["requeue_after"] == []


def test_a_purged_model_past_the_timeout_still_deletes_its_volume(finalized):
    calls = finalized["purged, outlived the timeout"]
    [status] = calls["llmmodel_status"]
    assert status["status"]["message"] == "gave up waiting for 2 pod(s) after 600s; deleting the weights volume"
    assert "(deleting the weights volume)" in status["event"]["message"]
    assert calls["llmmodel_objects"][1]["objects"][-1]["state"] == "absent"


def test_every_report_of_a_deletion_says_not_ready_and_gives_no_url(finalized):
    # From the first run on, whatever the finalizer still waits for: READY False, reason Terminating,
    # and no URL or Service name to send requests to.
    for name, calls in finalized.items():
        [status] = calls["llmmodel_status"]
        assert status["status"]["phase"] == "Terminating", name
        assert status["status"]["inferenceURL"] is None and status["status"]["serviceName"] is None, name
        [ready] = status["conditions"]
        assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "False", "Terminating"), name
        assert ready["message"] == "the model is being deleted: " + status["status"]["message"], name
        assert int(status["observed_generation"]) == 1, name
