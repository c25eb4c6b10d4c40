"""The role's rendering of a server whose runtime preset changed under it (an operator upgrade, the
manager's LLMMODEL_IMAGE_<PRESET>): the Deployment keeps the preset it was deployed with until the
model's spec changes or its upgrade-server annotation asks, and the status says a newer one waits and
how to take it. Rendered by the role's own tasks (tasks/server.yml, templates/deployment.yaml.j2,
templates/state.yaml.j2) through real Ansible."""

from __future__ import annotations

import json

import pytest
from render_helpers import case, model, render, server_container

KEY = "inference.ai.example.com/server-preset"
UPGRADE = "inference.ai.example.com/upgrade-server"
MIRROR = "mirror.example/llama.cpp:2"
# What an earlier release's llamacpp preset resolved to (no --alias, no --metrics), recorded then.
EARLIER = {"image": "ghcr.io/ggml-org/llama.cpp:server-b1000", "command": [], "args": ["--model", "/model-weights/m.gguf"]}


def deployed(preset, upgrade=""):
    record = json.dumps({"upgrade": upgrade, **preset})
    return {"metadata": {"name": "m", "annotations": {KEY: record}}, "spec": {"replicas": 1},
            "status": {"replicas": 1, "availableReplicas": 1, "updatedReplicas": 1}}


def llamacpp(generation=1, annotations=None, **serve):
    obj = model(generation=generation, runtime="llamacpp", modelFile="m.gguf", args=["--ctx-size", "512"], **serve)
    obj["metadata"]["annotations"] = annotations or {}
    obj["status"] = {**obj.get("status", {}), "observedGeneration": 1}  # reconciled at generation 1
    return obj


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    cases = {
        "new": case(llamacpp()),
        "deployed before": case(llamacpp(), deployment=deployed(EARLIER), server_ready=True),
        "spec changed": case(llamacpp(generation=2), deployment=deployed(EARLIER), server_ready=True),
        "asked": case(llamacpp(annotations={UPGRADE: "1"}), deployment=deployed(EARLIER), server_ready=True),
        "asked, kept": case(llamacpp(annotations={UPGRADE: "1"}), deployment=deployed(EARLIER, upgrade="1"), server_ready=True),
        "own image": case(llamacpp(image="registry.example/own:2"), deployment=deployed({**EARLIER, "image": None}), server_ready=True),
    }
    return render(cases, tmp_path_factory.mktemp("render"), envvars={"LLMMODEL_IMAGE_LLAMACPP": MIRROR})


def condition(result, ctype):
    return next(c for c in result["state"]["conditions"] if c["type"] == ctype)


def test_a_new_server_runs_the_preset_as_it_is_now_and_records_it(rendered):
    result = rendered["new"]
    container = server_container(result)
    assert container["image"] == MIRROR and container["args"] == result["server"]["args"] + ["--ctx-size", "512"]
    record = json.loads(result["objects"]["Deployment"]["metadata"]["annotations"][KEY])
    assert record == {"upgrade": "", "image": MIRROR, "command": [], "args": result["server"]["args"]}
    assert condition(result, "ServerUpToDate")["status"] == "True"
    assert condition(result, "ServerUpToDate")["reason"] == "PresetCurrent"


def test_a_running_server_keeps_the_preset_it_was_deployed_with(rendered):
    result = rendered["deployed before"]
    container = server_container(result)
    assert container["image"] == EARLIER["image"] and container["args"] == EARLIER["args"] + ["--ctx-size", "512"]
    # The same pod template as the one deployed: the record is on the Deployment, not its pods.
    assert KEY not in result["objects"]["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert json.loads(result["objects"]["Deployment"]["metadata"]["annotations"][KEY]) == {"upgrade": "", **EARLIER}
    told = condition(result, "ServerUpToDate")
    assert (told["status"], told["reason"]) == ("False", "PresetUpgradeAvailable")
    assert f"image {EARLIER['image']} -> {MIRROR}" in told["message"] and "+--alias" in told["message"]
    assert f"kubectl annotate llmmodel -n ns m {UPGRADE}=\"$(date +%s)\" --overwrite" in told["message"]
    assert condition(result, "Ready")["reason"] == "Available"  # the model serves as before


@pytest.mark.parametrize("name", ["spec changed", "asked"])
def test_a_spec_change_or_the_annotation_rolls_the_current_preset(rendered, name):
    result = rendered[name]
    assert server_container(result)["image"] == MIRROR
    assert server_container(result)["args"] == result["server"]["args"] + ["--ctx-size", "512"]
    assert condition(result, "ServerUpToDate")["status"] == "True"


def test_what_the_annotation_took_stays_until_it_changes_again(rendered):
    assert server_container(rendered["asked, kept"])["image"] == EARLIER["image"]
    assert condition(rendered["asked, kept"], "ServerUpToDate")["reason"] == "PresetUpgradeAvailable"


def test_a_model_with_its_own_image_keeps_it_and_pins_only_the_presets_arguments(rendered):
    result = rendered["own image"]
    assert server_container(result)["image"] == "registry.example/own:2"
    assert server_container(result)["args"] == EARLIER["args"] + ["--ctx-size", "512"]
    told = condition(result, "ServerUpToDate")["message"]
    assert "arguments +--alias" in told and "image " not in told
