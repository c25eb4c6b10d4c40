"""Fixtures of the admission tests: a reachable cluster, the CRD from this checkout, a namespace.

The tests need the cluster of `make cluster-up` (or any cluster in $KUBECONFIG). Without one they
fail, with a message saying so: they never skip.
"""

import time
import uuid

import pytest
import yaml
from admission_cluster import CRD_FILE, CRD_NAME, GROUP, PLURAL, VERSION, kubectl
from kubernetes import client
from kubernetes.client.rest import ApiException


@pytest.fixture(scope="session")
def crd(api_client):
    """The CRD of this checkout, applied like `make install` does.

    The cluster is shared: a CRD that was already there stays; one these tests created is removed
    again unless someone else has created LLMModels meanwhile.
    """
    extensions = client.ApiextensionsV1Api(api_client)
    try:
        extensions.read_custom_resource_definition(CRD_NAME)
        existed = True
    except ApiException as error:
        if error.status != 404:
            raise
        existed = False
    kubectl("apply", "--server-side", "-f", str(CRD_FILE))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{CRD_NAME}")
    yield yaml.safe_load(CRD_FILE.read_text())
    if not existed:
        remaining = client.CustomObjectsApi(api_client).list_cluster_custom_object(GROUP, VERSION, PLURAL)
        if not remaining["items"]:
            kubectl("delete", "--ignore-not-found", "-f", str(CRD_FILE))


@pytest.fixture(scope="session")
def namespace(api_client, crd):
    """A namespace of its own, deleted (with whatever is left in it) at the end."""
    name = f"llm-admission-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": name, "labels": {"llm-operator-test": "admission"}}})
    yield name
    core.delete_namespace(name)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            core.read_namespace(name)
        except ApiException as error:
            if error.status == 404:
                return
            raise
        time.sleep(1)
    raise AssertionError(f"namespace {name} was not deleted within 180s")


@pytest.fixture(scope="session")
def custom_objects(api_client, crd):
    """CustomObjectsApi of the cluster, once the CRD is established."""
    return client.CustomObjectsApi(api_client)
