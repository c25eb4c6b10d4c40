"""The manager's LLMMODEL_IMAGE_<PRESET> replaces a runtime preset's pinned image
(roles/llmmodel/defaults/main.yml): how the chart's runtimeImages, an air-gapped registry's mirror,
reach every model that names only a runtime. The presets and the variable names come from
hack/chart.py, which writes the chart's values from the same role defaults."""

from __future__ import annotations

import importlib.util

import pytest
from render_helpers import case, model, render, server_container
from unit_helpers import REPO

_spec = importlib.util.spec_from_file_location("chart", REPO / "hack" / "chart.py")
chart = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chart)

PRESETS = chart.runtime_presets()
MIRROR = "mirror.example/{}:1"


def preset_model(preset, **serve):
    return model(runtime=preset, modelFile="m.gguf", **serve)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    cases = {preset: case(preset_model(preset)) for preset in PRESETS}
    cases.update({f"{preset} own image": case(preset_model(preset, image="registry.example/own:2")) for preset in PRESETS})
    env = {f"LLMMODEL_IMAGE_{preset.upper()}": MIRROR.format(preset) for preset in PRESETS}
    return render(cases, tmp_path_factory.mktemp("render"), envvars=env)


def test_every_preset_with_an_image_is_overridable():
    assert {"vllm", "llamacpp", "ollama"} <= set(PRESETS)


@pytest.mark.parametrize("preset", PRESETS)
def test_the_managers_environment_replaces_the_presets_image(rendered, preset):
    pod = rendered[preset]["objects"]["Deployment"]["spec"]["template"]["spec"]
    images = {container["image"] for container in pod["containers"] + pod.get("initContainers", [])}
    assert images == {MIRROR.format(preset)}


@pytest.mark.parametrize("preset", PRESETS)
def test_the_models_own_image_still_wins(rendered, preset):
    assert server_container(rendered[f"{preset} own image"])["image"] == "registry.example/own:2"
