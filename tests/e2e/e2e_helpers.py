"""Helpers of the e2e suite (tests/e2e): names, manifests, waiting, and the server's answer."""

from __future__ import annotations

import functools
import json
import os
import pathlib
import subprocess
import sys
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "hack"))
sys.path.insert(0, str(REPO / "tests" / "testbed"))
sys.path.insert(0, str(REPO / "puller" / "tests"))
sys.path.insert(0, str(REPO / "puller" / "src"))  # s3_server.py signs its uploads with the puller's signer

import node  # noqa: E402  (the real node's names and addresses)
from fetch_model import sha256 as sha256_of  # noqa: E402,F401  (the tests hash the model file and the volume's copy)
from testbed_helpers import wait_until as poll_until  # noqa: E402

KUBECONFIG = os.environ.get("KUBECONFIG") or str(REPO / ".cluster" / "kubeconfig")
KUBECTL = str(REPO / "bin" / "kubectl")
# The images a user would name; `make images` builds them and the node imports them (never pulled).
IMG = os.environ.get("IMG", "ghcr.io/llm-operator/llm-operator:0.1.0")
PULLER_IMAGE = os.environ.get("LLMMODEL_PULLER_IMAGE", "ghcr.io/llm-operator/llm-model-puller:0.1.0")
SERVER_IMAGE = os.environ.get("LLAMA_SERVER_IMAGE", "ghcr.io/llm-operator/llama-server:0.7.0")
# A test fixture (images/runs-as-root): an image whose user is root, refused by the kubelet under runAsNonRoot.
ROOT_IMAGE = "localhost/llm-operator/runs-as-root:test"
MODEL_FILE = pathlib.Path(os.environ.get("LLM_E2E_MODEL", str(REPO / ".cache" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf")))
OPERATOR_NAMESPACE = "llm-operator-system"
# The operator is installed from its Helm chart; the release "llm-operator" names the manager as
# `make deploy` does.
HELM = str(REPO / "bin" / "helm")
CHART = REPO / "charts" / "llm-operator"
RELEASE = "llm-operator"
MANAGER = "llm-operator-controller-manager"
GROUP, VERSION, PLURAL = "inference.ai.example.com", "v1alpha1", "llmmodels"
SERVED_NAME = "smollm2"
HUB_REPO = "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF"
# The same files behind a gate: only the Hub token of GATED_TOKEN may read them.
GATED_REPO = "llm-operator-e2e/SmolLM2-gated"
GATED_TOKEN = "hf_e2eGatedToken"
PRIVATE_BUCKET = "private-models"  # the object store of the e2e suite (conftest.object_store)
MODEL_FOLDER = "smollm2"
PORT = 8080
# The probes here run kubectl or ask the model server: every 2 s is often enough.
wait_until = functools.partial(poll_until, interval=2.0)


def kubectl(*args: str, check: bool = True, timeout: float = 120, input_text: str | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([KUBECTL, "--kubeconfig", KUBECONFIG, *args], capture_output=True, text=True,
                            timeout=timeout, check=False, input=input_text)
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result


def helm(*args: str, check: bool = True, timeout: float = 360) -> subprocess.CompletedProcess:
    result = subprocess.run([HELM, "--kubeconfig", KUBECONFIG, *args], capture_output=True, text=True, timeout=timeout,
                            check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result


def operator_namespace() -> None:
    """The release namespace as docs/install.md makes it: restricted Pod Security enforced; here also
    the real node's annotations (its pods run there)."""
    namespace = node.real_namespace(OPERATOR_NAMESPACE)
    namespace["metadata"]["labels"] = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")}
    kubectl("apply", "--server-side", "--field-manager=e2e", "-f", "-", input_text=json.dumps(namespace))


def llmmodel(name: str, source: dict, model_path: str | None, purge: bool) -> dict:
    """An LLMModel served by llama.cpp's server from the weights volume (SmolLM2 fits 2 cores).

    With a model_path, the server's whole command line is the user's (runtime custom, served as
    SERVED_NAME); without, the llamacpp preset finds the GGUF file the pull recorded and serves it
    under the model's name. Either way the image is the locally built one, never pulled."""
    tuning = ["-c", "2048", "-t", "1"]
    if model_path:
        serve = {"image": SERVER_IMAGE, "port": PORT,
                 "args": ["-m", f"/model-weights/{model_path}", "--host", "0.0.0.0", "--port", str(PORT),
                          "-a", SERVED_NAME, *tuning]}
    else:
        serve = {"runtime": "llamacpp", "image": SERVER_IMAGE, "args": tuning}
    serve["resources"] = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "LLMModel",
        "metadata": {"name": name},
        "spec": {"source": source, "serve": serve, "storageSize": "1Gi", "purgeWeightsOnDelete": purge},
    }


def chat(cluster_ip: str, question: str, model: str = SERVED_NAME) -> dict:
    """POST /v1/chat/completions to the model's Service VIP (kube-proxy takes it to the pod)."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": question}],
                       "max_tokens": 24, "temperature": 0}).encode()
    request = urllib.request.Request(f"http://{cluster_ip}:{PORT}/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())
