"""The plugin under a REAL `ansible-runner run`, invoked the way ansible-operator invokes it."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import llm_operator_runner_http
from receiver import GO_EVENT_TIME, EventReceiver

VENV_BIN = Path(sys.executable).parent
STATS_KEYS = ("playbook", "playbook_uuid", "changed", "ok", "failures", "skipped")

ROLE_TASKS = """\
- name: Say hello
  ansible.builtin.debug:
    msg: hello
- name: Change something
  ansible.builtin.command: "true"
  changed_when: true
- name: Fail when asked to
  ansible.builtin.fail:
    msg: asked to fail
  when: probe_fail | default(false) | bool
"""


def write_input_dir(base: Path, settings: dict, extravars: dict | None = None) -> Path:
    """Lay out a private data dir like ansible-operator's inputdir package does."""
    inputdir = base / "input"
    for sub in ("env", "project", "inventory"):
        (inputdir / sub).mkdir(parents=True)
    (inputdir / "env" / "settings").write_text(json.dumps(settings))
    (inputdir / "env" / "extravars").write_text(json.dumps(extravars or {}))
    role = base / "roles" / "probe" / "tasks"
    role.mkdir(parents=True)
    (role / "main.yml").write_text(ROLE_TASKS)
    return inputdir


def run_role(base: Path, inputdir: Path) -> tuple[subprocess.CompletedProcess, str]:
    """`ansible-runner run <dir> --role ... --hosts localhost -i <ident>`, as runner.go's roleCmdFunc."""
    ident = uuid.uuid4().hex[:12]
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", ANSIBLE_GATHERING="explicit")
    command = [
        str(VENV_BIN / "ansible-runner"), "run", str(inputdir),
        "--rotate-artifacts", "20", "--role", "probe", "--roles-path", str(base / "roles"),
        "--hosts", "localhost", "-i", ident, "--role-skip-facts",
    ]
    completed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    return completed, ident


def artifact_events(inputdir: Path, ident: str) -> list[dict]:
    events_dir = inputdir / "artifacts" / ident / "job_events"
    return [json.loads(p.read_text()) for p in events_dir.glob("*.json")]


def test_plugin_is_registered_as_http():
    entry_points = importlib.metadata.entry_points(group="ansible_runner.plugins")
    ours = [ep for ep in entry_points if ep.value == "llm_operator_runner_http"]
    assert [ep.name for ep in ours] == ["http"], "install it: pip install -e runner-http-plugin"
    import ansible_runner

    assert ansible_runner.plugins.get("http") is llm_operator_runner_http


def test_run_posts_every_event_and_status(tmp_path, receiver):
    inputdir = write_input_dir(tmp_path, {"runner_http_url": receiver.socket_path, "runner_http_path": "/events/"})

    completed, ident = run_role(tmp_path, inputdir)

    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "runner-http plugin" not in completed.stderr
    assert receiver.requests, "the receiver got nothing"
    assert all(r.answer == 204 for r in receiver.requests), [(r.answer, r.body[:200]) for r in receiver.requests]
    assert {(r.method, r.path, r.content_type) for r in receiver.requests} == {("POST", "/events/", "application/json")}

    # Every event ansible-runner recorded reached the receiver, in order, with a time Go can parse.
    posted = receiver.events
    recorded = sorted(artifact_events(inputdir, ident), key=lambda e: e["counter"])
    assert [e["uuid"] for e in posted] == [e["uuid"] for e in recorded]
    assert all(GO_EVENT_TIME.match(e["created"]) for e in posted)

    names = [e["event"] for e in posted if e["event"] != "verbose"]  # verbose: warnings outside the playbook
    assert names[0] == "playbook_on_start"
    assert names[-1] == "playbook_on_stats"
    assert names.count("playbook_on_task_start") == 3
    assert names.count("runner_on_ok") == 2
    assert names.count("runner_on_skipped") == 1
    ok_actions = [e["event_data"]["task_action"] for e in posted if e["event"] == "runner_on_ok"]
    assert ok_actions == ["ansible.builtin.debug", "ansible.builtin.command"]

    stats = posted[-1]
    assert isinstance(stats["counter"], int) and isinstance(stats["pid"], int)
    assert all(key in stats["event_data"] for key in STATS_KEYS)
    assert stats["event_data"]["ok"] == {"localhost": 2}
    assert stats["event_data"]["changed"] == {"localhost": 1}
    assert stats["event_data"]["skipped"] == {"localhost": 1}
    assert stats["event_data"]["failures"] == {}

    statuses = receiver.statuses
    assert [s["status"] for s in statuses] == ["starting", "running", "successful"]
    assert all(s["runner_ident"] == ident for s in statuses)
    assert "command" in statuses[0] and "env" not in statuses[0]


