"""docs/monitoring.md lists every metric and every alert, and the README points to it."""

from __future__ import annotations

from monitoring_files import MONITORING_DOC, REPO, model_metric_names
from monitoring_rules import alert_groups, alerts


def test_every_model_metric_and_alert_is_documented():
    text = MONITORING_DOC.read_text()
    missing = [name for name in model_metric_names() if f"`{name}`" not in text]
    assert not missing, f"docs/monitoring.md does not list {missing}"
    missing = [rule["alert"] for rule in alerts(alert_groups()) if f"[`{rule['alert']}`](runbooks/{rule['alert']}.md)" not in text]
    assert not missing, f"docs/monitoring.md does not link the runbooks of {missing}"


def test_the_readme_says_how_to_turn_it_on():
    readme = (REPO / "README.md").read_text()
    assert "## Monitoring" in readme and "docs/monitoring.md" in readme
