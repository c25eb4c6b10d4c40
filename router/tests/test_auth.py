"""API keys from a file: none or a wrong one is 401, a key sees and uses only what it is allowed."""

import json
import os
import time

import pytest

from conftest import get, post
from test_errors import assert_openai_error, wait_for

CHAT = "/v1/chat/completions"
KEY_A = "sk-team-a-0123456789abcdef"
KEY_B = "sk-one-model-0123456789abcdef"


@pytest.fixture
def keyed(stack_factory, tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text(
        json.dumps(
            [
                {"name": "team-a", "key": KEY_A, "namespaces": ["team-a"]},
                {"name": "one-model", "key": KEY_B, "models": ["team-b/llama"]},
            ]
        )
    )
    stack = stack_factory(
        api_keys_file=str(keys),
        reload_interval=0.1,
        models=lambda s: [
            s.model(namespace="team-a"),
            s.model(namespace="team-b"),
            s.model(name="llama", namespace="team-b"),
        ],
    )
    stack.keys_path = keys
    return stack


def bearer(key: str) -> dict:
    return {"authorization": f"Bearer {key}"}


def test_no_key_or_a_wrong_key_is_401(keyed):
    status, _, body = post(keyed.port, CHAT, {"model": "team-a/qwen"})
    assert_openai_error(status, body, 401, "missing_api_key", keyed)
    status, _, body = post(keyed.port, CHAT, {"model": "team-a/qwen"}, headers=bearer("sk-wrong-0123456789abcdef"))
    assert_openai_error(status, body, 401, "invalid_api_key", keyed)
    assert "sk-wrong" not in json.dumps(body)
    status, _, body = get(keyed.port, "/v1/models")
    assert status == 401
    assert all(len(stats[2].requests) == 0 for stats in keyed.fakes)


def test_a_key_uses_and_sees_its_namespaces_only(keyed):
    status, _, _ = post(keyed.port, CHAT, {"model": "team-a/qwen"}, headers=bearer(KEY_A))
    assert status == 200
    # within what the key may use, 'qwen' is unique: it names team-a's
    status, _, _ = post(keyed.port, CHAT, {"model": "qwen"}, headers=bearer(KEY_A))
    assert status == 200
    # another namespace's model is as unknown as a model that does not exist
    status, _, body = post(keyed.port, CHAT, {"model": "team-b/qwen"}, headers=bearer(KEY_A))
    assert_openai_error(status, body, 404, "model_not_found", keyed)
    _, _, listed = get(keyed.port, "/v1/models", headers=bearer(KEY_A))
    assert [entry["id"] for entry in listed["data"]] == ["team-a/qwen"]
    assert listed["data"][0]["aliases"] == ["qwen"]


def test_a_key_for_one_model(keyed):
    assert post(keyed.port, CHAT, {"model": "llama"}, headers=bearer(KEY_B))[0] == 200
    assert post(keyed.port, CHAT, {"model": "team-b/qwen"}, headers=bearer(KEY_B))[0] == 404
    _, _, listed = get(keyed.port, "/v1/models", headers=bearer(KEY_B))
    assert [entry["id"] for entry in listed["data"]] == ["team-b/llama"]


def test_the_keys_file_is_read_again_when_it_changes(keyed):
    new_key = "sk-rotated-0123456789abcdef"
    keyed.keys_path.write_text(json.dumps([{"name": "rotated", "key": new_key, "namespaces": ["*"]}]))
    stamp = time.time() + 5
    os.utime(keyed.keys_path, (stamp, stamp))
    wait_for(lambda: post(keyed.port, CHAT, {"model": "team-b/qwen"}, headers=bearer(new_key))[0] == 200)
    assert post(keyed.port, CHAT, {"model": "team-a/qwen"}, headers=bearer(KEY_A))[0] == 401


def test_a_broken_keys_file_keeps_the_keys_it_had(keyed):
    keyed.keys_path.write_text("{not json")
    stamp = time.time() + 5
    os.utime(keyed.keys_path, (stamp, stamp))
    time.sleep(0.5)
    assert post(keyed.port, CHAT, {"model": "team-a/qwen"}, headers=bearer(KEY_A))[0] == 200
