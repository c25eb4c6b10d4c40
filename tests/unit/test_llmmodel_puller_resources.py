"""The puller's requests and limits (roles/llmmodel/defaults/main.yml): both, for CPU and memory, so
that a namespace ResourceQuota on limits.cpu admits the pull pod; the manager's
LLMMODEL_PULLER_RESOURCES (the chart's pullerResources, written from config/manager by hack/chart.py)
replaces them, and a GPU model's first pull adds the server's GPUs on top."""

from __future__ import annotations

import json

import pytest
import yaml
from render_helpers import case, model, render
from unit_helpers import REPO

SMALL = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}}


def manager_resources():
    """The manager's LLMMODEL_PULLER_RESOURCES, as config/manager/manager.yaml sets it."""
    for doc in yaml.safe_load_all((REPO / "config" / "manager" / "manager.yaml").read_text()):
        for container in ((((doc or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []:
            for env in container.get("env") or []:
                if env["name"] == "LLMMODEL_PULLER_RESOURCES":
                    return json.loads(env["value"])
    raise AssertionError("config/manager/manager.yaml sets no LLMMODEL_PULLER_RESOURCES")


def cases():
    return {"plain": case(model(), weights_ready=False, volume_bound=False),
            "gpu": case(model(gpuCount=1), weights_ready=False, volume_bound=False)}


def puller(result):
    return result["objects"]["Job"]["spec"]["template"]["spec"]["containers"][0]["resources"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return render(cases(), tmp_path_factory.mktemp("render"))


@pytest.fixture(scope="module")
def rendered_small(tmp_path_factory):
    return render(cases(), tmp_path_factory.mktemp("render"), envvars={"LLMMODEL_PULLER_RESOURCES": json.dumps(SMALL)})


def test_the_puller_has_requests_and_limits_for_cpu_and_memory(rendered):
    resources = puller(rendered["plain"])
    assert set(resources["requests"]) == set(resources["limits"]) == {"cpu", "memory"}
    # The role's default is the manager's: an install and a local run pull alike.
    assert resources == manager_resources()


def test_the_managers_environment_replaces_them(rendered_small):
    assert puller(rendered_small["plain"]) == SMALL
    assert puller(rendered_small["gpu"]) == {**SMALL, "limits": {**SMALL["limits"], "nvidia.com/gpu": 1}}
