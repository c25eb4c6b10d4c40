"""The cluster's TableSource against a real API server (the local cluster: `make router-cluster-test`).

An LLMModel and its server's Service with a selector; a pod that kwok plays as ready: the
EndpointSlice controller makes the slice (copying the Service's labels), and the source must show the
model, its phase and reason from status, and the pod's address as its only ready endpoint; then
follow a status change, a pod going unready and the model's deletion, from its watches. No request is
sent to the pod's address: it is kwok's, not a real one.
"""

import asyncio
import json
import os
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from llm_router.kube import KubeApi, KubeSource
from llm_router.table import RoutingTable

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = str(ROOT / "bin" / "kubectl")
KUBECONFIG = os.environ.get("KUBECONFIG", str(ROOT / ".cluster" / "kubeconfig"))
LABELS = {
    "app.kubernetes.io/name": "llmmodel",
    "app.kubernetes.io/instance": "qwen",
    "app.kubernetes.io/managed-by": "llm-operator",
    "inference.ai.example.com/model": "qwen",
    "app.kubernetes.io/component": "server",
}


def kubectl(*args, stdin=None) -> str:
    """kubectl's output; a fresh API server's "storage is (re)initializing" is waited out (30 s at most)."""
    deadline = time.monotonic() + 30
    while True:
        done = subprocess.run(
            [KUBECTL, "--kubeconfig", KUBECONFIG, *args], input=stdin, capture_output=True, text=True, timeout=60
        )
        if done.returncode == 0:
            return done.stdout
        if "initializing" not in done.stderr or time.monotonic() > deadline:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr}")
        time.sleep(1)


def apply(obj: dict) -> None:
    kubectl("apply", "-f", "-", stdin=json.dumps(obj))


def wait_for(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.2)


@pytest.fixture
def namespace():
    name = f"router-kube-{uuid.uuid4().hex[:6]}"
    kubectl("apply", "-f", str(ROOT / "config" / "crd" / "bases"))
    kubectl("wait", "--for=condition=Established", "crd/llmmodels.inference.ai.example.com", "--timeout=30s")
    kubectl("create", "namespace", name)
    yield name
    kubectl("delete", "namespace", name, "--wait=false")


@pytest.fixture
def source():
    config = json.loads(kubectl("config", "view", "--raw", "-o", "json"))
    table = RoutingTable()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    kube = KubeSource(KubeApi.from_kubeconfig(config))

    async def start():
        return asyncio.ensure_future(kube.run(table))

    runner = asyncio.run_coroutine_threadsafe(start(), loop).result(5)

    def look(function):
        async def wrapper():
            return function(table)

        return asyncio.run_coroutine_threadsafe(wrapper(), loop).result(5)

    yield kube, look

    async def stop():
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)

    asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def test_models_and_ready_endpoints_from_watches(namespace, source):
    kube, look = source
    apply(
        {
            "apiVersion": "inference.ai.example.com/v1alpha1",
            "kind": "LLMModel",
            "metadata": {"name": "qwen", "namespace": namespace},
            "spec": {
                "source": {"huggingFaceRepo": "Qwen/Qwen2.5-0.5B-Instruct"},
                "serve": {"runtime": "vllm"},
                "storageSize": "1Gi",
            },
        }
    )
    full = f"{namespace}/qwen"
    wait_for(lambda: look(lambda table: full in table.models))
    assert kube.synced.is_set()

    kubectl(
        "-n",
        namespace,
        "patch",
        "llmmodel",
        "qwen",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(
            {
                "status": {
                    "phase": "Serving",
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "Available",
                            "message": "ok",
                            "lastTransitionTime": "2026-12-05T00:00:00Z",
                        }
                    ],
                }
            }
        ),
    )
    wait_for(
        lambda: look(lambda table: (table.models[full].phase, table.models[full].reason)) == ("Serving", "Available")
    )

    apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "qwen", "namespace": namespace, "labels": LABELS},
            "spec": {
                "selector": {"app.kubernetes.io/instance": "qwen", "app.kubernetes.io/component": "server"},
                "ports": [{"name": "http", "port": 8000, "targetPort": "http"}],
            },
        }
    )
    apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "qwen-server", "namespace": namespace, "labels": LABELS},
            "spec": {
                "nodeName": "kwok-cpu-1",
                "containers": [
                    {
                        "name": "server",
                        "image": "registry.invalid/server:1",
                        "ports": [{"name": "http", "containerPort": 8080}],
                    }
                ],
            },
        }
    )
    pod_ip = wait_for(
        lambda: (
            json.loads(kubectl("-n", namespace, "get", "pod", "qwen-server", "-o", "json"))
            .get("status", {})
            .get("podIP")
        )
    )
    endpoints = wait_for(lambda: look(lambda table: [e.key for e in table.models[full].endpoints]))
    assert endpoints == [(pod_ip, 8080)]

    kubectl("-n", namespace, "delete", "pod", "qwen-server", "--wait=false")
    wait_for(lambda: look(lambda table: table.models[full].endpoints == []))

    kubectl("-n", namespace, "delete", "llmmodel", "qwen", "--wait=false")
    wait_for(lambda: look(lambda table: full not in table.models))
