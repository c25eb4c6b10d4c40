"""Fixtures of the reliability suite (make reliability-test): the local cluster of `make cluster-up`
and the real ansible-operator run from this checkout. Without a reachable cluster the scenarios FAIL
with a message saying so (tests/conftest.py's api_client): they never skip. Each scenario gets a
namespace of its own and a fresh operator, stopped after it. test_artifact_rotation.py needs neither.
"""

from __future__ import annotations

import pytest

from reliability_figures import Figures
from reliability_models import Kube, create_models, wait_serving
from reliability_operator import Operator
from reliability_paths import SCALE, SEED
from testbed_helpers import fresh_namespace, gone, wait_until

FIGURES_KEY = pytest.StashKey[Figures]()


def pytest_configure(config):
    config.addinivalue_line("markers", "cluster: needs the local cluster and runs the operator")


def pytest_report_header(config):
    return f"reliability: RELIABILITY_SCALE={SCALE} RELIABILITY_SEED={SEED}"


def pytest_terminal_summary(terminalreporter, config):
    figures = config.stash.get(FIGURES_KEY, None)
    if figures and figures.rows:
        terminalreporter.section("reliability figures")
        for line in figures.lines():
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def kube(api_client):
    return Kube(api_client)


@pytest.fixture(scope="session")
def figures(request):
    request.config.stash[FIGURES_KEY] = Figures()
    return request.config.stash[FIGURES_KEY]


@pytest.fixture
def operator(kube):
    """The real ansible-operator, not yet started: each scenario starts it as it needs."""
    process = Operator()
    process.stop()  # one left from an earlier run
    yield process
    process.stop()


@pytest.fixture
def namespace(kube, operator, request):
    """A namespace of the scenario's own, deleted after it while the operator still runs, so the
    models' finalizers finish (the operator fixture stops the operator only after this)."""
    with fresh_namespace(kube, request.node.name, "rel", "reliability") as name:
        yield name
        if not gone(lambda: kube.core.read_namespace(name)) and not operator.healthy():
            operator.start()
    wait_until(f"namespace {name} to go", lambda: gone(lambda: kube.core.read_namespace(name)), 180, lambda: kube.describe(name))


@pytest.fixture
def serving_models(kube, operator, namespace):
    """The operator started and, Serving in the namespace, SCALE models that keep their weights on
    deletion and SCALE that purge them; returns (kept, purged)."""
    kept = [f"keep-{i}" for i in range(SCALE)]
    purged = [f"purge-{i}" for i in range(SCALE)]
    operator.start()
    create_models(kube, namespace, kept, purged)
    wait_serving(kube, namespace, kept + purged, 180 * SCALE)
    return kept, purged
