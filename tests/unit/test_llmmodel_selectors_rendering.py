"""Every selector the role renders picks the model's own server pods, by the model's UID, and no pod
of another release labelled like them (docs/design.md, "Selectors"): the Service, the Deployment
(and through its scale subresource the HPA), the PodDisruptionBudget, the PodMonitor and the pod
affinities of the server and of a pull beside it. The selectors are found by walking what the role
renders, so a new object or affinity is checked without being named here.
"""

from __future__ import annotations

import pytest
from render_helpers import case, model, render

UID_LABEL = "inference.ai.example.com/model-uid"
OWN = {"app.kubernetes.io/component": "server", UID_LABEL: "u-1"}
# A Helm release of the same name whose chart labels its pods as the previous selectors matched them.
FOREIGN_POD_LABELS = {"app.kubernetes.io/instance": "m", "app.kubernetes.io/component": "server",
                      "app.kubernetes.io/name": "other-chart", "inference.ai.example.com/model-uid": "other"}
RETIRING = {"retiring": True, "retired": [], "available": 1}


def rwx(obj):
    obj["spec"]["storageAccessMode"] = "ReadWriteMany"
    return obj


CASES = {
    "replicas on one node": case(model(runtime="vllm", replicas=3)),
    "autoscaled with a budget": case(rwx(model(runtime="vllm", autoscaling={"minReplicas": 2, "maxReplicas": 4}))),
    "scraped": case(model(runtime="llamacpp"), pulled={"gguf": "m.gguf", "size": 1024}),
    "pull beside the server": case(model(runtime="vllm", replicas=2), weights_ready=False, pull_beside_server=True),
    "retiring the previous selector": {**case(model(runtime="vllm")), "migration": RETIRING},
    "old pods kept serving": {**case(model(runtime="vllm")), "migration": {"retiring": False, "retired": ["m-5d8f7c9b4"], "available": 1}},
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return render(CASES, tmp_path_factory.mktemp("selectors"))


def selectors(node, where=""):
    """(where, matchLabels) of every label selector in a rendered object."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            path = "%s.%s" % (where, key)
            if key in ("selector", "labelSelector") and isinstance(value, dict):
                found.append((path, value.get("matchLabels", value)))
                assert set(value) <= {"matchLabels"} or "matchLabels" not in value, path
            else:
                found.extend(selectors(value, path))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found.extend(selectors(item, "%s[%d]" % (where, index)))
    return found


def matches(selector, labels):
    return all(labels.get(key) == value for key, value in selector.items())


def all_selectors(result):
    return [(kind + path, selector) for kind, obj in result["objects"].items() for path, selector in selectors(obj)]


@pytest.mark.parametrize("name", [name for name in CASES if name != "retiring the previous selector"])
def test_every_selector_is_the_models_uid(rendered, name):
    found = all_selectors(rendered[name])
    assert found, "the case renders no selector"
    assert {where: selector for where, selector in found} == {where: OWN for where, _ in found}
    assert not [where for where, selector in found if matches(selector, FOREIGN_POD_LABELS)]


def test_the_selectors_cover_every_object_that_selects(rendered):
    where = {path for name in CASES for path, _ in all_selectors(rendered[name])}
    assert {"Service.spec.selector", "Deployment.spec.selector", "PodDisruptionBudget.spec.selector",
            "PodMonitor.spec.selector"} <= where
    assert any(path.startswith("Deployment.") and "podAffinity" in path for path in where)
    assert any(path.startswith("Job.") and "podAffinity" in path for path in where)


@pytest.mark.parametrize("name", list(CASES))
def test_the_server_pods_carry_the_uid_label(rendered, name):
    deployment = rendered[name]["objects"].get("Deployment")
    if deployment is None:
        # Weights not ready: no server rendered; retiring: the new Deployment comes in the next run.
        assert name in ("pull beside the server", "retiring the previous selector")
        return
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert matches(deployment["spec"]["selector"]["matchLabels"], labels)
    assert labels[UID_LABEL] == "u-1"
    # The previous release's selector still matches them: a Service of that selector keeps both generations.
    assert matches({"app.kubernetes.io/instance": "m", "app.kubernetes.io/component": "server"}, labels)


def test_while_the_old_deployment_retires_the_service_keeps_selecting_both_generations(rendered):
    objects = rendered["retiring the previous selector"]["objects"]
    assert objects["Service"]["spec"]["selector"] == {"app.kubernetes.io/instance": "m", "app.kubernetes.io/component": "server"}
    # The old Deployment is orphaned in this run; the role applies the new one in the next.
    assert "Deployment" not in objects


def test_the_new_deployment_records_the_old_pods_it_waits_for(rendered):
    annotations = rendered["old pods kept serving"]["objects"]["Deployment"]["metadata"]["annotations"]
    assert annotations["inference.ai.example.com/retired-replicasets"] == "m-5d8f7c9b4"
    assert "inference.ai.example.com/retired-replicasets" not in rendered["scraped"]["objects"]["Deployment"]["metadata"]["annotations"]
