"""Fixtures of the e2e suite: the operator from its image on the real node, and the model's sources.

Needs the local cluster with its real node and the project's images imported into it
(`make e2e-test` does all of that). Without them the tests FAIL with a message: they never skip.
The operator's namespace and the models' namespace carry the annotations of node.real_namespace():
their pods run on the real node (the kwok nodes keep every other pod).
"""

from __future__ import annotations

import os
import subprocess

import pytest
from kubernetes import client
from kubernetes import config as kube_config

from e2e_helpers import (CHART, GATED_REPO, GATED_TOKEN, HUB_REPO, IMG, KUBECONFIG, MANAGER, MODEL_FILE, MODEL_FOLDER, OPERATOR_NAMESPACE,
                         PRIVATE_BUCKET, PULLER_IMAGE, RELEASE,
                         REPO, ROOT_IMAGE, SERVER_IMAGE, helm, kubectl, node, operator_namespace, sha256_of, wait_until)
from puller_servers import FakeHub, FileServer, HubRepo
from gcs_server import FakeGcs, GoogleFront
from s3_server import S3Server
from azure_server import AzureServer
from prometheus_operator_crds import fetch as fetch_prometheus_operator_crds



@pytest.fixture(scope="session")
def api():
    if not os.path.exists(KUBECONFIG):
        pytest.fail(f"no kubeconfig at {KUBECONFIG}: `make cluster-up REAL_NODE=1` first", pytrace=False)
    nodes = kubectl("get", "nodes", "-o", "name", check=False)
    if f"node/{node.NODE_NAME}" not in nodes.stdout.split():
        pytest.fail(f"no real node in the cluster of {KUBECONFIG} ({nodes.stdout.strip() or nodes.stderr.strip()}): "
                    "`make cluster-up REAL_NODE=1`", pytrace=False)
    images = subprocess.run([str(REPO / "bin" / "crictl"), "--runtime-endpoint", f"unix://{node.CONTAINERD_SOCKET}",
                             "images", "-o", "json"], capture_output=True, text=True, check=False).stdout
    missing = [i for i in (IMG, PULLER_IMAGE, SERVER_IMAGE, ROOT_IMAGE, node.PAUSE_IMAGE) if f'"{i}"' not in images]
    if missing:
        pytest.fail(f"images not in the real node's containerd: {missing}: `make images` (they are imported at "
                    "`cluster-up REAL_NODE=1`)", pytrace=False)
    if not MODEL_FILE.exists():
        pytest.fail(f"no model at {MODEL_FILE}: `make model`", pytrace=False)
    return kube_config.new_client_from_config(config_file=KUBECONFIG)


@pytest.fixture(scope="session")
def model_bytes():
    return MODEL_FILE.read_bytes()


@pytest.fixture(scope="session")
def model_server(model_bytes):
    """The GGUF over plain HTTP on the node's bridge address, where the pull Job's pod reaches this machine."""
    with FileServer(host=node.NODE_IP) as server:
        server.add(f"/models/{MODEL_FILE.name}", model_bytes)
        yield server


@pytest.fixture(scope="session")
def hub(model_bytes):
    """A Hub-compatible endpoint (the puller's test Hub) on the bridge address, holding the GGUF repo,
    and the same files in a gated repo that only GATED_TOKEN may read."""
    files = {MODEL_FILE.name: model_bytes, "README.md": b"SmolLM2 135M Instruct, GGUF\n"}
    repos = {HUB_REPO: HubRepo(files=files), GATED_REPO: HubRepo(files=dict(files), gated=True)}
    with FakeHub(repos, token=GATED_TOKEN, host=node.NODE_IP) as server:
        yield server


def put_model_folder(put, put_file=None):
    """Put the model folder every e2e object store holds in PRIVATE_BUCKET: SmolLM2's GGUF (by put_file,
    streamed, where the store has it), a README and a licence below it."""
    if put_file is None:
        put(PRIVATE_BUCKET, f"{MODEL_FOLDER}/{MODEL_FILE.name}", MODEL_FILE.read_bytes())
    else:
        put_file(PRIVATE_BUCKET, f"{MODEL_FOLDER}/{MODEL_FILE.name}", MODEL_FILE)
    put(PRIVATE_BUCKET, f"{MODEL_FOLDER}/README.md", b"SmolLM2 135M Instruct, GGUF\n")
    put(PRIVATE_BUCKET, f"{MODEL_FOLDER}/licenses/LICENSE", b"Apache-2.0\n")