def test_failed_run_posts_the_failure(tmp_path, receiver):
    inputdir = write_input_dir(
        tmp_path, {"runner_http_url": receiver.socket_path, "runner_http_path": "/events/"}, {"probe_fail": True}
    )

    completed, _ = run_role(tmp_path, inputdir)

    assert completed.returncode == 2, completed.stdout + completed.stderr
    failed = [e for e in receiver.events if e["event"] == "runner_on_failed"]
    assert len(failed) == 1
    assert failed[0]["event_data"]["res"]["msg"] == "asked to fail"
    stats = receiver.events[-1]
    assert stats["event"] == "playbook_on_stats"
    assert stats["event_data"]["failures"] == {"localhost": 1}
    assert receiver.statuses[-1]["status"] == "failed"


def test_unreachable_receiver_is_logged_and_the_run_goes_on(tmp_path, socket_path):
    # Nobody listens on socket_path.
    inputdir = write_input_dir(tmp_path, {"runner_http_url": socket_path, "runner_http_path": "/events/"})

    completed, ident = run_role(tmp_path, inputdir)

    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "runner-http plugin: WARNING: could not deliver status 'starting'" in completed.stderr
    assert "further delivery failures of this run are not reported" in completed.stderr
    assert completed.stderr.count("could not deliver") == 5
    assert any(e["event"] == "playbook_on_stats" for e in artifact_events(inputdir, ident))


def test_receiver_errors_are_logged_not_raised(socket_path, capsys):
    class Config:
        settings = {"runner_http_url": socket_path, "runner_http_path": "/events/"}

    with EventReceiver(socket_path, force_status=500) as failing:
        llm_operator_runner_http.status_handler(Config, {"status": "starting", "runner_ident": "x", "env": {"K": "v"}})
        llm_operator_runner_http.event_handler(Config, {"uuid": "u1", "counter": 1, "event": "verbose", "stdout": "s3cr3t"})

    assert len(failing.requests) == 2
    stderr = capsys.readouterr().err
    assert "could not deliver status 'starting': receiver answered HTTP 500" in stderr
    assert "could not deliver event 'verbose' (counter 1, uuid u1): receiver answered HTTP 500" in stderr
    assert "s3cr3t" not in stderr


def test_settings_headers_and_environment_override(socket_path, monkeypatch):
    class Config:
        settings = {"runner_http_url": "/nonexistent.sock", "runner_http_path": "/wrong/",
                    "runner_http_headers": {"X-Probe": "1"}}

    monkeypatch.setenv("RUNNER_HTTP_URL", socket_path)
    monkeypatch.setenv("RUNNER_HTTP_PATH", "/events/")
    with EventReceiver(socket_path) as running:
        llm_operator_runner_http.event_handler(Config, {"uuid": "u2", "counter": 2, "event": "verbose"})

    assert [(r.path, r.answer) for r in running.requests] == [("/events/", 204)]


def test_no_url_means_no_request(receiver):
    class Config:
        settings = {}

    llm_operator_runner_http.event_handler(Config, {"uuid": "u3", "counter": 3, "event": "verbose"})

    assert receiver.requests == []


def test_a_url_instead_of_a_socket_is_reported(capsys):
    class Config:
        settings = {"runner_http_url": "http://localhost:9/", "runner_http_path": "/events/"}

    llm_operator_runner_http.event_handler(Config, {"uuid": "u4", "counter": 4, "event": "verbose"})

    assert "runner_http_url must be a unix socket path, not a URL" in capsys.readouterr().err
