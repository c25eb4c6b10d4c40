"""Least in flight across replicas; one retry on another replica, only before any byte; a replica killed
in the middle of a burst."""

import concurrent.futures
import http.client
import json
import threading

from conftest import post
from test_errors import wait_for
from test_streaming import open_stream

CHAT = "/v1/chat/completions"


def replica(headers) -> str:
    return headers["x-replica"]


def test_least_in_flight_sends_new_requests_to_the_idle_replica(stack):
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        slow = pool.submit(post, stack.port, CHAT, {"model": "qwen", "fake": {"delay": 1.0}})
        wait_for(lambda: stack.stats(0).active + stack.stats(1).active == 1)
        busy = "r0" if stack.stats(0).active else "r1"
        answered_by = {replica(post(stack.port, CHAT, {"model": "qwen"})[1]) for _ in range(6)}
        assert answered_by == {"r1" if busy == "r0" else "r0"}
        assert replica(slow.result()[1]) == busy


def test_equal_replicas_share_the_load(stack):
    answered_by = [replica(post(stack.port, CHAT, {"model": "qwen"})[1]) for _ in range(10)]
    assert answered_by.count("r0") == 5 and answered_by.count("r1") == 5
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: post(stack.port, CHAT, {"model": "qwen", "fake": {"delay": 0.5}}), range(8)))
    assert all(status == 200 for status, _, _ in results)
    assert stack.stats(0).max_active == 4 and stack.stats(1).max_active == 4


def test_a_refused_request_is_retried_once_on_another_replica(stack):
    stack.kill(0)  # still listed as ready: the EndpointSlice has not caught up yet
    for _ in range(6):
        status, headers, _ = post(stack.port, CHAT, {"model": "qwen"})
        assert status == 200 and replica(headers) == "r1"
    assert 'llm_router_upstream_errors_total{model="team-a/qwen",kind="refused"}' in stack.metrics()
    assert 'llm_router_retries_total{model="team-a/qwen"}' in stack.metrics()


def test_no_second_retry_when_every_replica_refuses(stack_factory):
    stack = stack_factory(replicas=3)
    for index in range(3):
        stack.kill(index)
    status, _, body = post(stack.port, CHAT, {"model": "qwen"})
    assert status == 502 and body["error"]["code"] == "upstream_error"
    text = stack.metrics()
    assert 'llm_router_retries_total{model="team-a/qwen"} 1' in text
    assert 'llm_router_upstream_errors_total{model="team-a/qwen",kind="refused"} 2' in text


def test_a_single_replica_is_not_retried(stack_factory):
    stack = stack_factory(replicas=1)
    stack.kill(0)
    status, _, _ = post(stack.port, CHAT, {"model": "qwen"})
    assert status == 502
    assert (
        "llm_router_retries_total"
        not in stack.metrics().split("# TYPE llm_router_retries_total counter")[1].split("#")[0]
    )


def test_a_timeout_is_not_retried(stack_factory):
    stack = stack_factory(response_timeout=0.5)
    status, _, _ = post(stack.port, CHAT, {"model": "qwen", "fake": {"hang": True}})
    assert status == 504
    assert len(stack.stats(0).requests) + len(stack.stats(1).requests) == 1


def test_a_replica_killed_mid_burst(stack):
    """Plain requests not yet answered go to the other replica; streams already started end with an
    error the client sees; nothing hangs and the model serves on."""
    outcomes = []
    lock = threading.Lock()
    started = threading.Barrier(41, timeout=10)

    def plain():
        started.wait()
        status, _, _ = post(stack.port, CHAT, {"model": "qwen", "fake": {"delay": 0.4}})
        with lock:
            outcomes.append(("plain", status))

    def streamed():
        started.wait()
        connection, response = open_stream(stack.port, {"chunks": 20, "interval": 0.05})
        try:
            data = response.read()
            complete = data.rstrip().endswith(b"data: [DONE]")
            with lock:
                outcomes.append(("stream", "complete" if complete else "truncated-silently"))
        except http.client.IncompleteRead as cut:
            with lock:
                outcomes.append(("stream", "error-event" if b'"upstream_closed"' in cut.partial else "cut"))
        connection.close()

    threads = [threading.Thread(target=plain) for _ in range(20)] + [
        threading.Thread(target=streamed) for _ in range(20)
    ]
    for thread in threads:
        thread.start()
    started.wait()
    wait_for(lambda: stack.stats(0).active >= 5)
    stack.kill(0)
    for thread in threads:
        thread.join(15)
    assert not any(thread.is_alive() for thread in threads)
    plain_statuses = [status for kind, status in outcomes if kind == "plain"]
    streams = [state for kind, state in outcomes if kind == "stream"]
    assert len(plain_statuses) == 20 and len(streams) == 20
    assert set(plain_statuses) == {200}, plain_statuses  # not started ones were retried on r1
    assert "truncated-silently" not in streams and "cut" not in streams
    assert "error-event" in streams and "complete" in streams
    for _ in range(4):
        assert post(stack.port, CHAT, {"model": "qwen"})[0] == 200
    body = json.dumps(stack.metrics())
    assert 'in_flight_requests{model=\\"team-a/qwen\\"} 0' in body
