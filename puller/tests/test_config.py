import time
from pathlib import Path

import pytest

from llm_model_puller.config import Settings, config_from_env, secrets_from_env
from llm_model_puller.errors import UsageError

SHA = "ab" * 32


def test_hugging_face_defaults():
    env = {"HF_REPO": "acme/tiny", "HF_TOKEN": "t0k"}
    cfg = config_from_env(env)
    assert cfg.dest == Path("/model-weights")
    assert cfg.source == "hf://acme/tiny@main"
    assert (cfg.hf_repo, cfg.hf_revision, cfg.hf_token, cfg.hf_endpoint) == ("acme/tiny", "main", "t0k", None)
    assert secrets_from_env(env) == ["t0k"]
    assert cfg.settings == Settings()


def test_url_with_checksum_and_knobs():
    env = {
        "MODEL_URL": "gs://b/m.gguf",
        "MODEL_SHA256": SHA.upper(),
        "MODEL_DEST": "/w",
        "HF_REVISION": "",  # Kubernetes renders absent optional values as empty strings
        "PULLER_MAX_RETRIES": "0",
        "PULLER_BACKOFF_SECONDS": "0.5",
    }
    cfg = config_from_env(env)
    assert (cfg.dest, cfg.source, cfg.file_name, cfg.sha256) == (Path("/w"), "gs://b/m.gguf", "m.gguf", SHA)
    assert (cfg.gcs.endpoint, cfg.gcs.bucket, cfg.gcs.key, cfg.s3) == ("https://storage.googleapis.com", "b", "m.gguf", None)
    assert (cfg.settings.max_retries, cfg.settings.backoff_seconds) == (0, 0.5)
    assert secrets_from_env(env) == []


def test_aws_credentials_are_secrets():
    env = {"MODEL_URL": "s3://b/llama/", "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s3cr3t/key",
           "AWS_SESSION_TOKEN": "FwoGZXIvYXdz", "AWS_CONTAINER_AUTHORIZATION_TOKEN": "agent-token", "AWS_REGION": "eu-west-1"}
    assert set(secrets_from_env(env)) == {"AKIAEXAMPLE", "s3cr3t/key", "FwoGZXIvYXdz", "agent-token"}
    cfg = config_from_env(env)
    assert (cfg.s3.bucket, cfg.s3.key, cfg.s3.region, cfg.s3.is_prefix) == ("b", "llama/", "eu-west-1", True)
    assert cfg.fetch_url == "https://b.s3.eu-west-1.amazonaws.com/llama/" and cfg.file_name == "llama"


def test_secrets_of_every_url_in_the_environment():
    env = {"MODEL_URL": "https://h/m.gguf?sig=SIGNATURE", "HF_ENDPOINT": "https://user:hubpassword@hub",
           "AWS_ENDPOINT_URL": "http://minio:miniosecret@m:9000", "HF_TOKEN": " hf_x "}
    found = secrets_from_env(env)
    assert {"hf_x", "sig=SIGNATURE", "SIGNATURE", "hubpassword", "miniosecret"} <= set(found)
    assert config_from_env({"MODEL_URL": env["MODEL_URL"]}).source.startswith("https://h/m.gguf?query-sha256=")


def test_aws_endpoint_variables():
    env = {"MODEL_URL": "s3://b/m.gguf", "AWS_ENDPOINT_URL": "http://generic:9000"}
    assert config_from_env(env).fetch_url == "http://generic:9000/b/m.gguf"
    env["AWS_ENDPOINT_URL_S3"] = "http://s3-specific:9000"
    assert config_from_env(env).fetch_url == "http://s3-specific:9000/b/m.gguf"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "set exactly one of HF_REPO and MODEL_URL"),
        ({"HF_REPO": "a/b", "MODEL_URL": "https://h/m"}, "not both"),
        ({"HF_REPO": "a/b", "MODEL_SHA256": SHA}, "MODEL_SHA256 goes with MODEL_URL only"),
        ({"MODEL_URL": "https://h/m", "HF_REVISION": "main"}, "HF_REVISION goes with HF_REPO only"),
        ({"MODEL_URL": "https://h/m", "MODEL_SHA256": "abc"}, "64 hexadecimal characters"),
        ({"MODEL_URL": "ftp://h/m"}, "scheme must be one of"),
        ({"MODEL_URL": "s3://bucket"}, "must name a bucket and an object key"),
        ({"MODEL_URL": "https://h/"}, "cannot derive a file name"),
        ({"HF_REPO": "just-a-name"}, "owner/name"),
        ({"HF_REPO": "a/../b"}, "owner/name"),
        ({"HF_REPO": "a/b", "HF_ENDPOINT": "mirror.local"}, "HF_ENDPOINT must be an http(s) URL"),
        ({"HF_REPO": "a/b", "PULLER_MAX_RETRIES": "many"}, "PULLER_MAX_RETRIES must be a number"),
        ({"HF_REPO": "a/b", "PULLER_BACKOFF_SECONDS": "-1"}, "PULLER_BACKOFF_SECONDS must be at least 0"),
    ],
)
def test_bad_environment_is_a_usage_error(env, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config_from_env(env)


@pytest.mark.parametrize(
    "env",
    [
        {"HF_REPO": "acme/tiny", "MODEL_URL": "http://127.0.0.1:9/m.gguf"},
        {"HF_REPO": "acme/tiny", "MODEL_SHA256": SHA, "HF_TOKEN": "hf_usageTOKEN"},
        {"MODEL_URL": "http://127.0.0.1:9/m.gguf", "HF_REVISION": "v1"},
        {},
    ],
)
def test_bad_combination_exits_2_at_once_with_one_line(puller, dest, env):
    started = time.monotonic()
    run = puller(env)

    assert run.returncode == 2
    assert time.monotonic() - started < 5  # no network, no retries: straight out
    lines = run.output.strip().splitlines()
    assert len(lines) == 1 and "ERROR configuration error: " in lines[0] and lines[0].endswith("(exit 2)")
    assert run.termination.startswith("configuration error: ") and run.termination.count("\n") == 1
    assert "hf_usageTOKEN" not in run.output
    assert list(dest.iterdir()) == []


def test_arguments_are_refused_and_help_is_printed(puller):
    assert puller({"HF_REPO": "a/b"}, args=["--dest", "/x"]).returncode == 2
    helped = puller({}, args=["--help"])
    assert helped.returncode == 0 and "exit codes:" in helped.stdout


def test_unwritable_destination_is_a_configuration_error(puller, tmp_path):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    run = puller({"HF_REPO": "a/b", "MODEL_DEST": str(blocker / "weights")})
    assert run.returncode == 2
    assert run.termination.startswith(
        f"configuration error: MODEL_DEST {blocker / 'weights'} is not a writable directory"
    )
