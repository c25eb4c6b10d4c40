"""The real part of `make demo` (hack/demo.py calls it when the cluster has its real node).

Two LLMModels, `smollm2` and `smollm2-b`, in the namespace `llm-demo-real`, whose pods all run on the
real node: the SmolLM2-135M-Instruct GGUF (`make model`) pulled from the node's model server into a
real volume each, served by llama.cpp's server (`make images`). The router (hack/demo_router.py) runs
beside them as the Service llm-operator-router. Once both are Serving: the router's model list and a
streamed chat through it, each printed with the curl command that a user can repeat.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time

import demo_router
import node
import fetch_model  # the sha256 of a file, as `make model` checks it

NAMESPACE = os.environ.get("LLM_DEMO_REAL_NAMESPACE", "llm-demo-real")
MODEL_FILE = node.MODELS_DIR / "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER_IMAGE = os.environ.get("LLAMA_SERVER_IMAGE", "ghcr.io/llm-operator/llama-server:0.7.0")
TIMEOUT = float(os.environ.get("LLM_DEMO_REAL_TIMEOUT", "600"))
PORT = 8080
QUESTION = "What is the capital of France? Answer in one short sentence."
# Two models from the same GGUF: the router tells them apart by name, each is its own server.
MODELS = ("smollm2", "smollm2-b")


def model(name: str, sha256: str) -> dict:
    return {
        "apiVersion": "inference.ai.example.com/v1alpha1",
        "kind": "LLMModel",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "source": {"url": node.model_url(MODEL_FILE.name), "sha256": sha256},
            "serve": {
                "image": SERVER_IMAGE,
                "port": PORT,
                "args": ["-m", f"/model-weights/{MODEL_FILE.name}", "-a", name, "-c", "2048", "-t", "1"],
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
          f"pulled into a real volume for each of {', '.join(MODELS)} and served by llama.cpp in namespace {NAMESPACE}",
          flush=True)
    kubectl("apply", "-f", "-", stdin=json.dumps(node.real_namespace(NAMESPACE)))
    sha256 = fetch_model.sha256(MODEL_FILE)
    for name in MODELS:
        kubectl("apply", "-f", "-", stdin=json.dumps(model(name, sha256)))
    router_ip = demo_router.deploy(kubectl, NAMESPACE)
    wait_serving(kubectl)
    show_router(router_ip)


def wait_serving(kubectl) -> None:
    deadline, last = time.monotonic() + TIMEOUT, ""
    while True:
        states = {}
        for item in json.loads(kubectl("get", "llmmodels", "-n", NAMESPACE, "-o", "json"))["items"]:
            status = item.get("status", {})
            ready = {c["type"]: c["status"] for c in status.get("conditions", [])}.get("Ready")
            states[item["metadata"]["name"]] = (status.get("phase", "-"), ready or "-")
        line = ", ".join(f"{name}={phase} Ready={ready}" for name, (phase, ready) in sorted(states.items()))
        if line != last:
            print(f"demo: {line}", flush=True)
            last = line
        if all(states.get(name) == ("Serving", "True") for name in MODELS):
            return
        if time.monotonic() > deadline:
            sys.exit(f"demo: {', '.join(MODELS)} were not Serving and Ready after {TIMEOUT:.0f}s: "
                     f"bin/kubectl get llmmodels,jobs,pods -n {NAMESPACE}; operator log: .cluster/operator.log")
        time.sleep(3)


def shown(command: list[str]) -> str:
    return shlex.join(command)


def show_router(router_ip: str) -> None:
    """The one endpoint: both models listed, then a chat streamed through the router, as curl shows it."""
    base = f"http://{router_ip}:{demo_router.PORT}/v1"
    command = ["curl", "-sS", "-m", "30", f"{base}/models"]
    print(f"\ndemo: the router's model list (kube-proxy takes it to the router's pod):\n  {shown(command)}")
    listed = subprocess.run(command, capture_output=True, text=True, check=False).stdout
    try:
        ids = [entry["id"] for entry in json.loads(listed)["data"]]
    except (ValueError, KeyError):
        sys.exit(f"demo: no model list from the router: {listed}")
    print(f"demo: /v1/models lists {', '.join(ids)}")
    # Temperature 0, as the e2e suite asks: the same answer every time.
    body = json.dumps({"model": MODELS[1], "stream": True, "messages": [{"role": "user", "content": QUESTION}],
                       "max_tokens": 48, "temperature": 0})
    command = ["curl", "-sSN", "-m", "120", f"{base}/chat/completions", "-H", "Content-Type: application/json",
               "-d", body]
    print(f"\ndemo: a streamed chat with {MODELS[1]} through the router (server-sent events, passed on as they come):")
    print(f"  {shown(command)}")
    with subprocess.Popen(command, stdout=subprocess.PIPE) as curl:
        pieces = []
        while piece := os.read(curl.stdout.fileno(), 65536):
            pieces.append(piece)
    text = ""
    for event in b"".join(pieces).decode(errors="replace").split("\n\n"):
        if event.startswith("data: {"):
            choices = json.loads(event[6:]).get("choices") or [{}]
            text += choices[0].get("delta", {}).get("content") or ""
    if not text.strip():
        sys.exit(f"demo: no streamed answer through the router: {b''.join(pieces)[:2000]!r}")
    print(f"\ndemo: {MODELS[1]} answered through the router in {len(pieces)} pieces as they arrived "
          f"(REAL: a llama.cpp server on the real node): {text.strip()}")
    print(f"demo: an application sets base_url={base} (the Service llm-operator-router.{demo_router.NAMESPACE}:"
          f"{demo_router.PORT} inside the cluster) and picks the model by name.\n")
