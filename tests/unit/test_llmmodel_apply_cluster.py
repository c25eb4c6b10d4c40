"""llmmodel_apply against a REAL API server (the cluster in KUBECONFIG); `make unit-cluster-test`.

Without a reachable cluster these tests FAIL (the kubeconfig fixture), never skip. Each test works in
a namespace of its own, deleted at the end.
"""

from __future__ import annotations

import copy
import json

import pytest

from unit_helpers import load_library_module

pytestmark = pytest.mark.cluster

llmmodel_apply = load_library_module("llmmodel_apply")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@pytest.fixture
def manifests(namespace):
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": namespace, "labels": {"app": "m", "tier": "x"}},
        "data": {"port": "8000", "mode": "chat"},
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "m", "namespace": namespace, "labels": {"app": "m"}},
        "spec": {"type": "ClusterIP", "selector": {"app": "m"}, "ports": [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]},
    }
    return config_map, service


@pytest.fixture
def apply(run_module, kubeconfig):
    def run(definitions, check_mode=False, absent=None):
        args = {"definitions": definitions, "kubeconfig": kubeconfig, "_ansible_check_mode": check_mode}
        if absent is not None:
            args["absent"] = absent
        return run_module(llmmodel_apply, args)

    return run


def actions(result):
    return [(o["kind"], o["action"]) for o in result["objects"]]


def test_missing_objects_are_created_with_their_record(apply, read, manifests):
    result = apply(list(manifests))
    assert result["changed"] is True
    assert actions(result) == [("ConfigMap", "created"), ("Service", "created")]
    live = read("ConfigMap", "settings")
    assert live["data"] == {"port": "8000", "mode": "chat"}
    assert json.loads(live["metadata"]["annotations"][LAST_APPLIED]) == manifests[0]
    assert any(f["manager"] == "llm-operator" for f in live["metadata"]["managedFields"])


def test_a_second_apply_sends_nothing(apply, read, manifests):
    apply(list(manifests))
    before = [read("ConfigMap", "settings")["metadata"]["resourceVersion"], read("Service", "m")["metadata"]["resourceVersion"]]
    result = apply(list(manifests))
    assert result["changed"] is False
    assert actions(result) == [("ConfigMap", "unchanged"), ("Service", "unchanged")]
    assert [read("ConfigMap", "settings")["metadata"]["resourceVersion"], read("Service", "m")["metadata"]["resourceVersion"]] == before


def test_absent_objects_are_deleted_and_missing_ones_are_no_change(apply, read, namespace, manifests):
    config_map, service = manifests
    apply([config_map, service])
    gone = {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "namespace": namespace}
    never = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "name": "m", "namespace": namespace}
    result = apply([service], absent=[gone, never])
    assert result["changed"] is True
    assert result["removed"] == [{"kind": "ConfigMap", "name": "settings"}]
    assert read("ConfigMap", "settings") is None
    again = apply([service], absent=[gone, never])
    assert again["changed"] is False and again["removed"] == []


def test_a_changed_manifest_is_patched_and_a_dropped_field_removed(apply, read, manifests):
    config_map, service = manifests
    apply([config_map, service])
    changed = copy.deepcopy(config_map)
    changed["data"] = {"port": "9000"}
    del changed["metadata"]["labels"]["tier"]
    result = apply([changed, service])
    assert actions(result) == [("ConfigMap", "patched"), ("Service", "unchanged")]
    live = read("ConfigMap", "settings")
    assert live["data"] == {"port": "9000"}
    assert live["metadata"]["labels"] == {"app": "m"}
    assert json.loads(live["metadata"]["annotations"][LAST_APPLIED]) == changed


def test_an_edit_by_someone_else_is_put_back_and_their_additions_kept(apply, read, dynamic, namespace, manifests):
    config_map, _ = manifests
    apply([config_map])
    config_maps = dynamic.resources.get(api_version="v1", kind="ConfigMap")
    config_maps.patch(name="settings", namespace=namespace, content_type="application/merge-patch+json",
                      body={"metadata": {"labels": {"team": "ops"}}, "data": {"mode": "edited", "extra": "theirs"}})
    result = apply([config_map])
    assert actions(result) == [("ConfigMap", "patched")]
    live = read("ConfigMap", "settings")
    assert live["data"] == {"port": "8000", "mode": "chat", "extra": "theirs"}
    assert live["metadata"]["labels"] == {"app": "m", "tier": "x", "team": "ops"}


def test_check_mode_plans_without_writing(apply, read, manifests):
    config_map, service = manifests
    result = apply([config_map], check_mode=True)
    assert result["changed"] is True and actions(result) == [("ConfigMap", "created")]
    assert read("ConfigMap", "settings") is None


def test_a_rejected_object_fails_with_the_api_servers_reason(apply, manifests):
    _, service = manifests
    bad = copy.deepcopy(service)
    bad["spec"]["ports"][0]["port"] = 70000
    result = apply([bad])
    assert result["failed"] is True
    assert result["msg"].startswith("Service m: API request failed:")
    assert "70000" in result["msg"] or "port" in result["msg"]


def test_a_definition_without_a_name_fails_before_any_request(apply, manifests):
    config_map, _ = manifests
    nameless = copy.deepcopy(config_map)
    del nameless["metadata"]["name"]
    result = apply([nameless])
    assert result["failed"] is True and "metadata.name" in result["msg"]


def test_real_runs_through_the_action_plugin_report_changed_then_not(run_role_twice, manifests, read):
    """Through ansible-runner as ansible-operator runs it: the in-process action plugin, not a module process."""
    config_map, _ = manifests
    tasks = "- name: Apply\n  llmmodel_apply:\n    definitions:\n      - %s\n" % json.dumps(config_map)

    changed, second_events = run_role_twice(tasks, "llmmodel_apply")

    assert changed == [[True], [False]]
    assert second_events[-1]["event_data"]["changed"] == {}
    assert read("ConfigMap", "settings")["data"] == config_map["data"]
