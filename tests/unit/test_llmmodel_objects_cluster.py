"""llmmodel_objects (the finalizer's deletes, patches and short waits) against a REAL API server.

`make unit-cluster-test`; without a reachable cluster these tests FAIL (the kubeconfig fixture),
never skip. Each test works in a namespace of its own, deleted at the end.
"""

from __future__ import annotations

import json
import time

import pytest

from unit_helpers import load_library_module

pytestmark = pytest.mark.cluster

llmmodel_objects = load_library_module("llmmodel_objects")


@pytest.fixture
def create(dynamic, namespace):
    def make(kind, name, **fields):
        body = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": namespace, **fields.pop("metadata", {})}}
        body.update(fields)
        return dynamic.resources.get(api_version="v1", kind=kind).create(body=body, namespace=namespace).to_dict()

    return make


@pytest.fixture
def objects(run_module, kubeconfig, namespace):
    def run(entries, wait_gone=None, check_mode=False, **ownership):
        args = {"namespace": namespace, "objects": entries, "kubeconfig": kubeconfig, "_ansible_check_mode": check_mode, **ownership}
        if wait_gone:
            args["wait_gone"] = wait_gone
        return run_module(llmmodel_objects, args)

    return run


def actions(result):
    return [(o["kind"], o["name"], o["action"]) for o in result["objects"]]


def test_deletes_what_exists_and_a_missing_object_is_done(objects, create, read):
    create("ConfigMap", "a", data={"k": "v"})

    result = objects([{"api_version": "v1", "kind": "ConfigMap", "name": "a"}, {"api_version": "v1", "kind": "ConfigMap", "name": "never"}])

    assert result["changed"] is True
    assert actions(result) == [("ConfigMap", "a", "deleted"), ("ConfigMap", "never", "gone")]
    assert read("ConfigMap", "a") is None
    again = objects([{"api_version": "v1", "kind": "ConfigMap", "name": "a"}])
    assert again["changed"] is False and actions(again) == [("ConfigMap", "a", "gone")]


def test_an_object_being_deleted_is_left_to_its_deletion(objects, create, read, dynamic, namespace):
    create("ConfigMap", "held", metadata={"finalizers": ["example.com/hold"]})
    dynamic.resources.get(api_version="v1", kind="ConfigMap").delete(name="held", namespace=namespace)
    try:
        result = objects([{"api_version": "v1", "kind": "ConfigMap", "name": "held"},
                          {"api_version": "v1", "kind": "ConfigMap", "name": "held", "state": "patched", "patch": {"data": {"x": "1"}}}])
        assert result["changed"] is False
        assert [a for _, _, a in actions(result)] == ["deleting", "deleting"]
        assert "data" not in read("ConfigMap", "held")
    finally:
        dynamic.resources.get(api_version="v1", kind="ConfigMap").patch(
            name="held", namespace=namespace, body={"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")


def test_a_patch_is_sent_once_and_an_emptied_list_counts_as_applied(objects, create, read):
    owner = create("ConfigMap", "owner")["metadata"]
    owner_ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["uid"]}
    create("ConfigMap", "owned", metadata={"ownerReferences": [owner_ref]}, data={"k": "v"})
    patch = {"metadata": {"ownerReferences": []}, "data": {"k": "w"}}

    first = objects([{"api_version": "v1", "kind": "ConfigMap", "name": "owned", "state": "patched", "patch": patch}])
    live = read("ConfigMap", "owned")
    second = objects([{"api_version": "v1", "kind": "ConfigMap", "name": "owned", "state": "patched", "patch": patch}])

    assert actions(first) == [("ConfigMap", "owned", "patched")] and first["changed"] is True
    assert live["metadata"].get("ownerReferences") in (None, []) and live["data"] == {"k": "w"}
    assert actions(second) == [("ConfigMap", "owned", "unchanged")] and second["changed"] is False


def test_patching_a_missing_object_is_done_not_an_error(objects):
    result = objects([{"api_version": "v1", "kind": "ConfigMap", "name": "nope", "state": "patched", "patch": {"data": {"a": "b"}}}])
    assert result["changed"] is False and actions(result) == [("ConfigMap", "nope", "gone")]


