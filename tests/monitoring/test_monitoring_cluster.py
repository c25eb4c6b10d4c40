"""Monitoring on the local cluster (kwok nodes), with the real ansible-operator of this checkout:

- without the Prometheus Operator's CRDs the operator works as before: models serve, no scrape
  object, no failed task, and status.server says there is nothing to scrape them with;
- with the CRDs (from the Prometheus Operator's own module) a model with metrics gets its PodMonitor,
  validated by the API server and owned by the model; a deleted one comes back; opting out removes
  it; a runtime without metrics (Ollama) and an opted-out model get none;
- the shipped ServiceMonitor, the router's PodMonitor and the PrometheusRule pass the API server's validation;
- kube-state-metrics with the shipped configuration serves the model metrics of real LLMModels (a
  serving model, a failed pull, a running pull with a progress report), a real Prometheus evaluates
  the shipped alerts over them, and no series carries a source URL, a signed query or a token.

Nothing here scrapes a pod: kwok's pods have made-up addresses. The tests run in file order and share
one namespace and one operator (`make monitoring-cluster-test`, under the cluster lock).
"""

from __future__ import annotations

import calendar
import json
import os
import subprocess
import time

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from monitoring_files import PROMETHEUS_DIR, REPO
from monitoring_processes import KubeStateMetrics, Prometheus
from monitoring_rules import alert_groups, with_pending_time
from prometheus_operator_crds import FILES, fetch
from testbed_helpers import Kube, fresh_namespace, wait_until

pytestmark = pytest.mark.cluster

KUBECONFIG = os.environ.get("KUBECONFIG") or str(REPO / ".cluster" / "kubeconfig")
KUBECTL = str(REPO / "bin" / "kubectl")
GROUP, VERSION, PLURAL = "inference.ai.example.com", "v1alpha1", "llmmodels"
MONITORING_GROUP = "monitoring.coreos.com"
OPERATOR_LOG = REPO / ".cluster" / "operator-monitoring.log"
CRD_NAMES = [f"{name.split('_')[1].removesuffix('.yaml')}.{MONITORING_GROUP}" for name in FILES]
# What a model's spec may hold that must never reach a metric.
SIGNED_URL = "https://models.example/weights/tiny.gguf?X-Amz-Signature=sig0123456789abcdef&X-Amz-Credential=AKIAEXAMPLE"
TOKEN = "hf_monitoringtestTOKEN0123456789"


def kubectl(*args, input_text=None, check=True):
    done = subprocess.run([KUBECTL, "--kubeconfig", KUBECONFIG, *args], capture_output=True, text=True,
                          input=input_text, timeout=120, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}")
    return done


def make(*args, env=None):
    done = subprocess.run(["make", "--no-print-directory", "-s", "-C", str(REPO), *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "KUBECONFIG": KUBECONFIG, **(env or {})}, check=False)
    assert done.returncode == 0, f"make {' '.join(args)} failed:\n{done.stdout}{done.stderr}"


def served(group_version):
    return kubectl("get", "--raw", f"/apis/{group_version}", check=False).returncode == 0


def crds_served():
    return served(f"{MONITORING_GROUP}/v1")


def unserved(api_client, group_version, crd_names):
    """The client, once it is sure the cluster does not serve ``group_version`` yet (the tests install it)."""
    if served(group_version):
        pytest.fail(f"the cluster already serves {group_version}: these tests start without it "
                    f"(kubectl delete crd {' '.join(crd_names)})", pytrace=False)
    return api_client


@pytest.fixture(scope="module")
def api(api_client):
    return unserved(api_client, f"{MONITORING_GROUP}/v1", CRD_NAMES)


@pytest.fixture(scope="module")
def namespace(api):
    """A namespace of the suite's, with the Secret the gated model names; deleted at the end."""
    kube = Kube(api)
    with fresh_namespace(kube, "cluster", "llm-monitoring", "monitoring") as name:
        kube.core.create_namespaced_secret(name, {"metadata": {"name": "hf-token"}, "stringData": {"HF_TOKEN": TOKEN}})
        yield name


