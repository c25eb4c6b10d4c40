"""Fixtures of the generated-spec tests: the CRD of this checkout, a namespace, and the real
ansible-operator of this checkout watching only that namespace (started with `make operator-start`).

They need the local cluster (`make cluster-up`) and hold the machine's one operator while they run
(the cluster lock). Without a cluster they fail, never skip.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import time
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

REPO = pathlib.Path(__file__).resolve().parents[2]
KUBECTL = os.environ.get("KUBECTL") or str(REPO / "bin" / "kubectl")
CRD_FILE = REPO / "config" / "crd" / "bases" / "inference.ai.example.com_llmmodels.yaml"
OPERATOR_LOG = REPO / ".cluster" / "operator-properties.log"


def make(*args, env=None):
    done = subprocess.run(["make", "--no-print-directory", "-s", "-C", str(REPO), *args], capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})}, check=False)
    assert done.returncode == 0, f"make {' '.join(args)} failed:\n{done.stdout}{done.stderr}"
    return done


@pytest.fixture(scope="session")
def namespace(api_client):
    """A namespace of its own; deleted at the end, after the operator has finalized its models."""
    name = f"llm-properties-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": name, "labels": {"llm-operator-test": "properties"}}})
    yield name
    core.delete_namespace(name)


@pytest.fixture(scope="session")
def crd(api_client):
    subprocess.run([KUBECTL, "apply", "--server-side", "-f", str(CRD_FILE)], check=True, capture_output=True)
    subprocess.run([KUBECTL, "wait", "--for=condition=Established", "--timeout=60s",
                    "crd/llmmodels.inference.ai.example.com"], check=True, capture_output=True)


@pytest.fixture(scope="session")
def operator(crd, namespace, api_client):
    """The real ansible-operator of this checkout, watching only the test's namespace. At the end the
    namespace's models are deleted while it still runs (so their finalizers finish), then it stops."""
    make("operator-stop")
    make("operator-start", f"OPERATOR_LOG={OPERATOR_LOG}", env={"WATCH_NAMESPACE": namespace})
    yield OPERATOR_LOG
    custom = client.CustomObjectsApi(api_client)
    try:
        custom.delete_collection_namespaced_custom_object("inference.ai.example.com", "v1alpha1", namespace, "llmmodels")
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and custom.list_namespaced_custom_object(
                "inference.ai.example.com", "v1alpha1", namespace, "llmmodels")["items"]:
            time.sleep(2)
    except ApiException:
        pass
    finally:
        make("operator-stop")
