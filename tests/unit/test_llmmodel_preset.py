"""module_utils/llmmodel_preset.py without a cluster: the preset a server was deployed with is kept
while the model's spec is as last reconciled (its generation is its observedGeneration) and its
upgrade-server annotation as recorded, and what a newer preset would change is told."""

from __future__ import annotations

import json

import unit_helpers  # noqa: F401  (puts the role's module_utils under ansible.module_utils)

from ansible.module_utils.llmmodel_preset import pin, recorded

KEY = "inference.ai.example.com/server-preset"
OLD = {"image": "ghcr.io/ggml-org/llama.cpp:server-b7131", "command": [], "args": ["--model", "/model-weights/m.gguf"]}
NEW = {"image": "mirror.example/llama.cpp:2", "command": [], "args": ["--model", "/model-weights/m.gguf", "--metrics"]}


def deployment(record):
    text = record if isinstance(record, str) else json.dumps(record)
    return {"metadata": {"name": "m", "annotations": {KEY: text}}}


def deployed(preset, upgrade=""):
    """The Deployment as the role applied it for ``preset``."""
    return deployment(pin(preset, {}, KEY, 3, upgrade)["record"])


def test_a_new_server_runs_the_preset_as_it_is_now_and_records_it():
    first = pin(NEW, {}, KEY, 3, observed=3)
    assert first["preset"] == NEW and not first["pinned"] and first["changes"] == []
    assert json.loads(first["record"]) == {"upgrade": "", **NEW}


def test_a_running_server_keeps_its_preset_while_the_spec_is_unchanged():
    kept = pin(NEW, deployed(OLD), KEY, 3, observed=3)
    assert kept["pinned"] and kept["preset"] == OLD
    assert kept["record"] == pin(OLD, {}, KEY, 3)["record"]  # applied again as it is: no request, no rollout
    assert kept["changes"] == ["image ghcr.io/ggml-org/llama.cpp:server-b7131 -> mirror.example/llama.cpp:2", "arguments +--metrics"]


def test_a_spec_change_that_keeps_the_preset_keeps_the_record():
    # The record names no generation: the Deployment (whose generation moves with any change of its
    # annotations) is as last applied.
    assert pin(OLD, deployed(OLD), KEY, 4, observed=3)["record"] == deployed(OLD)["metadata"]["annotations"][KEY]


def test_a_spec_change_or_the_annotation_takes_the_new_preset():
    for taken in (pin(NEW, deployed(OLD), KEY, 4, observed=3), pin(NEW, deployed(OLD), KEY, 3, "2026-12-05", observed=3),
                  pin(NEW, deployed(OLD), KEY, 3)):  # never reconciled (no observedGeneration)
        assert not taken["pinned"] and taken["preset"] == NEW and taken["changes"] == []
    # Asked once: the next reconciles keep what the annotation took, until it changes again.
    again = pin({**NEW, "image": "other:3"}, deployed(NEW, upgrade="2026-12-05"), KEY, 3, "2026-12-05", observed=3)
    assert again["preset"] == NEW and again["changes"] == ["image mirror.example/llama.cpp:2 -> other:3"]


def test_a_model_with_its_own_image_pins_only_the_presets_arguments():
    own = {**OLD, "image": None}
    kept = pin({**NEW, "image": None}, deployed(own), KEY, 3, observed=3)
    assert kept["preset"]["image"] is None and kept["changes"] == ["arguments +--metrics"]
    assert pin({**own}, deployed(own), KEY, 3, observed=3)["changes"] == []


def test_removed_and_changed_arguments_are_told():
    fresh = {**OLD, "command": ["vllm", "serve"], "args": ["--model", "/model-weights/n.gguf"]}
    assert pin(fresh, deployed(OLD), KEY, 3, observed=3)["changes"] == [
        "command (the image's) -> vllm serve", "arguments +/model-weights/n.gguf -/model-weights/m.gguf"]


def test_a_deployment_of_an_earlier_release_or_an_unsound_record_gets_the_current_preset():
    assert recorded({}, KEY) is None and recorded({"metadata": {"annotations": {}}}, KEY) is None
    unsound = [
        "not json", "[]", OLD, {"upgrade": 3, **OLD}, {"upgrade": "", **OLD, "image": "two words"},
        {"upgrade": "", **OLD, "args": "--metrics"}, {"upgrade": "", **OLD, "command": [1]},
    ]
    for record in unsound:
        assert recorded(deployment(record), KEY) is None, record
        assert pin(NEW, deployment(record), KEY, 3, observed=3)["preset"] == NEW
