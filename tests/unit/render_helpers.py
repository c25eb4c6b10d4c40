"""Render the llmmodel role's objects without a cluster: the role's own tasks and templates, run by a
real ansible-playbook (tests/unit/render/render.yml), with what a reconcile would read from the
cluster given by each case. One playbook run renders every case of a test module; ansible-runner's
job events carry the results."""

from __future__ import annotations

import copy
import json
import os

import ansible_runner

from unit_helpers import REPO, ROLE, VENV_BIN

from ansible.module_utils import llmmodel_revisions, llmmodel_source  # noqa: E402  (unit_helpers puts the role's module_utils there)

RENDER_PLAYBOOK = REPO / "tests" / "unit" / "render" / "render.yml"
APPLY_PLAYBOOK = REPO / "tests" / "unit" / "render" / "apply.yml"
SOURCE_ANNOTATION = "inference.ai.example.com/weights-source"
REVISION_ANNOTATION = "inference.ai.example.com/weights-revision"
KEEP_ANNOTATION = "inference.ai.example.com/weights-keep"
GIB = 1024**3


def model(name="m", namespace="ns", generation=1, **serve):
    """An LLMModel as the API server returns it, with spec.serve set to ``serve``."""
    return {
        "apiVersion": "inference.ai.example.com/v1alpha1",
        "kind": "LLMModel",
        "metadata": {"name": name, "namespace": namespace, "generation": generation, "uid": "u-1"},
        "spec": {"source": {"huggingFaceRepo": "acme/tiny-chat"}, "serve": serve, "storageSize": "5Gi"},
    }


def case(obj, *, weights_ready=True, pulled=None, pvc_annotations=None, deployment=None, server_ready=False,
         job_state="absent", pull_beside_server=False, volume_bound=True):
    """One rendering case: the object and what the reconcile observed. The objects rendered are those
    the role's decision applies (templates/children.yaml.j2): weights not ready and no pull Job
    (``job_state`` absent) start a pull. volume_bound False: a claim not bound yet, as
    WaitForFirstConsumer storage keeps it until its first pod."""
    source = source_id(obj)
    annotations = {SOURCE_ANNOTATION: source if weights_ready else ""}
    annotations.update(pvc_annotations or {})
    # What the pull recorded reaches the role as a reconcile sees it: the pull Job of the source, complete.
    completed = weights_ready and pulled is not None
    return {
        "object": obj,
        "pvc": {"metadata": {"name": obj["metadata"]["name"] + "-weights", "annotations": annotations},
                "status": {"phase": "Bound" if volume_bound else "Pending"}},
        "deployment": deployment or {},
        "job": completed_job(obj) if completed else {},
        "job_state": "complete" if completed else job_state,
        "weights_ready": weights_ready,
        "pulled": pulled or {},
        "server_ready": server_ready,
        "pull_beside_server": pull_beside_server,
    }


def pulled_by_pod(obj, record):
    """A case whose completed pull pod left ``record`` (a dict, or a raw line) as its termination message."""
    line = record if isinstance(record, str) else json.dumps(record)
    result = case(obj)
    del result["pulled"]
    result["job"], result["job_state"] = completed_job(obj), "complete"
    # The pods are given (render_case.yml), not read: the status says the source is pulled, as it does
    # on the reconciles after the one that read them.
    result["object"] = dict(obj, status={"weights": {"ready": True, "source": source_id(obj)}})
    result["pull_pods"] = [{
        "metadata": {"name": "p-1", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "status": {"containerStatuses": [{"state": {"terminated": {"exitCode": 0, "message": line + "\n"}}}]},
    }]
    return result


def completed_job(obj):
    """The model's pull Job of its source, as the role renders it and the Job controller completes it."""
    source = source_id(obj)
    return {
        "metadata": {"name": obj["metadata"]["name"] + "-pull", "annotations": {
            SOURCE_ANNOTATION: source, REVISION_ANNOTATION: llmmodel_revisions.revision_id(source), KEEP_ANNOTATION: ""}},
        "status": {"conditions": [{"type": "Complete", "status": "True"}], "completionTime": "2026-01-01T00:05:00Z"},
    }


def source_id(obj):
    """The weights' identity the role derives for ``obj`` (module_utils/llmmodel_source.py)."""
    return llmmodel_source.source_id(obj["spec"]["source"])


def run_cases(playbook, cases: dict, tmp_path, action_plugins=ROLE / "action_plugins", envvars=None):
    """Run ``playbook`` over ``cases`` (extra var ``render_cases``) with the role's plugins, as
    ansible-operator runs the role (through ansible-runner); it must succeed. ``envvars``: more of
    the manager's environment. Returns the runner, whose job events carry the results."""
    env = {
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "ANSIBLE_GATHERING": "explicit",
        "ANSIBLE_LOCALHOST_WARNING": "false",
        "ANSIBLE_PYTHON_INTERPRETER": str(VENV_BIN / "python"),
        # The role's plugins (filters, modules and their action plugins), which a role loads by itself but task
        # files run alone do not.
        "ANSIBLE_FILTER_PLUGINS": str(ROLE / "filter_plugins"),
        "ANSIBLE_LIBRARY": str(ROLE / "library"),
        "ANSIBLE_ACTION_PLUGINS": str(action_plugins),
        "ANSIBLE_MODULE_UTILS": str(ROLE / "module_utils"),
        **(envvars or {}),
    }
    runner = ansible_runner.run(
        private_data_dir=str(tmp_path), playbook=str(playbook), inventory="localhost ansible_connection=local",
        extravars={"render_cases": copy.deepcopy(cases), "render_role": str(ROLE)}, envvars=env, quiet=True, timeout=600,
    )
    failures = [e["event_data"].get("res", {}).get("msg") for e in runner.events if e["event"] == "runner_on_failed"]
    assert runner.rc == 0, failures or runner.stdout.read()[-4000:]
    return runner


def render(cases: dict, tmp_path, envvars=None) -> dict:
    """{case name: {server, hash, objects: {kind: manifest}, order: [kind, ...] as applied, state}} for each
    case."""
    runner = run_cases(RENDER_PLAYBOOK, cases, tmp_path, envvars=envvars)
    rendered = {}
    for event in runner.events:
        data = event.get("event_data", {})
        if event["event"] == "runner_on_ok" and data.get("task") == "Show the rendering":
            result = data["res"]["msg"]
            result["order"] = [item["kind"] for item in result["objects"]]
            result["objects"] = {item["kind"]: item for item in result["objects"]}
            rendered[result.pop("case")] = result
    assert set(rendered) == set(cases)
    return rendered


def apply(cases: dict, tmp_path, kubeconfig) -> dict:
    """{case name: what llmmodel_apply answered} for each case, rendered as ``render`` does and applied
    by the role's apply.yml to the API server of ``kubeconfig``, in the order of ``cases``."""
    runner = run_cases(APPLY_PLAYBOOK, cases, tmp_path, envvars={"K8S_AUTH_KUBECONFIG": kubeconfig})
    applied = {}
    for event in runner.events:
        data = event.get("event_data", {})
        if event["event"] == "runner_on_ok" and data.get("task") == "Show what the apply did":
            applied[data["res"]["msg"]["case"]] = data["res"]["msg"]["applied"]
    assert set(applied) == set(cases)
    return applied


def server_container(rendered):
    return rendered["objects"]["Deployment"]["spec"]["template"]["spec"]["containers"][0]
