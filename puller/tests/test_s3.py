"""s3:// sources against a real S3 server that checks signatures (versitygw on 127.0.0.1, s3_server.py),
the puller run as a subprocess: one object, a prefix with its layout, resume, checksums, the errors."""

import hashlib
import json
import signal
import subprocess
import sys
import time
import zlib
from contextlib import contextmanager

import pytest

from llm_model_puller.s3_errors import s3_error
from puller_servers import RecordingServer
from puller_testkit import MANIFEST, SRC, STAGING, MiB, payload, sha256
from s3_server import READER_KEY, ROOT_KEY, S3Server, SlowProxy, free_port

EXIT_USAGE, EXIT_AUTH, EXIT_NOT_FOUND, EXIT_CHECKSUM, EXIT_NETWORK = 2, 3, 4, 5, 7
BUCKET = "models"
SINGLE = "tiny/tiny.Q4_K_M.gguf"
FOLDER = {  # a multi-file model folder, generated
    "config.json": b'{"model_type": "llama"}\n',
    "model-00001-of-00002.safetensors": payload(3 * MiB, seed=31),
    "model-00002-of-00002.safetensors": payload(2 * MiB + 17, seed=32),
    "tokenizer/tokenizer.json": payload(300_000, seed=33),
}
SECRETS = (ROOT_KEY.secret_key, READER_KEY.secret_key, ROOT_KEY.access_key, READER_KEY.access_key)


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with S3Server(tmp_path_factory.mktemp("s3")) as server:
        server.create_bucket(BUCKET)
        server.put(BUCKET, SINGLE, payload(2 * MiB, seed=30))
        for path, data in FOLDER.items():
            server.put(BUCKET, f"llama/{path}", data)
        server.put(BUCKET, "llama-other/config.json", b"{}")  # shares the prefix's first letters, not the prefix
        yield server


def manifest(dest):
    return json.loads((dest / MANIFEST).read_text())


def assert_no_credential(run):
    for text in (run.stdout, run.stderr, run.termination or ""):
        for secret in SECRETS:
            assert secret not in text


def direct_env(s3, dest, url: str, **extra: str) -> dict[str, str]:
    """The environment of a puller run outside the `puller` fixture (these tests start it themselves)."""
    return {
        **s3.env(),
        "MODEL_URL": url,
        "MODEL_DEST": str(dest),
        "PYTHONPATH": str(SRC),
        "PATH": "/usr/bin:/bin",
        "AWS_EC2_METADATA_DISABLED": "true",
        "PULLER_BACKOFF_SECONDS": "0.01",
        **extra,
    }


def through_s3_proxy(proxy_url: str) -> dict[str, str]:
    """What points the puller at a proxy in front of the store: here AWS_ENDPOINT_URL."""
    return {"AWS_ENDPOINT_URL": proxy_url}


@contextmanager
def slow_pull(s3, env: dict[str, str], ready, via=through_s3_proxy):
    """A puller whose every connection goes through a 4 MiB/s proxy, yielded once ready() is true (at
    most 30 s); the proxy goes when the block ends. via(proxy URL): the variables that point there."""
    with SlowProxy(s3.port, rate=4 * MiB) as proxy:
        pull = subprocess.Popen(
            [sys.executable, "-m", "llm_model_puller"],
            env={**env, **via(proxy.url)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 30
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.02)
        yield pull


def parts_done(dest, key: str) -> int:
    state = dest / STAGING / "s3-state" / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".parts")
    try:
        return len(json.loads(state.read_text())["done"])
    except (OSError, ValueError):
        return 0


def run_direct(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "llm_model_puller"], env=env, capture_output=True, text=True, timeout=60
    )


def run_counted(s3, env: dict[str, str], via=through_s3_proxy) -> tuple[subprocess.CompletedProcess, SlowProxy]:
    """A puller run whose every connection goes through a proxy that counts what the server sent."""
    with SlowProxy(s3.port, rate=0) as proxy:
        return run_direct({**env, **via(proxy.url)}), proxy


