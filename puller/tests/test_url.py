"""The MODEL_URL path against a real HTTP server on 127.0.0.1, the puller run as a subprocess."""

import fcntl
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from puller_servers import FileServer
from puller_testkit import MANIFEST, SRC, STAGING, MiB, payload, sha256

EXIT_AUTH, EXIT_NOT_FOUND, EXIT_CHECKSUM, EXIT_DISK_FULL, EXIT_NETWORK = 3, 4, 5, 6, 7
TOKEN = "hf_secretTOKENvalue1234567890"


@pytest.fixture
def files():
    with FileServer() as server:
        yield server


def manifest(dest):
    return json.loads((dest / MANIFEST).read_text())


def test_full_download_writes_file_and_manifest_last(files, puller, dest):
    data = payload(3 * MiB)
    url = files.add("/models/tiny.gguf", data)

    run = puller({"MODEL_URL": url, "MODEL_SHA256": sha256(data)})

    assert run.returncode == 0, run.output
    assert (dest / "tiny.gguf").read_bytes() == data
    assert sorted(p.name for p in dest.iterdir()) == [MANIFEST, "tiny.gguf"]  # staging area removed
    recorded = manifest(dest)
    assert recorded["source"] == url
    assert recorded["kind"] == "url"
    assert recorded["sha256"] == sha256(data)
    assert recorded["files"] == [{"path": "tiny.gguf", "size": len(data)}]
    assert "progress tiny.gguf: 3.0 MiB / 3.0 MiB (100.0%)" in run.stdout
    assert "sha256 " + sha256(data) + " verified" in run.stdout
    assert "done: " in run.stdout
    # The termination message tells the operator what the volume holds now.
    assert json.loads(run.termination) == {"source": url, "sha256": sha256(data), "size": len(data), "gguf": "tiny.gguf"}


def test_resume_after_the_server_drops_the_connection(files, puller, dest):
    data = payload(4 * MiB, seed=1)
    url = files.add("/m.safetensors", data)
    files.drop("/m.safetensors", after=MiB + 12345)

    run = puller({"MODEL_URL": url, "MODEL_SHA256": sha256(data)})

    assert run.returncode == 0, run.output
    first, second = files.seen("GET", "/m.safetensors")
    assert "Range" not in first.headers
    resumed_at = int(second.headers["Range"].removeprefix("bytes=").removesuffix("-"))
    assert 0 < resumed_at <= MiB + 12345
    assert second.headers["If-Range"] == files.etag("/m.safetensors")
    assert (dest / "m.safetensors").read_bytes() == data
    assert "retry 1/5" in run.stdout


def test_restart_from_zero_when_the_server_ignores_range(files, puller, dest):
    data = payload(3 * MiB, seed=2)
    url = files.add("/m.bin", data)
    files.honour_range = False
    files.drop("/m.bin", after=2 * MiB)

    run = puller({"MODEL_URL": url, "MODEL_SHA256": sha256(data)})

    assert run.returncode == 0, run.output
    first, second = files.seen("GET", "/m.bin")
    assert "Range" in second.headers
    assert "ignored the resume range (HTTP 200); restarting from zero" in run.stdout
    assert (dest / "m.bin").read_bytes() == data


def test_a_failed_run_leaves_a_partial_that_the_next_run_resumes(files, puller, dest):
    data = payload(3 * MiB, seed=3)
    url = files.add("/m.gguf", data)
    files.drop("/m.gguf", after=2 * MiB)

    failed = puller({"MODEL_URL": url, "PULLER_MAX_RETRIES": "0"})

    assert failed.returncode == EXIT_NETWORK, failed.output
    assert not (dest / MANIFEST).exists()
    assert not (dest / "m.gguf").exists()
    partial_size = (dest / STAGING / "files" / "m.gguf").stat().st_size
    assert 0 < partial_size <= 2 * MiB

    run = puller({"MODEL_URL": url, "MODEL_SHA256": sha256(data)})

    assert run.returncode == 0, run.output
    assert "continuing the partial download" in run.stdout
    assert files.seen("GET", "/m.gguf")[-1].headers["Range"] == f"bytes={partial_size}-"
    assert (dest / "m.gguf").read_bytes() == data


def test_checksum_mismatch_fails_and_leaves_no_marker(files, puller, dest):
    data = payload(MiB, seed=4)
    url = files.add("/m.gguf", data)

    run = puller({"MODEL_URL": url, "MODEL_SHA256": sha256(b"something else")})

    assert run.returncode == EXIT_CHECKSUM, run.output
    assert not (dest / MANIFEST).exists()
    assert not (dest / "m.gguf").exists()
    assert not (dest / STAGING / "files" / "m.gguf").exists()  # a bad file is not resumed either
    assert run.termination.startswith("checksum mismatch: m.gguf")
    assert sha256(data) in run.termination


