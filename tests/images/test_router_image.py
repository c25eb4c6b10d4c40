"""The router image (router/Dockerfile): it runs as its non-root user on a read-only root filesystem,
lists the models of its table and streams a chat answer from a server on 127.0.0.1 chunk by chunk."""

import http.client
import http.server
import json
import threading
import time

import pytest
from conftest import REPO, ROUTER_IMAGE
from local_http import wait_for_http
from test_llama_server_image import free_port
from test_llama_server_image import http as json_request

START_TIMEOUT = 30  # seconds; the router starts in well under one


class StreamingHandler(http.server.BaseHTTPRequestHandler):
    """An OpenAI server's streamed chat answer: three server-sent events, then [DONE], chunked."""

    protocol_version = "HTTP/1.1"
    CHUNKS = 3

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [f'data: {{"choices": [{{"delta": {{"content": "piece {i}"}}}}]}}\n\n' for i in range(self.CHUNKS)]
        for event in [*events, "data: [DONE]\n\n"]:
            data = event.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
            time.sleep(0.05)  # each event its own TCP segment, as a server generating tokens sends them
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args):
        pass


@pytest.fixture
def upstream():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StreamingHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def router(unpacked, runc, upstream, tmp_path):
    """The router from the image on 127.0.0.1, read-only root, its table a mounted file."""
    rootfs, config = unpacked("router")
    table = tmp_path / "table"
    table.mkdir()
    (table / "table.json").write_text(json.dumps({"models": [
        {"namespace": "team-a", "name": "smollm", "phase": "Serving", "endpoints": [f"127.0.0.1:{upstream}"]},
        {"namespace": "team-b", "name": "idle", "phase": "Pending", "reason": "Pulling"},
    ]}))
    port, admin = free_port(), free_port()
    args = ["--host", "127.0.0.1", "--port", str(port), "--admin-port", str(admin),
            "--table-file", "/table/table.json"]
    runc.bundle(tmp_path / "bundle", rootfs, config, args=args, network="host-loopback",
                binds={"/table": (table, False)}, read_only=True)
    log = tmp_path / "router.log"
    name, process = runc.start(tmp_path / "bundle", log)
    try:
        wait_for_http(f"http://127.0.0.1:{admin}/readyz", process, log, START_TIMEOUT, interval=0.2)
        yield port
    finally:
        runc.stop(name, process)


def test_router_image_is_named_as_the_install_expects_and_runs_as_non_root(unpacked):
    _, config = unpacked("router")
    assert config.repo_tags == [ROUTER_IMAGE]
    assert config.entrypoint == ["llm-router"]
    assert config.user == "10001"
    assert config.exposed_ports == ["8000/tcp", "9090/tcp"]


def test_router_lists_its_models_and_streams_a_chat_in_chunks(router):
    status, models = json_request(f"http://127.0.0.1:{router}/v1/models")
    assert status == 200
    assert {entry["id"] for entry in models["data"]} == {"team-a/smollm", "team-b/idle"}
    connection = http.client.HTTPConnection("127.0.0.1", router, timeout=10)
    body = json.dumps({"model": "smollm", "stream": True, "messages": [{"role": "user", "content": "Hi"}]})
    connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    assert response.status == 200 and response.getheader("Content-Type") == "text/event-stream"
    pieces = []
    while piece := response.read1(65536):
        pieces.append(piece)
    connection.close()
    events = b"".join(pieces).decode().split("\n\n")
    assert [event for event in events if event] == [
        *(f'data: {{"choices": [{{"delta": {{"content": "piece {i}"}}}}]}}' for i in range(3)), "data: [DONE]"]
    assert len(pieces) > 1, "the stream reached the client in more than one piece (not buffered)"


def test_router_answers_a_model_that_is_not_serving_with_its_reason(router):
    status, _ = json_request(f"http://127.0.0.1:{router}/v1/chat/completions", {"model": "team-b/idle", "messages": []})
    assert status == 503


def test_the_built_router_name_is_the_installs_default():
    kustomization = (REPO / "config/router/kustomization.yaml").read_text()
    assert f"newTag: {ROUTER_IMAGE.rsplit(':', 1)[1]}" in kustomization, "LLM_ROUTER_IMAGE and config/router differ"
