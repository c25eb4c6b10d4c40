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

from ansible.module_utils.llmmodel_revisions import revision_id  # noqa: E402  (unit_helpers puts it there)

BASE = {
    "__llmmodel_name": "m",
    "__llmmodel_weights_ready": True,
    "__llmmodel_pull_failed": False,
    "__llmmodel_pull_gave_up": False,
    "__llmmodel_retry": "",
    "__llmmodel_pvc": {"status": {"phase": "Bound"}},
    "__llmmodel_pvc_name": "m-weights",
    "__llmmodel_job_name": "m-pull",
    "__llmmodel_server_name": "m",
    "__llmmodel_source_id": "hf://acme/tiny@main",
    "__llmmodel_url": "http://m.ns.svc.cluster.local:8000",
    "__llmmodel_server_ready": False,
    "__llmmodel_server_available": False,
    "__llmmodel_service_exists": True,
    "__llmmodel_all_conflicts": [],
    "__llmmodel_display_model": "acme/tiny",
    "__llmmodel_generation": 2,
    "__llmmodel_job_state": "absent",
    "__llmmodel_job": {},
    "__llmmodel_deployment": {"spec": {"replicas": 2}, "status": {"availableReplicas": 0, "updatedReplicas": 1}},
    # How the server runs, as server.yaml.j2 decides it (its own tests: test_llmmodel_rendering.py).
    "__llmmodel_spec": {"serve": {}},
    "__llmmodel_server": {"problem": "", "runtime": "custom", "model_file": "", "replicas": 1, "autoscaling": False,
                          "most_replicas": 1, "startup": {"seconds": 1800, "reason": "the default"}, "health_path": "/health",
                          "strategy": "Recreate", "strategy_reason": "one replica",
                          "metrics": {"path": "", "scrape": False, "reason": "no metrics"},
                          # The preset the server runs (llmmodel_preset_pin, tasks/server.yml): the current one here.
                          "pin": {"preset": {"image": None, "command": [], "args": []}, "changes": [], "pinned": False, "record": "{}"}},
    "_inference_ai_example_com_llmmodel": {"status": {"phase": "Serving"}},
    "__llmmodel_namespace": "ns",
}
CRASH = {"reason": "CrashLoopBackOff", "message": "container server of pod m-1 keeps crashing; last run ended with exit code 1: boom"}
ASTRAL = {"reason": "CrashLoopBackOff", "message": "exit code 1: 😀 \\ud83d \u2028 \"quoted\" \\\\ud83d\\ude00 done"}
CONFLICT = {"kind": "Service", "name": "m", "message": "Service m already exists and is not this LLMModel's (created by kubectl)"}
AVAILABLE = {"spec": {"replicas": 2}, "status": {"availableReplicas": 1, "updatedReplicas": 1}}
NEW = "https://host/kwok-fail/m.gguf"
KEPT_MISMATCH = {"kind": "PersistentVolumeClaim", "name": "m-weights", "reason": "KeptWeightsMismatch",
                 "message": "PersistentVolumeClaim m-weights was kept from an earlier LLMModel m and holds hf://acme/old@main"}


def record(source, **extra):
    return {"rid": revision_id(source), "source": source, "root": False, "revision": "", "gguf": "", "size": 0,
            "pulledAt": "", **extra}


def revisions(held, desired=None, served=None):
    """__llmmodel_revisions as revisions.yml sets it: ``desired`` and ``served`` index ``held``."""
    return {"held": held, "desired": held[desired] if desired is not None else {},
            "served": held[served]["rid"] if served is not None else "", "keep": []}


WAITING_CLAIM = {"metadata": {}, "spec": {"storageClassName": "node-local"}, "status": {"phase": "Pending"}}
QUOTA = {"reason": "PullPodCreationFailed",
         "message": "the pull Job m-pull cannot create its pod (FailedCreate: exceeded quota: compute, requested: limits.cpu=1)"}
FAILURE = {"source": "hf://acme/tiny@main", "generation": 2, "retry": "", "reason": "PullFailed", "message": "not found: HTTP 404"}