def test_not_found_exits_4_with_message_in_termination_log(files, puller, dest):
    run = puller({"MODEL_URL": files.url + "/missing.gguf", "PULLER_MAX_RETRIES": "3"})

    assert run.returncode == EXIT_NOT_FOUND, run.output
    assert run.termination == f"not found: HTTP 404 for {files.url}/missing.gguf\n"
    assert len(files.seen("GET", "/missing.gguf")) == 1  # a 404 is final, not retried
    assert "not found: HTTP 404" in run.stdout


def test_forbidden_exits_3_with_message_in_termination_log(files, puller, dest):
    url = files.add("/m.gguf", b"x")
    files.fail("/m.gguf", 403)

    run = puller({"MODEL_URL": url})

    assert run.returncode == EXIT_AUTH, run.output
    assert run.termination == f"access refused: HTTP 403 for {url}\n"
    assert not (dest / MANIFEST).exists()


def test_second_run_with_the_same_source_downloads_nothing(files, puller, dest):
    data = payload(MiB, seed=5)
    url = files.add("/m.gguf", data)
    assert puller({"MODEL_URL": url}).returncode == 0
    requests_after_first_run = len(files.requests)

    run = puller({"MODEL_URL": url, "MODEL_SHA256": sha256(data)})

    assert run.returncode == 0, run.output
    assert len(files.requests) == requests_after_first_run
    assert "already complete" in run.stdout
    assert (dest / "m.gguf").read_bytes() == data


def test_a_damaged_file_is_downloaded_again(files, puller, dest):
    data = payload(MiB, seed=6)
    url = files.add("/m.gguf", data)
    assert puller({"MODEL_URL": url}).returncode == 0
    with open(dest / "m.gguf", "r+b") as f:
        f.truncate(1000)

    run = puller({"MODEL_URL": url})

    assert run.returncode == 0, run.output
    assert "1 file missing or changed (m.gguf)" in run.stdout
    assert len(files.seen("GET", "/m.gguf")) == 2
    assert (dest / "m.gguf").read_bytes() == data


