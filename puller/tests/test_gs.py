"""gs:// sources with HMAC keys: Cloud Storage through its S3 interoperability API, signed with HMAC keys
given as the AWS SDKs' variables (test_gcs.py: the JSON API with a key file or workload identity). versitygw (s3_server.py) stands in for storage.googleapis.com: the protocol is the
same (SigV4, path style, ListObjectsV2), so AWS_ENDPOINT_URL points the gs:// pull at it."""

import json

import pytest

from llm_model_puller.config import config_from_env
from llm_model_puller.errors import UsageError
from puller_testkit import MANIFEST, MiB, payload, sha256
from s3_server import ROOT_KEY, S3Server

EXIT_AUTH = 3
BUCKET = "gcs-models"
FILES = {"m.gguf": payload(MiB + 5, seed=41), "folder/config.json": b"{}\n", "folder/sub/weights.bin": payload(MiB, seed=42)}


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    with S3Server(tmp_path_factory.mktemp("gcs")) as server:
        server.create_bucket(BUCKET)
        for key, data in FILES.items():
            server.put(BUCKET, key, data, checksum=None)  # Cloud Storage gives no x-amz-checksum-sha256
        yield server


def test_hmac_keys_sign_a_gs_object_and_a_gs_folder(gcs, puller, dest):
    run = puller({**gcs.env(), "MODEL_URL": f"gs://{BUCKET}/m.gguf", "MODEL_SHA256": sha256(FILES["m.gguf"])})
    assert run.returncode == 0, run.output
    assert (dest / "m.gguf").read_bytes() == FILES["m.gguf"]
    assert "credentials from environment" in run.stdout
    assert json.loads((dest / MANIFEST).read_text())["source"] == f"gs://{BUCKET}/m.gguf"
    assert ROOT_KEY.secret_key not in run.output

    run = puller({**gcs.env(), "MODEL_URL": f"gs://{BUCKET}/folder/"})
    assert run.returncode == 0, run.output
    assert (dest / "sub" / "weights.bin").read_bytes() == FILES["folder/sub/weights.bin"]
    assert (dest / "config.json").read_bytes() == b"{}\n"


def test_a_wrong_hmac_secret_says_which_variable(gcs, puller):
    run = puller({**gcs.env(), "AWS_SECRET_ACCESS_KEY": "not-the-secret-0000000000000000000000000",
                  "MODEL_URL": f"gs://{BUCKET}/m.gguf", "PULLER_MAX_RETRIES": "3"})
    assert run.returncode == EXIT_AUTH, run.output
    assert "(SignatureDoesNotMatch): AWS_SECRET_ACCESS_KEY is not the secret of AWS_ACCESS_KEY_ID" in run.termination
    assert "retry" not in run.stdout


def test_hmac_keys_go_to_cloud_storage_s_interoperability_endpoint(tmp_path):
    hmac = {"MODEL_URL": "gs://acme/llama/", "MODEL_DEST": "/w", "AWS_ACCESS_KEY_ID": "GOOG1E", "AWS_SECRET_ACCESS_KEY": "s"}
    cfg = config_from_env(hmac)
    assert (cfg.s3.endpoint, cfg.s3.region, cfg.s3.uri, cfg.gcs) == ("https://storage.googleapis.com", "auto", "gs://acme/llama/", None)
    assert cfg.s3.object_url("llama/a b.json") == "https://storage.googleapis.com/acme/llama/a%20b.json"
    # A key file that is there goes first (the JSON API); one that is not leaves the HMAC keys in charge.
    key = tmp_path / "key.json"
    key.write_text("{}")
    assert config_from_env({**hmac, "GOOGLE_APPLICATION_CREDENTIALS": str(key)}).gcs.bucket == "acme"
    assert config_from_env({**hmac, "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "absent")}).s3.bucket == "acme"


def test_without_hmac_keys_gs_goes_to_the_json_api():
    cfg = config_from_env({"MODEL_URL": "gs://acme/llama/", "MODEL_DEST": "/w"})
    assert (cfg.gcs.endpoint, cfg.gcs.uri, cfg.s3, cfg.file_name) == ("https://storage.googleapis.com", "gs://acme/llama/", None, "llama")
    assert cfg.gcs.media_url("llama/a b.json", "7") == (
        "https://storage.googleapis.com/download/storage/v1/b/acme/o/llama%2Fa%20b.json?alt=media&generation=7")
    emulated = config_from_env({"MODEL_URL": "gs://acme/m.gguf", "MODEL_DEST": "/w", "STORAGE_EMULATOR_HOST": "localhost:4443"})
    assert emulated.gcs.endpoint == "http://localhost:4443"
    with pytest.raises(UsageError, match="STORAGE_EMULATOR_HOST must be"):
        config_from_env({"MODEL_URL": "gs://acme/m.gguf", "STORAGE_EMULATOR_HOST": "ftp://x"})
