"""The real part of `make demo` (hack/demo.py calls it when the cluster has its real node).

An LLMModel `smollm2` in the namespace `llm-demo-real`, whose pods all run on the real node: the
SmolLM2-135M-Instruct GGUF (`make model`) pulled from the node's model server into a real volume,
served by llama.cpp's server (`make images`). Once it is Serving, one chat request to its Service,
printed with the curl command that a user can repeat.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import node
import fetch_model  # the sha256 of a file, as `make model` checks it

NAMESPACE = os.environ.get("LLM_DEMO_REAL_NAMESPACE", "llm-demo-real")
MODEL_FILE = node.MODELS_DIR / "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER_IMAGE = os.environ.get("LLAMA_SERVER_IMAGE", "ghcr.io/llm-operator/llama-server:0.7.0")
TIMEOUT = float(os.environ.get("LLM_DEMO_REAL_TIMEOUT", "600"))
PORT = 8080
QUESTION = "What is the capital of France? Answer in one short sentence."


def model(sha256: str) -> dict:
    return {
        "apiVersion": "inference.ai.example.com/v1alpha1",
        "kind": "LLMModel",
        "metadata": {"name": "smollm2", "namespace": NAMESPACE},
        "spec": {
            "source": {"url": node.model_url(MODEL_FILE.name), "sha256": sha256},
            "serve": {
                "image": SERVER_IMAGE,
                "port": PORT,
                "args": ["-m", f"/model-weights/{MODEL_FILE.name}", "-a", "smollm2", "-c", "2048", "-t", "1"],
            },
            "storageSize": "1Gi",
        },
    }


def main(kubectl_command: list[str]) -> None:
    def kubectl(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run([*kubectl_command, *args], input=stdin, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"demo: kubectl {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    if not MODEL_FILE.exists():
        sys.exit(f"demo: no {MODEL_FILE}: `make model` fetches it")
    print(f"\ndemo: REAL: on the real node (containerd, runc, a kubelet on this machine), {MODEL_FILE.name} is "
          f"pulled into a real volume and served by llama.cpp in namespace {NAMESPACE}", flush=True)
    kubectl("apply", "-f", "-", stdin=json.dumps(node.real_namespace(NAMESPACE)))
    kubectl("apply", "-f", "-", stdin=json.dumps(model(fetch_model.sha256(MODEL_FILE))))
    deadline, last = time.monotonic() + TIMEOUT, ""
    while True:
        status = json.loads(kubectl("get", "llmmodel", "smollm2", "-n", NAMESPACE, "-o", "json")).get("status", {})
        ready = {c["type"]: c["status"] for c in status.get("conditions", [])}.get("Ready")
        line = f"smollm2={status.get('phase', '-')} Ready={ready or '-'}"
        if line != last:
            print(f"demo: {line}", flush=True)
            last = line
        if status.get("phase") == "Serving" and ready == "True":
            break
        if time.monotonic() > deadline:
            sys.exit(f"demo: smollm2 was not Serving and Ready after {TIMEOUT:.0f}s: "
                     f"bin/kubectl get llmmodels,jobs,pods -n {NAMESPACE}; operator log: .cluster/operator.log")
        time.sleep(3)
    cluster_ip = kubectl("get", "service", "smollm2", "-n", NAMESPACE, "-o", "jsonpath={.spec.clusterIP}").strip()
    # Temperature 0, as the e2e suite asks: the same answer every time (sampled, the 135M model
    # sometimes answers the question wrongly, which says nothing about the operator).
    body = json.dumps({"model": "smollm2", "messages": [{"role": "user", "content": QUESTION}], "max_tokens": 48,
                       "temperature": 0})
    command = ["curl", "-sS", "-m", "120", f"http://{cluster_ip}:{PORT}/v1/chat/completions",
               "-H", "Content-Type: application/json", "-d", body]
    print("\ndemo: a chat request to the model's Service (kube-proxy takes it to the pod on the real node):")
    print("  " + " ".join(c if c.startswith(("curl", "-", "http")) else f"'{c}'" for c in command))
    answer = subprocess.run(command, capture_output=True, text=True, check=False)
    try:
        reply = json.loads(answer.stdout)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError):
        sys.exit(f"demo: no completion: {answer.stdout}{answer.stderr}")
    print(f"\ndemo: SmolLM2 answered (REAL: a llama.cpp server on the real node): {reply.strip()}\n")
