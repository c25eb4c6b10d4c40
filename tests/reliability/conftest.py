"""Fixtures of the reliability suite (make reliability-test): the local cluster of `make cluster-up`
and the real ansible-operator run from this checkout. Without a reachable cluster the scenarios FAIL
with a message saying so: they never skip. Each scenario gets a namespace of its own and a fresh
operator, stopped after it.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest
from kubernetes import config as kube_config
from kubernetes.client.rest import ApiException

from reliability_helpers import FIGURES, KUBECONFIG, SCALE, SEED, Figures, Kube, Operator, kubectl, wait_until

NAMESPACE_LABEL = "llm-operator-test"


def pytest_configure(config):
    config.addinivalue_line("markers", "cluster: needs the local cluster and runs the operator")


def pytest_report_header(config):
    return f"reliability: RELIABILITY_SCALE={SCALE} RELIABILITY_SEED={SEED}"


def pytest_terminal_summary(terminalreporter):
    if FIGURES.exists():
        terminalreporter.section("reliability figures")
        for row in json.loads(FIGURES.read_text()):
            terminalreporter.write_line(f"{row['scenario']:<22} {row['figure']:<58} {row['value']:>8} {row['unit']}")


@pytest.fixture(scope="session")
def kube():
    if not os.path.exists(KUBECONFIG):
        pytest.fail(f"no kubeconfig at {KUBECONFIG}: start the local cluster with `make cluster-up`", pytrace=False)
    ready = kubectl("get", "--raw", "/readyz", check=False, timeout=30)
    if ready.returncode != 0 or ready.stdout.strip() != "ok":
        pytest.fail(f"the cluster of {KUBECONFIG} is not ready ({(ready.stdout + ready.stderr).strip()}): "
                    "run `make cluster-up`", pytrace=False)
    return Kube(kube_config.new_client_from_config(config_file=KUBECONFIG))


@pytest.fixture(scope="session")
def figures():
    FIGURES.unlink(missing_ok=True)
    return Figures()


@pytest.fixture
def operator(kube):
    """The real ansible-operator, not yet started: each scenario starts it as it needs."""
    process = Operator()
    process.stop()  # one left from an earlier run
    yield process
    process.stop()


def delete_namespace(kube: Kube, name: str, timeout: float) -> None:
    try:
        kube.core.delete_namespace(name)
    except ApiException as error:
        if error.status != 404:
            raise
    wait_until(f"namespace {name} to go", lambda: kube.read(kube.core.read_namespace, name) is None, timeout)


@pytest.fixture
def namespace(kube, operator, request):
    """A namespace of the scenario's own; deleted after it while the operator still runs, so the
    models' finalizers finish (the operator fixture stops the operator only after this)."""
    name = f"rel-{request.node.name.removeprefix('test_')[:30].replace('_', '-')}-{uuid.uuid4().hex[:5]}".lower()
    kube.core.create_namespace({"metadata": {"name": name, "labels": {NAMESPACE_LABEL: "reliability"}}})
    yield name
    if kube.read(kube.core.read_namespace, name) is not None:
        if not operator.healthy():
            operator.start()
        delete_namespace(kube, name, 180)
