"""gs:// sources: Cloud Storage through its S3 interoperability API, signed with HMAC keys given as the
AWS SDKs' variables. versitygw (s3_server.py) stands in for storage.googleapis.com: the protocol is the
same (SigV4, path style, ListObjectsV2), so AWS_ENDPOINT_URL points the gs:// pull at it."""

import json

import pytest

from llm_model_puller.config import config_from_env
from llm_model_puller.errors import UsageError
from puller_testkit import MANIFEST, MiB, payload, sha256
from s3_server import ROOT_KEY, S3Server

EXIT_USAGE, EXIT_AUTH = 2, 3
BUCKET = "gcs-models"
FILES = {"m.gguf": payload(MiB + 5, seed=41), "folder/config.json": b"{}\n", "folder/sub/weights.bin": payload(MiB, seed=42)}


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    with S3Server(tmp_path_factory.mktemp("gcs")) as server:
        server.create_bucket(BUCKET)
        for key, data in FILES.items():
            server.put(BUCKET, key, data, checksum=False)  # Cloud Storage gives no x-amz-checksum-sha256
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


def test_gs_goes_to_cloud_storage_s_interoperability_endpoint():
    cfg = config_from_env({"MODEL_URL": "gs://acme/llama/", "MODEL_DEST": "/w"})
    assert (cfg.s3.endpoint, cfg.s3.region, cfg.s3.uri) == ("https://storage.googleapis.com", "auto", "gs://acme/llama/")
    assert cfg.s3.object_url("llama/a b.json") == "https://storage.googleapis.com/acme/llama/a%20b.json"


def test_a_service_account_key_file_is_refused_not_sent_unsigned(puller):
    env = {"MODEL_URL": "gs://acme/m.gguf", "MODEL_DEST": "/w", "GOOGLE_APPLICATION_CREDENTIALS": "/var/run/key.json"}
    with pytest.raises(UsageError, match="create HMAC keys for the service account"):
        config_from_env(env)
    run = puller({"MODEL_URL": "gs://acme/m.gguf", "GOOGLE_APPLICATION_CREDENTIALS": "/var/run/key.json"})
    assert run.returncode == EXIT_USAGE and "GOOGLE_APPLICATION_CREDENTIALS" in run.termination, run.output
