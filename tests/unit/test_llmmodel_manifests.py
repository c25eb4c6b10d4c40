"""module_utils/llmmodel_manifests.py: what llmmodel_apply sends for each rendered manifest."""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import pytest
import unit_helpers  # noqa: F401  (puts the role's module_utils on ansible.module_utils' path)
from ansible.module_utils import llmmodel_manifests as manifests  # noqa: E402
from ansible.module_utils import llmmodel_quantity as quantity  # noqa: E402
from api_quantities import PLAIN, RESOURCE_LIST

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


# --- resource quantities: equal when the API server keeps the same value -------------------------

CONTAINER_PATH = ("spec", "template", "spec", "containers", "[]", "resources", "limits", "cpu")
PVC_PATH = ("spec", "resources", "requests", "storage")
HPA_PATH = ("spec", "metrics", "[]", "pods", "target", "averageValue")


@pytest.mark.parametrize("rendered, returned", RESOURCE_LIST)
def test_a_rendered_quantity_equals_what_the_api_server_returns(rendered, returned):
    assert manifests.contains(returned, rendered, CONTAINER_PATH)
    assert manifests.contains(returned, rendered, PVC_PATH)
    assert quantity.resource_list_value(rendered) == quantity.resource_list_value(returned)


@pytest.mark.parametrize("rendered, returned", PLAIN)
def test_a_metric_target_equals_what_the_api_server_returns(rendered, returned):
    assert manifests.contains(returned, rendered, HPA_PATH)


@pytest.mark.parametrize("rendered, live", [
    ("1", "1001m"), (1, "2"), ("1Gi", "1G"), ("1k", "1Ki"), ("512Mi", "0.5G"), (1.5, "1"), ("1e3", "1e6"),
    ("1", "one"), ("1", None), (True, "1"), (1, ["1"]),
])
def test_different_quantities_and_non_quantities_differ(rendered, live):
    assert not manifests.contains(live, rendered, CONTAINER_PATH)


def test_milli_rounding_is_only_for_resource_lists():
    # A MetricTarget keeps 0.1m; a ResourceList rounds it up to 1m.
    assert not manifests.contains("1m", "0.0001", HPA_PATH)
    assert manifests.contains("100u", "0.0001", HPA_PATH)
    assert manifests.contains("1m", "0.0001", CONTAINER_PATH)


@pytest.mark.parametrize("path", [
    ("spec", "template", "spec", "containers", "[]", "env", "[]", "value"),
    ("metadata", "annotations", "inference.ai.example.com/config-hash"),
    ("metadata", "labels", "limits"),
    ("spec", "template", "spec", "containers", "[]", "args", "[]"),
    ("spec", "resources", "limits"),
    ("resources", "cpu"),
    (),
])
def test_text_that_looks_like_a_quantity_elsewhere_stays_text(path):
    assert not manifests.contains("1", "1.0", path)
    assert not manifests.contains("1", "1000m", path)
    assert not manifests.contains("1", 1, path)
    assert manifests.contains("1000m", "1000m", path)


def test_quantity_fields_are_told_by_their_path():
    assert manifests.quantity_field(CONTAINER_PATH) == "list"
    assert manifests.quantity_field(("spec", "template", "spec", "initContainers", "[]", "resources", "requests", "memory")) == "list"
    assert manifests.quantity_field(PVC_PATH) == "list"
    assert manifests.quantity_field(HPA_PATH) == "plain"
    assert manifests.quantity_field(("rules", "[]", "resources", "[]")) is None
    assert manifests.quantity_field(("spec", "template", "spec", "containers", "[]", "env", "[]", "value")) is None


@pytest.mark.parametrize("text, value", [
    ("0", Fraction(0)), ("0Ki", Fraction(0)), ("-1", Fraction(-1)), (".5", Fraction(1, 2)), (".", Fraction(0)),
    ("5n", Fraction(5, 10**9)), ("4u", Fraction(4, 10**6)), ("3m", Fraction(3, 1000)), ("8k", Fraction(8000)),
    ("7M", Fraction(7 * 10**6)), ("6G", Fraction(6 * 10**9)), ("5T", Fraction(5 * 10**12)), ("2P", Fraction(2 * 10**15)),
    ("1E", Fraction(10**18)), ("1E-3", Fraction(1, 1000)), ("1e+3", Fraction(1000)), ("12E", Fraction(12 * 10**18)),
    ("1Ki", Fraction(1024)), ("7Mi", Fraction(7 * 2**20)), ("3Ei", Fraction(3 * 2**60)), ("0.5Mi", Fraction(2**19)),
    # finer than a nano rounds up, away from zero; binary SI is capped at 2^63-1
    ("0.9n", Fraction(1, 10**9)), ("3.001n", Fraction(4, 10**9)), ("0.00000012345", Fraction(124, 10**9)),
    ("-0.9n", Fraction(-1, 10**9)), ("0.000000000001Ki", Fraction(2, 10**9)),
    ("9Ei", Fraction(2**63 - 1)), ("9223372036854775807Ki", Fraction(2**63 - 1)),
])
def test_parse_quantity_follows_the_api_server(text, value):
    assert quantity.parse_quantity(text) == value


