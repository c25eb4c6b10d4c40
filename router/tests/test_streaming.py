"""Server-sent events pass through chunk by chunk; a client that leaves cancels the server's work."""

import http.client
import json
import socket
import time

from conftest import post
from test_errors import wait_for

CHAT = "/v1/chat/completions"


def open_stream(port: int, fake: dict, model: str = "qwen"):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = json.dumps({"model": model, "stream": True, "fake": fake})
    connection.request("POST", CHAT, body=body, headers={"content-type": "application/json"})
    return connection, connection.getresponse()


def events(response):
    """(arrival time, event) for each event line, as it arrives."""
    while True:
        line = response.readline()
        if not line:
            return
        if line.startswith(b"data: "):
            yield time.monotonic(), line[6:].strip()


def test_a_stream_arrives_chunk_by_chunk(stack):
    connection, response = open_stream(stack.port, {"chunks": 5, "interval": 0.15})
    assert response.status == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["transfer-encoding"] == "chunked"
    received = list(events(response))
    assert received[-1][1] == b"[DONE]"
    chunks = [(arrived, json.loads(data)) for arrived, data in received[:-1]]
    assert [chunk["i"] for _, chunk in chunks] == [0, 1, 2, 3, 4]
    for (arrived, _), (_, following) in zip(chunks, chunks[1:], strict=False):
        assert arrived < following["t"], "a chunk was held until the next one was sent"
    for arrived, chunk in chunks:
        assert arrived - chunk["t"] < 0.1
    connection.close()


def test_a_client_that_disconnects_cancels_the_upstream_request(stack_factory):
    stack = stack_factory(replicas=1)
    connection, response = open_stream(stack.port, {"chunks": 100, "interval": 0.05})
    stream = events(response)
    next(stream), next(stream)
    connection.sock.shutdown(socket.SHUT_RDWR)
    connection.close()
    wait_for(lambda: stack.stats(0).cancelled == 1, timeout=3)
    assert stack.stats(0).completed == 0
    wait_for(lambda: 'llm_router_requests_total{model="team-a/qwen",code="499"} 1' in stack.metrics())
    assert 'llm_router_in_flight_requests{model="team-a/qwen"} 0' in stack.metrics()
    status, _, _ = post(stack.port, CHAT, {"model": "qwen"})  # the replica serves on
    assert status == 200


def test_a_client_gone_while_waiting_for_the_head_cancels_too(stack_factory):
    stack = stack_factory(replicas=1)
    sock = socket.create_connection(("127.0.0.1", stack.port))
    body = json.dumps({"model": "qwen", "fake": {"delay": 5}}).encode()
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
    wait_for(lambda: stack.stats(0).active == 1)
    sock.close()
    wait_for(lambda: stack.stats(0).cancelled == 1, timeout=3)


def test_a_stream_cut_by_the_server_ends_with_an_error_the_client_sees(stack):
    connection, response = open_stream(stack.port, {"chunks": 10, "interval": 0.02, "cut_after": 3})
    assert response.status == 200
    try:
        response.read()
        raise AssertionError("the stream ended as if complete")
    except http.client.IncompleteRead as cut:
        partial = cut.partial
    received = [json.loads(line[6:]) for line in partial.split(b"\n\n") if line.startswith(b"data: ")]
    assert [event.get("i") for event in received[:3]] == [0, 1, 2]
    assert received[-1]["error"]["code"] == "upstream_closed"
    others = stack.stats(0).requests + stack.stats(1).requests
    assert len(others) == 1, "a stream that had started was sent again"


def test_large_chunks_and_many_streams_pass_whole(stack):
    connection, response = open_stream(stack.port, {"chunks": 50, "size": 20000})
    received = list(events(response))
    assert len(received) == 51
    assert all(len(json.loads(data)["choices"][0]["delta"]["content"]) == 20000 for _, data in received[:-1])
