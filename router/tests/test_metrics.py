"""The metrics per model after real requests through the router: latency to the first body byte and
to the end, and the tokens of the `usage` the server reported (JSON answers, and streams asked with
`stream_options.include_usage`), read without holding back any chunk."""

import http.client
import json
import re

from conftest import post
from test_streaming import events, open_stream

CHAT = "/v1/chat/completions"
QWEN = 'model="team-a/qwen"'


def sample(text: str, name: str, labels: str) -> float:
    """The value of one series, or 0 when it is absent (a counter not yet incremented)."""
    found = re.search(rf"^llm_router_{name}\{{{re.escape(labels)}\}} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def tokens(stack, kind: str) -> float:
    return sample(stack.metrics(), "tokens_total", f'{QWEN},kind="{kind}"')


def stream(stack, fake: dict, usage: bool) -> list:
    """A streamed chat read to its end; the events as they came."""
    body = {"model": "qwen", "stream": True, "fake": fake}
    if usage:
        body["stream_options"] = {"include_usage": True}
    connection = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=10)
    connection.request("POST", CHAT, body=json.dumps(body), headers={"content-type": "application/json"})
    response = connection.getresponse()
    assert response.status == 200
    received = [data for _, data in events(response)]
    connection.close()
    return received


def test_json_answers_count_their_usage_tokens(stack):
    for _ in range(2):
        status, _, body = post(stack.port, CHAT, {"model": "qwen"})
        assert status == 200 and body["usage"]["prompt_tokens"] == 5
    status, _, _ = post(stack.port, "/v1/embeddings", {"model": "qwen", "input": "x"})
    assert status == 200
    assert tokens(stack, "prompt") == 5 + 5 + 3  # the embeddings' usage has no completion_tokens
    assert tokens(stack, "completion") == 2 + 2


def test_a_stream_with_include_usage_counts_its_last_chunk(stack):
    received = stream(stack, {"chunks": 4}, usage=True)
    assert received[-1] == b"[DONE]" and b'"completion_tokens": 4' in received[-2]
    # the usage chunk and [DONE] in two reads of the router: the usage is in the read before the last
    stream(stack, {"chunks": 3, "done_after": 0.2}, usage=True)
    assert tokens(stack, "completion") == 4 + 3
    assert tokens(stack, "prompt") == 5 + 5


def test_a_stream_without_usage_counts_no_tokens(stack):
    received = stream(stack, {"chunks": 3}, usage=False)
    assert received[-1] == b"[DONE]"
    text = stack.metrics()
    assert "llm_router_tokens_total{" not in text
    assert sample(text, "upstream_duration_seconds_count", QWEN) == 1


def test_first_byte_and_duration_of_a_stream(stack):
    # head after 0.2 s, then a chunk every 0.15 s: the first byte at about 0.35 s, the end at about 0.65 s
    stream(stack, {"chunks": 3, "interval": 0.15, "delay": 0.2}, usage=False)
    text = stack.metrics()
    head = sample(text, "upstream_latency_seconds_sum", QWEN)
    first = sample(text, "upstream_first_byte_seconds_sum", QWEN)
    total = sample(text, "upstream_duration_seconds_sum", QWEN)
    assert 0.2 <= head < first < total
    assert 0.35 <= first < 0.6
    assert 0.65 <= total < 1.5
    assert sample(text, "upstream_first_byte_seconds_count", QWEN) == 1
    assert sample(text, "upstream_first_byte_seconds_bucket", f'{QWEN},le="0.25"') == 0
    assert sample(text, "upstream_first_byte_seconds_bucket", f'{QWEN},le="0.5"') == 1
    assert sample(text, "upstream_duration_seconds_bucket", f'{QWEN},le="+Inf"') == 1


def test_a_stream_cut_by_its_server_counts_no_tokens_nor_duration(stack):
    connection, response = open_stream(stack.port, {"chunks": 5, "cut_after": 2})
    assert response.status == 200
    list(events(response))
    connection.close()
    text = stack.metrics()
    assert sample(text, "upstream_first_byte_seconds_count", QWEN) == 1
    assert sample(text, "upstream_duration_seconds_count", QWEN) == 0
    assert "llm_router_tokens_total{" not in text