@pytest.mark.parametrize("text", [
    "", "x", "1x", "1e", "1 ", " 1", "1\n", "1.5.5", "--1", "+", "-", "Ki", "1KI", "1ki", "1mi", "0x10", "1_000",
    "١", "1e99999", "9" * 5000, "inf", "nan", None, True, False, [], {}, float("inf"), float("nan"),
])
def test_what_is_no_quantity_parses_to_none(text):
    assert quantity.parse_quantity(text) is None
    assert not quantity.same_quantity(text, text)


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "m", "namespace": "ns"},
    "spec": {
        "replicas": 1,
        "template": {
            "metadata": {"annotations": {"inference.ai.example.com/config-hash": "1000m"}},
            "spec": {
                "containers": [{
                    "name": "server",
                    "image": "vllm/vllm-openai:v0.6.3",
                    "env": [{"name": "RATIO", "value": "1.0"}],
                    "resources": {"limits": {"cpu": 1, "memory": "0.5Gi", "nvidia.com/gpu": 1},
                                  "requests": {"cpu": "1500m", "memory": "512Mi"}},
                }],
            },
        },
    },
}


def deployment_as_returned(manifest, limits, requests, env_value="1.0"):
    """``manifest`` as the API server returns it: quantities canonical, defaults filled in."""
    live = manifests.with_record(manifest)
    live["metadata"].update(uid="u-1", resourceVersion="9", generation=1)
    live["spec"].update(progressDeadlineSeconds=600, revisionHistoryLimit=10)
    container = live["spec"]["template"]["spec"]["containers"][0]
    container.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log",
                     terminationMessagePolicy="File", resources={"limits": limits, "requests": requests})
    container["env"][0]["value"] = env_value
    live["status"] = {"replicas": 1}
    return live


def test_a_gpu_model_applied_again_sends_nothing():
    live = deployment_as_returned(DEPLOYMENT, {"cpu": "1", "memory": "512Mi", "nvidia.com/gpu": "1"},
                                  {"cpu": "1500m", "memory": "512Mi"})
    assert manifests.plan(DEPLOYMENT, live) == ("unchanged", None)


def test_a_changed_quantity_is_patched():
    live = deployment_as_returned(DEPLOYMENT, {"cpu": "2", "memory": "512Mi", "nvidia.com/gpu": "1"},
                                  {"cpu": "1500m", "memory": "512Mi"})
    action, patch = manifests.plan(DEPLOYMENT, live)
    assert action == "patch"
    assert patch["spec"]["template"]["spec"]["containers"] == DEPLOYMENT["spec"]["template"]["spec"]["containers"]


def test_an_env_value_is_text_even_beside_quantities():
    live = deployment_as_returned(DEPLOYMENT, {"cpu": "1", "memory": "512Mi", "nvidia.com/gpu": "1"},
                                  {"cpu": "1500m", "memory": "512Mi"}, env_value="1")
    action, patch = manifests.plan(DEPLOYMENT, live)
    assert action == "patch" and patch["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "RATIO", "value": "1.0"}]


def test_a_pvc_size_written_another_way_is_no_change():
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "m-weights", "namespace": "ns"},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "0.5Ti"}}}}
    live = manifests.with_record(pvc)
    live["spec"]["resources"]["requests"]["storage"] = "512Gi"
    live["spec"].update(volumeMode="Filesystem", storageClassName="standard")
    assert manifests.plan(pvc, live) == ("unchanged", None)
    assert manifests.three_way_patch(None, pvc, live) == {}


def test_a_scaled_count_is_set_on_create_and_then_left_to_the_scaler():
    """The count a scaler (HPA, router) wrote after the render, in or out of the record, is neither
    written back nor removed; nothing is sent."""
    action, created = manifests.plan(DEPLOYMENT, None, bounds=(0, 4))
    assert action == "create" and created["spec"]["replicas"] == 1
    live = deployment_as_returned(DEPLOYMENT, {"cpu": "1", "memory": "512Mi", "nvidia.com/gpu": "1"},
                                  {"cpu": "1500m", "memory": "512Mi"})
    for count in (0, 1, 4):
        live["spec"]["replicas"] = count
        assert manifests.plan(DEPLOYMENT, live, bounds=(0, 4)) == ("unchanged", None)
    # Without a scaler the rendered count is enforced, as any field.
    assert manifests.plan(DEPLOYMENT, live) == ("patch", {"spec": {"replicas": 1}})


def test_a_scaled_count_out_of_its_range_is_brought_to_the_nearest_bound_over_the_count_read():
    live = deployment_as_returned(DEPLOYMENT, {"cpu": "1", "memory": "512Mi", "nvidia.com/gpu": "1"},
                                  {"cpu": "1500m", "memory": "512Mi"})
    for count, brought in ((7, 5), (0, 2)):
        live["spec"]["replicas"] = count
        action, patch = manifests.plan(DEPLOYMENT, live, bounds=(2, 5))
        assert action == "patch" and patch["spec"] == {"replicas": brought}
        assert patch["metadata"]["resourceVersion"] == "9"  # over the count read, never over a later one


def test_a_scaled_object_changed_otherwise_is_patched_without_its_count_or_a_precondition():
    changed = copy.deepcopy(DEPLOYMENT)
    changed["metadata"]["labels"] = {"tier": "x"}
    live = deployment_as_returned(DEPLOYMENT, {"cpu": "1", "memory": "512Mi", "nvidia.com/gpu": "1"},
                                  {"cpu": "1500m", "memory": "512Mi"})
    live["spec"]["replicas"] = 3
    action, patch = manifests.plan(changed, live, bounds=(0, 4))
    assert action == "patch" and "spec" not in patch and "resourceVersion" not in patch["metadata"]
    assert patch["metadata"]["labels"] == {"tier": "x"}
    # The record says what was applied: no count, so a switch to fixed replicas later sets it.
    assert "replicas" not in json.loads(patch["metadata"]["annotations"][manifests.LAST_APPLIED])["spec"]