@pytest.fixture(scope="session")
def object_store(tmp_path_factory):
    """A private object store: versitygw (it checks AWS Signature V4) on the bridge address, where the
    pull pods reach this machine and nothing beyond it does, with the bucket PRIVATE_BUCKET (no anonymous
    access) holding SmolLM2 in a model folder of several files, and its root and reader key pairs."""
    with S3Server(tmp_path_factory.mktemp("object-store"), host=node.NODE_IP) as store:
        store.create_bucket(PRIVATE_BUCKET)
        put_model_folder(store.put, store.put_file)
        yield store


@pytest.fixture(scope="session")
def gcs_store(tmp_path_factory):
    """Cloud Storage on the bridge address: fake-gcs-server behind GoogleFront (puller/tests/gcs_server.py),
    whose token endpoint verifies the RS256 JWT of a key file made here and whose storage front refuses a
    request without a token it issued. The bucket PRIVATE_BUCKET holds the same model folder as
    object_store; ``gcs_store.key`` is the key file of the account that may read it."""
    workdir = tmp_path_factory.mktemp("gcs-store")
    with FakeGcs(workdir, host=node.NODE_IP) as store, GoogleFront(store, host=node.NODE_IP) as front:
        store.create_bucket(PRIVATE_BUCKET)
        put_model_folder(store.put)
        front.key = front.account("puller@e2e-project.iam.gserviceaccount.com")
        yield front


@pytest.fixture(scope="session")
def azure_store(tmp_path_factory):
    """A private Azure storage account: Azurite (it checks Shared Key and SAS signatures) on the bridge
    address, with the container PRIVATE_BUCKET (no public access) holding SmolLM2 in a model folder."""
    with AzureServer(tmp_path_factory.mktemp("azure-store"), host=node.NODE_IP) as store:
        store.create_container(PRIVATE_BUCKET)
        put_model_folder(store.put, store.put_file)
        yield store


@pytest.fixture(scope="session")
def prometheus_operator_crds(api):
    """The Prometheus Operator's CRDs (from its Go module, hack/prometheus_operator_crds.py), installed
    before the operator: the chart's monitoring objects (the manager's ServiceMonitor and the alerts)
    then install, and every served model gets its PodMonitor (tests/e2e/test_e2e_monitoring.py)."""
    crds = fetch_prometheus_operator_crds()
    kubectl("apply", "--server-side", "-f", str(crds))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", str(crds))


@pytest.fixture(scope="session")
def operator(api, hub, prometheus_operator_crds):
    """The operator installed from its Helm chart, as docs/install.md says: the release namespace made
    first (restricted Pod Security enforced, and here the real node's annotations), then `helm install`
    with the operator image, the puller image, the Hub endpoint (LLMMODEL_HF_ENDPOINT) and monitoring
    on as values. Uninstalled at the end unless a test did (test_e2e_upgrade_uninstall.py)."""
    operator_namespace()
    repository, tag = IMG.rsplit(":", 1)
    helm("install", RELEASE, str(CHART), "-n", OPERATOR_NAMESPACE, "--set", f"image.repository={repository},image.tag={tag}",
         "--set", f"pullerImage={PULLER_IMAGE},hfEndpoint={hub.url}", "--set", "monitoring.enabled=true")
    apps = client.AppsV1Api(api)

    def describe():
        return (kubectl("get", "pods", "-n", OPERATOR_NAMESPACE, "-o", "wide", check=False).stdout
                + kubectl("get", "events", "-n", OPERATOR_NAMESPACE, check=False).stdout[-3000:])

    def available():
        deployment = apps.read_namespaced_deployment(MANAGER, OPERATOR_NAMESPACE)
        status = deployment.status
        return (status.observed_generation == deployment.metadata.generation and status.updated_replicas == 1
                and status.available_replicas == 1 and status.unavailable_replicas is None)

    wait_until("the operator's manager to be available on the real node", available, 240, describe)
    yield
    if helm("status", RELEASE, "-n", OPERATOR_NAMESPACE, check=False).returncode == 0:
        kubectl("delete", "llmmodels", "--all", "--all-namespaces", "--timeout=180s", check=False, timeout=200)
        helm("uninstall", RELEASE, "-n", OPERATOR_NAMESPACE, "--wait", check=False)


@pytest.fixture(scope="session")
def model_sha256():
    return sha256_of(MODEL_FILE)
