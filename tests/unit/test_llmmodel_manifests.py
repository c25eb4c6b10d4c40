"""llmmodel_unapplied: which rendered manifests an apply would change, so unchanged ones cost nothing."""

from __future__ import annotations

import copy
import importlib.util
import json

from unit_helpers import ROLE

_spec = importlib.util.spec_from_file_location("llmmodel_manifests", ROLE / "filter_plugins" / "llmmodel_manifests.py")
manifests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(manifests)

SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "m", "namespace": "ns", "labels": {"app.kubernetes.io/instance": "m"}},
    "spec": {"type": "ClusterIP", "selector": {"app": "m"}, "ports": [{"name": "http", "port": 8000, "targetPort": "http"}]},
}


def live_as_applied(manifest, **extra_spec):
    """The object as the API server returns it after kubernetes.core.k8s applied ``manifest``."""
    live = copy.deepcopy(manifest)
    live["metadata"]["annotations"] = dict(
        live["metadata"].get("annotations", {}),
        **{manifests.LAST_APPLIED: json.dumps(manifest, separators=(",", ":"), sort_keys=True)},
    )
    live["metadata"].update(uid="u-1", resourceVersion="7", ownerReferences=[{"kind": "LLMModel", "name": "m"}])
    live["spec"].update(clusterIP="10.0.0.9", sessionAffinity="None", **extra_spec)
    live["spec"]["ports"][0].update(protocol="TCP")
    live["status"] = {"loadBalancer": {}}
    return live


def test_an_object_applied_as_rendered_and_untouched_is_left_out():
    assert manifests.llmmodel_unapplied([SERVICE], [live_as_applied(SERVICE), {}]) == []


def test_a_missing_object_is_applied():
    assert manifests.llmmodel_unapplied([SERVICE], [{}, {}]) == [SERVICE]


def test_a_changed_rendering_is_applied():
    wanted = copy.deepcopy(SERVICE)
    wanted["spec"]["ports"][0]["port"] = 9000
    assert manifests.llmmodel_unapplied([wanted], [live_as_applied(SERVICE)]) == [wanted]


def test_a_field_the_role_stopped_rendering_is_applied_so_it_is_removed():
    before = copy.deepcopy(SERVICE)
    before["metadata"]["labels"]["extra"] = "x"
    assert manifests.llmmodel_unapplied([SERVICE], [live_as_applied(before)]) == [SERVICE]


def test_an_object_someone_edited_is_applied_back():
    live = live_as_applied(SERVICE)
    live["spec"]["selector"] = {"app": "other"}
    assert manifests.llmmodel_unapplied([SERVICE], [live]) == [SERVICE]


def test_an_object_created_without_the_annotation_is_applied():
    live = live_as_applied(SERVICE)
    del live["metadata"]["annotations"][manifests.LAST_APPLIED]
    assert manifests.llmmodel_unapplied([SERVICE], [live]) == [SERVICE]


def test_objects_are_matched_by_kind_and_name():
    other = copy.deepcopy(SERVICE)
    other["metadata"]["name"] = "n"
    assert manifests.llmmodel_unapplied([SERVICE, other], [live_as_applied(other)]) == [SERVICE]


def test_lists_compare_item_by_item():
    assert manifests.contains([{"a": 1, "b": 2}], [{"a": 1}])
    assert not manifests.contains([{"a": 1}, {"a": 2}], [{"a": 1}])
    assert not manifests.contains({"a": "1"}, {"a": 1})
