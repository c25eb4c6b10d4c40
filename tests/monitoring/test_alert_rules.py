"""The alerts as a receiver and an on-call engineer meet them: each has a severity, a summary that
names the model (or the operator), a runbook that exists and says what it means and what to do, and
unit tests of promtool that make it fire and keep it silent (alerts.test.yaml, run by `make
monitoring-test`). Reads config/prometheus/prometheusrule.yaml through hack/monitoring_rules.py, the
code that hands it to promtool and to the e2e suite's Prometheus."""

from __future__ import annotations

import yaml

from monitoring_files import REPO, RUNBOOK_URL, RUNBOOKS, metric_names_in, model_metric_names, router_metric_names
from monitoring_rules import alert_groups, alerts, with_pending_time

TESTS = REPO / "tests" / "monitoring" / "alerts.test.yaml"


def test_every_alert_has_a_severity_a_summary_naming_its_subject_and_a_runbook():
    rules = alerts(alert_groups())
    assert len(rules) >= 8
    for rule in rules:
        name = rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning"), name
        summary = rule["annotations"]["summary"]
        if name.startswith("LLMModel"):
            assert "{{ $labels.namespace }}/{{ $labels.model }}" in summary, name
        elif name.startswith("LLMRouter"):  # the router's `model` label is <namespace>/<name> already
            assert "{{ $labels.model }}" in summary, name
        else:
            assert "llm-operator" in summary, name
        assert rule["annotations"]["runbook_url"] == RUNBOOK_URL.format(name)


def test_every_runbook_says_what_it_means_and_what_to_do():
    names = {rule["alert"] for rule in alerts(alert_groups())}
    assert {path.stem for path in RUNBOOKS.glob("*.md")} == names, "one runbook per alert, no other"
    for name in names:
        text = (RUNBOOKS / f"{name}.md").read_text()
        assert text.startswith(f"# {name}\n"), name
        for section in ("## What it means", "## What to do"):
            assert section in text, f"{name}.md lacks {section}"


def test_every_alert_has_a_firing_and_a_silent_unit_test():
    cases = [case for test in yaml.safe_load(TESTS.read_text())["tests"] for case in test["alert_rule_test"]]
    for name in (rule["alert"] for rule in alerts(alert_groups())):
        own = [case for case in cases if case["alertname"] == name]
        assert any(case["exp_alerts"] for case in own), f"{name}: no case where it fires"
        assert any(not case["exp_alerts"] for case in own), f"{name}: no case where it stays silent"


def test_model_alerts_read_only_metrics_that_exist():
    """A model metric an alert reads is one kube-state-metrics' configuration defines (a rename of
    either breaks here, not silently in production)."""
    defined = set(model_metric_names())
    for rule in alerts(alert_groups()):
        read = {name for name in metric_names_in(rule["expr"]) if name.startswith("llmmodel_")}
        assert read <= defined, (rule["alert"], read - defined)


def test_router_alerts_read_only_metrics_the_router_exposes():
    """Every llm_router_ series an alert reads is one the router's metrics module renders."""
    defined = router_metric_names()
    read = {name for rule in alerts(alert_groups()) for name in metric_names_in(rule["expr"]) if name.startswith("llm_router_")}
    assert read, "no alert reads the router's metrics"
    assert read <= defined, read - defined


def test_a_test_copy_changes_only_the_pending_time():
    groups = alert_groups()
    quick = with_pending_time(groups, 5)
    assert [rule["for"] for rule in alerts(quick)] == ["5s"] * len(alerts(groups))
    strip = lambda rules: [{k: v for k, v in rule.items() if k != "for"} for rule in rules]  # noqa: E731
    assert strip(alerts(quick)) == strip(alerts(groups))
    assert alerts(groups)[0]["for"] != "5s"