def test_wait_gone_returns_what_is_left_and_waits_at_most_the_timeout(objects, create):
    create("ConfigMap", "x1", metadata={"labels": {"group": "g"}})
    create("ConfigMap", "x2", metadata={"labels": {"group": "g"}})
    create("ConfigMap", "other", metadata={"labels": {"group": "h"}})
    wait = {"api_version": "v1", "kind": "ConfigMap", "label_selector": "group=g", "timeout": 1.0}

    started = time.monotonic()
    stays = objects([], wait_gone=wait)
    waited = time.monotonic() - started
    gone = objects([{"api_version": "v1", "kind": "ConfigMap", "name": "x1"}, {"api_version": "v1", "kind": "ConfigMap", "name": "x2"}],
                   wait_gone=wait)

    assert sorted(stays["remaining"]) == ["x1", "x2"] and 1.0 <= waited < 5
    assert gone["remaining"] == []


def test_check_mode_plans_without_writing(objects, create, read):
    create("ConfigMap", "kept", data={"k": "v"})
    result = objects([{"api_version": "v1", "kind": "ConfigMap", "name": "kept"}], check_mode=True)
    assert actions(result) == [("ConfigMap", "kept", "deleted")]
    assert read("ConfigMap", "kept") is not None


def test_a_kind_the_server_does_not_serve_fails_clearly(objects):
    result = objects([{"api_version": "example.com/v9", "kind": "Nothing", "name": "n"}])
    assert result["failed"] is True and "does not serve kind Nothing" in result["msg"]


def test_real_runs_through_the_action_plugin_report_changed_then_not(run_role_twice, namespace, create, read):
    """Through ansible-runner as ansible-operator runs it: the in-process action plugin, not a module process."""
    create("ConfigMap", "gone-soon", data={"k": "v"})
    tasks = "- name: Delete\n  llmmodel_objects:\n    namespace: %s\n    objects: %s\n" % (
        namespace, json.dumps([{"api_version": "v1", "kind": "ConfigMap", "name": "gone-soon"}]))

    changed, _ = run_role_twice(tasks, "llmmodel_objects")

    assert changed == [[True], [False]]
    assert read("ConfigMap", "gone-soon") is None


def test_a_deleted_job_takes_its_pods_with_it(objects, dynamic, namespace):
    """Background propagation reaches the API server: a Job deleted without it would orphan its pods."""
    job = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pull", "namespace": namespace},
        "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": {"app": "pull"}}, "spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "60"]}]}}},
    }
    dynamic.resources.get(api_version="batch/v1", kind="Job").create(body=job, namespace=namespace)
    pods = dynamic.resources.get(api_version="v1", kind="Pod")
    deadline = time.monotonic() + 30
    while not pods.get(namespace=namespace, label_selector="app=pull").items:
        assert time.monotonic() < deadline, "the Job controller made no pod"
        time.sleep(0.2)

    result = objects([{"api_version": "batch/v1", "kind": "Job", "name": "pull"}],
                     wait_gone={"api_version": "v1", "kind": "Pod", "label_selector": "app=pull", "timeout": 20})

    assert actions(result) == [("Job", "pull", "deleted")]
    assert result["remaining"] == []


def test_with_an_owner_only_what_is_proven_the_owners_is_deleted_or_patched(objects, create, read):
    owner = {"name": "m", "uid": "u-of-the-model"}
    create("ConfigMap", "mine", metadata={"labels": {"inference.ai.example.com/model-uid": "u-of-the-model"}})
    create("ConfigMap", "theirs", metadata={"labels": {"team": "web"}})
    create("ConfigMap", "theirs-too", data={"k": "v"})

    result = objects([
        {"api_version": "v1", "kind": "ConfigMap", "name": "mine"},
        {"api_version": "v1", "kind": "ConfigMap", "name": "theirs"},
        {"api_version": "v1", "kind": "ConfigMap", "name": "theirs-too", "state": "patched", "patch": {"data": {"k": "mine"}}},
    ], owner=owner)

    assert actions(result) == [("ConfigMap", "mine", "deleted"), ("ConfigMap", "theirs", "foreign"), ("ConfigMap", "theirs-too", "foreign")]
    assert [f["name"] for f in result["foreign"]] == ["theirs", "theirs-too"]
    assert read("ConfigMap", "mine") is None
    assert read("ConfigMap", "theirs")["metadata"]["labels"] == {"team": "web"}
    assert read("ConfigMap", "theirs-too")["data"] == {"k": "v"}
