"""Scale to zero and back on the real node (issue 26): SmolLM2 with `minReplicas: 0` serves, goes
`Idle` at zero after its idle period, answers its first request through the router with no error
(the router holds it while it wakes the model), and goes back to zero after its idle period; woken
again, it answers again. A real Prometheus scrapes the router meanwhile, and every panel of the
dashboard's Router row returns the model's series with real values (the row's queue panels need a
request that waited: a served model's never does, which is why the row is checked here and not in
test_e2e_monitoring.py).

The router is the one the chart installs (Service llm-operator-router, two replicas on the real node,
their activity Leases in the operator's namespace): the request goes to the Service, the metrics are
summed over both replicas' admin ports, and Prometheus scrapes them as the chart's router PodMonitor
says. With LLM_E2E_LOCAL_OPERATOR=1 (an operator already running
from this checkout, `make operator-start`, to try a change of the role without building its image)
there is no installed router: one runs on this machine (`--kube` with the cluster's kubeconfig) and
reaches the server pod on the real node's bridge; Prometheus scrapes its admin port on 127.0.0.1.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import socket
import subprocess
import sys
import time

import uuid

import pytest
from e2e_helpers import KUBECONFIG, MODEL_FILE, OPERATOR_NAMESPACE, REPO, kubectl, llmmodel, node, wait_until
from e2e_prometheus import pod_monitor_jobs
from kubernetes import client

sys.path.insert(0, str(REPO / "tests" / "monitoring"))
from monitoring_processes import Prometheus  # noqa: E402
from monitoring_rules import dashboard_queries, substitute  # noqa: E402

NAME = "smollm2-zero"
IDLE_SECONDS = 30
ROUTER_SERVICE, ROUTER_PORT, ROUTER_ADMIN_PORT = "llm-operator-router", 8000, 9090
ROUTER_PODS = "app.kubernetes.io/name=llm-operator,app.kubernetes.io/component=router"
ROUTER_PYTHON = os.environ.get("LLM_ROUTER_PYTHON", str(REPO / ".venv-router" / "bin" / "python"))


@pytest.fixture
def namespace(api, request):
    """A namespace of the real node, restricted Pod Security, once the operator under test runs."""
    if os.environ.get("LLM_E2E_LOCAL_OPERATOR") != "1":
        request.getfixturevalue("operator")
    name = f"e2e-zero-{uuid.uuid4().hex[:6]}"
    manifest = node.real_namespace(name)
    manifest["metadata"]["labels"] = {"llm-operator-test": "e2e", "pod-security.kubernetes.io/enforce": "restricted"}
    kubectl("apply", "-f", "-", input_text=json.dumps(manifest))
    yield name
    kubectl("delete", "llmmodels", "--all", "-n", name, "--timeout=180s", check=False, timeout=200)
    kubectl("delete", "namespace", name, "--wait=false", check=False)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Router:
    """Where the test sends requests (host, port), where it reads the router's metrics (the admin
    address of each router process: their series are summed), the address of one process's own
    port (``serving``, by its admin host), and how Prometheus scrapes them (``scrape_configs``)."""

    def __init__(self, host: str, port: int, admins, serving, scrape_configs: list[dict]):
        self.host, self.port, self.admins, self.serving, self.scrape_configs = host, port, admins, serving, scrape_configs

    def get(self, path: str) -> tuple[int, str]:
        return get(self.host, self.port, path)

    def metric(self, series: str, admins=None) -> float:
        """The sum over the router processes (or those of ``admins``) of one series, e.g.
        'llm_router_cold_starts_total{model="a/b"}'."""
        total = 0.0
        for host, port in admins or self.admins():
            for line in get(host, port, "/metrics")[1].splitlines():
                if line.startswith(series + " "):
                    total += float(line.rsplit(" ", 1)[1])
        return total


@pytest.fixture
def router(namespace, tmp_path, api):
    if os.environ.get("LLM_E2E_LOCAL_OPERATOR") != "1":
        yield installed_router(api)
        return
    yield from local_router(namespace, tmp_path)


def installed_router(api) -> Router:
    """The chart's router: its Service's VIP, and each of its ready pods' admin port (real pods on the
    real node's bridge, reachable from this machine)."""
    core = client.CoreV1Api(api)
    service = core.read_namespaced_service(ROUTER_SERVICE, OPERATOR_NAMESPACE)

    def admins():
        pods = core.list_namespaced_pod(OPERATOR_NAMESPACE, label_selector=ROUTER_PODS).items
        return [(pod.status.pod_ip, ROUTER_ADMIN_PORT) for pod in pods
                if pod.status.pod_ip and any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])]

    wait_until("the installed router's two replicas ready", lambda: len(admins()) == 2, 120,
               lambda: kubectl("get", "pods", "-n", OPERATOR_NAMESPACE, "-o", "wide", check=False).stdout)
    monitors = [m for m in json.loads(kubectl("get", "podmonitors", "-n", OPERATOR_NAMESPACE, "-o", "json").stdout)["items"]
                if m["spec"]["selector"].get("matchLabels", {}).get("app.kubernetes.io/component") == "router"]
    assert len(monitors) == 1, "the chart (monitoring.enabled) did not install the router's PodMonitor"
    return Router(service.spec.cluster_ip, ROUTER_PORT, admins, lambda host: (host, ROUTER_PORT),
                  pod_monitor_jobs(monitors[0], KUBECONFIG))


