"""The router and fake model servers on 127.0.0.1, in an event loop of their own thread; the tests
are its clients over real sockets."""

import asyncio
import http.client
import json
import socket
import sys
import threading
from pathlib import Path

import pytest
import uvloop

sys.path.insert(0, str(Path(__file__).parent))

from fake_openai import start_fake  # noqa: E402
from llm_router.config import Settings  # noqa: E402
from llm_router.main import Router  # noqa: E402
from llm_router.table import apply_document  # noqa: E402


class Stack:
    """A router and its fake replicas; `table` is what a source would have said."""

    def __init__(self, replicas: int, scale_backend=None, **settings):
        self.loop = uvloop.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.fakes = []
        for index in range(replicas):
            server, port, stats = self.call(start_fake(f"r{index}"))
            self.fakes.append((server, port, stats))
        defaults = dict(
            host="127.0.0.1",
            port=0,
            admin_port=0,
            header_timeout=1.0,
            body_timeout=2.0,
            keepalive_timeout=5.0,
            connect_timeout=1.0,
            response_timeout=5.0,
            drain_timeout=1.0,
        )
        defaults.update(settings)
        self.settings = Settings(**defaults)
        self.router = Router(self.settings, scale_backend=scale_backend)
        self.call(self.router.start())
        self.port = self.router.port

    def call(self, coroutine, timeout: float = 10.0):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def run(self, function, *args):
        """Runs a plain function on the loop's thread (the table is not thread-safe)."""

        async def wrapper():
            return function(*args)

        return self.call(wrapper())

    def stats(self, index: int):
        return self.fakes[index][2]

    def address(self, index: int) -> str:
        return f"127.0.0.1:{self.fakes[index][1]}"

    def serve(self, models: list[dict]) -> None:
        self.run(apply_document, self.router.table, {"models": models})

    def model(self, name="qwen", namespace="team-a", replicas=None, **fields) -> dict:
        count = len(self.fakes) if replicas is None else replicas
        return {
            "namespace": namespace,
            "name": name,
            "phase": "Serving",
            "endpoints": [self.address(index) for index in range(count)],
            **fields,
        }

    def kill(self, index: int) -> None:
        """The replica's pod is gone: no more connections, the open ones reset."""

        async def kill():
            server, _, stats = self.fakes[index]
            server.close()
            for connection in list(stats.connections):
                connection.transport.abort()

        self.call(kill())

    def metrics(self) -> str:
        connection = http.client.HTTPConnection("127.0.0.1", self.router.admin_port, timeout=5)
        connection.request("GET", "/metrics")
        return connection.getresponse().read().decode()

    def close(self) -> None:
        self.call(self.router.stop())
        for server, _, _ in self.fakes:
            self.loop.call_soon_threadsafe(server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture
def stack_factory():
    made = []

    def make(replicas: int = 2, models=None, scale_backend=None, **settings) -> Stack:
        stack = Stack(replicas, scale_backend, **settings)
        made.append(stack)
        stack.serve(models(stack) if models else [stack.model()])
        return stack

    yield make
    for stack in made:
        stack.close()


@pytest.fixture
def stack(stack_factory) -> Stack:
    return stack_factory()


def post(port: int, path: str, body, headers=None, timeout: float = 10.0):
    """(status, headers, parsed JSON body or raw bytes) of one request on a new connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    connection.request("POST", path, body=raw, headers={"content-type": "application/json", **(headers or {})})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    try:
        return response.status, response.headers, json.loads(data)
    except ValueError:
        return response.status, response.headers, data


def get(port: int, path: str, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, response.headers, json.loads(data)


def raw_socket(port: int, timeout: float = 5.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return sock


def read_all(sock: socket.socket, limit: int = 1 << 20) -> bytes:
    """What the server sends until it closes the connection (or the socket's timeout)."""
    chunks = []
    try:
        while sum(map(len, chunks)) < limit:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    except (TimeoutError, ConnectionResetError):
        pass
    return b"".join(chunks)
