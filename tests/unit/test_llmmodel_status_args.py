"""llmmodel_status: argument validation and client configuration, without an API server."""

from __future__ import annotations

import json

import pytest

from unit_helpers import load_library_module, task_results

llmmodel_status = load_library_module("llmmodel_status")

TARGET = {"api_version": "inference.ai.example.com/v1alpha1", "kind": "LLMModel", "name": "m", "namespace": "ns"}


def condition(**overrides):
    return dict({"type": "Ready", "status": "True", "reason": "ServerAvailable", "message": "ok"}, **overrides)


@pytest.mark.parametrize("missing", ["api_version", "kind", "name"])
def test_target_is_required(run_module, missing):
    args = {k: v for k, v in TARGET.items() if k != missing}
    result = run_module(llmmodel_status, args)
    assert result["failed"] is True
    assert missing in result["msg"]


@pytest.mark.parametrize(
    "args, message",
    [
        ({"conditions": [condition(status="Maybe")]}, "value of status must be one of: True, False, Unknown"),
        ({"conditions": [{"type": "Ready", "status": "True"}]}, "missing required arguments: reason"),
        ({"conditions": [condition(color="blue")]}, "Unsupported parameters"),
        ({"conditions": [condition(reason="Not Camel")]}, "must be a CamelCase identifier"),
        ({"conditions": [condition(), condition(status="False")]}, "appears more than once"),
        ({"conditions": [condition(type="has space")]}, "not a valid condition type"),
        ({"status": {"conditions": []}}, "set conditions with the conditions option, not inside status"),
        ({"observed_generation": -1}, "observed_generation must not be negative"),
        ({"status": "Serving"}, "status"),
    ],
)
def test_invalid_arguments_fail_before_any_api_call(run_module, args, message):
    # host points nowhere: reaching the network would give a different error.
    result = run_module(llmmodel_status, dict(TARGET, host="http://127.0.0.1:9", **args))
    assert result["failed"] is True
    assert message in result["msg"], result["msg"]


def test_boolean_condition_status_is_read_as_its_name(run_module):
    # YAML `status: true` arrives as a bool; it means "True", as in kubernetes.core.
    result = run_module(llmmodel_status, dict(TARGET, host="http://127.0.0.1:9", conditions=[condition(status=True, reason="x y")]))
    assert "must be a CamelCase identifier" in result["msg"]
    assert "must be one of" not in result["msg"]


def test_the_api_key_never_appears_in_the_output(run_module):
    result = run_module(
        llmmodel_status, dict(TARGET, host="http://127.0.0.1:9", api_key="s3cr3t-token", conditions=[condition(status="no")])
    )
    assert result["failed"] is True
    assert "s3cr3t-token" not in json.dumps(result)


def test_an_unreachable_server_fails_cleanly(run_module):
    result = run_module(llmmodel_status, dict(TARGET, host="http://127.0.0.1:9", api_key="s3cr3t-token"))
    assert result["failed"] is True
    assert "cannot reach the API server" in result["msg"]
    assert "s3cr3t-token" not in json.dumps(result)


def params(**overrides):
    base = {"kubeconfig": None, "context": None, "host": None, "api_key": None, "validate_certs": None}
    base.update(overrides)
    return base


def settings_of(**overrides):
    from ansible.module_utils.llmmodel_client import connection_settings

    return connection_settings(params(**overrides))


def test_an_explicit_host_ignores_the_environment_kubeconfig(monkeypatch):
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    assert settings_of(host="http://127.0.0.1:9")["server"] == "http://127.0.0.1:9"


def test_client_from_host_and_token():
    settings = settings_of(host="https://10.0.0.1:6443", api_key="tok", validate_certs=False)
    assert (settings["server"], settings["token"], settings["verify"]) == ("https://10.0.0.1:6443", "tok", False)


KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster: {server: "http://localhost:8888"}
- name: other
  cluster: {server: "https://other.example:6443"}
contexts:
- name: proxy
  context: {cluster: proxy, user: u, namespace: ns}
- name: other
  context: {cluster: other, user: u}
current-context: proxy
users:
- name: u
  user: {token: kubeconfig-token}
"""


def test_client_from_the_kubeconfig_ansible_operator_sets(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)

    settings = settings_of(kubeconfig=str(path))
    assert (settings["server"], settings["token"]) == ("http://localhost:8888", "kubeconfig-token")

    assert settings_of(kubeconfig=str(path), context="other")["server"] == "https://other.example:6443"
    assert settings_of(kubeconfig=str(path), api_key="explicit")["token"] == "explicit"


@pytest.mark.parametrize("variable", ["K8S_AUTH_KUBECONFIG", "KUBECONFIG"])
def test_kubeconfig_defaults_from_the_environment(tmp_path, monkeypatch, run_module, variable):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.replace("http://localhost:8888", "http://127.0.0.1:9"))
    for name in ("K8S_AUTH_KUBECONFIG", "KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, str(path))

    result = run_module(llmmodel_status, dict(TARGET))

    assert result["failed"] is True
    assert "cannot reach the API server" in result["msg"] and "127.0.0.1" in result["msg"], result["msg"]


def test_ansible_ships_the_module_with_its_module_utils(run_probe_role):
    """Through a real ansible-runner run: the role's module_utils reach the module (AnsiballZ)."""
    tasks = """\
- name: Invalid condition
  llmmodel_status:
    api_version: inference.ai.example.com/v1alpha1
    kind: LLMModel
    name: m
    namespace: ns
    host: http://127.0.0.1:9
    api_key: s3cr3t-token
    conditions:
      - type: Ready
        status: "True"
        reason: not camel
"""
    completed, events = run_probe_role(tasks)

    assert completed.returncode == 2, completed.stdout + completed.stderr
    [(name, res)] = task_results(events, "llmmodel_status")
    assert name == "runner_on_failed"
    assert "must be a CamelCase identifier" in res["msg"]
    assert "s3cr3t-token" not in json.dumps(events)