def local_router(namespace, tmp_path):
    """A router on 127.0.0.1, serving the test namespace's models, its Leases there too."""
    config = tmp_path / "kubeconfig.json"
    config.write_text(kubectl("config", "view", "--raw", "-o", "json").stdout)
    port, admin = free_port(), free_port()
    log = open(tmp_path / "router.log", "wb")  # noqa: SIM115 (closed below)
    process = subprocess.Popen(
        [ROUTER_PYTHON, "-m", "llm_router", "--kube", str(config), "--namespaces", namespace,
         "--lease-namespace", namespace, "--host", "127.0.0.1", "--port", str(port), "--admin-port", str(admin)],
        env={**os.environ, "PYTHONPATH": str(REPO / "router" / "src")}, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        wait_until("the router's routing table", lambda: get("127.0.0.1", admin, "/readyz")[0] == 200, 60,
                   lambda: (tmp_path / "router.log").read_text()[-2000:])
        yield Router("127.0.0.1", port, lambda: [("127.0.0.1", admin)], lambda host: ("127.0.0.1", port),
                     [{"job_name": "router", "static_configs": [{"targets": [f"127.0.0.1:{admin}"]}]}])
    finally:
        process.terminate()
        process.wait(30)
        log.close()
        sys.stdout.write((tmp_path / "router.log").read_text()[-3000:])


@pytest.fixture
def prometheus(router):
    """A real Prometheus on this machine scraping the router processes every 2 s."""
    config = {"global": {"scrape_interval": "2s", "evaluation_interval": "2s"}, "scrape_configs": router.scrape_configs}
    with Prometheus(config) as server:
        yield server


def get(host: str, port: int, path: str) -> tuple[int, str]:
    try:
        connection = http.client.HTTPConnection(host, port, timeout=10)
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode()
    except OSError:
        return 0, ""


def model_status(namespace: str) -> dict:
    return json.loads(kubectl("get", "llmmodel", NAME, "-n", namespace, "-o", "json").stdout).get("status", {})


def replicas(namespace: str) -> int:
    return json.loads(kubectl("get", "deployment", NAME, "-n", namespace, "-o", "json").stdout)["spec"]["replicas"]


def describe(namespace: str):
    return lambda: kubectl("get", "llmmodels,deployments,pods", "-n", namespace, "-o", "wide", check=False).stdout


def wait_idle(namespace: str, timeout: float) -> dict:
    wait_until(f"{NAME} Idle at zero", lambda: model_status(namespace).get("phase") == "Idle", timeout, describe(namespace))
    status = model_status(namespace)
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ScaledToZero"), ready
    assert "inferenceURL" not in status or status["inferenceURL"] is None, status
    assert replicas(namespace) == 0
    assert "Idle" in kubectl("get", "llmmodels", "-n", namespace).stdout
    return status


def ask(host: str, port: int, namespace: str) -> tuple[int, dict]:
    """A chat request for the model through the router at (host, port): its status and reply."""
    connection = http.client.HTTPConnection(host, port, timeout=600)
    connection.request("POST", "/v1/chat/completions", body=json.dumps({
        "model": f"{namespace}/{NAME}", "messages": [{"role": "user", "content": "What is the capital of France?"}],
        "max_tokens": 16, "temperature": 0}), headers={"content-type": "application/json"})
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def scraped(prometheus, series: str, value: float) -> bool:
    """Whether Prometheus' last scrape of the routers sums ``series`` to ``value``."""
    result = prometheus.query(f"sum({series})")
    return len(result) == 1 and result[0]["value"] == value


def router_row(prometheus, namespace: str) -> dict[str, list[float]]:
    """Every query of the dashboard's Router row: the values of the model's series, per panel and query."""
    values = {}
    for index, (title, expr) in enumerate((t, e) for t, e in dashboard_queries() if t.startswith("Router")):
        result = prometheus.query(substitute(expr, {"__rate_interval": "1m"}))
        values[f"{index} {title}: {expr}"] = [item["value"] for item in result if item["metric"].get("model") == f"{namespace}/{NAME}"]
    return values


def idle_listed(router: Router, namespace: str) -> bool:
    status, body = router.get("/v1/models")
    return status == 200 and any(m["id"] == f"{namespace}/{NAME}" and m["status"]["phase"] == "Idle"
                                 for m in json.loads(body)["data"])


def test_a_model_at_zero_answers_its_first_request_and_goes_back_to_zero(namespace, model_server, model_sha256, router, prometheus):
    path = f"/models/{MODEL_FILE.name}"
    body = llmmodel(NAME, {"url": model_server.url + path, "sha256": model_sha256}, None, purge=True)
    body["spec"]["serve"]["autoscaling"] = {"minReplicas": 0, "maxReplicas": 1, "idleSeconds": IDLE_SECONDS}
    kubectl("apply", "-n", namespace, "-f", "-", input_text=json.dumps(body))

    # A new Deployment starts with one replica: the model shows it serves, then goes idle.
    wait_until(f"{NAME} Serving", lambda: model_status(namespace).get("phase") == "Serving", 600, describe(namespace))
    assert model_status(namespace)["server"]["idleSeconds"] == IDLE_SECONDS
    wait_idle(namespace, IDLE_SECONDS + 90)
    # The router sees the model Idle a moment after the API server does.
    wait_until("the router to list it Idle", lambda: idle_listed(router, namespace), 30)
    listed = json.loads(router.get("/v1/models")[1])["data"]
    assert [(m["id"], m["status"]["phase"]) for m in listed if m["id"].startswith(namespace + "/")] == [(f"{namespace}/{NAME}", "Idle")]

    started = time.monotonic()
    status, reply = ask(router.host, router.port, namespace)
    woken_in = time.monotonic() - started
    assert status == 200, reply
    assert reply["choices"][0]["message"]["content"].strip(), reply
    print(f"\nfirst request after zero answered in {woken_in:.1f}s")
    model = f'model="{namespace}/{NAME}"'
    assert router.metric(f"llm_router_cold_starts_total{{{model}}}") == 1
    assert router.metric(f'llm_router_requests_total{{{model},code="200"}}') == 1
    # One wake, one write: the operator leaves the count to the router, even one written while a
    # reconcile ran (docs/design.md, "Exactly one writer of the replicas").
    assert router.metric(f'llm_router_scale_events_total{{{model},direction="up"}}') == 1

    # The router process that woke it answers once more, after Prometheus has scraped the first
    # answer, so that the Router row's rates see its counters grow (a series seen once has no rate).
    (woke,) = [admin for admin in router.admins() if router.metric(f"llm_router_cold_starts_total{{{model}}}", [admin]) == 1]
    requests = f'llm_router_requests_total{{{model},code="200"}}'
    wait_until("Prometheus to scrape the first answer", lambda: scraped(prometheus, requests, 1), 60)
    assert ask(*router.serving(woke[0]), namespace)[0] == 200

    wait_idle(namespace, IDLE_SECONDS + 90)
    assert router.metric(f'llm_router_scale_events_total{{{model},direction="down"}}') == 2

    # Woken again, through the same router process: one more cold start, one more write.
    status, reply = ask(*router.serving(woke[0]), namespace)
    assert status == 200, reply
    assert router.metric(f"llm_router_cold_starts_total{{{model}}}") == 2
    assert router.metric(f'llm_router_scale_events_total{{{model},direction="up"}}') == 2

    # The dashboard's Router row over the router's real metrics: every query has the model's series;
    # the rates and latencies are positive (each counter grew inside the window), the gauges are 0.
    wait_until("Prometheus to scrape the third answer", lambda: scraped(prometheus, requests, 3), 60)
    time.sleep(4)  # two more scrapes
    row = router_row(prometheus, namespace)
    for query, values in row.items():
        print(f"  {query}: {values}")
    assert all(len(values) >= 1 and all(math.isfinite(v) for v in values) for values in row.values()), row
    gauges = {query for query in row if "in_flight_requests" in query or "queue_waiting_requests" in query}
    assert len(gauges) == 2 and all(row[query] == [0.0] for query in gauges), row
    assert all(v > 0 for query in set(row) - gauges for v in row[query]), row
