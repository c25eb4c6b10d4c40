"""Fixtures shared by the suites that need the local cluster (admission, install).

They need the cluster of `make cluster-up`, or any cluster in $KUBECONFIG. Without one they fail with
a message saying so: they never skip.
"""

import os
import pathlib
import subprocess

import pytest
from kubernetes import config

REPO = pathlib.Path(__file__).resolve().parent.parent
KUBECONFIG = os.environ.get("KUBECONFIG") or str(REPO / ".cluster" / "kubeconfig")
KUBECTL = os.environ.get("KUBECTL") or str(REPO / "bin" / "kubectl")
# Every Ansible run of the tests uses the collections the operator image installs (make collections),
# also when pytest is started by hand.
os.environ["ANSIBLE_COLLECTIONS_PATH"] = str(REPO / ".cache" / "collections")


@pytest.fixture(scope="session")
def api_client():
    """A client of the test cluster; fails the tests (never skips them) when there is none."""
    if not os.path.exists(KUBECONFIG):
        pytest.fail(
            f"no kubeconfig at {KUBECONFIG}: start the local cluster with `make cluster-up` "
            "or point KUBECONFIG at a cluster",
            pytrace=False,
        )
    ready = subprocess.run(
        [KUBECTL, "--kubeconfig", KUBECONFIG, "get", "--raw", "/readyz"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if ready.returncode != 0 or ready.stdout.strip() != "ok":
        pytest.fail(
            f"the cluster of {KUBECONFIG} is not reachable or not ready "
            f"({(ready.stdout + ready.stderr).strip()}): run `make cluster-up`",
            pytrace=False,
        )
    return config.new_client_from_config(config_file=KUBECONFIG)