def running_operator(api, namespace, log, crd_names, env=None):
    """The real operator of this checkout, watching ``namespace`` (a generator for a fixture). At the
    end its models are deleted while it runs, then it stops, then the CRDs ``crd_names`` go."""
    kubectl("apply", "--server-side", "-f", str(REPO / "config" / "crd" / "bases"))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{PLURAL}.{GROUP}")
    make("operator-stop")
    make("operator-start", f"OPERATOR_LOG={log}", env={"WATCH_NAMESPACE": namespace, **(env or {})})
    yield
    custom = client.CustomObjectsApi(api)
    try:
        custom.delete_collection_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
        wait_until("the test's models to be finalized",
                   lambda: not custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"], 180, interval=1)
    finally:
        make("operator-stop")
        kubectl("delete", "crd", "--ignore-not-found", *crd_names, check=False)


@pytest.fixture(scope="module")
def operator(api, namespace):
    """The operator, without the Prometheus Operator's CRDs at first (they go at the end)."""
    yield from running_operator(api, namespace, OPERATOR_LOG, CRD_NAMES)


class Models:
    def __init__(self, api, namespace):
        self.custom, self.apps = client.CustomObjectsApi(api), client.AppsV1Api(api)
        self.namespace = namespace

    def create(self, name, source, **serve):
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "LLMModel", "metadata": {"name": name},
                "spec": {"source": source, "serve": serve, "storageSize": "1Gi"}}
        self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, body)

    def get(self, name):
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)

    def patch_serve(self, name, serve):
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name, {"spec": {"serve": serve}})

    def conditions(self, name):
        return {c["type"]: c for c in self.get(name).get("status", {}).get("conditions", [])}

    def describe(self, name):
        return (f"status of {name}: {json.dumps(self.get(name).get('status', {}), indent=1)}\n"
                f"operator log:\n{OPERATOR_LOG.read_text()[-4000:] if OPERATOR_LOG.exists() else ''}")

    def wait(self, name, what, probe, timeout=120):
        return wait_until(f"LLMModel {name}: {what}", lambda: probe(self.get(name)), timeout, lambda: self.describe(name), interval=0.5)

    def wait_reconciled(self, name, predicate, timeout=120):
        """Until the model's status has caught up with its spec and predicate(status) holds."""
        def probe(obj):
            status = obj.get("status", {})
            return status.get("observedGeneration") == obj["metadata"]["generation"] and predicate(status) and status
        return self.wait(name, "reconciled as expected", probe, timeout)

    def wait_ready(self, name, timeout=120):
        return self.wait_reconciled(name, lambda s: {c["type"]: c["status"] for c in s.get("conditions", [])}.get("Ready") == "True",
                                    timeout)

    def pod_monitor(self, name):
        try:
            return self.custom.get_namespaced_custom_object(MONITORING_GROUP, "v1", self.namespace, "podmonitors", name)
        except ApiException as error:
            if error.status == 404:
                return None
            raise


@pytest.fixture(scope="module")
def models(api, namespace, operator):
    return Models(api, namespace)


def test_without_the_prometheus_operator_models_serve_as_before(models):
    models.create("plain", {"huggingFaceRepo": "acme/tiny-chat"}, runtime="vllm")
    models.create("optout", {"huggingFaceRepo": "acme/tiny-chat"}, runtime="vllm", metrics={"enabled": False})
    for name in ("plain", "optout"):
        status = models.wait_ready(name)
        conditions = models.conditions(name)
        assert conditions["Successful"]["status"] == "True" and conditions["Failure"]["status"] == "False", status
    plain = models.get("plain")["status"]["server"]
    assert plain["metricsPath"] == "/metrics"
    assert plain["metricsReason"].endswith("the cluster serves no PodMonitor kind (monitoring.coreos.com/v1, "
                                           "the Prometheus Operator): scrape it yourself")
    assert "metricsPath" not in models.get("optout")["status"]["server"]
    assert not crds_served()


