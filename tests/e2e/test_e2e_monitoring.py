"""Monitoring end to end on the real node (docs/monitoring.md): a real Prometheus on this machine,
discovering pods through the API server, scrapes the real llama-server of a served model (through
what its PodMonitor says) and the operator (through its ServiceMonitor); kube-state-metrics serves
the model metrics. After a chat request the server's token counters have grown; the alerts of the
installed PrometheusRule are loaded, and a server broken on purpose (it crash-loops) makes
LLMModelServerCrashLooping go pending, then firing; every query of the dashboard returns data for the
served model; and no series carries the source URL, its checksum or the prompt.

The Prometheus configuration is tests/e2e/e2e_prometheus.py's: it never connects to a kwok pod.
The tests of this module run in order and share the model, Prometheus and kube-state-metrics.
"""

from __future__ import annotations

import ipaddress
import json
import pathlib
import sys
import time
import urllib.parse
import uuid

import pytest
from kubernetes import client

from e2e_helpers import KUBECONFIG, MODEL_FILE, OPERATOR_NAMESPACE, REPO, chat, kubectl, llmmodel, node, wait_until
from e2e_prometheus import pod_monitor_jobs, service_monitor_jobs

sys.path.insert(0, str(REPO / "tests" / "monitoring"))
from monitoring_processes import KubeStateMetrics, Prometheus  # noqa: E402
from monitoring_rules import alerts, dashboard_queries, substitute, with_pending_time  # noqa: E402

GROUP, VERSION, PLURAL = "inference.ai.example.com", "v1alpha1", "llmmodels"
SERVED, BROKEN = "smollm-metrics", "smollm-broken"
QUESTION = "Name a primary colour. One word."
# Every `for:` of the shipped alerts, for this test: long enough to see the alert pending.
PENDING_SECONDS = 10
OPERATOR_JOB = "llm-operator-controller-manager-metrics-service"


class Monitored:
    """The test's namespace, models, kube-state-metrics and Prometheus."""

    def __init__(self, api, namespace):
        self.api, self.namespace = api, namespace
        self.custom = client.CustomObjectsApi(api)
        self.prometheus: Prometheus | None = None

    def model(self, name):
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)

    def describe(self, name=SERVED):
        out = kubectl("get", "llmmodels,pods,podmonitors", "-n", self.namespace, "-o", "wide", check=False).stdout
        status = json.dumps(self.model(name).get("status", {}), indent=1)
        prometheus = ""
        if self.prometheus:
            prometheus = json.dumps([{k: t.get(k) for k in ("scrapeUrl", "health", "lastError", "labels")}
                                     for t in self.prometheus.targets()], indent=1) + "\n" + self.prometheus.process.tail(2000)
        return f"{out}\nstatus of {name}: {status}\nPrometheus targets:\n{prometheus}"

    def wait_ready(self, name, timeout=420):
        def ready():
            status = self.model(name).get("status", {})
            return {c["type"]: c["status"] for c in status.get("conditions", [])}.get("Ready") == "True" and status
        return wait_until(f"LLMModel {name} to be Ready", ready, timeout, lambda: self.describe(name))

    def one(self, expr):
        result = self.prometheus.query(expr)
        assert len(result) == 1, (expr, result)
        return result[0]["value"]

    def cluster_ip(self, name):
        return client.CoreV1Api(self.api).read_namespaced_service(name, self.namespace).spec.cluster_ip


def prometheus_token(namespace, path: pathlib.Path) -> None:
    """A ServiceAccount allowed to read the operator's metrics (the metrics-reader ClusterRole, as
    docs/monitoring.md tells a user to bind Prometheus'), and a short-lived token of it in `path`."""
    kubectl("create", "serviceaccount", "prometheus", "-n", namespace)
    kubectl("create", "clusterrolebinding", f"{namespace}-prometheus", "--clusterrole=llm-operator-metrics-reader",
            f"--serviceaccount={namespace}:prometheus")
    path.write_text(kubectl("create", "token", "prometheus", "-n", namespace, "--duration=2h").stdout.strip())


