"""The InferencePool of each serving model on the local cluster (kwok nodes), with the real
ansible-operator of this checkout and the Gateway API Inference Extension's own CRD (from its Go
module, hack/inference_extension_crds.py):

- without the CRD a model serves as before: no failed task, and the answer "not served" is remembered
  (LLMMODEL_DISCOVERY_CACHE, as the operator's Deployment sets it), so its no-op reconciles ask
  nothing more;
- once the CRD is installed (and the remembered answer is older than LLMMODEL_DISCOVERY_TTL), the
  model's next reconcile creates its pool, accepted by the API server's validation of the real
  schema, owned by the model, selecting exactly its server pods on the server's port;
- a deleted pool comes back, and the pool goes with its model.

The tests run in file order and share one namespace and one operator.
"""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from inference_extension_crds import FILES, fetch
from test_monitoring_cluster import GROUP, PLURAL, REPO, VERSION, Models, kubectl, running_operator, served, unserved
from testbed_helpers import Kube, fresh_namespace, wait_until

pytestmark = pytest.mark.cluster

POOL_GROUP, POOL_VERSION, POOLS = "inference.networking.k8s.io", "v1", "inferencepools"
CRD = f"{POOLS}.{POOL_GROUP}"
OPERATOR_LOG = REPO / ".cluster" / "operator-gateway.log"
TTL = 3


@pytest.fixture(scope="module")
def api(api_client):
    return unserved(api_client, f"{POOL_GROUP}/{POOL_VERSION}", [CRD])


@pytest.fixture(scope="module")
def namespace(api):
    with fresh_namespace(Kube(api), "cluster", "llm-gateway", "gateway") as name:
        yield name


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("discovery")


@pytest.fixture(scope="module")
def operator(api, namespace, cache):
    """The real operator, remembering discovery answers as its Deployment does (a short TTL here)."""
    yield from running_operator(api, namespace, OPERATOR_LOG, [CRD],
                                env={"LLMMODEL_DISCOVERY_CACHE": str(cache), "LLMMODEL_DISCOVERY_TTL": str(TTL)})


class Pools(Models):
    def pool(self, name):
        try:
            return self.custom.get_namespaced_custom_object(POOL_GROUP, POOL_VERSION, self.namespace, POOLS, name)
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def reconcile(self, name):
        """An annotation change starts a reconcile (watches.yaml: watchAnnotationsChanges)."""
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name,
                                                   {"metadata": {"annotations": {"test/poke": str(time.time())}}})

    def describe(self, name):
        log = OPERATOR_LOG.read_text()[-4000:] if OPERATOR_LOG.exists() else ""
        return f"status of {name}: {json.dumps(self.get(name).get('status', {}), indent=1)}\noperator log:\n{log}"


@pytest.fixture(scope="module")
def models(api, namespace, operator):
    return Pools(api, namespace)


def test_without_the_crd_a_model_serves_and_the_answer_is_remembered(models, cache):
    models.create("chat", {"huggingFaceRepo": "acme/tiny-chat"}, runtime="vllm")
    status = models.wait_ready("chat")
    conditions = models.conditions("chat")
    assert conditions["Successful"]["status"] == "True" and conditions["Failure"]["status"] == "False", status
    remembered = [json.loads(path.read_text()) for path in cache.glob("*.json")]
    assert [] in remembered, f"no remembered 'not served' answer in {cache}: {remembered}"
    assert not served(f"{POOL_GROUP}/{POOL_VERSION}")
    assert "inferencePool" not in status["server"], "no pool reported where the kind is not served"


def test_with_the_crd_the_next_reconcile_makes_the_pool(models, namespace, cache):
    kubectl("apply", "--server-side", "-f", str(fetch() / FILES[0]))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{CRD}")
    time.sleep(TTL + 1)  # the remembered "not served" is stale now
    models.reconcile("chat")
    pool = wait_until("InferencePool chat", lambda: models.pool("chat"), 60, lambda: models.describe("chat"), interval=0.5)
    deployment = models.apps.read_namespaced_deployment("chat", namespace)
    (owner,) = pool["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("LLMModel", "chat", models.get("chat")["metadata"]["uid"])
    assert pool["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "llm-operator"
    selector = pool["spec"]["selector"]["matchLabels"]
    assert selector == deployment.spec.selector.match_labels
    (port,) = [p for p in deployment.spec.template.spec.containers[0].ports if p.name == "http"]
    assert [p["number"] for p in pool["spec"]["targetPorts"]] == [port.container_port] == [8000]
    # The API server's defaulting of the real schema ran over it (appProtocol), and it selects exactly
    # the model's server pods.
    assert pool["spec"].get("appProtocol") == "http"
    pods = client.CoreV1Api(models.custom.api_client).list_namespaced_pod(
        namespace, label_selector=",".join(f"{key}={value}" for key, value in selector.items())).items
    assert pods and {pod.metadata.labels["app.kubernetes.io/component"] for pod in pods} == {"server"}
    assert {ref.name for pod in pods for ref in pod.metadata.owner_references or []} <= {
        rs.metadata.name for rs in models.apps.list_namespaced_replica_set(namespace).items
        if any(ref.name == "chat" for ref in rs.metadata.owner_references or [])}
    status = models.wait_reconciled("chat", lambda s: "inferencePool" in s.get("server", {}))
    assert status["server"]["inferencePool"] == "InferencePool chat selects the server pods"
    assert models.conditions("chat")["Failure"]["status"] == "False"


def test_a_deleted_pool_comes_back(models):
    models.custom.delete_namespaced_custom_object(POOL_GROUP, POOL_VERSION, models.namespace, POOLS, "chat")
    wait_until("InferencePool chat gone", lambda: models.pool("chat") is None, 30, interval=0.2)
    wait_until("InferencePool chat back", lambda: models.pool("chat"), 60, lambda: models.describe("chat"), interval=0.5)


def test_the_pool_goes_with_its_model(models):
    models.custom.delete_namespaced_custom_object(GROUP, VERSION, models.namespace, PLURAL, "chat")
    wait_until("InferencePool chat removed with its model", lambda: models.pool("chat") is None, 120,
               lambda: models.describe("chat"), interval=0.5)
