"""Fixtures of the install tests: a reachable cluster and the deployed operator.

The tests need the cluster of `make cluster-up` (or any cluster in $KUBECONFIG). Without one they
fail, with a message saying so: they never skip. The cluster is shared with other tests, so a CRD
that was installed before these tests run is left in place (deploy re-applies the same file;
undeploy keeps it with KEEP_CRDS=true).
"""


import pytest
from install_cluster import CRD_NAME, NAMESPACE
from kubernetes import client
from kubernetes.client.rest import ApiException


@pytest.fixture(scope="session")
def crd_preexisted(api_client):
    """Whether the LLMModel CRD was in the cluster before these tests (then it must stay)."""
    try:
        client.ApiextensionsV1Api(api_client).read_custom_resource_definition(CRD_NAME)
        return True
    except ApiException as error:
        if error.status != 404:
            raise
        return False


@pytest.fixture(scope="session")
def operator_absent(api_client):
    """Fail early if the operator is already deployed: these tests deploy and remove it."""
    try:
        client.CoreV1Api(api_client).read_namespace(NAMESPACE)
    except ApiException as error:
        if error.status == 404:
            return
        raise
    pytest.fail(
        f"namespace {NAMESPACE} already exists: remove the deployed operator "
        "(make undeploy KEEP_CRDS=true) before running the install tests",
        pytrace=False,
    )
