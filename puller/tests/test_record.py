"""The success record's choice of the GGUF model file a server loads (record.py)."""

import pytest

from llm_model_puller.record import gguf_model, success_record


@pytest.mark.parametrize(
    "paths, chosen",
    [
        (["tiny.Q4_K_M.gguf"], "tiny.Q4_K_M.gguf"),
        (["config.json", "model.safetensors"], None),
        (["a.Q4_K_M.gguf", "a.Q8_0.gguf"], None),  # several quantisations: the user chooses
        (["model.gguf", "mmproj-model-f16.gguf"], "model.gguf"),  # a projector is not a model
        (["q8/m-00002-of-00002.gguf", "q8/m-00001-of-00002.gguf"], "q8/m-00001-of-00002.gguf"),
        (["m-00001-of-00002.gguf", "m-00002-of-00002.gguf", "other.gguf"], None),
        (["a-00001-of-00002.gguf", "b-00001-of-00002.gguf"], None),
    ],
)
def test_the_gguf_model_is_chosen_only_when_it_is_obvious(paths, chosen):
    assert gguf_model(paths) == chosen


def test_the_record_names_size_revision_and_model_file():
    manifest = {"files": [{"path": "x.gguf", "size": 7}, {"path": "README", "size": 3}], "total_bytes": 10, "sha256": "ab"}
    assert success_record(manifest, "https://h/x.gguf") == {"source": "https://h/x.gguf", "size": 10, "sha256": "ab", "gguf": "x.gguf"}
