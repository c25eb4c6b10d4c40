"""llmmodel_selector_migration's decisions without a cluster: which ReplicaSets are the model's retired
ones, which pods still need the UID label, when the new Deployment has taken over, and when a new pod
waits for room. The moves themselves run on the real cluster in molecule/default
(tasks/selector_migration.yml: from the previous release's objects, serving throughout)."""

from __future__ import annotations

from unit_helpers import load_library_module

migration = load_library_module("llmmodel_selector_migration")
OWNER = {"name": "m", "uid": "u-1"}
UID_LABEL = "inference.ai.example.com/model-uid"


def obj(name, uid, refs=(), labels=None, **fields):
    return {"metadata": {"name": name, "uid": uid, "ownerReferences": list(refs), "labels": labels or {}}, **fields}


def ref(uid, controller=False, kind="Deployment"):
    return {"uid": uid, "kind": kind, "name": "x", "controller": controller}


def test_retired_sets_are_the_models_and_controlled_by_nothing():
    handed_over = obj("old", "rs-1", [migration.model_reference(OWNER)])
    still_controlled = obj("current", "rs-2", [ref("d-1", controller=True), migration.model_reference(OWNER)])
    foreign = obj("helm", "rs-3", [], labels={"app.kubernetes.io/instance": "m"})
    other_models = obj("other", "rs-4", [{"uid": "u-2", "kind": "LLMModel"}])
    assert [rs["metadata"]["name"] for rs in migration.retired_sets([handed_over, still_controlled, foreign, other_models], OWNER)] == ["old"]


def test_the_model_reference_proves_ownership_and_never_controls():
    reference = migration.model_reference(OWNER)
    assert reference["uid"] == "u-1" and reference["kind"] == "LLMModel"
    assert reference["controller"] is False and reference["blockOwnerDeletion"] is False


def test_only_pods_of_the_given_sets_without_the_label_are_labelled():
    pods = [
        obj("old-a", "p-1", [ref("rs-1", controller=True, kind="ReplicaSet")]),
        obj("old-b", "p-2", [ref("rs-1", controller=True, kind="ReplicaSet")], labels={UID_LABEL: "u-1"}),
        obj("helm", "p-3", [ref("rs-9", controller=True, kind="ReplicaSet")]),
        {**obj("going", "p-4", [ref("rs-1", controller=True, kind="ReplicaSet")]),
         "metadata": {**obj("going", "p-4", [ref("rs-1", controller=True, kind="ReplicaSet")])["metadata"], "deletionTimestamp": "now"}},
    ]
    assert [pod["metadata"]["name"] for pod in migration.unlabelled_pods(pods, {"rs-1"}, OWNER)] == ["old-a"]


def test_a_deployment_of_another_selector_is_the_previous_releases():
    selector = {"app.kubernetes.io/component": "server", UID_LABEL: "u-1"}
    old = {"spec": {"selector": {"matchLabels": {"app.kubernetes.io/instance": "m", "app.kubernetes.io/component": "server"}}}}
    assert migration.selects_with({"spec": {"selector": {"matchLabels": dict(selector)}}}, selector)
    assert not migration.selects_with(old, selector)
    assert not migration.selects_with({"spec": {"selector": {"matchLabels": dict(selector), "matchExpressions": [{}]}}}, selector)


def test_the_new_deployment_takes_over_once_every_replica_is_available():
    def deployment(available, updated=2, observed=3):
        return {"metadata": {"generation": 3}, "spec": {"replicas": 2},
                "status": {"observedGeneration": observed, "updatedReplicas": updated, "availableReplicas": available}}

    assert migration.complete(deployment(2))
    assert not migration.complete(deployment(1))
    assert not migration.complete(deployment(2, updated=1))
    assert not migration.complete(deployment(2, observed=2))


def test_a_new_pod_waiting_for_room_is_seen_and_the_old_ones_are_not():
    no_gpu = "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector."
    no_node = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."

    def pod(owner_uid, reason, message=no_gpu):
        return {"metadata": {"ownerReferences": [ref(owner_uid, controller=True, kind="ReplicaSet")]},
                "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": reason, "message": message}]}}

    assert migration.unschedulable([pod("rs-new", "Unschedulable")], {"rs-new"})
    # Only the new Deployment's pods count: an old one, or another team's copy, waiting for room does not.
    assert not migration.unschedulable([pod("rs-old", "Unschedulable"), pod("rs-copy", "Unschedulable")], {"rs-new"})
    assert not migration.unschedulable([pod("rs-new", "SchedulingGated")], {"rs-new"})
    # No old pod frees what a node selector or a taint refuses: the old ones keep serving.
    assert not migration.unschedulable([pod("rs-new", "Unschedulable", no_node)], {"rs-new"})


def test_the_pods_taken_out_of_the_service_are_the_retired_sets_labelled_ones():
    # Once the new Deployment serves, the retired pods that carry the UID label (the Service selects
    # them) lose it first; their ReplicaSet goes on a later run, when none is selected any more.
    pods = [
        obj("old-a", "p-1", [ref("rs-1", controller=True, kind="ReplicaSet")], labels={UID_LABEL: "u-1"}),
        obj("old-b", "p-2", [ref("rs-1", controller=True, kind="ReplicaSet")]),
        obj("new", "p-3", [ref("rs-2", controller=True, kind="ReplicaSet")], labels={UID_LABEL: "u-1"}),
        obj("other-model", "p-4", [ref("rs-1", controller=True, kind="ReplicaSet")], labels={UID_LABEL: "u-2"}),
    ]
    assert [pod["metadata"]["name"] for pod in migration.selected_pods(pods, {"rs-1"}, OWNER)] == ["old-a"]
