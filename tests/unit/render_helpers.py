"""Render the llmmodel role's objects without a cluster: the role's own tasks and templates, run by a
real ansible-playbook (tests/unit/render/render.yml), with what a reconcile would read from the
cluster given by each case. One playbook run renders every case of a test module; its JSON callback
output carries the results."""

from __future__ import annotations

import copy
import json
import os
import subprocess

from unit_helpers import REPO, ROLE, VENV_BIN

RENDER_PLAYBOOK = REPO / "tests" / "unit" / "render" / "render.yml"
SOURCE_ANNOTATION = "inference.ai.example.com/weights-source"
GIB = 1024**3


def model(name="m", namespace="ns", generation=1, **serve):
    """An LLMModel as the API server returns it, with spec.serve set to ``serve``."""
    return {
        "apiVersion": "inference.ai.example.com/v1alpha1",
        "kind": "LLMModel",
        "metadata": {"name": name, "namespace": namespace, "generation": generation, "uid": "u-1"},
        "spec": {"source": {"huggingFaceRepo": "acme/tiny-chat"}, "serve": serve, "storageSize": "5Gi"},
    }


def case(obj, *, weights_ready=True, pulled=None, pvc_annotations=None, deployment=None, server_ready=False):
    """One rendering case: the object and what the reconcile observed."""
    source = source_id(obj)
    annotations = {SOURCE_ANNOTATION: source if weights_ready else ""}
    annotations.update(pvc_annotations or {})
    return {
        "object": obj,
        "pvc": {"metadata": {"name": obj["metadata"]["name"] + "-weights", "annotations": annotations}, "status": {"phase": "Bound"}},
        "deployment": deployment or {},
        "job_state": "absent",
        "weights_ready": weights_ready,
        "pulled": pulled or {},
        "server_ready": server_ready,
    }


def pulled_by_pod(obj, record):
    """A case whose completed pull pod left ``record`` (a dict, or a raw line) as its termination message."""
    line = record if isinstance(record, str) else json.dumps(record)
    result = case(obj)
    del result["pulled"]
    result["pull_pods"] = [{
        "metadata": {"name": "p-1", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "status": {"containerStatuses": [{"state": {"terminated": {"exitCode": 0, "message": line + "\n"}}}]},
    }]
    return result


def source_id(obj):
    source = obj["spec"]["source"]
    if "huggingFaceRepo" in source:
        return "hf://%s@%s" % (source["huggingFaceRepo"], source.get("revision", "main"))
    return source["url"] + ("#sha256=" + source["sha256"] if "sha256" in source else "")


def render(cases: dict, tmp_path) -> dict:
    """{case name: {server, hash, objects: {kind: manifest}, state}} for each case."""
    extravars = tmp_path / "cases.json"
    extravars.write_text(json.dumps({"render_cases": copy.deepcopy(cases), "render_role": str(ROLE)}))
    env = dict(
        os.environ,
        PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        ANSIBLE_GATHERING="explicit",
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        ANSIBLE_PYTHON_INTERPRETER=str(VENV_BIN / "python"),
    )
    completed = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", str(RENDER_PLAYBOOK), "-e", "@" + str(extravars)],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-4000:]
    rendered = {}
    for task in json.loads(completed.stdout)["plays"][0]["tasks"]:
        if task["task"]["name"] == "Show the rendering":
            result = task["hosts"]["localhost"]["msg"]
            result["objects"] = {item["kind"]: item for item in result["objects"]}
            rendered[result.pop("case")] = result
    assert set(rendered) == set(cases), completed.stderr[-4000:]
    return rendered


def server_container(rendered):
    return rendered["objects"]["Deployment"]["spec"]["template"]["spec"]["containers"][0]
