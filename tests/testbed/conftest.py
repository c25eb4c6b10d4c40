"""Fixtures of the test-bed tests: the local cluster itself (real control plane, kwok kubelets).

The tests run against the cluster of $KUBECONFIG (default .cluster/kubeconfig, written by
`make cluster-up`). Without a reachable cluster they FAIL with a message saying so: they never skip.
Every test gets a namespace of its own, created for it and deleted after it; the cluster is shared
with other people's tests, so nothing outside those namespaces is changed.
"""

from __future__ import annotations

import os
import pathlib
import time
import warnings

import pytest
from kubernetes import config as kube_config

from testbed_helpers import KUBECONFIG, Kube, fresh_namespace, gone


def pytest_configure(config):
    config.addinivalue_line("markers", "testbed: a test of the local test cluster itself (needs KUBECONFIG)")


def pytest_collection_modifyitems(config, items):
    here = pathlib.Path(__file__).parent
    for item in items:
        if here in pathlib.Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.testbed)


@pytest.fixture(scope="session")
def kube():
    """A client of the test cluster; fails the tests (never skips them) when there is none."""
    if not os.path.exists(KUBECONFIG):
        pytest.fail(
            f"no kubeconfig at {KUBECONFIG}: start the local cluster with `make cluster-up` "
            "(or point KUBECONFIG at a cluster)",
            pytrace=False,
        )
    problem = None
    try:
        api = kube_config.new_client_from_config(config_file=KUBECONFIG)
        # The REST client's request() reads the same in every kubernetes client release; call_api's
        # signature changed between the image's 33.x and later ones.
        ready = api.rest_client.request("GET", api.configuration.host + "/readyz", _request_timeout=10)
        body = ready.data.decode(errors="replace") if isinstance(ready.data, bytes) else str(ready.data)
        body = body.strip()
    except Exception as error:  # no server, refused, TLS, a broken kubeconfig: all mean "no cluster"
        problem = f"{type(error).__name__}: {error}"
    if problem is not None:
        pytest.fail(f"the cluster of {KUBECONFIG} is not reachable ({problem}): start it with `make cluster-up`", pytrace=False)
    if ready.status != 200 or body != "ok":
        pytest.fail(f"the cluster of {KUBECONFIG} is not ready (/readyz: {ready.status} {body!r}): run `make cluster-up`", pytrace=False)
    return Kube(api)


@pytest.fixture(scope="session")
def _namespaces(kube):
    """The namespaces this session created; at its end, wait (bounded) until they are all gone."""
    created: list[str] = []
    yield created
    core = kube.core

    def left():
        return [n for n in created if not gone(lambda n=n: core.read_namespace(n))]

    deadline = time.monotonic() + 60
    remaining = left()
    while remaining and time.monotonic() < deadline:
        time.sleep(0.5)
        remaining = left()
    if remaining:
        warnings.warn(f"test-bed namespaces still terminating after 60s: {', '.join(remaining)}")


@pytest.fixture
def namespace(kube, _namespaces, request):
    """A fresh namespace for one test (its default ServiceAccount exists, so pods can be created).

    Deleted after the test, with everything in it; a test may delete it itself.
    """
    with fresh_namespace(kube, request.node.name, "tb", "testbed") as name:
        _namespaces.append(name)
        yield name
