"""Scale to zero and back against a real API server (the local cluster: `make router-cluster-test`).

The router's scaler writes a real Deployment's scale subresource and a real activity Lease. What must
hold: many wakes from two routers at once make one write (the Deployment's generation moves by one);
a router does not scale down a model another router used within the idle period; two routers
scaling down at once make one write; a router started and restarted over a model in use writes
nothing (no flap); a request held by a whole router wakes the model's real Deployment.

The Deployment's pods can never become ready here (a node selector no node has): no request is ever
sent to a pod address, and a held request ends with the router's 503 once its wait is over.
"""

import asyncio
import http.client
import json
import threading
import time

import pytest
from test_kube_source import kubectl, namespace, wait_for  # noqa: F401 (fixture)

from llm_router.config import Settings
from llm_router.kube import KubeApi, KubeScaler, KubeSource
from llm_router.main import Router
from llm_router.table import Model


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(coroutine, timeout=60):
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout)

    yield run
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def api() -> KubeApi:
    return KubeApi.from_kubeconfig(json.loads(kubectl("config", "view", "--raw", "-o", "json")))


def server(namespace: str, replicas: int) -> None:
    kubectl(
        "apply",
        "-f",
        "-",
        stdin=json.dumps(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "qwen", "namespace": namespace},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": "qwen"}},
                    "template": {
                        "metadata": {"labels": {"app": "qwen"}},
                        "spec": {
                            "nodeSelector": {"router-test/never": "true"},
                            "containers": [{"name": "server", "image": "registry.invalid/server:1"}],
                        },
                    },
                },
            }
        ),
    )


def deployment(namespace: str) -> tuple[int, int]:
    """(spec.replicas, metadata.generation): each write of the replicas moves the generation by one."""
    obj = json.loads(kubectl("-n", namespace, "get", "deployment", "qwen", "-o", "json"))
    return obj["spec"]["replicas"], obj["metadata"]["generation"]


def test_two_routers_wake_once_and_scale_down_once(namespace, loop):
    server(namespace, 0)
    model = Model(namespace, "qwen")
    one, two = KubeScaler(api(), namespace, "router-1"), KubeScaler(api(), namespace, "router-2")
    _, generation = deployment(namespace)

    async def wakes():
        return await asyncio.gather(*[(one if index % 2 else two).wake(model) for index in range(20)])

    assert sum(loop(wakes())) == 1
    assert deployment(namespace) == (1, generation + 1)

    loop(one.touch(model))  # router 1 uses the model
    assert loop(two.scale_down(model, 60)) is False
    assert deployment(namespace) == (1, generation + 1)
    lease = json.loads(kubectl("-n", namespace, "get", "lease", f"llm-router.{namespace}.qwen", "-o", "json"))
    assert lease["spec"]["holderIdentity"] == "router-1"

    time.sleep(2.5)  # both idle for longer than an idle period of 2 s

    async def downs():
        return await asyncio.gather(one.scale_down(model, 2), two.scale_down(model, 2))

    assert sum(loop(downs())) == 1
    assert deployment(namespace) == (0, generation + 2)


def status_patch(namespace: str, phase: str, reason: str) -> None:
    status = {
        "phase": phase,
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if phase == "Serving" else "False",
                "reason": reason,
                "message": "set by the test",
                "lastTransitionTime": "2026-12-05T00:00:00Z",
            }
        ],
        "server": {"idleSeconds": 30, "startupBudgetSeconds": 3},
    }
    kubectl(
        "-n", namespace, "patch", "llmmodel", "qwen", "--subresource=status", "--type=merge", "-p",
        json.dumps({"status": status}),
    )  # fmt: skip


def model_object(namespace: str) -> dict:
    return {
        "apiVersion": "inference.ai.example.com/v1alpha1",
        "kind": "LLMModel",
        "metadata": {"name": "qwen", "namespace": namespace},
        "spec": {
            "source": {"huggingFaceRepo": "Qwen/Qwen2.5-0.5B-Instruct"},
            "serve": {"runtime": "vllm", "autoscaling": {"minReplicas": 0, "maxReplicas": 1, "idleSeconds": 30}},
            "storageSize": "1Gi",
        },
    }


def start_router(loop, namespace: str) -> Router:
    settings = Settings(host="127.0.0.1", port=0, admin_port=0, lease_namespace=namespace, drain_timeout=1.0)
    source = KubeSource(api(), frozenset([namespace]))
    router = Router(settings, source, KubeScaler(source.api, namespace))

    async def start():
        await router.start()
        await asyncio.wait_for(source.synced.wait(), 30)

    loop(start())
    return router


def test_a_restarted_router_does_not_flap_and_a_held_request_wakes_the_real_deployment(namespace, loop):
    kubectl("apply", "-f", "-", stdin=json.dumps(model_object(namespace)))
    server(namespace, 1)
    status_patch(namespace, "Deploying", "Deploying")
    before = deployment(namespace)

    for _ in range(2):  # started, then restarted: no write either time (nothing asked for the model)
        router = start_router(loop, namespace)
        assert router.table.models[f"{namespace}/qwen"].scaling is not None
        time.sleep(3)
        loop(router.stop())
    assert deployment(namespace) == before

    kubectl("-n", namespace, "scale", "deployment", "qwen", "--replicas=0")
    status_patch(namespace, "Idle", "ScaledToZero")
    _, generation = deployment(namespace)
    router = start_router(loop, namespace)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", router.port, timeout=30)
        connection.request("POST", "/v1/chat/completions", body=json.dumps({"model": "qwen", "messages": []}))
        response = connection.getresponse()
        body = json.loads(response.read())
        # held for the model's startup budget (3 s), while its real Deployment was woken
        assert response.status == 503 and body["error"]["code"] == "model_not_ready"
        assert "phase Idle, reason ScaledToZero" in body["error"]["message"]
        assert deployment(namespace) == (1, generation + 1)
        assert 'llm_router_scale_events_total{model="%s/qwen",direction="up"} 1' % namespace in metrics(router)
    finally:
        loop(router.stop())


def metrics(router) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", router.admin_port, timeout=5)
    connection.request("GET", "/metrics")
    return connection.getresponse().read().decode()


def test_the_load_of_two_routers_is_summed_and_their_scale_written_once(namespace, loop):
    server(namespace, 1)
    model = Model(namespace, "qwen")
    one, two = KubeScaler(api(), namespace, "router-1"), KubeScaler(api(), namespace, "router-2")
    assert loop(one.report(model, 3)) == 3
    lease = f"llm-router.{namespace}.qwen"
    kubectl("-n", namespace, "annotate", "lease", lease, "inference.ai.example.com/load.gone=9 1000")  # a dead router
    assert loop(two.report(model, 4)) == 7  # the dead router's 9 is not counted...
    assert loop(one.report(model, 3)) == 7
    annotations = json.loads(kubectl("-n", namespace, "get", "lease", lease, "-o", "json"))["metadata"]["annotations"]
    assert "inference.ai.example.com/load.gone" not in annotations  # ... and is forgotten
    assert sorted(annotations.values())[0].startswith("3 ")
    _, generation = deployment(namespace)

    async def both():
        decide = lambda current: 4 if current < 4 else None  # noqa: E731
        return await asyncio.gather(one.set_replicas(model, decide), two.set_replicas(model, decide))

    assert sorted(loop(both()), key=str) == [(1, 4), None]
    assert deployment(namespace) == (4, generation + 1)
