"""Fixtures of the real-node tests: the local cluster with its real node (`make cluster-up REAL_NODE=1`).

Without that cluster, or as non-root, the tests FAIL with a message saying so: they never skip.
Each test gets a namespace of its own (label llm-operator-test=node), deleted after it.
"""

from __future__ import annotations

import os
import re
import uuid

import pytest
from kubernetes import config as kube_config
from kubernetes.client.rest import ApiException

from node_helpers import node  # noqa: F401  (sets sys.path for the imports below)
from testbed_helpers import KUBECONFIG, NAMESPACE_LABEL, Kube, gone, wait_until


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
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower().removeprefix("test_")).strip("-")[:40].strip("-")
    name = f"nd-{slug}-{uuid.uuid4().hex[:6]}"
    kube.core.create_namespace({"metadata": {"name": name, "labels": {NAMESPACE_LABEL: "node"}}})
    wait_until(f"the default ServiceAccount of {name}",
               lambda: not gone(lambda: kube.core.read_namespaced_service_account("default", name)), 30)
    yield name
    try:
        kube.core.delete_namespace(name)
    except ApiException as error:
        if error.status != 404:
            raise


def pytest_configure(config):
    config.addinivalue_line("markers", "after_down: runs after `make cluster-down`, checks that the node left nothing")
