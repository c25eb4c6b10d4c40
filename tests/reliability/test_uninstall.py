"""The operator gone (uninstalled, crashed, scaled to zero) while models exist: deleting them must
never hang forever. `make undeploy` deletes the LLMModels first so that the operator finalizes them;
when they are not finalized within UNDEPLOY_TIMEOUT it stops, leaving the operator's objects and the
CRD in place, and names the way out: `make release-models` does the finalizer's work without an
operator (keeps or deletes each weights volume as purgeWeightsOnDelete says), after which
`make undeploy` completes. docs/install.md, "Uninstall", says why.
"""

from __future__ import annotations

import time

import pytest

from reliability_checks import assert_kept
from reliability_operator import make
from reliability_paths import SCALE
from testbed_helpers import wait_until

pytestmark = pytest.mark.cluster

CRD = "llmmodels.inference.ai.example.com"
UNDEPLOY_TIMEOUT = 15


def crd_installed(kube) -> bool:
    return kube.kubectl("get", "crd", CRD, check=False).returncode == 0


def test_uninstall_without_operator(kube, operator, namespace, serving_models, figures):
    kept, purged = serving_models
    volumes = {name: kube.pvc(namespace, name)["metadata"]["uid"] for name in kept}
    operator.stop()

    # Without an operator, undeploy gives up after its timeout and removes nothing.
    started = time.monotonic()
    refused = make("undeploy", f"UNDEPLOY_TIMEOUT={UNDEPLOY_TIMEOUT}s", check=False, timeout=UNDEPLOY_TIMEOUT + 120)
    refused_after = time.monotonic() - started
    assert refused.returncode != 0, f"undeploy went on with unfinalized models:\n{refused.stdout}{refused.stderr}"
    assert "make release-models" in refused.stderr, refused.stderr
    assert crd_installed(kube), "undeploy removed the CRD: the models would be stuck for good"
    assert set(kube.models(namespace)) == set(kept + purged)

    # The documented way out, then undeploy completes.
    started = time.monotonic()
    make("release-models")
    wait_until("the released models to go", lambda: not kube.models(namespace), 60, lambda: kube.describe(namespace))
    released_after = time.monotonic() - started
    wait_until("the purged volumes to go", lambda: all(kube.pvc(namespace, n) is None for n in purged), 60)
    wait_until("the servers to go", lambda: not kube.names(kube.apps.list_namespaced_deployment, namespace), 60)
    assert_kept(kube, namespace, volumes)
    make("undeploy", f"UNDEPLOY_TIMEOUT={UNDEPLOY_TIMEOUT}s", timeout=300)
    assert not crd_installed(kube)
    figures.record("uninstall", f"undeploy without an operator stops (UNDEPLOY_TIMEOUT={UNDEPLOY_TIMEOUT}s)", refused_after)
    figures.record("uninstall", f"make release-models removes {2 * SCALE} models", released_after)
