"""templates/state.yaml.j2 rendered by real Ansible: which reason, message and Event a reconcile
reports for the problems the diagnosis finds, that each problem is told once, and what happens to
the puller's progress report and the recorded size."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from unit_helpers import ROLE, VENV_BIN

BASE = {
    "__llmmodel_name": "m",
    "__llmmodel_weights_ready": True,
    "__llmmodel_credentials_problem": "",
    "__llmmodel_pull_failed": False,
    "__llmmodel_pvc": {"status": {"phase": "Bound"}},
    "__llmmodel_pvc_name": "m-weights",
    "__llmmodel_job_name": "m-pull",
    "__llmmodel_server_name": "m",
    "__llmmodel_source_id": "hf://acme/tiny@main",
    "__llmmodel_url": "http://m.ns.svc.cluster.local:8000",
    "__llmmodel_server_ready": False,
    "__llmmodel_display_model": "acme/tiny",
    "__llmmodel_generation": 2,
    "__llmmodel_job_state": "absent",
    "__llmmodel_job": {},
    # How the server runs, as server.yaml.j2 decides it (its own tests: test_llmmodel_rendering.py).
    "__llmmodel_spec": {"serve": {}},
    "__llmmodel_server": {"problem": "", "runtime": "custom", "model_file": "", "replicas": 1, "autoscaling": False,
                          "most_replicas": 1, "startup": {"seconds": 1800, "reason": "the default"},
                          "strategy": "Recreate", "strategy_reason": "one replica",
                          "metrics": {"path": "", "scrape": False, "reason": "no metrics"}},
    "_inference_ai_example_com_llmmodel": {"status": {"phase": "Serving"}},
}
CRASH = {"reason": "CrashLoopBackOff", "message": "container server of pod m-1 keeps crashing; last run ended with exit code 1: boom"}


@pytest.fixture(scope="module")
def render(tmp_path_factory):
    """Render state.yaml.j2 for several sets of facts in one ansible-playbook run."""
    cases: dict[str, dict] = {}

    def add(name, **facts):
        cases[name] = {**BASE, **facts}

    add("new crash loop", __llmmodel_server_problem=CRASH)
    add("same crash loop", __llmmodel_server_problem=CRASH,
        _inference_ai_example_com_llmmodel={"status": {"phase": "Serving", "reportedProblem": "CrashLoopBackOff"}})
    add("recovered", __llmmodel_server_ready=True,
        _inference_ai_example_com_llmmodel={"status": {"phase": "Serving", "reportedProblem": "CrashLoopBackOff"}})
    add("rolling out", _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}}, __llmmodel_job_state="complete",
        __llmmodel_job={"status": {"completionTime": "2026-03-01T12:00:00Z"}}, __llmmodel_weights_size="1073741824",
        __llmmodel_revision="abc123")
    add("pulling", __llmmodel_weights_ready=False, __llmmodel_job_state="running",
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("pull retries after an eviction", __llmmodel_weights_ready=False, __llmmodel_job_state="running",
        __llmmodel_pull_problem={"reason": "PullEvicted", "message": "pod m-pull-x was evicted: low on memory; the Job retries"},
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("pull OOMKilled", __llmmodel_weights_ready=False, __llmmodel_job_state="failed", __llmmodel_pull_failed=True,
        __llmmodel_pull_message="", __llmmodel_pull_problem={"reason": "PullOOMKilled", "message": "ran out of memory"},
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("pull failed", __llmmodel_weights_ready=False, __llmmodel_job_state="failed", __llmmodel_pull_failed=True,
        __llmmodel_pull_message="not found: HTTP 404 for https://host/m.gguf",
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})

    tmp = tmp_path_factory.mktemp("state")
    (tmp / "cases.json").write_text(json.dumps(cases))
    out = tmp / "out.json"
    playbook = [{
        "hosts": "localhost",
        "gather_facts": False,
        "vars_files": [str(ROLE / "defaults" / "main.yml"), str(ROLE / "vars" / "main.yml")],
        "tasks": [
            {"name": "Read the cases", "ansible.builtin.set_fact": {"cases": "{{ lookup('ansible.builtin.file', '%s') | from_json }}" % (tmp / "cases.json")}},
            {"name": "Render", "ansible.builtin.include_tasks": str(tmp / "one.yml"),
             "loop": "{{ cases | dict2items }}", "loop_control": {"loop_var": "case"}},
            {"name": "Write", "ansible.builtin.copy": {"dest": str(out), "content": "{{ rendered | to_json }}", "mode": "0600"}},
        ],
    }]
    one = [{
        "name": "Render one",
        "ansible.builtin.set_fact": {
            "rendered": "{{ rendered | default({}) | combine({case.key: lookup('ansible.builtin.template', '%s', template_vars=case.value) | from_yaml}) }}"
            % (ROLE / "templates" / "state.yaml.j2"),
        },
    }]
    (tmp / "one.yml").write_text(yaml.safe_dump(one))
    (tmp / "play.yml").write_text(yaml.safe_dump(playbook))
    env = dict(os.environ, ANSIBLE_GATHERING="explicit", ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    done = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(tmp / "play.yml")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text())


def condition(state, ctype):
    return next(c for c in state["conditions"] if c["type"] == ctype)


def test_a_new_server_problem_is_told_once(render):
    state = render["new crash loop"]
    assert state["status"]["phase"] == "Serving"  # the weights are there
    assert condition(state, "Ready") | {"message": ""} == {"type": "Ready", "status": "False", "reason": "CrashLoopBackOff", "message": ""}
    assert state["status"]["message"] == CRASH["message"] == condition(state, "Ready")["message"]
    assert state["status"]["reportedProblem"] == "CrashLoopBackOff"
    assert state["event"] == {"type": "Warning", "reason": "CrashLoopBackOff", "message": CRASH["message"]}
    assert render["same crash loop"]["event"] is None
    assert render["same crash loop"]["status"]["reportedProblem"] == "CrashLoopBackOff"


def test_a_recovered_server_clears_the_problem_without_an_event(render):
    state = render["recovered"]
    assert condition(state, "Ready")["status"] == "True" and state["status"]["reportedProblem"] is None
    assert state["event"] is None


def test_progress_is_left_to_the_puller_while_it_runs_and_removed_after(render):
    pulling = render["pulling"]["status"]["weights"]
    assert "progress" not in pulling and pulling["size"] is None
    done = render["rolling out"]
    assert done["status"]["weights"]["progress"] is None
    assert done["status"]["weights"]["size"] == 1073741824 and done["status"]["weights"]["revision"] == "abc123"
    assert done["event"]["reason"] == "Serving"  # a phase change, no problem


def test_pull_problems(render):
    retrying = render["pull retries after an eviction"]
    assert retrying["status"]["phase"] == "Pulling"
    assert condition(retrying, "WeightsReady")["reason"] == "PullEvicted"
    assert retrying["status"]["message"].endswith("the Job retries")
    assert retrying["event"]["reason"] == "PullEvicted" and retrying["event"]["type"] == "Warning"

    oom = render["pull OOMKilled"]
    assert oom["status"]["phase"] == "Failed" and condition(oom, "WeightsReady")["reason"] == "PullOOMKilled"
    assert condition(oom, "Ready")["reason"] == "PullFailed" and oom["event"]["reason"] == "PullOOMKilled"

    failed = render["pull failed"]
    assert condition(failed, "WeightsReady")["reason"] == "PullFailed"
    assert failed["status"]["message"] == "not found: HTTP 404 for https://host/m.gguf"
    assert failed["status"]["reportedProblem"] == "PullFailed"
