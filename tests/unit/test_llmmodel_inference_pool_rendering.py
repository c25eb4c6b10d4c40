"""The InferencePool (Gateway API Inference Extension v1) the role renders for a serving model
(docs/design.md, "Gateway API"): it selects exactly the model's server pods, by the model's UID
selector, on the server container's port, and exists only once the server does. The role's real tasks
and templates, run by ansible-playbook (render_helpers.py)."""

from __future__ import annotations

from render_helpers import GIB, case, model, render, server_container

import pytest

LLAMA = {"pulled": {"gguf": "tiny.gguf", "size": GIB}}

CASES = {
    "vllm": case(model(runtime="vllm")),
    "llamacpp": case(model(runtime="llamacpp"), **LLAMA),
    "custom port": case(model(image="registry.example/server:1", port=9000)),
    "weights not ready": case(model(runtime="vllm"), weights_ready=False, job_state="running"),
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return render(CASES, tmp_path_factory.mktemp("render-inference-pool"))


@pytest.mark.parametrize("name", ["vllm", "llamacpp", "custom port"])
def test_a_serving_model_gets_a_pool_of_exactly_its_server_pods(rendered, name):
    result = rendered[name]
    pool = result["objects"]["InferencePool"]
    deployment = result["objects"]["Deployment"]
    assert pool["apiVersion"] == "inference.networking.k8s.io/v1"
    assert pool["metadata"]["name"] == "m" and pool["metadata"]["namespace"] == "ns"
    assert pool["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "llm-operator"
    # The model's UID selector, as its Service and Deployment select the pods: no other release's pod.
    selector = pool["spec"]["selector"]["matchLabels"]
    assert selector == deployment["spec"]["selector"]["matchLabels"]
    assert selector == result["objects"]["Service"]["spec"]["selector"]
    assert selector["inference.ai.example.com/model-uid"] == "u-1"
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    # The port the server container listens on (a pool targets pod IPs, not the Service).
    (http,) = [port for port in server_container(result)["ports"] if port["name"] == "http"]
    assert pool["spec"]["targetPorts"] == [{"number": http["containerPort"]}]
    # No endpoint picker of the model's own: that is the gateway installation's.
    assert set(pool["spec"]) == {"selector", "targetPorts"}
    # Applied after the Deployment, with the server's other children.
    assert result["order"].index("InferencePool") > result["order"].index("Deployment")


def test_the_custom_port_is_the_pools_port(rendered):
    assert rendered["custom port"]["objects"]["InferencePool"]["spec"]["targetPorts"] == [{"number": 9000}]


def test_no_pool_before_the_server(rendered):
    assert "InferencePool" not in rendered["weights not ready"]["objects"]
    assert "Deployment" not in rendered["weights not ready"]["objects"]
