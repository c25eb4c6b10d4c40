"""The Grafana dashboard (config/grafana/llm-operator.json): every panel reads the dashboard's
Prometheus, every variable a query uses is defined, a model's panels are that model's, and the model
metrics it reads exist. promtool parses every query in `make monitoring-test`; the e2e suite runs each
against a real Prometheus and wants data for the served model."""

from __future__ import annotations

import json
import re

from monitoring_files import metric_names_in, model_metric_names, router_metric_names
from monitoring_rules import DASHBOARD, dashboard_queries, dashboard_rules, substitute

import pytest


@pytest.fixture(scope="module")
def dashboard():
    return json.loads(DASHBOARD.read_text())


def all_panels(dashboard):
    return [panel for panel in dashboard["panels"] if panel["type"] != "row"]


def test_every_panel_reads_the_chosen_prometheus(dashboard):
    variables = {variable["name"]: variable for variable in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for panel in all_panels(dashboard):
        assert panel["targets"], panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert all(target["datasource"] == panel["datasource"] for target in panel["targets"]), panel["title"]
    titles = [panel["title"] for panel in all_panels(dashboard)]
    assert len(titles) == len(set(titles))


def test_every_variable_a_query_uses_is_defined(dashboard):
    defined = {variable["name"] for variable in dashboard["templating"]["list"]} | {"__rate_interval"}
    for title, expr in dashboard_queries():
        used = set(re.findall(r"\$\{?(\w+)", expr))
        assert used <= defined, (title, used - defined)
    with pytest.raises(KeyError):
        substitute("up{job=\"$unknown\"}", {})


def test_the_fleet_and_one_models_view(dashboard):
    rows = [panel["title"] for panel in dashboard["panels"] if panel["type"] == "row"]
    assert rows == ["Fleet", "Model $namespace/$model", "Router"]
    queries = dict(dashboard_queries())
    for title in ("Models by phase", "Pulls in flight", "Time from apply to Serving"):
        assert title in queries
    # After the model row, every query is about the chosen model only.
    model_row = next(i for i, panel in enumerate(dashboard["panels"]) if panel["title"].startswith("Model "))
    router_row = next(i for i, panel in enumerate(dashboard["panels"]) if panel["title"] == "Router")
    for panel in dashboard["panels"][model_row + 1:router_row]:
        for target in panel["targets"]:
            assert '$namespace' in target["expr"] and '$model' in target["expr"], panel["title"]
    for title in ("Requests", "Tokens per second", "Latency per token", "Server restarts"):
        assert title in [panel["title"] for panel in all_panels(dashboard)]


def test_queries_read_model_metrics_that_exist():
    defined = set(model_metric_names())
    for title, expr in dashboard_queries():
        read = {name for name in metric_names_in(expr) if name.startswith("llmmodel_")}
        assert read <= defined, (title, read - defined)


def test_the_router_row_reads_what_the_router_exposes(dashboard):
    """Requests by model and code, in flight, latency p50/p99, tokens, queue wait: every series one
    the router's metrics module renders (a rename breaks here)."""
    router_row = next(i for i, panel in enumerate(dashboard["panels"]) if panel["title"] == "Router")
    exprs = [target["expr"] for panel in dashboard["panels"][router_row + 1:] for target in panel["targets"]]
    read = {name for expr in exprs for name in metric_names_in(expr) if name.startswith("llm_router_")}
    assert read <= router_metric_names(), read - router_metric_names()
    assert {"llm_router_requests_total", "llm_router_in_flight_requests", "llm_router_tokens_total",
            "llm_router_queue_wait_seconds_bucket", "llm_router_upstream_first_byte_seconds_bucket",
            "llm_router_upstream_duration_seconds_bucket"} <= read
    assert any("histogram_quantile(0.99," in expr for expr in exprs) and any("histogram_quantile(0.5," in expr for expr in exprs)


def test_the_check_file_holds_every_query_once():
    rules = dashboard_rules()["groups"][0]["rules"]
    assert len(rules) == len(dashboard_queries()) >= 15
    assert not any("$" in rule["expr"] for rule in rules)