@pytest.fixture(scope="module")
def monitored(api, operator, model_server, model_sha256, tmp_path_factory):
    namespace = f"e2e-mon-{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(api)
    manifest = node.real_namespace(namespace)
    manifest["metadata"]["labels"] = {"llm-operator-test": "e2e"}
    core.create_namespace(manifest)
    state = Monitored(api, namespace)
    source = {"url": f"{model_server.url}/models/{MODEL_FILE.name}", "sha256": model_sha256}
    try:
        wait_until(f"the default ServiceAccount of {namespace}",
                   lambda: kubectl("get", "serviceaccount", "default", "-n", namespace, check=False).returncode == 0, 30)
        state.source = source
        state.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, llmmodel(SERVED, source, None, purge=True))
        state.wait_ready(SERVED)
        token = tmp_path_factory.mktemp("prometheus") / "token"
        prometheus_token(namespace, token)
        pod_monitor = state.custom.get_namespaced_custom_object("monitoring.coreos.com", "v1", namespace, "podmonitors", SERVED)
        service_monitor = json.loads(kubectl("get", "servicemonitors", "-n", OPERATOR_NAMESPACE, "-o", "json").stdout)["items"]
        rule = json.loads(kubectl("get", "prometheusrules", "-n", OPERATOR_NAMESPACE, "-o", "json").stdout)["items"]
        assert len(service_monitor) == 1 and len(rule) == 1, "the chart (monitoring.enabled) did not install the ServiceMonitor and the alerts"
        state.rules = {"groups": rule[0]["spec"]["groups"]}
        with KubeStateMetrics(KUBECONFIG, [namespace], resources=["pods"]) as ksm:
            config = {
                "global": {"scrape_interval": "2s", "evaluation_interval": "2s"},
                "scrape_configs": [
                    *pod_monitor_jobs(pod_monitor, KUBECONFIG),
                    *service_monitor_jobs(service_monitor[0], KUBECONFIG, str(token)),
                    # kube-state-metrics on this machine; honor_labels keeps the models' namespace.
                    {"job_name": "kube-state-metrics", "honor_labels": True, "static_configs": [{"targets": [f"127.0.0.1:{ksm.port}"]}]},
                ],
            }
            with Prometheus(config, {"llm-operator.rules.yaml": with_pending_time(state.rules, PENDING_SECONDS)}) as prometheus:
                state.prometheus = prometheus
                yield state
    finally:
        kubectl("delete", "llmmodels", "--all", "-n", namespace, "--timeout=180s", check=False, timeout=200)
        kubectl("delete", "clusterrolebinding", f"{namespace}-prometheus", "--ignore-not-found", check=False)
        core.delete_namespace(namespace)


def counters(monitored):
    """llama.cpp's token counters of the served model as Prometheus has them (it has no request
    counter: each request adds its prompt and generated tokens), or None before the first scrape."""
    selector = f'namespace="{monitored.namespace}", model="{SERVED}"'
    values = {}
    for name in ("prompt_tokens_total", "tokens_predicted_total"):
        result = monitored.prometheus.query(f"sum(llamacpp:{name}{{{selector}}})")
        if len(result) != 1:
            return None
        values[name] = result[0]["value"]
    return values


def test_prometheus_scrapes_the_served_models_real_server_and_only_real_pods(monitored):
    selector = f'namespace="{monitored.namespace}", model="{SERVED}"'
    wait_until("Prometheus to scrape the model's server", lambda: monitored.prometheus.query(f"up{{{selector}}} == 1"), 90,
               monitored.describe)
    (target,) = [t for t in monitored.prometheus.targets() if t["labels"].get("model") == SERVED]
    assert target["labels"]["job"] == f"{monitored.namespace}/{SERVED}" and target["labels"]["container"] == "server"
    for scraped in monitored.prometheus.targets():
        host = urllib.parse.urlsplit(scraped["scrapeUrl"]).hostname
        assert host == "127.0.0.1" or ipaddress.ip_address(host) in ipaddress.ip_network(node.POD_CIDR), scraped["scrapeUrl"]
    before = wait_until("the server's counters in Prometheus", lambda: counters(monitored), 60, monitored.describe)
    reply = chat(monitored.cluster_ip(SERVED), QUESTION, model=SERVED)
    assert reply["usage"]["completion_tokens"] > 0, reply
    after = wait_until("the counters to count the request",
                       lambda: (now := counters(monitored)) and all(now[k] > before[k] for k in now) and now, 60, monitored.describe)
    assert after["prompt_tokens_total"] - before["prompt_tokens_total"] >= reply["usage"]["prompt_tokens"] > 0, (before, after, reply)
    assert after["tokens_predicted_total"] - before["tokens_predicted_total"] >= reply["usage"]["completion_tokens"], (before, after, reply)
    monitored.one(f"sum(llamacpp:requests_processing{{{selector}}})")


