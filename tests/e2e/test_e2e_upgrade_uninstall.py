"""Day two of the Helm install on the real node (runs after test_e2e_lifecycle.py, in file order):
`helm upgrade` with changed values rolls the manager while a model keeps answering, and
`helm uninstall` with the model present neither hangs nor touches the model, its server or its kept
weights; `make release-models` is then the clean way out (docs/install.md, "Uninstall")."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
from kubernetes import client

from e2e_helpers import (CHART, HUB_REPO, KUBECONFIG, MANAGER, MODEL_FILE, OPERATOR_NAMESPACE, RELEASE, REPO, helm, kubectl,
                         llmmodel, sha256_of, wait_until)
# The lifecycle module's namespace fixture (a real-node namespace of its own here) and model helpers.
from test_e2e_lifecycle import Models, answer_of, namespace  # noqa: F401

NAME = "smollm-day2"


def server_pods(models: Models, name: str = NAME) -> dict:
    """uid -> restart count of the model's server pods."""
    selector = client.AppsV1Api(models.custom.api_client).read_namespaced_deployment(name, models.namespace).spec.selector.match_labels
    pods = models.core.list_namespaced_pod(models.namespace, label_selector=",".join(f"{k}={v}" for k, v in selector.items()))
    return {p.metadata.uid: sum(c.restart_count for c in p.status.container_statuses or []) for p in pods.items}


class Chatter(threading.Thread):
    """Asks the model again and again until stopped; counts answers and failures."""

    def __init__(self, models: Models, name: str = NAME):
        super().__init__(daemon=True)
        self.models, self.name, self.answers, self.failures, self.stop = models, name, 0, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                answer_of(self.models, self.name, served_name=self.name)
                self.answers += 1
            except Exception as error:  # noqa: BLE001  (every failure is the finding)
                self.failures.append(f"{time.strftime('%T')} {error!r}")
            self.stop.wait(1)


@pytest.fixture(scope="module")
def serving(api, namespace, hub):  # noqa: F811
    models = Models(api, namespace)
    models.create(llmmodel(NAME, {"huggingFaceRepo": HUB_REPO}, None, purge=False))
    models.wait_serving(NAME)
    answer_of(models, NAME, served_name=NAME)
    return models


def manager_pods(api) -> set:
    return {p.metadata.name for p in client.CoreV1Api(api).list_namespaced_pod(
        OPERATOR_NAMESPACE, label_selector=f"app.kubernetes.io/instance={RELEASE}").items}


def test_upgrade_with_new_values_rolls_the_manager_and_the_model_keeps_serving(api, serving):
    pods_before, managers_before = server_pods(serving), manager_pods(api)
    chatter = Chatter(serving)
    chatter.start()
    try:
        # The chart's CRD upgrade step (Helm never upgrades crds/), then the upgrade itself.
        crds = helm("show", "crds", str(CHART)).stdout
        kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input_text=crds)
        started = time.monotonic()
        helm("upgrade", RELEASE, str(CHART), "-n", OPERATOR_NAMESPACE, "--reuse-values", "--set",
             "logLevel=debug,maxConcurrentReconciles=1,ansibleVerbosity=1", "--wait", "--timeout", "4m")
        print(f"\nhelm upgrade --wait took {time.monotonic() - started:.1f} s")
        new_managers = manager_pods(api) - managers_before
        assert new_managers, "the upgrade did not roll the manager"
        # The new manager, with the new log level, reconciles the model it found.
        wait_until("the new manager to reconcile the model", lambda: NAME in kubectl(
            "logs", "-n", OPERATOR_NAMESPACE, f"pod/{sorted(new_managers)[0]}", check=False).stdout, 180)
        time.sleep(5)  # a few more answers after the new manager's first reconcile
    finally:
        chatter.stop.set()
        chatter.join(150)
    print(f"answers during the upgrade: {chatter.answers}, failures: {len(chatter.failures)}")
    assert chatter.answers >= 3 and not chatter.failures, chatter.failures
    assert server_pods(serving) == pods_before, "the upgrade restarted or replaced the model's server"
    deployment = client.AppsV1Api(api).read_namespaced_deployment(MANAGER, OPERATOR_NAMESPACE)
    manager = deployment.spec.template.spec.containers[0]
    assert "--zap-log-level=debug" in manager.args
    env = {e.name: e.value for e in manager.env}
    assert env["MAX_CONCURRENT_RECONCILES_LLMMODEL_INFERENCE_AI_EXAMPLE_COM"] == "1"
    status = serving.wait_serving(NAME, timeout=60)
    assert status["weights"]["ready"] is True


def test_uninstall_with_a_model_present_neither_hangs_nor_touches_it(api, serving):
    claim_before = serving.core.read_namespaced_persistent_volume_claim(f"{NAME}-weights", serving.namespace)
    started = time.monotonic()
    helm("uninstall", RELEASE, "-n", OPERATOR_NAMESPACE, "--wait", "--timeout", "2m")
    took = time.monotonic() - started
    assert took < 120
    assert kubectl("get", "deployment", MANAGER, "-n", OPERATOR_NAMESPACE, check=False).returncode != 0
    # The manager's pod ends on its own after the Deployment (its grace period lets running
    # reconciles finish).
    wait_until("the manager's pod to be gone", lambda: not manager_pods(api), 90)
    print(f"\nhelm uninstall --wait took {took:.1f} s with a model serving; the manager's pod was gone "
          f"{time.monotonic() - started:.1f} s after the start")
    assert kubectl("get", "crd", "llmmodels.inference.ai.example.com", check=False).returncode == 0, "the CRD went"
    model = serving.get(NAME)
    assert not model["metadata"].get("deletionTimestamp") and model["metadata"].get("finalizers")
    # Nothing manages the model now, and nothing took it down: it still answers from its kept volume.
    answer_of(serving, NAME, served_name=NAME)
    claim = serving.core.read_namespaced_persistent_volume_claim(f"{NAME}-weights", serving.namespace)
    assert claim.metadata.uid == claim_before.metadata.uid and claim.status.phase == "Bound"


def test_release_models_is_the_clean_way_out_and_keeps_the_weights(api, serving, model_sha256):
    weights = serving.served_dir(NAME) / MODEL_FILE.name
    released = subprocess.run(["make", "--no-print-directory", "release-models", f"KUBECONFIG={KUBECONFIG}"], cwd=REPO,
                              capture_output=True, text=True, timeout=300, check=False)
    assert released.returncode == 0, released.stdout + released.stderr
    wait_until(f"LLMModel {NAME} and its server to be gone", lambda: serving.gone(NAME) and kubectl(
        "get", "deployment", NAME, "-n", serving.namespace, check=False).returncode != 0, 120, lambda: serving.describe(NAME))
    claim = serving.core.read_namespaced_persistent_volume_claim(f"{NAME}-weights", serving.namespace)
    assert claim.status.phase == "Bound" and not claim.metadata.deletion_timestamp
    assert not claim.metadata.owner_references, claim.metadata.owner_references
    assert sha256_of(weights) == model_sha256, "the kept volume lost its bytes"
