"""module_utils/llmmodel_manifests.py: what llmmodel_apply sends for each rendered manifest."""

from __future__ import annotations

import copy
import json

import unit_helpers  # noqa: F401  (puts the role's module_utils on ansible.module_utils' path)
from ansible.module_utils import llmmodel_manifests as manifests  # noqa: E402

SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "m", "namespace": "ns", "labels": {"app.kubernetes.io/instance": "m"}},
    "spec": {"type": "ClusterIP", "selector": {"app": "m"}, "ports": [{"name": "http", "port": 8000, "targetPort": "http"}]},
}


def live_as_applied(manifest):
    """The object as the API server returns it after ``manifest`` was applied and created."""
    live = manifests.with_record(manifest)
    live["metadata"].update(uid="u-1", resourceVersion="7", ownerReferences=[{"kind": "LLMModel", "name": "m"}])
    live["spec"].update(clusterIP="10.0.0.9", sessionAffinity="None")
    live["spec"]["ports"][0].update(protocol="TCP")
    live["status"] = {"loadBalancer": {}}
    return live


def test_a_missing_object_is_created_with_its_record():
    action, body = manifests.plan(SERVICE, None)
    assert action == "create"
    assert json.loads(body["metadata"]["annotations"][manifests.LAST_APPLIED]) == SERVICE
    assert {k: v for k, v in body.items() if k != "metadata"} == {k: v for k, v in SERVICE.items() if k != "metadata"}


def test_an_object_applied_as_rendered_and_untouched_needs_nothing():
    assert manifests.plan(SERVICE, live_as_applied(SERVICE)) == ("unchanged", None)


def test_a_changed_rendering_patches_only_what_changed_and_the_record():
    wanted = copy.deepcopy(SERVICE)
    wanted["spec"]["selector"] = {"app": "n"}
    action, patch = manifests.plan(wanted, live_as_applied(SERVICE))
    assert action == "patch"
    assert patch["spec"] == {"selector": {"app": "n"}}
    assert json.loads(patch["metadata"]["annotations"][manifests.LAST_APPLIED]) == wanted
    assert set(patch) == {"spec", "metadata"} and set(patch["metadata"]) == {"annotations"}


def test_a_list_is_sent_whole_when_an_item_changes():
    wanted = copy.deepcopy(SERVICE)
    wanted["spec"]["ports"][0]["port"] = 9000
    _, patch = manifests.plan(wanted, live_as_applied(SERVICE))
    assert patch["spec"] == {"ports": wanted["spec"]["ports"]}


def test_a_field_the_role_stopped_rendering_is_removed():
    before = copy.deepcopy(SERVICE)
    before["metadata"]["labels"]["extra"] = "x"
    action, patch = manifests.plan(SERVICE, live_as_applied(before))
    assert action == "patch"
    assert patch["metadata"]["labels"] == {"extra": None}


def test_an_object_someone_edited_is_put_back_and_their_other_fields_stay():
    live = live_as_applied(SERVICE)
    live["spec"]["selector"] = {"app": "other"}
    live["metadata"]["labels"]["added-by-someone"] = "yes"
    action, patch = manifests.plan(SERVICE, live)
    assert action == "patch"
    assert patch == {"spec": {"selector": {"app": "m"}}}


def test_an_object_created_without_a_record_gets_the_fields_and_the_record():
    live = live_as_applied(SERVICE)
    del live["metadata"]["annotations"]
    action, patch = manifests.plan(SERVICE, live)
    assert action == "patch"
    assert set(patch) == {"metadata"}
    assert json.loads(patch["metadata"]["annotations"][manifests.LAST_APPLIED]) == SERVICE


def test_a_record_that_is_not_json_is_treated_as_missing():
    live = live_as_applied(SERVICE)
    live["metadata"]["annotations"][manifests.LAST_APPLIED] = "{not json"
    assert manifests.last_applied(live) is None
    assert manifests.plan(SERVICE, live)[0] == "patch"


def test_lists_compare_item_by_item():
    assert manifests.contains([{"a": 1, "b": 2}], [{"a": 1}])
    assert not manifests.contains([{"a": 1}, {"a": 2}], [{"a": 1}])
    assert not manifests.contains({"a": "1"}, {"a": 1})
