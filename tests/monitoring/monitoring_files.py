"""What ships for monitoring, read the way its consumers read it (names of a module of their own,
so the e2e suite can use them too)."""

from __future__ import annotations

import importlib.util
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
ROUTER_METRICS = REPO / "router" / "src" / "llm_router" / "metrics.py"


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


def router_metric_names() -> set[str]:
    """The series names the router's /metrics gives (router/src/llm_router/metrics.py, the module
    itself, which needs only the standard library): each family, histograms with their suffixes."""
    spec = importlib.util.spec_from_file_location("llm_router_metrics", ROUTER_METRICS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.Metrics().render().decode()
    names = set()
    for family, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE):
        names |= {family + suffix for suffix in ("_bucket", "_sum", "_count")} if kind == "histogram" else {family}
    return names


def metric_names_in(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (names with a colon included)."""
    names = set(re.findall(r"(?<![\w:$])([a-zA-Z_:][\w:]*)\s*(?:\{|\[|\)|$|\s)", expr))
    functions = {"sum", "count", "max", "min", "rate", "absent", "by", "on", "or", "and", "unless", "offset", "vector",
                 "histogram_quantile", "le", "ignoring", "group_left", "group_right", "without", "avg"}
    return {name for name in names if name not in functions and not name.isdigit()}
