"""Every error the router answers itself, in the OpenAI shape, without a pod address or a key."""

import http.client
import json

from conftest import get, post

CHAT = "/v1/chat/completions"


def assert_openai_error(status, body, expected_status, code, stack):
    assert status == expected_status, body
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "code"}
    assert body["error"]["code"] == code
    for index in range(len(stack.fakes)):
        assert str(stack.fakes[index][1]) not in body["error"]["message"]  # no replica address
    assert "127.0.0.1" not in body["error"]["message"]


def test_malformed_json_is_400(stack):
    status, _, body = post(stack.port, CHAT, b'{"model": "qwen",')
    assert_openai_error(status, body, 400, "invalid_json", stack)
    status, _, body = post(stack.port, CHAT, b'["qwen"]')
    assert_openai_error(status, body, 400, "invalid_json", stack)
    status, _, body = post(stack.port, CHAT, b"\xff\xfe")
    assert_openai_error(status, body, 400, "invalid_json", stack)


def test_no_model_is_400(stack):
    for document in ({"messages": []}, {"model": ""}, {"model": 7}, {"model": None}):
        status, _, body = post(stack.port, CHAT, document)
        assert_openai_error(status, body, 400, "model_missing", stack)


def test_unknown_model_is_404_saying_how_to_list_models(stack):
    status, _, body = post(stack.port, CHAT, {"model": "gpt-9"})
    assert_openai_error(status, body, 404, "model_not_found", stack)
    assert "GET /v1/models" in body["error"]["message"]
    status, _, body = post(stack.port, CHAT, {"model": "team-z/qwen"})
    assert_openai_error(status, body, 404, "model_not_found", stack)


def test_a_long_unknown_name_is_not_echoed_whole(stack):
    status, _, body = post(stack.port, CHAT, {"model": "m" * 5000 + "\n"})
    assert_openai_error(status, body, 404, "model_not_found", stack)
    assert len(body["error"]["message"]) < 400


def test_a_model_not_serving_is_503_with_its_reason_and_retry_after(stack_factory):
    stack = stack_factory(
        models=lambda s: [s.model(phase="Pulling", reason="PullRunning", endpoints=[])], retry_after=7
    )
    status, headers, body = post(stack.port, CHAT, {"model": "qwen"})
    assert_openai_error(status, body, 503, "model_not_ready", stack)
    assert "Pulling" in body["error"]["message"] and "PullRunning" in body["error"]["message"]
    assert headers["retry-after"] == "7"


def test_serving_without_a_ready_replica_is_503(stack_factory):
    stack = stack_factory(models=lambda s: [s.model(endpoints=[])])
    status, headers, body = post(stack.port, CHAT, {"model": "qwen"})
    assert_openai_error(status, body, 503, "model_not_ready", stack)
    assert int(headers["retry-after"]) >= 1


def test_a_body_over_the_limit_is_413(stack_factory):
    stack = stack_factory(max_body_bytes=1000)
    status, _, body = post(stack.port, CHAT, {"model": "qwen", "prompt": "x" * 2000})
    assert_openai_error(status, body, 413, "request_too_large", stack)
    status, _, body = post(stack.port, CHAT, {"model": "qwen", "prompt": "x" * 500})
    assert status == 200


def test_a_chunked_body_over_the_limit_is_413(stack_factory):
    stack = stack_factory(max_body_bytes=1000)
    connection = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=5)
    connection.request(
        "POST",
        CHAT,
        body=iter([b'{"model": "qwen", "p": "', b"x" * 600, b"x" * 600, b'"}']),
        encode_chunked=True,
        headers={"content-type": "application/json"},
    )
    response = connection.getresponse()
    body = json.loads(response.read())
    assert_openai_error(response.status, body, 413, "request_too_large", stack)


def test_upstream_refusing_is_502_and_timeout_is_504(stack_factory):
    stack = stack_factory(replicas=1, response_timeout=0.6)
    stack.kill(0)
    status, _, body = post(stack.port, CHAT, {"model": "qwen"})
    assert_openai_error(status, body, 502, "upstream_error", stack)
    assert "refused" in body["error"]["message"]

    stack = stack_factory(replicas=1, response_timeout=0.6)
    status, _, body = post(stack.port, CHAT, {"model": "qwen", "fake": {"hang": True}})
    assert_openai_error(status, body, 504, "upstream_timeout", stack)
    wait_for(lambda: stack.stats(0).cancelled == 1)  # the router hung up: the server stops waiting


def test_a_full_queue_is_429_and_a_long_wait_504(stack_factory):
    import concurrent.futures

    stack = stack_factory(replicas=1, max_in_flight_per_replica=1, queue_length=1, queue_timeout=0.5)
    slow = {"model": "qwen", "fake": {"delay": 1.5}}
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        first = pool.submit(post, stack.port, CHAT, slow)
        wait_for(lambda: stack.stats(0).active == 1)
        queued = pool.submit(post, stack.port, CHAT, {"model": "qwen"})
        wait_for(lambda: 'llm_router_queue_waiting_requests{model="team-a/qwen"} 1' in stack.metrics())
        status, headers, body = post(stack.port, CHAT, {"model": "qwen"})
        assert_openai_error(status, body, 429, "queue_full", stack)
        assert headers["retry-after"]
        status, _, body = queued.result()
        assert_openai_error(status, body, 504, "queue_timeout", stack)
        assert first.result()[0] == 200


def test_wrong_method_and_unknown_path(stack):
    status, _, body = get(stack.port, CHAT)
    assert_openai_error(status, body, 405, "method_not_allowed", stack)
    status, _, body = post(stack.port, "/v1/nothing", {"model": "qwen"})
    assert_openai_error(status, body, 404, "unknown_url", stack)


def test_metrics_count_requests_by_model_and_code(stack):
    post(stack.port, CHAT, {"model": "qwen"})
    post(stack.port, CHAT, {"model": "nope"})
    text = stack.metrics()
    assert 'llm_router_requests_total{model="team-a/qwen",code="200"} 1' in text
    assert 'llm_router_requests_total{model="",code="404"} 1' in text  # never the client's string
    assert "nope" not in text
    assert 'llm_router_upstream_latency_seconds_count{model="team-a/qwen"} 1' in text
    assert 'llm_router_in_flight_requests{model="team-a/qwen"} 0' in text


def wait_for(condition, timeout: float = 5.0):
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_bodies_parse_as_json_loads_parses_them():
    """The UTF-8 fast path of the body's parse accepts and refuses exactly what json.loads does."""
    from llm_router.handlers import parse_json

    document = {"model": "qwen", "messages": [{"role": "user", "content": "café \u2603 \U0001f600"}]}
    text = json.dumps(document, ensure_ascii=False)
    bodies = [
        text.encode(),
        text.encode("utf-16-le"),
        text.encode("utf-16"),
        b"\xef\xbb\xbf" + text.encode(),
        b'{"model": "\xed\xa0\x80"}',  # a lone surrogate: json.loads lets it through (surrogatepass)
        b'{"model": "\xff"}',
        b'{"model": "qwen",',
        b" " + text.encode(),
    ]
    for body in bodies:
        try:
            expected = json.loads(body)
        except ValueError as error:
            expected = type(error)
        try:
            got = parse_json(body)
        except ValueError as error:
            got = type(error)
        assert got == expected, body
