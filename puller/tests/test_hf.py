"""The HF_REPO path: the real huggingface_hub client against a local Hub-compatible server."""

import json
import socket

import pytest

from puller_servers import FakeHub, HubRepo
from puller_testkit import MANIFEST, MiB, payload

EXIT_AUTH, EXIT_NOT_FOUND, EXIT_NETWORK = 3, 4, 7
TOKEN = "hf_hubTOKENthatMustNeverBeLogged42"

TINY = {
    "config.json": b'{"model_type": "llama"}',
    "generation_config.json": b"{}",
    "model-00001-of-00002.safetensors": payload(MiB + 17, seed=1),
    "model-00002-of-00002.safetensors": payload(MiB // 2, seed=2),
    "model.safetensors.index.json": b'{"weight_map": {}}',
    "tokenizer.json": b'{"version": "1.0"}',
    "tokenizer.model": payload(5000, seed=3),
    "tokenizer_config.json": b"{}",
    "chat_template.jinja": b"{{ messages }}",
    "README.md": b"# tiny",
    ".gitattributes": b"*.safetensors filter=lfs",
    "pytorch_model.bin": payload(MiB, seed=4),
    "original/consolidated.00.pth": payload(MiB, seed=5),
    "onnx/model.onnx": payload(1000, seed=6),
    "flax_model.msgpack": payload(1000, seed=7),
    ".llm-model-puller.json": b'{"version": 1, "source": "hf://acme/tiny@main", "files": []}',
}
TINY_SERVED = {
    "config.json",
    "generation_config.json",
    "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors",
    "model.safetensors.index.json",
    "tokenizer.json",
    "tokenizer.model",
    "tokenizer_config.json",
    "chat_template.jinja",
}
LEGACY = {
    "config.json": b"{}",
    "pytorch_model.bin": payload(3000, seed=8),
    "vocab.txt": b"[PAD]\n[UNK]\n",
    "notes.txt": b"not for the server",
}


@pytest.fixture
def hub():
    repos = {
        "acme/tiny": HubRepo(dict(TINY)),
        "acme/legacy": HubRepo(dict(LEGACY)),
        "acme/gated": HubRepo({"config.json": b"{}", "model.safetensors": payload(2000, seed=9)}, gated=True),
        "acme/private": HubRepo({"config.json": b"{}", "model.safetensors": payload(2000, seed=10)}, private=True),
    }
    with FakeHub(repos, token=TOKEN) as server:
        yield server


def files_in(dest) -> set[str]:
    return {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()}


def resolved(hub) -> set[str]:
    """Repo files the client asked the server for (HEAD or GET on /resolve/)."""
    return {r.path.split("/resolve/", 1)[1].split("/", 1)[1] for r in hub.requests if "/resolve/" in r.path}


def test_snapshot_keeps_only_server_files_and_records_the_commit(hub, puller, dest, home):
    run = puller({"HF_REPO": "acme/tiny", "HF_ENDPOINT": hub.url})

    assert run.returncode == 0, run.output
    assert files_in(dest) == TINY_SERVED | {MANIFEST}
    for name in TINY_SERVED:
        assert (dest / name).read_bytes() == TINY[name]
    assert resolved(hub) == TINY_SERVED  # excluded files were never even asked for
    recorded = json.loads((dest / MANIFEST).read_text())
    assert recorded["source"] == "hf://acme/tiny@main"
    assert recorded["commit"] == hub.repos["acme/tiny"].commit
    assert recorded["revision"] == "main"
    assert {f["path"]: f["size"] for f in recorded["files"]} == {n: len(TINY[n]) for n in TINY_SERVED}
    assert f"is commit {hub.repos['acme/tiny'].commit}: 9 of 16 files selected" in run.stdout
    assert "progress acme/tiny:" in run.stdout and "done: hf://acme/tiny@main" in run.stdout
    assert json.loads(run.termination) == {
        "source": "hf://acme/tiny@main",
        "commit": hub.repos["acme/tiny"].commit,
        "size": sum(len(TINY[n]) for n in TINY_SERVED),
    }
    assert list(home.iterdir()) == []  # nothing cached under ~ (no ~/.cache/huggingface)


def test_repo_without_safetensors_falls_back_to_pytorch_weights(hub, puller, dest):
    run = puller({"HF_REPO": "acme/legacy", "HF_ENDPOINT": hub.url})

    assert run.returncode == 0, run.output
    assert files_in(dest) == {"config.json", "pytorch_model.bin", "vocab.txt", MANIFEST}


def test_revision_is_honoured_and_a_missing_one_is_not_found(hub, puller, dest):
    commit = hub.repos["acme/legacy"].commit
    run = puller({"HF_REPO": "acme/legacy", "HF_REVISION": commit, "HF_ENDPOINT": hub.url})
    assert run.returncode == 0, run.output
    assert json.loads((dest / MANIFEST).read_text())["source"] == f"hf://acme/legacy@{commit}"

    missing = puller({"HF_REPO": "acme/legacy", "HF_REVISION": "v9", "HF_ENDPOINT": hub.url})

    assert missing.returncode == EXIT_NOT_FOUND, missing.output
    assert missing.termination == "not found: revision 'v9' not found in acme/legacy (HTTP 404)\n"
    assert not (dest / MANIFEST).exists()


def test_second_run_sends_no_request(hub, puller, dest):
    assert puller({"HF_REPO": "acme/tiny", "HF_ENDPOINT": hub.url}).returncode == 0
    seen = len(hub.requests)

    run = puller({"HF_REPO": "acme/tiny", "HF_ENDPOINT": hub.url})

    assert run.returncode == 0, run.output
    assert len(hub.requests) == seen
    assert f"already complete in {dest} (commit {hub.repos['acme/tiny'].commit}, 9 files" in run.stdout


def test_gated_repo_without_access_is_an_auth_failure(hub, puller, dest):
    run = puller({"HF_REPO": "acme/gated", "HF_ENDPOINT": hub.url})

    assert run.returncode == EXIT_AUTH, run.output
    assert run.termination.startswith("access refused: acme/gated is gated (HTTP 401)")
    assert "no HF_TOKEN was given" in run.termination
    assert not (dest / MANIFEST).exists()
    assert not (dest / "model.safetensors").exists()


def test_token_opens_gated_and_private_repos_and_is_never_printed(hub, puller, dest):
    for repo in ("acme/gated", "acme/private"):
        run = puller({"HF_REPO": repo, "HF_ENDPOINT": hub.url, "HF_TOKEN": TOKEN})
        assert run.returncode == 0, run.output
        assert TOKEN not in run.output
    assert all(r.headers.get("Authorization") == f"Bearer {TOKEN}" for r in hub.requests)
    assert TOKEN not in (dest / MANIFEST).read_text()

    wrong = TOKEN[:-2] + "xx"  # and another revision, so that the run is not satisfied by the manifest
    refused = puller({"HF_REPO": "acme/private", "HF_REVISION": "other", "HF_ENDPOINT": hub.url, "HF_TOKEN": wrong})

    assert refused.returncode == EXIT_AUTH, refused.output
    assert refused.termination.startswith("access refused: acme/private: repository not found or access refused")
    assert "the token was refused" in refused.termination
    for text in (refused.output, refused.termination):
        assert TOKEN not in text and wrong not in text


def test_missing_repo_is_not_found(hub, puller, dest):
    run = puller({"HF_REPO": "acme/nope", "HF_ENDPOINT": hub.url})

    assert run.returncode == EXIT_NOT_FOUND, run.output
    assert run.termination == "not found: acme/nope: repository not found (HTTP 404)\n"


def test_unreachable_hub_is_a_network_failure(puller, dest):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{probe.getsockname()[1]}"

    run = puller({"HF_REPO": "acme/tiny", "HF_ENDPOINT": endpoint, "PULLER_MAX_RETRIES": "1"})

    assert run.returncode == EXIT_NETWORK, run.output
    assert run.termination.startswith("network failure: listing hf://acme/tiny@main: gave up after 2 attempts")


def test_switching_from_a_url_to_a_repo_replaces_the_file(hub, puller, dest):
    hub.repos["files/x"] = HubRepo({"x.gguf": b"gguf"})
    assert puller({"MODEL_URL": hub.url + "/files/x/resolve/main/x.gguf"}).returncode == 0
    assert files_in(dest) == {"x.gguf", MANIFEST}

    run = puller({"HF_REPO": "acme/legacy", "HF_ENDPOINT": hub.url})

    assert run.returncode == 0, run.output
    assert files_in(dest) == {"config.json", "pytorch_model.bin", "vocab.txt", MANIFEST}


def gets(hub, name: str) -> int:
    return sum(1 for r in hub.requests if r.method == "GET" and r.path.endswith("/" + name))


def test_a_server_error_is_retried_within_the_run(hub, puller, dest):
    hub.fail("model-00002-of-00002.safetensors", 503)

    run = puller({"HF_REPO": "acme/tiny", "HF_ENDPOINT": hub.url})

    assert run.returncode == 0, run.output
    assert "HTTP 503 from the Hub; retry 1/5" in run.stdout
    assert gets(hub, "model-00002-of-00002.safetensors") == 2
    assert gets(hub, "model-00001-of-00002.safetensors") == 1  # finished files are not fetched again
    assert (dest / "model-00002-of-00002.safetensors").read_bytes() == TINY["model-00002-of-00002.safetensors"]


def test_the_next_run_keeps_the_files_a_failed_run_finished(hub, puller, dest):
    hub.fail("model-00002-of-00002.safetensors", 500)

    failed = puller({"HF_REPO": "acme/tiny", "HF_ENDPOINT": hub.url, "PULLER_MAX_RETRIES": "0"})

    assert failed.returncode == EXIT_NETWORK, failed.output
    assert failed.termination.startswith("network failure: hf://acme/tiny@main: gave up after 1 attempts")
    assert not (dest / MANIFEST).exists()

    run = puller({"HF_REPO": "acme/tiny", "HF_ENDPOINT": hub.url})

    assert run.returncode == 0, run.output
    assert "continuing the partial download" in run.stdout
    assert {name: gets(hub, name) for name in TINY_SERVED} == {
        name: 2 if name == "model-00002-of-00002.safetensors" else 1 for name in TINY_SERVED
    }
    assert files_in(dest) == TINY_SERVED | {MANIFEST}


def test_huggingface_hub_resumes_a_dropped_file_with_range(hub, puller, dest):
    # huggingface_hub writes in 10 MiB chunks, so only a drop past the first chunk leaves something to resume.
    big = payload(12 * MiB, seed=11)
    hub.repos["acme/big"] = HubRepo({"config.json": b"{}", "model.safetensors": big})
    hub.drop("model.safetensors", after=11 * MiB)

    run = puller({"HF_REPO": "acme/big", "HF_ENDPOINT": hub.url})

    assert run.returncode == 0, run.output
    first, second = [r for r in hub.requests if r.method == "GET" and r.path.endswith("/model.safetensors")]
    assert "range" not in first.headers
    assert 0 < int(second.headers["range"].removeprefix("bytes=").removesuffix("-")) <= 11 * MiB
    assert (dest / "model.safetensors").read_bytes() == big
