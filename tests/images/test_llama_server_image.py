"""The inference-server image (images/llama-server/Dockerfile): llama.cpp's llama-server loads the
SmolLM2-135M-Instruct GGUF (make model) and answers an OpenAI chat request on 127.0.0.1."""

import json
import socket
import urllib.error
import urllib.request

import pytest
from local_http import wait_for_http

LOAD_TIMEOUT = 180  # seconds; loading takes a few on an idle 2-core machine
ALIAS = "smollm2-135m-instruct"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http(url: str, payload: dict | None = None, timeout: float = 10) -> tuple[int, dict]:
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, {}


def test_llama_server_image_runs_as_non_root_on_port_8080(unpacked):
    rootfs, config = unpacked("llama-server")
    assert config.repo_tags and config.repo_tags[0].startswith("ghcr.io/llm-operator/llama-server:")
    assert config.entrypoint == ["/usr/bin/llama-server"]
    assert config.user == "10001"
    assert config.exposed_ports == ["8080/tcp"]
    assert "LLAMA_ARG_PORT=8080" in config.env and "LLAMA_ARG_HOST=0.0.0.0" in config.env
    assert (rootfs / "usr/bin/llama-server").exists()


@pytest.fixture
def llama_server(unpacked, runc, model, tmp_path):
    """llama-server from the image, in the host's network namespace bound to 127.0.0.1 only."""
    rootfs, config = unpacked("llama-server")
    port = free_port()
    args = ["-m", f"/models/{model.name}", "-a", ALIAS, "--host", "127.0.0.1", "--port", str(port),
            "-c", "2048", "-t", "2"]
    runc.bundle(tmp_path / "bundle", rootfs, config, args=args, network="host-loopback",
                binds={"/models": (model.parent, False)})
    log = tmp_path / "llama-server.log"
    name, process = runc.start(tmp_path / "bundle", log)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{base}/health", process, log, LOAD_TIMEOUT)
        yield base
    finally:
        runc.stop(name, process)


def test_llama_server_answers_a_chat_completion_with_the_model(llama_server):
    status, models = http(f"{llama_server}/v1/models")
    assert status == 200 and ALIAS in [entry["id"] for entry in models["data"]]
    request = {
        "model": ALIAS,
        "messages": [{"role": "user", "content": "What is the capital of France? Answer in one word."}],
        "max_tokens": 16,
        "temperature": 0,
    }
    status, answer = http(f"{llama_server}/v1/chat/completions", request, timeout=120)
    assert status == 200, answer
    text = answer["choices"][0]["message"]["content"]
    print(f"SmolLM2 answered: {text!r}")
    assert answer["usage"]["completion_tokens"] > 0
    assert "paris" in text.lower(), text
