"""Bad clients: a 20 MB body, a header flood, slowloris; each refused or cut off in bounded time
while other clients are served as usual."""

import concurrent.futures
import json
import socket
import time

from conftest import post, raw_socket, read_all

CHAT = "/v1/chat/completions"
TWENTY_MB = 20 * 1024 * 1024


def served_quickly(port: int) -> float:
    started = time.monotonic()
    status, _, _ = post(port, CHAT, {"model": "qwen"}, timeout=3)
    assert status == 200
    return time.monotonic() - started


def test_a_20_mb_body_is_413_while_others_are_served(stack):
    body = json.dumps({"model": "qwen", "prompt": "x" * TWENTY_MB}).encode()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        big = pool.submit(post, stack.port, CHAT, body)
        assert served_quickly(stack.port) < 1.0
        status, _, answer = big.result()
    assert status == 413 and answer["error"]["code"] == "request_too_large"
    requests = stack.stats(0).requests + stack.stats(1).requests
    assert len(requests) == 1 and len(requests[0][2]) < 1000  # only the small one reached a server


def test_a_20_mb_body_within_the_limit_reaches_the_server_whole(stack_factory):
    stack = stack_factory(replicas=1, max_body_bytes=32 * 1024 * 1024)
    body = json.dumps({"model": "qwen", "prompt": "x" * TWENTY_MB}).encode()
    status, _, _ = post(stack.port, CHAT, body)
    assert status == 200
    assert len(stack.stats(0).requests[-1][2]) == len(body)


def test_a_header_flood_is_431(stack):
    for head in (
        b"".join(b"x-flood-%d: %d\r\n" % (index, index) for index in range(1000)),  # many headers
        b"x-big: " + b"a" * 100_000 + b"\r\n",  # one huge header
    ):
        sock = raw_socket(stack.port)
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n" + head + b"content-length: 2\r\n\r\n{}")
        answer = read_all(sock)
        sock.close()
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:100]
        assert b'"type": "invalid_request_error"' in answer
    assert served_quickly(stack.port) < 1.0


def test_slowloris_clients_are_cut_off_and_do_not_hold_others_up(stack):
    """50 clients dribble a request's headers one byte at a time: each is closed after
    header_timeout (1 s here), and a normal client is served meanwhile."""
    socks = [raw_socket(stack.port, timeout=4) for _ in range(50)]
    request = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-slow: "
    started = time.monotonic()
    closed_at = {}
    for step in range(20):  # bounded: 20 bytes, 0.1 s apart, then read what the router said
        for index, sock in enumerate(socks):
            if index in closed_at:
                continue
            try:
                sock.sendall(request[step : step + 1])
            except OSError:
                closed_at[index] = time.monotonic() - started
        if step == 5:
            assert served_quickly(stack.port) < 0.5
        time.sleep(0.1)
    answers = [read_all(sock) for sock in socks]
    elapsed = time.monotonic() - started
    for sock in socks:
        sock.close()
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in answers), set(a[:20] for a in answers)
    assert elapsed < 4.5
    assert served_quickly(stack.port) < 0.5


def test_a_slow_body_is_cut_off(stack):
    sock = raw_socket(stack.port, timeout=5)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{")
    started = time.monotonic()
    answer = read_all(sock)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert time.monotonic() - started < 3.5  # body_timeout is 2 s here, the sweep 0.5 s


def test_an_idle_keep_alive_connection_is_closed(stack_factory):
    stack = stack_factory(keepalive_timeout=0.5)
    sock = raw_socket(stack.port, timeout=3)
    started = time.monotonic()
    assert read_all(sock) == b""
    assert time.monotonic() - started < 2.0
    sock.close()


def test_garbage_is_400_and_closed(stack):
    sock = raw_socket(stack.port)
    sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n")
    answer = read_all(sock)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 400 ")


def test_keep_alive_and_pipelining(stack):
    sock = raw_socket(stack.port)
    body = json.dumps({"model": "qwen"}).encode()
    one = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    sock.sendall(one * 3)
    data = b""
    deadline = time.monotonic() + 5
    while data.count(b"HTTP/1.1 200 OK") < 3 and time.monotonic() < deadline:
        data += sock.recv(65536)
    sock.close()
    assert data.count(b"HTTP/1.1 200 OK") == 3


def test_client_socket_half_close_after_request(stack):
    sock = socket.create_connection(("127.0.0.1", stack.port), timeout=3)
    body = json.dumps({"model": "qwen"}).encode()
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )
    answer = read_all(sock)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 200 ") and b"connection: close" in answer