def test_the_operator_is_scraped_and_the_shipped_alerts_are_loaded(monitored):
    wait_until("Prometheus to scrape the operator", lambda: monitored.prometheus.query(f'up{{job="{OPERATOR_JOB}"}} == 1'), 90,
               monitored.describe)
    reconciles = monitored.one('sum(controller_runtime_reconcile_total{controller="llmmodel-v1alpha1-controller"})')
    assert reconciles > 0
    loaded = {rule["name"] for group in monitored.prometheus.api("rules")["groups"] for rule in group["rules"]}
    assert loaded == {rule["alert"] for rule in alerts(monitored.rules)}
    assert not [a for a in monitored.prometheus.alerts() if a["labels"]["alertname"] == "LLMOperatorDown"]


def test_a_crash_looping_server_makes_its_alert_pending_then_firing(monitored):
    broken = llmmodel(BROKEN, monitored.source, None, purge=True)
    broken["spec"]["serve"]["args"] = ["--no-such-flag"]  # llama-server refuses it and exits
    monitored.custom.create_namespaced_custom_object(GROUP, VERSION, monitored.namespace, PLURAL, broken)
    seen = []

    def states():
        for alert in monitored.prometheus.alerts():
            labels = alert["labels"]
            if labels["alertname"] == "LLMModelServerCrashLooping" and labels.get("model") == BROKEN:
                if not seen or seen[-1] != alert["state"]:
                    seen.append(alert["state"])
        return "firing" in seen

    wait_until("LLMModelServerCrashLooping to fire for the broken model", states, 420,
               lambda: f"states seen: {seen}\n" + monitored.describe(BROKEN), interval=0.5)
    assert seen[:2] == ["pending", "firing"], seen
    firing = [a for a in monitored.prometheus.alerts() if a["labels"]["alertname"] == "LLMModelServerCrashLooping" and a["state"] == "firing"]
    (alert,) = firing
    assert alert["labels"]["severity"] == "critical" and alert["labels"]["namespace"] == monitored.namespace
    assert alert["annotations"]["summary"] == f"The server of LLMModel {monitored.namespace}/{BROKEN} is crash-looping"
    assert alert["annotations"]["runbook_url"].endswith("/docs/runbooks/LLMModelServerCrashLooping.md")
    reason = [c for c in monitored.model(BROKEN)["status"]["conditions"] if c["type"] == "Ready"][0]
    assert (reason["status"], reason["reason"]) == ("False", "CrashLoopBackOff"), reason
    assert not [a for a in monitored.prometheus.alerts() if a["labels"].get("model") == SERVED], "the served model alerts"


def test_every_dashboard_query_returns_data_for_the_served_model(monitored):
    before = counters(monitored)
    chat(monitored.cluster_ip(SERVED), QUESTION, model=SERVED)
    wait_until("the request in Prometheus", lambda: (now := counters(monitored)) and all(now[k] > before[k] for k in now), 60,
               monitored.describe)
    time.sleep(4)  # two more scrapes, so a rate over the window sees the increase
    variables = {"namespace": monitored.namespace, "model": SERVED, "__rate_interval": "1m"}
    empty = []
    # The Router row is checked over a real router's metrics by test_e2e_scale_to_zero.py: two of its
    # queries (the queue's wait and its waiting requests) have series only once a request waited for a
    # replica, which a request for this served model never does; there the first request after zero
    # waits for the wake.
    for title, expr in [(title, expr) for title, expr in dashboard_queries() if not title.startswith("Router")]:
        result = monitored.prometheus.query(substitute(expr, variables))
        if not result:
            empty.append((title, expr))
        print(f"  {title}: {[round(item['value'], 3) for item in result][:4]}")
    assert not empty, f"dashboard queries without data: {empty}\n{monitored.describe()}"


def test_no_series_carries_the_source_its_checksum_or_the_prompt(monitored):
    forbidden = [monitored.source["url"], monitored.source["sha256"], urllib.parse.urlsplit(monitored.source["url"]).netloc,
                 QUESTION, "Name a primary"]
    for label in monitored.prometheus.api("labels"):
        for value in monitored.prometheus.api(f"label/{label}/values"):
            assert not any(secret in value for secret in forbidden), (label, value)
