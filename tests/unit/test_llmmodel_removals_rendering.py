"""Which of the model's children a reconcile removes, and what records their removal
(templates/removals.yaml.j2, the list tasks/apply.yml hands to llmmodel_apply's `absent` and
`removed_record`). The role's real tasks and templates, run by ansible-playbook (render_helpers.py).

Each object of `absent` costs llmmodel_apply a read of the API server (the puller's identity is not
cached by ansible-operator's proxy): a no-op reconcile of a served model must name none of them."""

from __future__ import annotations

import pytest

from render_helpers import case, completed_job, model, render

IDENTITY_RECORD = "inference.ai.example.com/puller-identity-removed"
CHILDREN_ANNOTATION = "inference.ai.example.com/scaling-children"
POD_MONITOR_ANNOTATION = "inference.ai.example.com/pod-monitor"
IDENTITY = [("RoleBinding", "m-puller"), ("Role", "m-puller"), ("ServiceAccount", "m-puller")]


def finished(state, record=None, **options):
    """A served model whose pull Job has finished (``state``), its identity's removal recorded on it or not."""
    result = case(model(runtime="vllm"), **options)
    job = completed_job(result["object"])
    if state == "failed":
        job["status"]["conditions"] = [{"type": "Failed", "status": "True"}]
    if record is not None:
        job["metadata"]["annotations"][IDENTITY_RECORD] = record
    return dict(result, job=job, job_state=state)


CASES = {
    "pull just complete": finished("complete"),
    "pull just failed": finished("failed"),
    "served, identity gone": finished("complete", record="true"),
    "record of something else": finished("complete", record="false"),
    "pull running": case(model(runtime="vllm"), weights_ready=False, job_state="running"),
    "new pull": case(model(runtime="vllm"), weights_ready=False),
    "new pull beside the server": case(model(runtime="vllm"), weights_ready=False, pull_beside_server=True,
                                       deployment={"metadata": {"name": "m"}, "spec": {"replicas": 1}, "status": {"replicas": 1}}),
    "served, no job": case(model(runtime="vllm")),
    "scaling and monitor dropped": case(model(runtime="vllm", metrics={"enabled": False}), deployment={
        "metadata": {"name": "m", "annotations": {CHILDREN_ANNOTATION: "HorizontalPodAutoscaler,PodDisruptionBudget",
                                                  POD_MONITOR_ANNOTATION: "true"}},
        "spec": {"replicas": 1}, "status": {"replicas": 1}}),
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return render(CASES, tmp_path_factory.mktemp("render-removals"))


def absent(result):
    return [(item["kind"], item["name"]) for item in result["removals"]["absent"]]


@pytest.mark.parametrize("name", ["pull just complete", "pull just failed", "record of something else"])
def test_a_finished_pull_s_identity_is_removed_and_the_removal_recorded_on_its_job(rendered, name):
    result = rendered[name]
    assert absent(result) == IDENTITY  # the grant first
    assert all(item["namespace"] == "ns" for item in result["removals"]["absent"])
    assert result["removals"]["record"] == {
        "apiVersion": "batch/v1", "kind": "Job", "name": "m-pull", "namespace": "ns", "annotation": IDENTITY_RECORD}


@pytest.mark.parametrize("name", ["served, identity gone", "served, no job", "pull running"])
def test_a_no_op_reconcile_looks_for_no_identity(rendered, name):
    """Fails if the three reads of the puller's identity come back to every reconcile of a served
    model (or a running pull, whose identity is applied, not removed)."""
    result = rendered[name]
    assert absent(result) == []
    assert result["removals"]["record"] == {}
    assert not {"ServiceAccount", "Role", "RoleBinding"} & set(result["objects"])


@pytest.mark.parametrize("name", ["new pull", "new pull beside the server"])
def test_the_next_pull_applies_the_identity_again(rendered, name):
    result = rendered[name]
    order = result["order"]
    assert [kind for kind in order if kind in ("ServiceAccount", "Role", "RoleBinding", "Job")] == [
        "ServiceAccount", "Role", "RoleBinding", "Job"]
    # The new Job carries no record: its own end removes the identity again.
    assert IDENTITY_RECORD not in result["objects"]["Job"]["metadata"]["annotations"]
    assert absent(result) == [] and result["removals"]["record"] == {}


def test_objects_the_deployment_says_were_applied_and_are_no_longer_wanted_are_removed(rendered):
    result = rendered["scaling and monitor dropped"]
    # The scaling kinds in no particular order (a set difference), then the PodMonitor.
    assert sorted(absent(result)[:2]) == [("HorizontalPodAutoscaler", "m"), ("PodDisruptionBudget", "m")]
    assert absent(result)[2:] == [("PodMonitor", "m")]
    assert {(item["apiVersion"], item["namespace"]) for item in result["removals"]["absent"]} == {
        ("autoscaling/v2", "ns"), ("policy/v1", "ns"), ("monitoring.coreos.com/v1", "ns")}
    assert result["removals"]["record"] == {}