def test_with_the_crds_a_model_with_metrics_gets_its_pod_monitor(models, namespace):
    crds = fetch()
    kubectl("apply", "--server-side", "-f", str(crds))
    for name in CRD_NAMES:
        kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{name}")
    deployment_before = models.apps.read_namespaced_deployment("plain", namespace)
    # Any change of the spec reconciles; spec.serve.metrics rolls no pod (not in the configuration hash).
    models.patch_serve("plain", {"metrics": {"path": "/metrics"}})
    models.patch_serve("optout", {"metrics": {"enabled": False, "path": "/metrics"}})
    wait_until("PodMonitor plain", lambda: models.pod_monitor("plain"), 60, lambda: models.describe("plain"), interval=0.5)
    status = models.wait_reconciled("plain", lambda s: s["server"]["metricsReason"].endswith("; PodMonitor plain scrapes it"))
    monitor = models.pod_monitor("plain")
    deployment = models.apps.read_namespaced_deployment("plain", namespace)
    assert deployment.metadata.generation == deployment_before.metadata.generation, "the metrics change rolled the server"
    # Owned by the model (so it goes with it), selecting exactly the server's pods, on the server's port.
    (owner,) = monitor["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("LLMModel", "plain")
    assert monitor["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "llm-operator"
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= deployment.spec.template.metadata.labels.items()
    assert selector == deployment.spec.selector.match_labels
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] in [port.name for port in deployment.spec.template.spec.containers[0].ports]
    assert endpoint["path"] == status["server"]["metricsPath"] == "/metrics"
    models.wait_reconciled("optout", lambda s: s["server"]["metricsReason"].startswith("spec.serve.metrics.enabled is false"))
    assert models.pod_monitor("optout") is None

    models.create("chat", {"huggingFaceRepo": "acme/tiny-chat"}, runtime="ollama", modelFile="tiny.gguf")
    status = models.wait_ready("chat")
    assert status["server"]["metricsReason"].startswith("Ollama serves no Prometheus metrics")
    assert models.pod_monitor("chat") is None


def test_a_deleted_pod_monitor_comes_back(models, namespace):
    uid = models.pod_monitor("plain")["metadata"]["uid"]
    models.custom.delete_namespaced_custom_object(MONITORING_GROUP, "v1", namespace, "podmonitors", "plain")
    wait_until("PodMonitor plain to be made again", lambda: (models.pod_monitor("plain") or {}).get("metadata", {}).get("uid") not in (None, uid),
               60, lambda: models.describe("plain"), interval=0.5)


def test_opting_out_removes_the_pod_monitor(models):
    models.patch_serve("plain", {"metrics": {"enabled": False}})
    wait_until("PodMonitor plain to be removed", lambda: models.pod_monitor("plain") is None, 60, lambda: models.describe("plain"), interval=0.5)
    models.patch_serve("plain", {"metrics": {"enabled": True}})
    wait_until("PodMonitor plain to be back", lambda: models.pod_monitor("plain"), 60, lambda: models.describe("plain"), interval=0.5)


def shipped_monitoring_objects(namespace):
    built = subprocess.run([str(REPO / "bin" / "kustomize"), "build", str(PROMETHEUS_DIR)], capture_output=True, text=True, check=True)
    documents = [doc for doc in yaml.safe_load_all(built.stdout) if doc]
    for document in documents:
        document["metadata"]["namespace"] = namespace
    return documents


def test_the_shipped_service_monitor_and_prometheus_rule_pass_the_api_servers_validation(models, namespace):
    documents = shipped_monitoring_objects(namespace)
    assert sorted(doc["kind"] for doc in documents) == ["PodMonitor", "PrometheusRule", "ServiceMonitor"]
    kubectl("apply", "--dry-run=server", "-f", "-", input_text=yaml.safe_dump_all(documents))
    # The API server does validate them: a rule with a malformed duration is refused.
    rule = next(doc for doc in documents if doc["kind"] == "PrometheusRule")
    rule["spec"]["groups"][0]["rules"][0]["for"] = "fifteen minutes"
    refused = kubectl("apply", "--dry-run=server", "-f", "-", input_text=yaml.safe_dump(rule), check=False)
    assert refused.returncode != 0 and "for" in refused.stderr, refused.stderr


def series(prometheus, expr):
    return {(item["metric"].get("model"), item["metric"].get("phase") or item["metric"].get("reason")): item["value"]
            for item in prometheus.query(expr)}


def test_kube_state_metrics_serves_the_model_metrics_and_prometheus_alerts_on_them(api, models, namespace):
    models.create("broken", {"huggingFaceRepo": "acme/kwok-fail"}, runtime="vllm")
    models.create("signed", {"url": SIGNED_URL}, runtime="llamacpp")
    models.create("gated", {"huggingFaceRepo": "acme/private-chat", "credentialsSecret": "hf-token"}, runtime="vllm")
    models.create("slow", {"huggingFaceRepo": "acme/kwok-slow"}, runtime="vllm")
    models.wait("broken", "failed pull", lambda o: o.get("status", {}).get("phase") == "Failed")
    models.wait_ready("gated")
    models.wait_ready("signed")
    models.wait("slow", "pulling", lambda o: o.get("status", {}).get("phase") == "Pulling")
    # The puller's progress report, as it writes it (a merge patch of the status; the operator leaves
    # it alone while the Job runs).
    report = {"bytesDone": 400_000_000, "bytesTotal": 1_000_000_000, "percent": 40, "bytesPerSecond": 50_000_000,
              "etaSeconds": 12, "summary": "40%", "updatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    models.custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, "slow",
                                                        {"status": {"weights": {"progress": report}}})

    quick_alerts = with_pending_time(alert_groups(), 1)
    with KubeStateMetrics(KUBECONFIG, [namespace]) as ksm:
        text = ksm.metrics()
        for secret in ("X-Amz", "sig0123456789abcdef", "AKIAEXAMPLE", TOKEN, "hf-token", "acme/", "models.example", "https://"):
            assert secret not in text, f"a model metric carries {secret!r}"
        config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                  "scrape_configs": [{"job_name": "kube-state-metrics", "honor_labels": True,
                                      "static_configs": [{"targets": [f"127.0.0.1:{ksm.port}"]}]}]}
        with Prometheus(config, {"llm-operator.rules.yaml": quick_alerts}) as prometheus:
            wait_until("Prometheus to scrape kube-state-metrics",
                       lambda: prometheus.query(f'llmmodel_status_phase{{namespace="{namespace}", model="slow"}}'), 60, prometheus.process.tail,
                       interval=0.5)
            phases = series(prometheus, f'llmmodel_status_phase{{namespace="{namespace}"}}')
            assert phases[("plain", "Serving")] == 1 and phases[("broken", "Failed")] == 1 and phases[("slow", "Pulling")] == 1, phases
            reasons = {item["metric"]["model"]: item["metric"]["reason"]
                       for item in prometheus.query(f'llmmodel_status_phase{{namespace="{namespace}"}}')}
            assert reasons["plain"] == "Available" and reasons["broken"] == "PullFailed", reasons
            weights = series(prometheus, f'llmmodel_status_condition{{namespace="{namespace}", type="WeightsReady"}}')
            assert weights[("broken", "PullFailed")] == 0 and weights[("plain", "Pulled")] == 1, weights

            def one(expr):
                (item,) = prometheus.query(expr)
                return item["value"]

            selector = f'namespace="{namespace}", model="gated"'
            status = models.get("gated")["status"]
            time_to_serving = one(f"llmmodel_first_serving_timestamp_seconds{{{selector}}} - llmmodel_created_timestamp_seconds{{{selector}}}")
            assert 0 < time_to_serving < 120, time_to_serving
            pull_seconds = one(f"llmmodel_weights_pulled_timestamp_seconds{{{selector}}} - llmmodel_weights_pull_started_timestamp_seconds{{{selector}}}")
            assert 0 <= pull_seconds < 60 and status["weights"]["pullStartedAt"] <= status["weights"]["pulledAt"], status
            assert one(f"llmmodel_weights_size_bytes{{{selector}}}") == status["weights"]["size"] > 0
            assert one(f"llmmodel_weights_ready{{{selector}}}") == 1
            # What LLMModelNotReady measures a model that loads against: its startup budget, and when
            # its Ready condition last changed (an RFC 3339 time, read as Unix seconds).
            assert one(f"llmmodel_server_startup_budget_seconds{{{selector}}}") == status["server"]["startupBudgetSeconds"] > 0
            ready = next(c for c in status["conditions"] if c["type"] == "Ready")
            changed = one(f'llmmodel_status_condition_last_transition_timestamp_seconds{{{selector}, type="Ready"}}')
            assert changed == calendar.timegm(time.strptime(ready["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ")), (changed, ready)
            slow = f'namespace="{namespace}", model="slow"'
            assert one(f"llmmodel_pull_progress_bytes{{{slow}}}") == 400_000_000
            assert one(f"llmmodel_pull_rate_bytes_per_second{{{slow}}}") == 50_000_000
            assert one(f"llmmodel_pull_eta_seconds{{{slow}}}") == 12
            # The shipped alerts (every `for:` at 1 s) over the real metrics: the failed pull is paged.
            wait_until("LLMModelPullFailed to fire for the broken model", lambda: [
                a for a in prometheus.alerts() if a["labels"]["alertname"] == "LLMModelPullFailed" and a["state"] == "firing"
                and a["labels"]["model"] == "broken"], 60, lambda: json.dumps(prometheus.alerts(), indent=1), interval=0.5)
            firing = {(a["labels"]["alertname"], a["labels"].get("model")) for a in prometheus.alerts()}
            assert not {model for name, model in firing if name == "LLMModelPullFailed"} - {"broken"}, firing
            # Every label value Prometheus holds about the models is a name, a phase or a reason.
            for label in prometheus.api("labels"):
                for value in prometheus.api(f"label/{label}/values"):
                    assert not any(secret in value for secret in ("X-Amz", TOKEN, "hf-token", "acme/", "https://")), (label, value)
