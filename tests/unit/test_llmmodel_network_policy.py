"""The servers' NetworkPolicy (llmmodel_network_policy, templates/networkpolicy.yaml.j2): rendered by
the role's real tasks and templates only when the operator is set to, before the Deployment, letting
in the model's own namespace, the router's pods and the namespaces named; recorded on the Deployment
so that apply.yml removes it once the setting is off."""

from __future__ import annotations

import pytest
from render_helpers import case, model, render

POLICY_ANNOTATION = "inference.ai.example.com/network-policy"
ON = {"LLMMODEL_NETWORK_POLICY": "true", "LLMMODEL_ROUTER_NAMESPACE": "llm-operator-system",
      "LLMMODEL_NETWORK_POLICY_NAMESPACES": "monitoring, ,observability"}
CASES = {
    "served": case(model(runtime="vllm")),
    "pulling": case(model(runtime="vllm"), weights_ready=False, job_state="running"),
}


@pytest.fixture(scope="module")
def rendered_on(tmp_path_factory):
    return render(CASES, tmp_path_factory.mktemp("policy-on"), envvars=ON)


@pytest.fixture(scope="module")
def rendered_off(tmp_path_factory):
    return render({"served": CASES["served"]}, tmp_path_factory.mktemp("policy-off"))


def expected_policy_spec(selector: dict) -> dict:
    router = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "llm-operator-system"}},
              "podSelector": {"matchLabels": {"app.kubernetes.io/name": "llm-operator",
                                              "app.kubernetes.io/component": "router"}}}
    named = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}
             for name in ("monitoring", "observability")]
    return {"podSelector": {"matchLabels": selector}, "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {}}, router, *named]}]}


def test_on_the_policy_comes_before_the_deployment_and_selects_exactly_its_pods(rendered_on):
    result = rendered_on["served"]
    assert result["order"] == ["PersistentVolumeClaim", "Service", "NetworkPolicy", "Deployment", "PodMonitor", "InferencePool"]
    policy, deployment = result["objects"]["NetworkPolicy"], result["objects"]["Deployment"]
    assert policy["metadata"]["name"] == deployment["metadata"]["name"]
    assert policy["metadata"]["namespace"] == "ns"
    assert policy["spec"] == expected_policy_spec(deployment["spec"]["selector"]["matchLabels"])
    assert deployment["metadata"]["annotations"][POLICY_ANNOTATION] == "true"


def test_on_nothing_while_there_is_no_server(rendered_on):
    assert "NetworkPolicy" not in rendered_on["pulling"]["objects"]


def test_off_by_default_no_policy_and_no_record(rendered_off):
    result = rendered_off["served"]
    assert "NetworkPolicy" not in result["objects"]
    assert POLICY_ANNOTATION not in result["objects"]["Deployment"]["metadata"]["annotations"]
