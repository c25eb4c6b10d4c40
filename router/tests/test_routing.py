"""Routing by the body's model, the names rule, /v1/models, the model rewritten for its server."""

import json

from conftest import get, post

CHAT = "/v1/chat/completions"


def test_routes_by_model_name_and_full_name(stack):
    status, headers, body = post(stack.port, CHAT, {"model": "qwen", "messages": []})
    assert status == 200, body
    assert body["choices"][0]["message"]["content"] == "Paris."
    status, _, body = post(stack.port, CHAT, {"model": "team-a/qwen", "messages": []})
    assert status == 200
    # the server knows the model by its name: the router rewrote the full name for it
    sent = json.loads(stack.stats(0).requests[-1][2] if stack.stats(0).requests else stack.stats(1).requests[-1][2])
    assert sent["model"] == "qwen"


def test_completions_and_embeddings_are_routed(stack):
    for path in ("/v1/completions", "/v1/embeddings"):
        status, _, body = post(stack.port, path, {"model": "qwen", "input": "x", "prompt": "x"})
        assert status == 200, body
    paths = [request[0] for index in (0, 1) for request in stack.stats(index).requests]
    assert sorted(paths) == [b"/v1/completions", b"/v1/embeddings"]


def test_the_api_key_of_the_client_is_not_sent_to_the_server(stack):
    status, _, _ = post(stack.port, CHAT, {"model": "qwen"}, headers={"authorization": "Bearer sk-client-secret"})
    assert status == 200
    requests = stack.stats(0).requests + stack.stats(1).requests
    assert all(b"authorization" not in headers for _, headers, _ in requests)


def test_an_ambiguous_name_lists_the_full_names(stack_factory):
    stack = stack_factory(models=lambda s: [s.model(namespace="team-a"), s.model(namespace="team-b")])
    status, _, body = post(stack.port, CHAT, {"model": "qwen"})
    assert status == 400
    assert body["error"]["code"] == "model_ambiguous"
    assert "team-a/qwen" in body["error"]["message"] and "team-b/qwen" in body["error"]["message"]
    status, _, _ = post(stack.port, CHAT, {"model": "team-b/qwen"})
    assert status == 200


def test_models_lists_every_model_with_its_state(stack_factory):
    stack = stack_factory(
        models=lambda s: [
            s.model(namespace="team-a"),
            s.model(namespace="team-b"),
            s.model(name="llama", namespace="team-b", phase="Pulling", reason="PullRunning", endpoints=[]),
        ]
    )
    status, _, body = get(stack.port, "/v1/models")
    assert status == 200
    assert body["object"] == "list"
    listed = {entry["id"]: entry for entry in body["data"]}
    assert sorted(listed) == ["team-a/qwen", "team-b/llama", "team-b/qwen"]
    assert listed["team-b/llama"]["aliases"] == ["llama"]
    assert listed["team-a/qwen"]["aliases"] == []  # two models are named qwen
    assert listed["team-b/llama"]["status"] == {"phase": "Pulling", "reason": "PullRunning"}
    assert listed["team-a/qwen"]["owned_by"] == "team-a"


def test_upstream_connections_are_kept_alive_and_reused(stack_factory):
    stack = stack_factory(replicas=1)
    for _ in range(20):
        assert post(stack.port, CHAT, {"model": "qwen"})[0] == 200
    assert stack.stats(0).accepted == 1
