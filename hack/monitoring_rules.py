#!/usr/bin/env python3
"""Turn what ships for monitoring into files promtool and Prometheus read (docs/monitoring.md).

  monitoring_rules.py alerts OUT      the PrometheusRule of config/prometheus/ as a Prometheus rule
                                      file (its spec: what the Prometheus Operator hands Prometheus)
  monitoring_rules.py dashboard OUT   every query of the Grafana dashboard as a recording rule, its
                                      variables replaced (`promtool check rules` then parses each)

Both are pure functions below (tests/monitoring and the e2e suite call them too).
"""

from __future__ import annotations

import json
import pathlib
import re
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROMETHEUS_RULE = ROOT / "config" / "prometheus" / "prometheusrule.yaml"
DASHBOARD = ROOT / "config" / "grafana" / "llm-operator.json"
# What Grafana puts for the dashboard's variables and its rate window, in a check or a test.
DEFAULT_VARIABLES = {"namespace": "default", "model": "example", "__rate_interval": "5m"}


def alert_groups(rule_path: pathlib.Path = PROMETHEUS_RULE) -> dict:
    """The rule groups of the PrometheusRule manifest, as a Prometheus rule file holds them."""
    manifest = yaml.safe_load(rule_path.read_text())
    if manifest.get("kind") != "PrometheusRule":
        raise ValueError(f"{rule_path}: not a PrometheusRule")
    return {"groups": manifest["spec"]["groups"]}


def alerts(groups: dict) -> list[dict]:
    """Every alerting rule of a rule file."""
    return [rule for group in groups["groups"] for rule in group["rules"] if "alert" in rule]


def with_pending_time(groups: dict, seconds: int) -> dict:
    """A copy of the rules whose every `for:` is `seconds` (a test waits that long, not 15 minutes)."""
    copy = json.loads(json.dumps(groups))
    for rule in alerts(copy):
        rule["for"] = f"{seconds}s"
    return copy


def dashboard_queries(dashboard_path: pathlib.Path = DASHBOARD) -> list[tuple[str, str]]:
    """(panel title, PromQL) of every target of every panel, rows included, in order."""
    dashboard = json.loads(dashboard_path.read_text())

    def panels(items):
        for panel in items:
            yield panel
            yield from panels(panel.get("panels", []))

    return [(panel.get("title", ""), target["expr"]) for panel in panels(dashboard["panels"]) for target in panel.get("targets", [])]


def substitute(expr: str, variables: dict[str, str]) -> str:
    """The query with Grafana's $name and ${name} replaced; an unknown variable is an error."""
    def value(match):
        name = match.group(1) or match.group(2)
        if name not in variables:
            raise KeyError(f"no value for dashboard variable ${name} in {expr!r}")
        return variables[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, expr)


def dashboard_rules(variables: dict[str, str] = DEFAULT_VARIABLES, dashboard_path: pathlib.Path = DASHBOARD) -> dict:
    """A rule file with one recording rule per dashboard query."""
    rules = [{"record": f"dashboard:query_{index}", "expr": substitute(expr, variables)}
             for index, (_, expr) in enumerate(dashboard_queries(dashboard_path))]
    return {"groups": [{"name": "dashboard-queries", "rules": rules}]}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("alerts", "dashboard"):
        print(__doc__, file=sys.stderr)
        return 2
    out = pathlib.Path(argv[1])
    out.parent.mkdir(parents=True, exist_ok=True)
    content = alert_groups() if argv[0] == "alerts" else dashboard_rules()
    out.write_text(yaml.safe_dump(content, sort_keys=False, width=1000))
    print(f"{out}: {sum(len(group['rules']) for group in content['groups'])} rules")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