def test_a_different_source_replaces_the_contents(files, puller, dest):
    old, new = payload(MiB, seed=7), payload(MiB // 2, seed=8)
    old_url, new_url = files.add("/old.gguf", old), files.add("/v2/new.gguf", new)
    assert puller({"MODEL_URL": old_url}).returncode == 0
    (dest / "stray-file").write_text("left by someone")
    (dest / "lost+found").mkdir()

    run = puller({"MODEL_URL": new_url})

    assert run.returncode == 0, run.output
    assert sorted(p.name for p in dest.iterdir()) == [MANIFEST, "lost+found", "new.gguf"]
    assert (dest / "new.gguf").read_bytes() == new
    assert manifest(dest)["source"] == new_url
    assert f"holds {old_url}; replacing it with {new_url}" in run.stdout


def test_a_new_expected_checksum_is_not_satisfied_by_the_old_download(files, puller, dest):
    data = payload(1000, seed=9)
    url = files.add("/m.gguf", data)
    assert puller({"MODEL_URL": url}).returncode == 0

    run = puller({"MODEL_URL": url, "MODEL_SHA256": sha256(b"another release")})

    assert run.returncode == EXIT_CHECKSUM
    assert len(files.seen("GET", "/m.gguf")) == 2
    assert not (dest / MANIFEST).exists()


def test_network_gives_up_after_bounded_retries(files, puller, dest):
    url = files.add("/m.gguf", b"x" * 1000)
    files.fail("/m.gguf", 503, times=10)

    run = puller({"MODEL_URL": url, "PULLER_MAX_RETRIES": "2"})

    assert run.returncode == EXIT_NETWORK, run.output
    assert len(files.seen("GET", "/m.gguf")) == 3  # the first attempt and 2 retries
    assert "gave up after 3 attempts without progress; last error: HTTP 503" in run.termination
    assert "retry 2/2" in run.stdout
    assert not (dest / MANIFEST).exists()


def test_connection_refused_is_a_network_failure(puller):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port now.

    run = puller({"MODEL_URL": f"http://127.0.0.1:{port}/m.gguf", "PULLER_MAX_RETRIES": "1"})

    assert run.returncode == EXIT_NETWORK, run.output
    assert run.termination.startswith(f"network failure: http://127.0.0.1:{port}/m.gguf: gave up after 2 attempts")


def test_s3_url_is_read_through_the_configured_endpoint(files, puller, dest):
    data = payload(MiB, seed=10)
    files.add("/weights-bucket/llama/q4 model.gguf", data)

    run = puller({"MODEL_URL": "s3://weights-bucket/llama/q4 model.gguf", "AWS_ENDPOINT_URL": files.url})

    assert run.returncode == 0, run.output
    assert (dest / "q4 model.gguf").read_bytes() == data
    assert files.seen("GET")[0].path == "/weights-bucket/llama/q4%20model.gguf"
    recorded = manifest(dest)
    assert recorded["source"] == "s3://weights-bucket/llama/q4 model.gguf"
    assert recorded["fetched_from"] == files.url + "/weights-bucket/llama/q4%20model.gguf"


def test_private_bucket_without_credentials_says_which_to_set(files, puller):
    files.add("/private/m.gguf", b"x")
    files.fail("/private/m.gguf", 403)

    run = puller({"MODEL_URL": "s3://private/m.gguf", "AWS_ENDPOINT_URL": files.url})

    assert run.returncode == EXIT_AUTH
    assert "no AWS credentials were found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in run.termination


def test_hf_token_goes_only_to_the_hub_host_and_never_into_output(files, puller, dest):
    data = payload(MiB, seed=11)
    url = files.add("/acme/gated/resolve/main/m.gguf", data)
    files.require_token = TOKEN

    run = puller({"MODEL_URL": url, "HF_TOKEN": TOKEN, "HF_ENDPOINT": files.url})

    assert run.returncode == 0, run.output
    assert files.seen("GET")[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in run.output
    assert TOKEN not in (dest / MANIFEST).read_text()

    refused = puller(
        {"MODEL_URL": url.replace("/m.gguf", "/other.gguf"), "HF_TOKEN": TOKEN + "x", "HF_ENDPOINT": files.url}
    )

    assert refused.returncode == EXIT_AUTH
    assert "HF_TOKEN was refused" in refused.termination
    assert TOKEN not in refused.output + refused.termination


def test_hf_token_is_not_sent_to_other_hosts(files, puller):
    url = files.add("/m.gguf", b"x" * 10)

    run = puller({"MODEL_URL": url, "HF_TOKEN": TOKEN})  # HF_ENDPOINT unset: the hub is huggingface.co

    assert run.returncode == 0, run.output
    assert "Authorization" not in files.seen("GET")[0].headers


def in_small_tmpfs(dest) -> list[str]:
    """A wrapper that runs the puller in its own mount namespace with a 1 MiB tmpfs on MODEL_DEST."""
    user_namespace = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    script = 'mount -t tmpfs -o size=1m tmpfs "$MODEL_DEST" || exit 99; "$@"; rc=$?; ls -A "$MODEL_DEST"; exit $rc'
    return ["unshare", "--mount", *user_namespace, "sh", "-c", script, "sh"]


def test_disk_too_small_for_the_announced_size_fails_before_writing(files, puller, dest):
    url = files.add("/m.gguf", payload(3 * MiB, seed=12))

    run = puller({"MODEL_URL": url}, wrapper=in_small_tmpfs(dest))

    assert run.returncode == EXIT_DISK_FULL, run.output
    assert run.termination.startswith("disk full: m.gguf needs 3.0 MiB more but MODEL_DEST has")
    assert MANIFEST not in run.stdout.splitlines()


def test_enospc_while_writing_is_disk_full(files, puller, dest):
    url = files.add("/m.gguf", payload(3 * MiB, seed=13))
    files.send_length = False  # no Content-Length: the free-space check cannot know, the write fails

    run = puller({"MODEL_URL": url}, wrapper=in_small_tmpfs(dest))

    assert run.returncode == EXIT_DISK_FULL, run.output
    assert run.termination.startswith("disk full: No space left on device")
    assert MANIFEST not in run.stdout.splitlines()


def test_a_second_puller_waits_for_the_first(files, puller, dest, tmp_path):
    """Two pods of one Job can overlap; the lock on MODEL_DEST serialises them."""
    data = payload(1000, seed=14)
    url = files.add("/m.gguf", data)
    holder = os.open(dest, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    lines: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-m", "llm_model_puller"],
        env={**os.environ, "PYTHONPATH": str(SRC), "MODEL_DEST": str(dest), "MODEL_URL": url, "HOME": str(tmp_path)},
        stdout=subprocess.PIPE,
        text=True,
    ) as waiting:
        reader = threading.Thread(target=lambda: lines.extend(waiting.stdout), daemon=True)
        reader.start()
        deadline = time.monotonic() + 20
        while not any("another puller is working" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any("another puller is working" in line for line in lines), lines
        assert waiting.poll() is None and files.seen("GET") == []
        os.close(holder)  # the first puller is done
        assert waiting.wait(timeout=20) == 0
        reader.join(timeout=5)
    assert (dest / "m.gguf").read_bytes() == data
