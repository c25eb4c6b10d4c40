"""The NetworkPolicy the role renders, accepted by a REAL API server as it is rendered (`make
unit-cluster-test`). Whether traffic is then refused is the network plugin's job: the local cluster
has none that enforces NetworkPolicy (docs/design.md says so)."""

from __future__ import annotations

import pytest
from render_helpers import case, model, render

pytestmark = pytest.mark.cluster


def test_the_api_server_stores_the_rendered_policy_unchanged(dynamic, namespace, tmp_path):
    env = {"LLMMODEL_NETWORK_POLICY": "true", "LLMMODEL_ROUTER_NAMESPACE": "llm-operator-system",
           "LLMMODEL_NETWORK_POLICY_NAMESPACES": "monitoring"}
    obj = model(namespace=namespace, runtime="vllm")
    policy = render({"served": case(obj)}, tmp_path, envvars=env)["served"]["objects"]["NetworkPolicy"]
    policies = dynamic.resources.get(api_version="networking.k8s.io/v1", kind="NetworkPolicy")
    stored = policies.create(body=policy, namespace=namespace).to_dict()
    assert stored["spec"] == policy["spec"]
    assert len(stored["spec"]["ingress"][0]["from"]) == 3
