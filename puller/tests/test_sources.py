import pytest

from llm_model_puller.sources import file_name_for_url, hf_source, redact_url


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://h/models/tiny.Q4_K_M.gguf", "tiny.Q4_K_M.gguf"),
        ("https://h/a/b/model.safetensors?download=true", "model.safetensors"),
        ("https://h/a/q4%20model.gguf", "q4 model.gguf"),
        ("s3://bucket/dir/m.gguf", "m.gguf"),
        ("gs://bucket/m%20x.gguf", "m%20x.gguf"),  # raw keys are not percent-decoded
    ],
)
def test_file_name_for_url(url, name):
    assert file_name_for_url(url) == name


@pytest.mark.parametrize("url", ["https://h/", "https://h", "https://h/dir/..", "https://h/.llm-model-puller.json"])
def test_file_name_for_url_refuses_unusable_names(url):
    with pytest.raises(ValueError):
        file_name_for_url(url)


def test_redact_url_drops_credentials_query_and_fragment():
    assert redact_url("https://user:pw@h:8443/p/m.gguf?X-Amz-Signature=abc#f") == "https://h:8443/p/m.gguf?<redacted>"
    assert redact_url("http://h/m.gguf") == "http://h/m.gguf"


def test_hf_source():
    assert hf_source("acme/tiny", "main") == "hf://acme/tiny@main"
