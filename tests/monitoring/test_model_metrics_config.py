"""kube-state-metrics' configuration of the model metrics (config/prometheus/kube-state-metrics.yaml):
bounded labels that never carry a spec string (no URL, no token, no prompt), and paths that exist in
the CRD's status schema. kube-state-metrics itself serves them in `make monitoring-cluster-test` and
the e2e suite."""

from __future__ import annotations

import yaml

from monitoring_files import CRD, ksm_resource, model_metric_names

# Every label value comes from one of these: the object's identity, its phase, and the type and
# reason of its conditions. Each is a name or a CamelCase identifier the operator sets.
ALLOWED_LABEL_PATHS = {
    ("metadata", "namespace"),
    ("metadata", "name"),
    ("status", "phase"),
    ("status", "conditions", "[type=Ready]", "reason"),
    ("type",),  # relative to status.conditions[*]
    ("reason",),
}


def label_paths(resource):
    yield from (tuple(path) for path in resource.get("labelsFromPath", {}).values())
    for metric in resource["metrics"]:
        kind = metric["each"]["type"].lower()
        yield from (tuple(path) for path in metric["each"][kind].get("labelsFromPath", {}).values())
        yield from (tuple(path) for path in metric.get("labelsFromPath", {}).values())


def value_paths(resource):
    """(metric, path of its value) of every Gauge (an Info is always 1: its labels are checked above)."""
    for metric in resource["metrics"]:
        if metric["each"]["type"] == "Gauge":
            gauge = metric["each"]["gauge"]
            yield metric["name"], list(gauge["path"]) + ["[*]"] * ("valueFrom" in gauge) + list(gauge.get("valueFrom", []))


def schema_has(schema, path):
    """Whether the CRD's schema has this path (a [key=value] step selects a list item)."""
    node = schema
    for step in path:
        if step.startswith("["):
            node = node.get("items", {})
            continue
        if node.get("type") == "array":
            node = node.get("items", {})
        properties = node.get("properties", {})
        if step not in properties:
            return False
        node = properties[step]
    return True


def test_labels_are_the_model_its_phase_and_its_reasons_only():
    resource = ksm_resource()
    assert resource["labelsFromPath"] == {"namespace": ["metadata", "namespace"], "model": ["metadata", "name"]}
    assert set(label_paths(resource)) <= ALLOWED_LABEL_PATHS
    assert not any("*" in key for metric in resource["metrics"] for key in
                   metric["each"][metric["each"]["type"].lower()].get("labelsFromPath", {}))
    # Nothing is read from the spec (the source URL, the Secret's name, the server's args).
    assert "spec" not in yaml.safe_dump(resource["labelsFromPath"])
    assert "commonLabels" not in resource


def test_every_value_is_read_from_a_field_of_the_crd():
    crd = yaml.safe_load(CRD.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == ksm_resource()["groupVersionKind"]["version"]]
    schema = version["schema"]["openAPIV3Schema"]
    schema["properties"].setdefault("metadata", {}).setdefault("properties", {})["creationTimestamp"] = {"type": "string"}
    for name, path in value_paths(ksm_resource()):
        if path[0] == "metadata":
            assert path == ["metadata", "creationTimestamp"], name
            continue
        assert schema_has(schema, path), f"{name}: {path} is not in the CRD's schema"


def test_metric_names_are_unique_and_prefixed():
    names = model_metric_names()
    assert len(names) == len(set(names))
    assert all(name.startswith("llmmodel_") for name in names)
    assert {"llmmodel_status_phase", "llmmodel_status_condition", "llmmodel_first_serving_timestamp_seconds",
            "llmmodel_pull_rate_bytes_per_second", "llmmodel_weights_size_bytes"} <= set(names)