@pytest.fixture(scope="module")
def render(tmp_path_factory):
    """Render state.yaml.j2 for several sets of facts in one ansible-playbook run."""
    cases: dict[str, dict] = {}

    def add(name, **facts):
        cases[name] = {**BASE, **facts}

    add("new crash loop", __llmmodel_server_problem=CRASH)
    add("astral message", __llmmodel_server_problem=ASTRAL)
    add("same crash loop", __llmmodel_server_problem=CRASH,
        _inference_ai_example_com_llmmodel={"status": {"phase": "Degraded", "reportedProblem": "CrashLoopBackOff"}})
    add("crash loop beside a replica that answers", __llmmodel_server_problem=CRASH, __llmmodel_server_available=True,
        __llmmodel_deployment=AVAILABLE)
    add("recovered", __llmmodel_server_ready=True, __llmmodel_server_available=True, __llmmodel_deployment=AVAILABLE,
        _inference_ai_example_com_llmmodel={"status": {"phase": "Degraded", "reportedProblem": "CrashLoopBackOff"}})
    add("starting", _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}}, __llmmodel_job_state="complete",
        __llmmodel_job={"status": {"completionTime": "2026-03-01T12:00:00Z"}}, __llmmodel_deployment={},
        __llmmodel_revisions=revisions(held=[record("hf://acme/tiny@main", size=1073741824, revision="abc123",
                                                    pulledAt="2026-03-01T12:00:00Z")], desired=0))
    add("rolling out", __llmmodel_server_available=True, __llmmodel_deployment=AVAILABLE,
        _inference_ai_example_com_llmmodel={"status": {"phase": "Deploying"}})
    add("pulling", __llmmodel_weights_ready=False, __llmmodel_job_state="running", __llmmodel_deployment={},
        __llmmodel_service_exists=False, _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("pulling, a status forged", __llmmodel_weights_ready=False, __llmmodel_job_state="running", __llmmodel_deployment={},
        __llmmodel_service_exists=False,
        _inference_ai_example_com_llmmodel={"status": {
            "phase": "Serving", "inferenceURL": "http://attacker.example:8000", "serviceName": "attacker",
            "firstServingAt": "2020-01-01T00:00:00Z", "server": {"runtime": "forged"}, "message": "forged",
            "reportedProblem": "Forged", "weights": {"failure": FAILURE, "ready": True, "source": "forged"}}})
    add("pull done, a status forged", __llmmodel_job_state="complete", __llmmodel_deployment={},
        __llmmodel_job={"status": {"completionTime": "2026-03-01T12:00:00Z"}},
        _inference_ai_example_com_llmmodel={"status": {
            "phase": "Pulling", "inferenceURL": "http://attacker.example:8000", "firstServingAt": "2020-01-01T00:00:00Z",
            "server": {"runtime": "forged"}}})
    add("pulling new weights while the old serve", __llmmodel_weights_ready=False, __llmmodel_job_state="running",
        __llmmodel_server_available=True, __llmmodel_deployment=AVAILABLE,
        _inference_ai_example_com_llmmodel={"status": {"phase": "Serving"}})
    add("pull retries after an eviction", __llmmodel_weights_ready=False, __llmmodel_job_state="running",
        __llmmodel_pull_problem={"reason": "PullEvicted", "message": "pod m-pull-x was evicted: low on memory; the Job retries"},
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("credentials missing", __llmmodel_weights_ready=False, __llmmodel_job_state="running",
        __llmmodel_pull_problem={"reason": "CredentialsNotFound", "message": "Secret hf not found in namespace ns"},
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("pull OOMKilled", __llmmodel_weights_ready=False, __llmmodel_job_state="failed", __llmmodel_pull_failed=True,
        __llmmodel_pull_message="", __llmmodel_pull_problem={"reason": "PullOOMKilled", "message": "ran out of memory"},
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("pull failed", __llmmodel_weights_ready=False, __llmmodel_job_state="failed", __llmmodel_pull_failed=True,
        __llmmodel_pull_message="not found: HTTP 404 for https://host/m.gguf",
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("pull failed while the old serve", __llmmodel_weights_ready=False, __llmmodel_job_state="failed",
        __llmmodel_pull_failed=True, __llmmodel_pull_message="not found: HTTP 404 for https://host/m.gguf",
        __llmmodel_server_available=True, __llmmodel_deployment=AVAILABLE,
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("pull failed, its Job gone", __llmmodel_weights_ready=False, __llmmodel_pull_gave_up=True,
        _inference_ai_example_com_llmmodel={"status": {"phase": "Failed", "reportedProblem": "PullFailed",
                                                        "weights": {"failure": FAILURE}}})
    add("failed re-pull while the old serves", __llmmodel_source_id=NEW, __llmmodel_weights_ready=False,
        __llmmodel_job_state="failed", __llmmodel_pull_failed=True, __llmmodel_pull_message="not found (HTTP 404)",
        __llmmodel_server_available=True, __llmmodel_deployment=AVAILABLE,
        __llmmodel_revisions=revisions(held=[record("hf://acme/tiny@main")], served=0),
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("disk full beside the kept revisions", __llmmodel_source_id=NEW, __llmmodel_weights_ready=False,
        __llmmodel_job_state="failed", __llmmodel_pull_failed=True,
        __llmmodel_pull_message="disk full: m.gguf needs 3.0 GiB more but MODEL_DEST has 1.0 GiB free",
        __llmmodel_revisions=revisions(held=[record("hf://acme/tiny@main")], served=0),
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("kept volume of another source", __llmmodel_all_conflicts=[KEPT_MISMATCH], __llmmodel_service_exists=False,
        __llmmodel_weights_ready=False, _inference_ai_example_com_llmmodel={"status": {}})
    # WaitForFirstConsumer storage: the claim waits for the pull pod, its first consumer.
    add("quota refuses the pull pod of an unbound volume", __llmmodel_weights_ready=False, __llmmodel_job_state="running",
        __llmmodel_pvc=WAITING_CLAIM, __llmmodel_pull_problem=QUOTA, __llmmodel_deployment={}, __llmmodel_service_exists=False,
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("volume waits for its first consumer", __llmmodel_weights_ready=False, __llmmodel_job_state="running",
        __llmmodel_pvc=WAITING_CLAIM, __llmmodel_deployment={}, __llmmodel_service_exists=False,
        _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("volume provisioned on the pull pod's node", __llmmodel_weights_ready=False, __llmmodel_job_state="running",
        __llmmodel_pvc={**WAITING_CLAIM, "metadata": {"annotations": {"volume.kubernetes.io/selected-node": "kwok-gpu-1"}}},
        __llmmodel_deployment={}, __llmmodel_service_exists=False, _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("pull pod waits for an Immediate claim", __llmmodel_weights_ready=False, __llmmodel_job_state="running",
        __llmmodel_pvc={"spec": {"storageClassName": "standard"}, "status": {"phase": "Pending"}}, __llmmodel_deployment={},
        __llmmodel_pull_problem={"reason": "VolumeNotBound", "message": "the pull pod waits for its volume to be bound: ..."},
        __llmmodel_service_exists=False, _inference_ai_example_com_llmmodel={"status": {"phase": "Pulling"}})
    add("name conflict", __llmmodel_all_conflicts=[CONFLICT], __llmmodel_service_exists=False,
        _inference_ai_example_com_llmmodel={"status": {"phase": "Deploying"}})

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
    env = dict(os.environ, ANSIBLE_GATHERING="explicit", ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               ANSIBLE_FILTER_PLUGINS=str(ROLE / "filter_plugins"))
    done = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(tmp / "play.yml")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text())


def condition(state, ctype):
    return next(c for c in state["conditions"] if c["type"] == ctype)


def test_a_new_server_problem_is_told_once_and_degrades_the_model(render):
    state = render["new crash loop"]
    assert state["status"]["phase"] == "Degraded"  # the weights are there, the server does not answer
    assert condition(state, "Ready") | {"message": ""} == {"type": "Ready", "status": "False", "reason": "CrashLoopBackOff", "message": ""}
    assert state["status"]["message"] == CRASH["message"] == condition(state, "Ready")["message"]
    assert state["status"]["reportedProblem"] == "CrashLoopBackOff"
    assert state["event"] == {"type": "Warning", "reason": "CrashLoopBackOff", "message": CRASH["message"]}
    assert render["same crash loop"]["event"] is None
    assert render["same crash loop"]["status"]["reportedProblem"] == "CrashLoopBackOff"


def test_a_problem_beside_a_replica_that_answers_is_degraded_but_ready(render):
    state = render["crash loop beside a replica that answers"]
    assert state["status"]["phase"] == "Degraded"
    ready = condition(state, "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "PartiallyAvailable")
    assert ready["message"] == "1 of 2 replicas answer; " + CRASH["message"]
    assert state["event"]["reason"] == "CrashLoopBackOff"


def test_a_recovered_server_clears_the_problem_and_says_it_serves(render):
    state = render["recovered"]
    assert state["status"]["phase"] == "Serving"
    assert condition(state, "Ready")["status"] == "True" and state["status"]["reportedProblem"] is None
    assert state["event"]["reason"] == "Serving" and state["event"]["type"] == "Normal"
    assert state["status"]["inferenceURL"] == "http://m.ns.svc.cluster.local:8000"


def test_a_server_that_does_not_answer_yet_is_deploying_not_serving(render):
    state = render["starting"]
    assert state["status"]["phase"] == "Deploying"
    ready = condition(state, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "Deploying")
    assert "/health" in ready["message"] and "1800s" in ready["message"]
    assert state["event"]["reason"] == "Deploying" and state["event"]["type"] == "Normal"
    assert state["status"]["reportedProblem"] is None  # starting is no problem


def test_a_rollout_with_a_replica_that_answers_serves(render):
    state = render["rolling out"]
    assert state["status"]["phase"] == "Serving"
    ready = condition(state, "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "RollingOut")
    assert state["event"]["message"] == "Deployment m serves hf://acme/tiny@main at http://m.ns.svc.cluster.local:8000"


def test_progress_is_left_to_the_puller_while_it_runs_and_removed_after(render):
    pulling = render["pulling"]["status"]
    assert "progress" not in pulling["weights"] and pulling["weights"]["size"] is None
    assert pulling["inferenceURL"] is None and pulling["serviceName"] is None  # no Service yet: no URL
    done = render["starting"]
    assert done["status"]["weights"]["progress"] is None
    assert done["status"]["weights"]["size"] == 1073741824 and done["status"]["weights"]["revision"] == "abc123"


def test_a_status_forged_during_the_first_pull_does_not_stand(render):
    """While a pull runs, any pod that may run as the puller's identity can write the model's status:
    every field the role owns is written again by the next reconcile (the conditions too, exclusively:
    llmmodel_status), and only the progress is left to the puller."""
    status = render["pulling, a status forged"]["status"]
    assert status["inferenceURL"] is None and status["serviceName"] is None
    assert status["firstServingAt"] is None and status["server"] is None
    assert status["weights"]["failure"] is None and status["weights"]["ready"] is False
    assert status["weights"]["source"] == "hf://acme/tiny@main" and status["phase"] == "Pulling"
    assert status["message"] == "waiting for the weights" and status["reportedProblem"] is None
    assert "progress" not in status["weights"]
    assert [c["type"] for c in render["pulling, a status forged"]["conditions"]] == ["WeightsReady", "Ready", "Successful", "Failure"]
    # ... also when the pull's end is the next reconcile (the server is not deployed yet).
    done = render["pull done, a status forged"]["status"]
    assert done["firstServingAt"] is None and done["server"]["runtime"] == "custom" and done["inferenceURL"] != "http://attacker.example:8000"
    # A server already deployed keeps being described while its next weights are pulled.
    assert "server" not in render["pulling new weights while the old serve"]["status"]
    assert "firstServingAt" not in render["pulling new weights while the old serve"]["status"]


def test_a_new_pull_says_the_previous_weights_still_serve(render):
    state = render["pulling new weights while the old serve"]
    assert state["status"]["phase"] == "Pulling"
    assert condition(state, "WeightsReady")["reason"] == "Pulling"
    ready = condition(state, "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "ServingPreviousWeights")
    assert state["status"]["inferenceURL"] == "http://m.ns.svc.cluster.local:8000"
    assert state["status"]["message"] == "Job m-pull is pulling hf://acme/tiny@main; " + ready["message"]


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


def test_a_missing_credentials_secret_fails_the_model_until_it_exists(render):
    state = render["credentials missing"]
    assert state["status"]["phase"] == "Failed"
    for ctype in ("WeightsReady", "Ready"):
        assert condition(state, ctype)["reason"] == "CredentialsNotFound"
    assert state["status"]["message"] == "Secret hf not found in namespace ns"
    assert state["requeue"] == "30s"  # the pod starts by itself once the Secret exists; the model looks again


def test_a_failed_pull_is_recorded_and_stays_failed_once_its_job_is_gone(render):
    failed = render["pull failed"]["status"]["weights"]["failure"]
    assert failed == {"source": "hf://acme/tiny@main", "generation": 2, "retry": "", "reason": "PullFailed",
                      "message": "not found: HTTP 404 for https://host/m.gguf"}
    gone = render["pull failed, its Job gone"]
    assert gone["status"]["phase"] == "Failed"
    assert gone["status"]["weights"]["failure"] == FAILURE
    assert condition(gone, "WeightsReady")["message"] == "not found: HTTP 404"
    assert "inference.ai.example.com/retry-pull" in condition(gone, "Ready")["message"]
    assert gone["event"] is None and gone["requeue"] == ""  # told once, no retry loop
    assert render["starting"]["status"]["weights"]["failure"] is None  # a good pull clears it


def test_a_name_held_by_another_owner_fails_the_model_with_a_name_conflict(render):
    state = render["name conflict"]
    assert state["status"]["phase"] == "Failed"
    ready = condition(state, "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", "NameConflict", CONFLICT["message"])
    assert state["status"]["message"] == CONFLICT["message"]
    assert state["event"] == {"type": "Warning", "reason": "NameConflict", "message": CONFLICT["message"]}
    assert state["status"]["inferenceURL"] is None
    assert state["requeue"] == "60s"  # goes on by itself once the other object is gone


def test_the_url_is_given_only_while_a_request_to_it_gets_an_answer(render):
    # The Service exists in every case below (but the name conflict's): its name is a fact, the URL a
    # promise that holds exactly while Ready is True.
    url = "http://m.ns.svc.cluster.local:8000"
    answering = {"recovered": ("Serving", "Available"), "rolling out": ("Serving", "RollingOut"),
                 "crash loop beside a replica that answers": ("Degraded", "PartiallyAvailable"),
                 "pulling new weights while the old serve": ("Pulling", "ServingPreviousWeights"),
                 "pull failed while the old serve": ("Failed", "ServingPreviousWeights")}
    silent = {"starting": ("Deploying", "Deploying"), "new crash loop": ("Degraded", "CrashLoopBackOff"),
              "pull failed": ("Failed", "PullFailed"), "pull failed, its Job gone": ("Failed", "PullFailed"),
              "credentials missing": ("Failed", "CredentialsNotFound"), "name conflict": ("Failed", "NameConflict")}
    for name, (phase, reason) in answering.items():
        state = render[name]
        assert (state["status"]["phase"], condition(state, "Ready")["reason"]) == (phase, reason), name
        assert condition(state, "Ready")["status"] == "True", name
        assert (state["status"]["inferenceURL"], state["status"]["serviceName"]) == (url, "m"), name
    for name, (phase, reason) in silent.items():
        state = render[name]
        assert (state["status"]["phase"], condition(state, "Ready")["reason"]) == (phase, reason), name
        assert condition(state, "Ready")["status"] == "False", name
        assert state["status"]["inferenceURL"] is None, name
    assert render["starting"]["status"]["serviceName"] == "m"  # the Service is there, nothing answers yet


def test_characters_beyond_the_basic_plane_come_back_verbatim(render):
    # An emoji in a server's termination message (or a URL): json.dumps makes it a surrogate pair,
    # which YAML refuses; llmmodel_json makes it YAML's \U escape, and nothing else changes.
    state = render["astral message"]
    assert condition(state, "Ready")["message"] == ASTRAL["message"]
    assert state["status"]["message"] == ASTRAL["message"]


def test_a_failed_re_pull_says_the_served_revision_keeps_serving_untouched(render):
    state = render["failed re-pull while the old serves"]
    assert state["status"]["phase"] == "Failed"
    weights = condition(state, "WeightsReady")
    assert (weights["status"], weights["reason"], weights["message"]) == ("False", "PullFailed", "not found (HTTP 404)")
    ready = condition(state, "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "ServingPreviousWeights")
    assert ready["message"] == ("the server keeps serving the previous weights (hf://acme/tiny@main) at "
                                "http://m.ns.svc.cluster.local:8000, whose files the failed pull left untouched")
    assert state["status"]["message"] == "not found (HTTP 404); " + ready["message"]
    assert state["status"]["weights"]["revisions"] == [
        {"source": "hf://acme/tiny@main", "path": "revisions/" + revision_id("hf://acme/tiny@main"), "served": True}]


def test_a_kept_volume_of_another_source_fails_the_model_and_says_what_to_do(render):
    state = render["kept volume of another source"]
    assert state["status"]["phase"] == "Failed"
    for ctype in ("WeightsReady", "Ready"):
        assert (condition(state, ctype)["reason"], condition(state, ctype)["message"]) == (
            "KeptWeightsMismatch", KEPT_MISMATCH["message"])
    assert state["event"]["reason"] == "KeptWeightsMismatch"


def test_a_disk_full_pull_says_what_the_volume_keeps_and_what_to_change(render):
    weights = condition(render["disk full beside the kept revisions"], "WeightsReady")
    assert weights["message"] == (
        "disk full: m.gguf needs 3.0 GiB more but MODEL_DEST has 1.0 GiB free; the volume also keeps 1 revision(s) "
        "(the served one and spec.revisionHistoryLimit previous): raise spec.storageSize or lower spec.revisionHistoryLimit")
    # Another failure is told as the puller said it.
    assert condition(render["failed re-pull while the old serves"], "WeightsReady")["message"] == "not found (HTTP 404)"
def test_the_pull_pod_s_own_problem_comes_before_an_unbound_volume(render):
    # On WaitForFirstConsumer storage the claim binds only once the pull pod is scheduled: a pod that
    # cannot even be created is the cause, not the volume.
    state = render["quota refuses the pull pod of an unbound volume"]
    assert state["status"]["phase"] == "Pulling"
    assert condition(state, "WeightsReady")["reason"] == "PullPodCreationFailed"
    assert state["status"]["message"] == QUOTA["message"]
    assert state["event"] == {"type": "Warning", "reason": "PullPodCreationFailed", "message": QUOTA["message"]}


def test_a_volume_waiting_for_its_first_consumer_is_no_trouble(render):
    state = render["volume waits for its first consumer"]
    assert state["status"]["phase"] == "Pulling" and state["status"]["reportedProblem"] is None
    weights = condition(state, "WeightsReady")
    assert (weights["status"], weights["reason"]) == ("False", "Pulling")
    assert weights["message"] == ("Job m-pull waits for its pod to be scheduled and PVC m-weights to bind "
                                  "(a WaitForFirstConsumer volume is provisioned where that pod lands)")
    assert state["event"] is None


def test_an_unbound_volume_is_told_when_the_pull_waits_for_it(render):
    placed = render["volume provisioned on the pull pod's node"]
    assert placed["status"]["phase"] == "Pending"
    assert condition(placed, "WeightsReady")["reason"] == "VolumeNotBound"
    assert placed["status"]["message"] == ("PVC m-weights is not bound yet (storage class node-local); it is being "
                                           "provisioned on node kwok-gpu-1, where the pull pod was scheduled")
    immediate = render["pull pod waits for an Immediate claim"]
    assert immediate["status"]["phase"] == "Pending"
    assert condition(immediate, "WeightsReady")["reason"] == "VolumeNotBound"
    assert immediate["status"]["message"] == "PVC m-weights is not bound yet (storage class standard)"
    assert immediate["event"]["reason"] == "VolumeNotBound"
