"""What ships for monitoring, read the way its consumers read it (names of a module of their own,
so the e2e suite can use them too)."""

from __future__ import annotations

import pathlib
import re

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
PROMETHEUS_DIR = REPO / "config" / "prometheus"
KSM_CONFIG = PROMETHEUS_DIR / "kube-state-metrics.yaml"
CRD = REPO / "config" / "crd" / "bases" / "inference.ai.example.com_llmmodels.yaml"
RUNBOOKS = REPO / "docs" / "runbooks"
MONITORING_DOC = REPO / "docs" / "monitoring.md"
RUNBOOK_URL = "https://github.com/llm-operator/llm-operator/blob/main/docs/runbooks/{}.md"


def ksm_resource() -> dict:
    """The LLMModel entry of kube-state-metrics' custom-resource-state configuration."""
    config = yaml.safe_load(KSM_CONFIG.read_text())
    assert config["kind"] == "CustomResourceStateMetrics"
    (resource,) = config["spec"]["resources"]
    return resource


def model_metric_names() -> list[str]:
    """The full names of the model metrics, as kube-state-metrics exposes them."""
    resource = ksm_resource()
    return [f"{resource['metricNamePrefix']}_{metric['name']}" for metric in resource["metrics"]]


def metric_names_in(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (names with a colon included)."""
    names = set(re.findall(r"(?<![\w:$])([a-zA-Z_:][\w:]*)\s*(?:\{|\[|\)|$|\s)", expr))
    functions = {"sum", "count", "max", "min", "rate", "absent", "by", "on", "or", "and", "unless", "offset", "vector",
                 "histogram_quantile", "le", "ignoring", "group_left", "group_right", "without", "avg"}
    return {name for name in names if name not in functions and not name.isdigit()}