HEADERS_SLACK = 64 << 10  # response heads, a listing, a one-byte probe: what a resume may read besides bodies


def test_one_private_object_is_signed_and_checked_against_the_store_checksum(s3, puller, dest):
    data = payload(2 * MiB, seed=30)

    run = puller({**s3.env(), "MODEL_URL": f"s3://{BUCKET}/{SINGLE}", "MODEL_SHA256": sha256(data)})

    assert run.returncode == 0, run.output
    assert (dest / "tiny.Q4_K_M.gguf").read_bytes() == data
    assert f"sha256 {sha256(data)} verified" in run.stdout
    assert "credentials from environment" in run.stdout
    recorded = manifest(dest)
    assert recorded["kind"] == "s3" and recorded["source"] == f"s3://{BUCKET}/{SINGLE}"
    assert recorded["objects"][0]["key"] == SINGLE and recorded["objects"][0]["etag"].startswith('"')
    assert json.loads(run.termination)["gguf"] == "tiny.Q4_K_M.gguf"
    assert_no_credential(run)


def test_a_prefix_keeps_its_layout_and_a_second_pull_transfers_nothing(s3, puller, dest):
    run = puller({**s3.env(), "MODEL_URL": f"s3://{BUCKET}/llama/", "PULLER_S3_MAX_WORKERS": "3"})

    assert run.returncode == 0, run.output
    for path, data in FOLDER.items():
        assert (dest / path).read_bytes() == data, path
    assert sorted(p.name for p in dest.iterdir()) == sorted(
        [MANIFEST, "config.json", "tokenizer", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    )
    recorded = manifest(dest)
    assert recorded["kind"] == "s3-prefix"
    assert [(o["key"], o["path"], o["sha256"]) for o in recorded["objects"]] == [
        (f"llama/{path}", path, sha256(data)) for path, data in sorted(FOLDER.items())
    ]
    assert all(o["etag"] for o in recorded["objects"])
    assert not any(secret in (dest / MANIFEST).read_text() for secret in SECRETS)
    assert "4 objects, 5.3 MiB; 0 already here, 4 to fetch, 3 at a time" in run.stdout
    assert "progress llama: 5.3 MiB / 5.3 MiB (100.0%)" in run.stdout
    assert_no_credential(run)

    # The same source again: complete without a request (the endpoint now points nowhere).
    again = puller(
        {**s3.env(), "MODEL_URL": f"s3://{BUCKET}/llama/", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}
    )
    assert again.returncode == 0, again.output
    assert "is already complete" in again.stdout


def test_an_object_that_fails_its_checksum_is_fetched_again_alone(s3, puller, dest):
    """The store's x-amz-checksum-sha256 catches a corrupted object; the next run keeps every object an
    earlier run finished (same ETag) and fetches only the one that failed."""
    s3.create_bucket("checked")
    for path, data in FOLDER.items():
        s3.put("checked", f"m/{path}", data)
    stored = s3.data_dir / "checked" / "m" / "model-00002-of-00002.safetensors"
    good = stored.read_bytes()
    stored.write_bytes(b"!" + good[1:])  # bit rot behind the store's back: same size, same ETag

    bad = puller({**s3.env(), "MODEL_URL": "s3://checked/m/", "PULLER_S3_MAX_WORKERS": "1"})

    assert bad.returncode == EXIT_CHECKSUM, bad.output
    stored_sum = hashlib.sha256(good).hexdigest()
    assert bad.termination.startswith("checksum mismatch: s3://checked/m/model-00002-of-00002.safetensors has sha256 ")
    assert f"the store's x-amz-checksum-sha256 says {stored_sum}" in bad.termination
    assert not (dest / MANIFEST).exists()
    state = "".join(path.read_text() for path in (dest / STAGING / "s3-state").iterdir())
    assert '"etag"' in state and not any(secret in state for secret in SECRETS)

    stored.write_bytes(good)
    fixed = puller({**s3.env(), "MODEL_URL": "s3://checked/m/"})
    assert fixed.returncode == 0, fixed.output
    assert "4 objects, 5.3 MiB; 3 already here, 1 to fetch" in fixed.stdout
    assert "continuing the partial download" in fixed.stdout
    for path, data in FOLDER.items():
        assert (dest / path).read_bytes() == data, path


def test_a_killed_pull_resumes_the_object_by_range(s3, dest):
    """SIGKILL in the middle of an object (a slow link, through a proxy); the next run asks only for the rest."""
    data = payload(12 * MiB, seed=34)
    s3.put(BUCKET, "big/weights.safetensors", data)
    env = direct_env(s3, dest, f"s3://{BUCKET}/big/")
    partial = dest / STAGING / "files" / "weights.safetensors"
    with slow_pull(s3, env, lambda: partial.exists() and partial.stat().st_size >= 2 * MiB) as pull:
        pull.send_signal(signal.SIGKILL)
        pull.communicate(timeout=10)
    kept = partial.stat().st_size
    assert 2 * MiB <= kept < len(data)

    done, proxy = run_counted(s3, env)

    assert done.returncode == 0, done.stdout + done.stderr
    assert (dest / "weights.safetensors").read_bytes() == data
    assert f"resuming weights.safetensors at {kept / MiB:.1f} MiB" in done.stdout
    assert f"fetched {(len(data) - kept) / MiB:.1f} MiB" in done.stdout
    assert len(data) - kept <= proxy.served < len(data) - kept + HEADERS_SLACK  # only the rest crossed the wire


def test_a_large_object_comes_in_parallel_parts_hashed_in_order(s3, puller, dest):
    data = payload(5 * MiB + 123, seed=35)
    s3.put(BUCKET, "parts/model.gguf", data)

    run = puller(
        {
            **s3.env(),
            "MODEL_URL": f"s3://{BUCKET}/parts/model.gguf",
            "PULLER_S3_PART_MIB": "1",
            "PULLER_S3_MAX_WORKERS": "3",
            "MODEL_SHA256": sha256(data),
        }
    )

    assert run.returncode == 0, run.output
    assert "s3://models/parts/model.gguf: 5.0 MiB in 6 parts of 1.0 MiB, 3 at a time" in run.stdout
    assert "progress model.gguf: 5.0 MiB / 5.0 MiB (100.0%)" in run.stdout
    assert f"sha256 {sha256(data)} verified" in run.stdout
    assert (dest / "model.gguf").read_bytes() == data
    assert manifest(dest)["objects"][0]["etag"] == s3.put(BUCKET, "parts/model.gguf", data)  # same bytes, same ETag


def test_a_large_object_failing_the_store_checksum_is_deleted(s3, puller, dest):
    data = payload(4 * MiB, seed=36)
    s3.put(BUCKET, "parts/rotten.gguf", data)
    (s3.data_dir / BUCKET / "parts" / "rotten.gguf").write_bytes(data[:-1] + b"!")

    run = puller({**s3.env(), "MODEL_URL": f"s3://{BUCKET}/parts/rotten.gguf", "PULLER_S3_PART_MIB": "1"})

    assert run.returncode == EXIT_CHECKSUM, run.output
    assert f"the store's x-amz-checksum-sha256 says {sha256(data)}" in run.termination
    assert not (dest / STAGING / "files" / "rotten.gguf").exists()


def test_a_killed_parted_pull_fetches_only_the_missing_parts(s3, dest):
    data = payload(12 * MiB, seed=37)
    key = "parts/killed.gguf"
    s3.put(BUCKET, key, data)
    env = direct_env(s3, dest, f"s3://{BUCKET}/{key}", PULLER_S3_PART_MIB="1", PULLER_S3_MAX_WORKERS="2")
    with slow_pull(s3, env, lambda: parts_done(dest, key) >= 3) as pull:
        pull.send_signal(signal.SIGKILL)
        pull.communicate(timeout=10)
    kept = parts_done(dest, key)
    assert 3 <= kept < 12

    done, proxy = run_counted(s3, env)

    assert done.returncode == 0, done.stdout + done.stderr
    assert (dest / "killed.gguf").read_bytes() == data
    assert f"resuming killed.gguf: {kept} of 12 parts here ({kept:.1f} MiB)" in done.stdout
    assert f"fetched {12 - kept:.1f} MiB" in done.stdout
    missing = (12 - kept) * MiB  # the parts the record does not hold, each fetched once; no byte of the others
    assert missing <= proxy.served < missing + HEADERS_SLACK
    assert proxy.connections <= 3  # the probe's and one per part thread: kept alive from part to part


def crc32(data: bytes) -> str:
    return f"{zlib.crc32(data):08x}"


@pytest.mark.parametrize("part_mib", ["1", "32"], ids=["in-parts", "one-stream"])
def test_a_crc32_object_is_checked_by_its_crc_alone(s3, puller, dest, part_mib):
    """A store's full-object CRC32 (what SDKs send by default) is checked, in parts combined; no sha256
    is computed for it, and the record holds the CRC."""
    data = payload(5 * MiB + 3, seed=40)
    s3.put(BUCKET, "crc/model.gguf", data, checksum="crc32")

    run = puller({**s3.env(), "MODEL_URL": f"s3://{BUCKET}/crc/model.gguf", "PULLER_S3_PART_MIB": part_mib})

    assert run.returncode == 0, run.output
    assert (dest / "model.gguf").read_bytes() == data
    assert f"crc32 {crc32(data)} verified" in run.stdout
    recorded = manifest(dest)
    assert recorded["crc32"] == recorded["objects"][0]["crc32"] == crc32(data)
    assert "sha256" not in recorded and "sha256" not in recorded["objects"][0]


def test_a_crc32_object_and_model_sha256_are_both_checked(s3, puller, dest):
    data = payload(5 * MiB, seed=41)
    s3.put(BUCKET, "crc/both.gguf", data, checksum="crc32")
    env = {**s3.env(), "MODEL_URL": f"s3://{BUCKET}/crc/both.gguf", "PULLER_S3_PART_MIB": "1"}

    run = puller({**env, "MODEL_SHA256": sha256(data)})

    assert run.returncode == 0, run.output
    assert manifest(dest)["objects"][0] == {
        "key": "crc/both.gguf",
        "etag": manifest(dest)["objects"][0]["etag"],
        "crc32": crc32(data),
        "sha256": sha256(data),
    }
    wrong = puller({**env, "MODEL_SHA256": "0" * 64})
    assert wrong.returncode == EXIT_CHECKSUM, wrong.output
    assert f"has sha256 {sha256(data)}, expected {'0' * 64}" in wrong.termination


@pytest.mark.parametrize("part_mib", ["1", "32"], ids=["in-parts", "one-stream"])
def test_a_crc32_object_that_rotted_fails_its_check(s3, puller, dest, part_mib):
    data = payload(4 * MiB, seed=42)
    s3.put(BUCKET, f"crc/rotten-{part_mib}.gguf", data, checksum="crc32")
    (s3.data_dir / BUCKET / "crc" / f"rotten-{part_mib}.gguf").write_bytes(data[:-1] + b"!")

    run = puller({**s3.env(), "MODEL_URL": f"s3://{BUCKET}/crc/rotten-{part_mib}.gguf", "PULLER_S3_PART_MIB": part_mib})

    assert run.returncode == EXIT_CHECKSUM, run.output
    assert f"has crc32 {crc32(data[:-1] + b'!')} but the store's x-amz-checksum-crc32 says {crc32(data)}" in (
        run.termination
    )
    assert not (dest / STAGING / "files" / f"rotten-{part_mib}.gguf").exists()


def test_a_killed_crc32_pull_combines_the_recorded_parts_crcs(s3, dest):
    """The finished parts' CRCs are in the resume record: the next run reads back no byte of them."""
    data = payload(12 * MiB, seed=43)
    key = "crc/killed.gguf"
    s3.put(BUCKET, key, data, checksum="crc32")
    env = direct_env(s3, dest, f"s3://{BUCKET}/{key}", PULLER_S3_PART_MIB="1", PULLER_S3_MAX_WORKERS="2")
    with slow_pull(s3, env, lambda: parts_done(dest, key) >= 3) as pull:
        pull.send_signal(signal.SIGKILL)
        pull.communicate(timeout=10)
    kept = parts_done(dest, key)

    done, proxy = run_counted(s3, env)

    assert done.returncode == 0, done.stdout + done.stderr
    assert (dest / "killed.gguf").read_bytes() == data
    assert f"crc32 {crc32(data)} verified" in done.stdout
    assert proxy.served < (12 - kept) * MiB + HEADERS_SLACK


def test_an_object_replaced_mid_pull_is_started_again(s3, dest):
    """Every part is asked with If-Match on the ETag: the store answers 412 once the object is replaced,
    and the puller starts the new object from zero instead of stitching two versions together."""
    old, new = payload(8 * MiB, seed=38), payload(8 * MiB, seed=39)
    key = "parts/replaced.gguf"
    s3.put(BUCKET, key, old)
    env = direct_env(s3, dest, f"s3://{BUCKET}/{key}", PULLER_S3_PART_MIB="1", PULLER_S3_MAX_WORKERS="2")
    with slow_pull(s3, env, lambda: parts_done(dest, key) >= 2) as pull:
        s3.put(BUCKET, key, new)
        output, _ = pull.communicate(timeout=60)

    assert pull.returncode == 0, output
    assert "s3://models/parts/replaced.gguf changed while it was read; starting it again" in output
    assert (dest / "replaced.gguf").read_bytes() == new
    assert f"sha256 {sha256(new)} verified" in output


@pytest.mark.parametrize(
    ("env", "url", "code", "message"),
    [
        (
            {"AWS_SECRET_ACCESS_KEY": "wrong/Secret+Key/ForTheS3Gateway000000"},
            f"s3://{BUCKET}/{SINGLE}",
            EXIT_AUTH,
            "access refused: the store rejected the signature of s3://models/tiny/tiny.Q4_K_M.gguf "
            "(SignatureDoesNotMatch): AWS_SECRET_ACCESS_KEY is not the secret of AWS_ACCESS_KEY_ID",
        ),
        (
            {"AWS_ACCESS_KEY_ID": "AKIANOSUCHKEY0000001"},
            f"s3://{BUCKET}/llama/",
            EXIT_AUTH,
            "access refused: the store does not know the access key (InvalidAccessKeyId) for s3://models/llama/",
        ),
        (
            {"AWS_ACCESS_KEY_ID": READER_KEY.access_key, "AWS_SECRET_ACCESS_KEY": READER_KEY.secret_key},
            f"s3://{BUCKET}/{SINGLE}",
            EXIT_AUTH,
            "access refused: access denied to s3://models/tiny/tiny.Q4_K_M.gguf (AccessDenied)",
        ),
        (
            {"AWS_SESSION_TOKEN": "FwoGZXIvYXdzEBYaDSESSIONTOKENVALUE0001"},
            f"s3://{BUCKET}/{SINGLE}",
            EXIT_AUTH,
            "access refused: the store does not accept AWS_SESSION_TOKEN (InvalidToken)",
        ),
        (
            {},
            "s3://no-such-bucket/llama/",
            EXIT_NOT_FOUND,
            "not found: no such bucket for s3://no-such-bucket/llama/ (NoSuchBucket)",
        ),
        (
            {},
            f"s3://{BUCKET}/tiny/missing.gguf",
            EXIT_NOT_FOUND,
            "not found: no such object s3://models/tiny/missing.gguf (NoSuchKey)",
        ),
        ({}, f"s3://{BUCKET}/empty/", EXIT_NOT_FOUND, "not found: no object under s3://models/empty/"),
        (
            {"AWS_REGION": "eu-west-1"},
            f"s3://{BUCKET}/{SINGLE}",
            EXIT_USAGE,
            "configuration error: the bucket of s3://models/tiny/tiny.Q4_K_M.gguf is not in region eu-west-1 "
            "(AuthorizationHeaderMalformed; the store says us-east-1): set AWS_REGION",
        ),
        (
            {"AWS_ACCESS_KEY_ID": ROOT_KEY.access_key, "AWS_SECRET_ACCESS_KEY": ""},
            f"s3://{BUCKET}/{SINGLE}",
            EXIT_USAGE,
            "configuration error: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together; "
            "AWS_SECRET_ACCESS_KEY is not set",
        ),
        (
            {"MODEL_SHA256": "0" * 64},
            f"s3://{BUCKET}/llama/",
            EXIT_USAGE,
            "configuration error: MODEL_SHA256 goes with one object",
        ),
    ],
    ids=[
        "wrong-secret",
        "unknown-key",
        "access-denied",
        "session-token",
        "no-bucket",
        "no-key",
        "empty-prefix",
        "region",
        "half-a-key",
        "sha256-with-prefix",
    ],
)
def test_errors_say_what_to_fix_once(s3, puller, env, url, code, message):
    run = puller({**s3.env(), **env, "MODEL_URL": url, "PULLER_MAX_RETRIES": "3"})

    assert run.returncode == code, run.output
    assert run.termination.startswith(message), run.termination
    assert "retry" not in run.stdout  # said once, no retry loop
    assert_no_credential(run)
    assert "FwoGZXIvYXdzEBYaDSESSIONTOKENVALUE0001" not in run.output


def test_an_empty_object_is_pulled(s3, puller, dest):
    s3.put(BUCKET, "tiny/empty.txt", b"")

    run = puller({**s3.env(), "MODEL_URL": f"s3://{BUCKET}/tiny/empty.txt"})

    assert run.returncode == 0, run.output
    assert (dest / "empty.txt").read_bytes() == b""


def test_a_credential_learnt_from_the_chain_is_hidden_in_the_termination_message():
    from llm_model_puller.progress import redact, register_secret

    register_secret("LEARNT-secret-from-sts-0001")
    assert redact("refused: LEARNT-secret-from-sts-0001 in a message", []) == "refused: *** in a message"


def test_an_endpoint_that_does_not_answer(s3, puller):
    port = free_port()
    run = puller(
        {
            **s3.env(),
            "MODEL_URL": f"s3://{BUCKET}/llama/",
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "PULLER_MAX_RETRIES": "1",
        }
    )

    assert run.returncode == EXIT_NETWORK, run.output
    assert run.termination.startswith("network failure: s3://models/llama/: gave up after 2 attempts")
    assert f"the store at 127.0.0.1:{port} does not answer (ConnectionError): check AWS_ENDPOINT_URL" in run.termination
    assert_no_credential(run)


class ContainerCredentials(RecordingServer):
    """The EKS Pod Identity agent's (and ECS's) credentials endpoint: JSON for the right Authorization."""

    def __init__(self, token: str):
        super().__init__()
        self.token = token

    def respond(self, handler, method, url):
        if handler.headers.get("Authorization") != self.token:
            self.send_status(handler, 401, body=b"unauthorized\n")
            return
        self.send_json(
            handler,
            200,
            {
                "AccessKeyId": ROOT_KEY.access_key,
                "SecretAccessKey": ROOT_KEY.secret_key,
                "Expiration": "2099-01-01T00:00:00Z",
            },
        )


def test_without_a_key_the_pod_identity_endpoint_gives_one(s3, puller, dest, tmp_path):
    token_file = tmp_path / "eks-pod-identity-token"
    token_file.write_text("pod-identity-TOKEN-value-1234567890")
    env = {key: value for key, value in s3.env().items() if not key.startswith("AWS_ACCESS") and "SECRET" not in key}
    with ContainerCredentials("pod-identity-TOKEN-value-1234567890") as agent:
        run = puller(
            {
                **env,
                "MODEL_URL": f"s3://{BUCKET}/{SINGLE}",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI": agent.url + "/v1/credentials",
                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": str(token_file),
            }
        )
        assert len(agent.seen("GET", "/v1/credentials")) == 1

    assert run.returncode == 0, run.output
    assert "credentials from container credentials" in run.stdout
    assert (dest / "tiny.Q4_K_M.gguf").read_bytes() == payload(2 * MiB, seed=30)
    assert "pod-identity-TOKEN" not in run.output
    assert_no_credential(run)


class STS(RecordingServer):
    """AWS STS's AssumeRoleWithWebIdentity, answering with the gateway's root key and a session token."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []

    def respond(self, handler, method, url):
        from urllib.parse import parse_qs

        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0)).decode()
        self.forms.append({key: values[0] for key, values in parse_qs(body).items()})
        xml = (
            '<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
            "<AssumeRoleWithWebIdentityResult><Credentials>"
            f"<AccessKeyId>{ROOT_KEY.access_key}</AccessKeyId><SecretAccessKey>{ROOT_KEY.secret_key}</SecretAccessKey>"
            "<SessionToken>IQoJb3JpZ2luX2VjSESSIONfromSTS0001</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration>"
            "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"
        )
        self.send_status(handler, 200, {"Content-Type": "text/xml"}, xml.encode())


def test_a_web_identity_token_is_exchanged_at_sts_and_its_session_signs(s3, puller, tmp_path):
    """EKS IRSA: the projected token goes to STS, whose temporary key and session token sign the
    requests. versitygw issues no sessions of its own, so it refuses the token (InvalidToken): that
    refusal shows the session token reached the store; no token or key reaches the output."""
    token_file = tmp_path / "token"
    token_file.write_text("eyJhbGciOiJSUzI1NiJ9.WEBIDENTITYTOKEN.sig")
    env = {key: value for key, value in s3.env().items() if not key.startswith("AWS_ACCESS") and "SECRET" not in key}
    with STS() as sts:
        run = puller(
            {
                **env,
                "MODEL_URL": f"s3://{BUCKET}/{SINGLE}",
                "AWS_WEB_IDENTITY_TOKEN_FILE": str(token_file),
                "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/weights-reader",
                "AWS_ENDPOINT_URL_STS": sts.url,
            }
        )

    [form] = sts.forms
    assert form["Action"] == "AssumeRoleWithWebIdentity"
    assert form["RoleArn"] == "arn:aws:iam::123456789012:role/weights-reader"
    assert form["WebIdentityToken"] == "eyJhbGciOiJSUzI1NiJ9.WEBIDENTITYTOKEN.sig"
    assert "credentials from web identity (arn:aws:iam::123456789012:role/weights-reader)" in run.stdout
    assert run.returncode == EXIT_AUTH and "(InvalidToken)" in run.termination, run.output
    for secret in ("WEBIDENTITYTOKEN", "SESSIONfromSTS"):
        assert secret not in run.output
    assert_no_credential(run)


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        # AWS's own bodies for the cases versitygw cannot produce (it issues no session tokens).
        (
            b"<Error><Code>ExpiredToken</Code><Message>The provided token has expired.</Message></Error>",
            400,
            "the session token has expired (ExpiredToken) reading s3://b/k: renew AWS_SESSION_TOKEN",
        ),
        (
            b"<Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed "
            b"using the specified endpoint.</Message></Error>",
            301,
            "the bucket of s3://b/k is not in region us-east-1 (PermanentRedirect; the store says eu-central-1)",
        ),
    ],
)
def test_aws_error_bodies_read_as_what_to_fix(body, status, message):
    error = s3_error(
        status, {"x-amz-bucket-region": "eu-central-1"} if status == 301 else {}, body, "s3://b/k", "us-east-1"
    )
    assert str(error).startswith(message)
