"""gs:// sources through the Cloud Storage JSON API, the puller run as a subprocess against
fake-gcs-server behind GoogleFront (gcs_server.py): the token endpoint verifies the RS256 signature of
the key file's JWT against the public key of a key pair made here, the metadata server stands in for
GKE's workload identity, and every storage request must carry a token they issued."""

import json
import signal
import subprocess
import sys
import time

import pytest
from gcs_server import FakeGcs, GoogleFront, key_file, new_key

from puller_testkit import MANIFEST, SRC, STAGING, MiB, payload, sha256
from s3_server import SlowProxy, free_port

EXIT_USAGE, EXIT_AUTH, EXIT_NOT_FOUND = 2, 3, 4
BUCKET, DENIED = "gcs-models", "gcs-locked"
PULLER_SA = "puller@test-project.iam.gserviceaccount.com"
WORKLOAD_SA = "workload@test-project.iam.gserviceaccount.com"
GGUF = "tiny/tiny.Q4_K_M.gguf"
FOLDER = {
    "config.json": b'{"model_type": "llama"}\n',
    "model-00001-of-00002.safetensors": payload(3 * MiB, seed=51),
    "model-00002-of-00002.safetensors": payload(2 * MiB + 17, seed=52),
    "tokenizer/tokenizer.json": payload(300_000, seed=53),
}
BIG = "big/weights.bin"  # slow enough through the proxy to kill a pull in its middle
DATA = {GGUF: payload(MiB + 5, seed=50), BIG: payload(8 * MiB, seed=54), **{f"llama/{k}": v for k, v in FOLDER.items()}}


