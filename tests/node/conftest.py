"""Fixtures of the real-node tests: the local cluster with its real node (`make cluster-up REAL_NODE=1`).

Without that cluster, or as non-root, the tests FAIL with a message saying so: they never skip.
Each test gets a namespace of its own (label llm-operator-test=node), deleted after it.
"""

from __future__ import annotations

import os

import pytest
from kubernetes import config as kube_config

from node_helpers import node  # noqa: F401  (sets sys.path for the imports below)
from testbed_helpers import KUBECONFIG, Kube, fresh_namespace


@pytest.fixture(scope="session")
def kube():
    if os.geteuid() != 0:
        pytest.fail("the real-node tests read the host's network and mounts: run them as root", pytrace=False)
    if not os.path.exists(KUBECONFIG):
        pytest.fail(f"no kubeconfig at {KUBECONFIG}: `make cluster-up REAL_NODE=1` first", pytrace=False)
    api = kube_config.new_client_from_config(config_file=KUBECONFIG)
    kube = Kube(api)
    try:
        kube.core.read_node(node.NODE_NAME)
    except Exception as error:  # no cluster, or one without the real node
        pytest.fail(f"no node {node.NODE_NAME} in the cluster of {KUBECONFIG} ({error}): `make cluster-up REAL_NODE=1`",
                    pytrace=False)
    return kube


@pytest.fixture
def namespace(kube, request):
    with fresh_namespace(kube, request.node.name, "nd", "node") as name:
        yield name


def pytest_configure(config):
    config.addinivalue_line("markers", "after_down: runs after `make cluster-down`, checks that the node left nothing")
