import pytest

from llm_model_puller.sources import file_name_for_url, hf_source, public_https_url, redact_url


@pytest.mark.parametrize(
    ("url", "endpoint", "expected"),
    [
        ("s3://bucket/key.gguf", None, "https://bucket.s3.amazonaws.com/key.gguf"),
        ("s3://bucket/dir/sub/model.gguf", None, "https://bucket.s3.amazonaws.com/dir/sub/model.gguf"),
        ("s3://my.dotted.bucket/m.gguf", None, "https://s3.amazonaws.com/my.dotted.bucket/m.gguf"),
        ("s3://bucket/a b+c%.gguf", None, "https://bucket.s3.amazonaws.com/a%20b%2Bc%25.gguf"),
        ("s3://bucket/k?v=1#x", None, "https://bucket.s3.amazonaws.com/k%3Fv%3D1%23x"),
        ("s3://bucket/dir/m.gguf", "http://minio.local:9000", "http://minio.local:9000/bucket/dir/m.gguf"),
        ("s3://bucket/m.gguf", "https://s3.example.com/", "https://s3.example.com/bucket/m.gguf"),
        ("gs://bucket/dir/m.gguf", None, "https://storage.googleapis.com/bucket/dir/m.gguf"),
        ("gs://bucket/dir/m.gguf", "http://ignored-for-gs", "https://storage.googleapis.com/bucket/dir/m.gguf"),
        ("https://host/x/m.gguf?sig=1", None, "https://host/x/m.gguf?sig=1"),
        ("http://127.0.0.1:8080/m.gguf", "http://ignored", "http://127.0.0.1:8080/m.gguf"),
    ],
)
def test_public_https_url(url, endpoint, expected):
    assert public_https_url(url, endpoint) == expected


@pytest.mark.parametrize(
    "url", ["s3://bucket", "s3://bucket/", "s3:///key", "gs://bucket/dir/", "ftp://h/f", "https:///f"]
)
def test_public_https_url_rejects_incomplete_or_foreign_urls(url):
    with pytest.raises(ValueError):
        public_https_url(url)


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