@pytest.fixture(scope="module")
def google(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("gcs")
    with FakeGcs(workdir) as store, GoogleFront(store) as front:
        store.create_bucket(BUCKET)
        store.create_bucket(DENIED)
        front.metadata = {name: store.put(BUCKET, name, data) for name, data in DATA.items()}
        store.put(BUCKET, "llama-other/config.json", b"{}")  # shares the prefix's first letters, not the prefix
        store.put(DENIED, "m.gguf", b"GGUF")
        front.key = front.account(PULLER_SA)
        front.denied.add((PULLER_SA, DENIED))
        front.key_path = workdir / "key.json"
        front.key_path.write_text(json.dumps(front.key))
        yield front


def env_of(google, url: str, **extra: str) -> dict[str, str]:
    """A key file's environment: the Secret's GOOGLE_APPLICATION_CREDENTIALS mounted as a file."""
    return {
        "MODEL_URL": url,
        "GOOGLE_APPLICATION_CREDENTIALS": str(google.key_path),
        "STORAGE_EMULATOR_HOST": f"127.0.0.1:{google.port}",
        "GCE_METADATA_HOST": f"127.0.0.1:{free_port()}",  # nothing listens: no metadata server
        **extra,
    }


def manifest(dest):
    return json.loads((dest / MANIFEST).read_text())


def assert_no_credential(google, run):
    text = run.output + (run.termination or "")
    assert google.key["private_key"].splitlines()[1] not in text
    assert not any(token in text for token in google.tokens)


def test_a_key_file_pulls_one_object_checked_by_md5_and_sha256(google, puller, dest):
    grants = google.grants
    run = puller(env_of(google, f"gs://{BUCKET}/{GGUF}", MODEL_SHA256=sha256(DATA[GGUF])))
    assert run.returncode == 0, run.output
    assert (dest / "tiny.Q4_K_M.gguf").read_bytes() == DATA[GGUF]
    assert f"service account {PULLER_SA} (key file GOOGLE_APPLICATION_CREDENTIALS)" in run.stdout
    assert "verified (md5Hash and MODEL_SHA256)" in run.stdout
    assert google.grants == grants + 1  # one token for the whole pull
    record = manifest(dest)
    assert record["source"] == f"gs://{BUCKET}/{GGUF}" and record["sha256"] == sha256(DATA[GGUF])
    (obj,) = record["objects"]
    assert obj["generation"] == google.metadata[GGUF]["generation"] and obj["md5"] and obj["crc32c"]
    assert json.loads(run.termination)["sha256"] == sha256(DATA[GGUF])
    assert_no_credential(google, run)


def test_a_folder_keeps_its_layout_and_an_unchanged_prefix_fetches_nothing_again(google, puller, dest):
    run = puller(env_of(google, f"gs://{BUCKET}/llama/"))
    assert run.returncode == 0, run.output
    for path, data in FOLDER.items():
        assert (dest / path).read_bytes() == data, path
    assert not (dest / "llama-other").exists() and not (dest / "config.json.tmp").exists()
    record = manifest(dest)
    assert record["kind"] == "gcs-prefix"
    assert {o["path"]: o["generation"] for o in record["objects"]} == {
        path: google.metadata[f"llama/{path}"]["generation"] for path in FOLDER
    }
    assert all(o["sha256"] == sha256(FOLDER[o["path"]]) for o in record["objects"])

    sent = google.media_bytes
    again = puller(env_of(google, f"gs://{BUCKET}/llama/"))
    assert again.returncode == 0 and "nothing to download" in again.stdout, again.output
    assert google.media_bytes == sent


def test_workload_identity_takes_the_metadata_server_s_token(google, puller, dest):
    google.workload_identity = WORKLOAD_SA
    try:
        env = env_of(google, f"gs://{BUCKET}/{GGUF}", GCE_METADATA_HOST=f"127.0.0.1:{google.port}")
        del env["GOOGLE_APPLICATION_CREDENTIALS"]
        run = puller(env)
    finally:
        google.workload_identity = None
    assert run.returncode == 0, run.output
    assert f"workload identity {WORKLOAD_SA} (metadata server 127.0.0.1:{google.port})" in run.stdout
    assert (dest / "tiny.Q4_K_M.gguf").read_bytes() == DATA[GGUF]
    assert_no_credential(google, run)


def settled(google) -> int:
    """The front's count of object bytes sent, once it has not moved for half a second."""
    last = -1
    while google.media_bytes != last:
        last = google.media_bytes
        time.sleep(0.5)
    return last


def test_a_killed_pull_resumes_by_range_and_keeps_finished_objects(google, dest):
    env = {
        **env_of(google, f"gs://{BUCKET}/big/"),
        "MODEL_DEST": str(dest),
        "PYTHONPATH": str(SRC),
        "PATH": "/usr/bin:/bin",
        "PULLER_BACKOFF_SECONDS": "0.01",
    }
    partial = dest / STAGING / "files" / "weights.bin"
    with SlowProxy(google.port, rate=2 * MiB) as proxy:
        pull = subprocess.Popen(
            [sys.executable, "-m", "llm_model_puller"],
            env={**env, "STORAGE_EMULATOR_HOST": f"127.0.0.1:{proxy.port}"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 30
        while not (partial.exists() and partial.stat().st_size >= 2 * MiB) and time.monotonic() < deadline:
            time.sleep(0.05)
        pull.send_signal(signal.SIGKILL)
        pull.communicate(timeout=10)
    had = partial.stat().st_size
    assert 2 * MiB <= had < len(DATA[BIG]), had

    sent = settled(google)  # the killed pull's connection may still be draining into the proxy
    run = subprocess.run(
        [sys.executable, "-m", "llm_model_puller"], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "resuming weights.bin at" in run.stderr + run.stdout
    assert (dest / "weights.bin").read_bytes() == DATA[BIG]
    assert google.media_bytes - sent == len(DATA[BIG]) - had  # only what was missing


def test_a_key_the_token_endpoint_does_not_trust_is_refused_once(google, puller, tmp_path):
    stranger = key_file(PULLER_SA, new_key(), google.token_uri)  # the account's name, another key
    path = tmp_path / "stranger.json"
    path.write_text(json.dumps(stranger))
    run = puller({**env_of(google, f"gs://{BUCKET}/{GGUF}"), "GOOGLE_APPLICATION_CREDENTIALS": str(path)})
    assert run.returncode == EXIT_AUTH, run.output
    assert (
        f"refused the service-account key of {PULLER_SA} (HTTP 400 invalid_grant: Invalid JWT Signature.)"
        in run.termination
    ), run.termination
    assert "retry" not in run.output
    assert stranger["private_key"].splitlines()[1] not in run.output + run.termination


@pytest.mark.parametrize(
    ("url", "code", "words"),
    [
        (f"gs://{DENIED}/m.gguf", EXIT_AUTH, f"access denied to gs://{DENIED}/m.gguf for service account {PULLER_SA}"),
        (f"gs://{DENIED}/llama/", EXIT_AUTH, "grant that account roles/storage.objectViewer"),
        ("gs://no-such-bucket/m.gguf", EXIT_NOT_FOUND, "no such bucket for gs://no-such-bucket/m.gguf"),
        ("gs://no-such-bucket/llama/", EXIT_NOT_FOUND, "no such bucket for gs://no-such-bucket/llama/"),
        (f"gs://{BUCKET}/llama/missing.gguf", EXIT_NOT_FOUND, f"no such object gs://{BUCKET}/llama/missing.gguf"),
        (f"gs://{BUCKET}/empty/", EXIT_NOT_FOUND, f"no object under gs://{BUCKET}/empty/"),
    ],
)
def test_store_errors_say_what_to_fix_once(google, puller, url, code, words):
    run = puller({**env_of(google, url), "PULLER_MAX_RETRIES": "3"})
    assert run.returncode == code, run.output
    assert words in run.termination, run.termination
    assert "retry" not in run.output
    assert_no_credential(google, run)


def test_without_credentials_a_private_bucket_says_which_to_give(google, puller):
    env = env_of(google, f"gs://{BUCKET}/{GGUF}")
    del env["GOOGLE_APPLICATION_CREDENTIALS"]
    run = puller(env)
    assert run.returncode == EXIT_AUTH, run.output
    assert "anonymous requests" in run.stdout
    assert (
        "the request carried no credentials" in run.termination and "GOOGLE_APPLICATION_CREDENTIALS" in run.termination
    )


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("not json", "is not JSON"),
        (json.dumps({"type": "authorized_user", "client_id": "x"}), "is a authorized_user credentials file"),
        (
            json.dumps(
                {"type": "service_account", "client_email": "a@b", "private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n"}
            ),
            "is not an RSA private key in PEM",
        ),
    ],
)
def test_a_bad_key_file_is_a_configuration_error(google, puller, tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_text(content)
    run = puller({**env_of(google, f"gs://{BUCKET}/{GGUF}"), "GOOGLE_APPLICATION_CREDENTIALS": str(path)})
    assert run.returncode == EXIT_USAGE, run.output
    assert words in run.termination, run.termination


def test_a_secret_with_neither_key_file_nor_hmac_keys_says_what_to_put(google, puller, tmp_path):
    """Under the operator GOOGLE_APPLICATION_CREDENTIALS names the mounted Secret key, absent when the
    Secret has no such key (or no Secret exists)."""
    run = puller(
        {**env_of(google, f"gs://{BUCKET}/{GGUF}"), "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "absent")}
    )
    assert run.returncode == EXIT_USAGE, run.output
    assert (
        "put a service-account key file's JSON under the credentials Secret's key GOOGLE_APPLICATION_CREDENTIALS, "
        "or HMAC keys under AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in run.termination
    ), run.termination
