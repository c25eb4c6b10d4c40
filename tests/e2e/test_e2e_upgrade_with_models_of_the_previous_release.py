"""An upgrade from the previous release with a model serving, on the real node (docs/install.md,
"Upgrade"; runs last: it installs a release of its own).

The previous release is the commit PREVIOUS_RELEASE (hack/previous_release.py: its chart from `git
archive`, its operator image built and imported by `make e2e-test`): its server selects its pods by
app.kubernetes.io/instance and component, holds the weights at the volume's root and records no
preset. A model it serves through the llamacpp preset (the image from the chart's runtimeImages)
answers a chat request every second while the current CRD is applied and the chart upgraded: no
request fails, and the model ends on the model's UID selector, Ready. Then a new preset image for
the manager (runtimeImages.llamacpp) restarts nothing: the server pod stays, the status says a newer
preset is available and how to take it, and the upgrade-server annotation rolls it."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e_helpers import (CHART, HUB_REPO, IMG, KUBECONFIG, MANAGER, OPERATOR_NAMESPACE, PULLER_IMAGE, RELEASE, REPO, SERVER_IMAGE,
                         helm, kubectl, llmmodel, node, operator_namespace, wait_until)
from test_e2e_lifecycle import Models, answer_of
from test_e2e_upgrade_uninstall import Chatter, manager_pods, server_pods

PREVIOUS_RELEASE = os.environ.get("LLM_PREVIOUS_RELEASE", "2189821")
PREVIOUS = REPO / ".cache" / "previous-release" / PREVIOUS_RELEASE
PREVIOUS_IMAGE = f"localhost/llm-operator/llm-operator:{PREVIOUS_RELEASE}"
# The same llama-server image under a second name: the manager's new preset image.
NEW_PRESET_IMAGE = "localhost/llm-operator/llama-server:preset-upgrade"
NAME = "smollm-upgrade"
UID_LABEL = "inference.ai.example.com/model-uid"
UPGRADE = "inference.ai.example.com/upgrade-server"
CRD = "llmmodels.inference.ai.example.com"


def condition(status: dict, ctype: str) -> dict:
    return {c["type"]: c for c in status.get("conditions", [])}.get(ctype, {})


def deployment(api, namespace):
    return client.AppsV1Api(api).read_namespaced_deployment(NAME, namespace)


def no_release_and_no_crd():
    """Start from a cluster without the operator: the suite's release (if an earlier module left one) is
    uninstalled, models left over are released by hand (make release-models) and the CRD is deleted,
    so that the previous release installs its own."""
    if helm("status", RELEASE, "-n", OPERATOR_NAMESPACE, check=False).returncode == 0:
        helm("uninstall", RELEASE, "-n", OPERATOR_NAMESPACE, "--wait", "--timeout", "2m")
    if kubectl("get", "crd", CRD, check=False).returncode == 0:
        kubectl("wait", "--for=delete", f"deployment/{MANAGER}", "-n", OPERATOR_NAMESPACE, "--timeout=90s", check=False)
        released = subprocess.run(["make", "--no-print-directory", "release-models", f"KUBECONFIG={KUBECONFIG}"], cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
        assert released.returncode == 0, released.stdout + released.stderr
        kubectl("delete", "crd", CRD, "--wait", "--timeout=120s")


@pytest.fixture(scope="module")
def previous_release(api, hub):
    """The previous release installed with Helm from its own chart and image, as its users installed it."""
    if not (PREVIOUS / "charts" / "llm-operator" / "Chart.yaml").exists():
        pytest.fail(f"no checkout of {PREVIOUS_RELEASE} at {PREVIOUS}: `make images-previous`", pytrace=False)
    images = node_images()
    for image in (PREVIOUS_IMAGE, SERVER_IMAGE):
        assert image in images, f"{image} is not in the real node's containerd: `make images-previous`, then cluster-up"
    no_release_and_no_crd()
    operator_namespace()
    repository, tag = PREVIOUS_IMAGE.rsplit(":", 1)
    helm("install", RELEASE, str(PREVIOUS / "charts" / "llm-operator"), "-n", OPERATOR_NAMESPACE,
         "--set", f"image.repository={repository}", "--set-string", f"image.tag={tag}",  # a commit may be all digits
         "--set", f"pullerImage={PULLER_IMAGE},hfEndpoint={hub.url},runtimeImages.llamacpp={SERVER_IMAGE}", "--wait", "--timeout", "4m")
    yield
    kubectl("delete", "llmmodels", "--all", "--all-namespaces", "--timeout=180s", check=False, timeout=200)
    helm("uninstall", RELEASE, "-n", OPERATOR_NAMESPACE, "--wait", check=False)


def node_images() -> str:
    return subprocess.run([str(REPO / "bin" / "crictl"), "--runtime-endpoint", f"unix://{node.CONTAINERD_SOCKET}",
                           "images", "-o", "json"], capture_output=True, text=True, check=False).stdout


@pytest.fixture(scope="module")
def models(api, previous_release):
    name = f"e2e-up-{uuid.uuid4().hex[:6]}"
    manifest = node.real_namespace(name)
    manifest["metadata"]["labels"] = {"llm-operator-test": "e2e", "pod-security.kubernetes.io/enforce": "restricted"}
    client.CoreV1Api(api).create_namespace(manifest)
    wait_until(f"the default ServiceAccount of {name}",
               lambda: kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode == 0, 30)
    yield Models(api, name)
    kubectl("delete", "llmmodels", "--all", "-n", name, "--timeout=180s", check=False, timeout=200)
    client.CoreV1Api(api).delete_namespace(name)


def test_the_previous_release_serves_a_preset_model(api, models):
    body = llmmodel(NAME, {"huggingFaceRepo": HUB_REPO}, None, purge=True)
    del body["spec"]["serve"]["image"]  # the preset's image: the chart's runtimeImages.llamacpp
    models.create(body)
    models.wait_serving(NAME)
    answer_of(models, NAME, served_name=NAME)
    selector = deployment(api, models.namespace).spec.selector.match_labels
    assert UID_LABEL not in selector and selector["app.kubernetes.io/instance"] == NAME, selector


def test_the_upgrade_to_this_release_loses_no_request(api, models):
    managers_before = manager_pods(api)
    chatter = Chatter(models, NAME)
    chatter.start()
    started = time.monotonic()
    try:
        # docs/install.md, "Upgrade": the CRD first (Helm never upgrades crds/), then the chart.
        kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input_text=helm("show", "crds", str(CHART)).stdout)
        repository, tag = IMG.rsplit(":", 1)
        helm("upgrade", RELEASE, str(CHART), "-n", OPERATOR_NAMESPACE, "--reset-then-reuse-values",
             "--set", f"image.repository={repository}", "--set-string", f"image.tag={tag}", "--wait", "--timeout", "4m")
        assert manager_pods(api) - managers_before, "the upgrade did not roll the manager"

        def moved():
            try:
                live = deployment(api, models.namespace)
            except ApiException as error:  # between the old Deployment's deletion and the new one's creation
                if error.status == 404:
                    return False
                raise
            status = models.get(NAME).get("status", {})
            # The retired pod gone too (its object may outlive its container a moment).
            return (UID_LABEL in live.spec.selector.match_labels and status.get("phase") == "Serving" and len(server_pods(models, NAME)) == 1
                    and condition(status, "Ready").get("reason") == "Available"
                    and "inference.ai.example.com/retired-replicasets" not in (live.metadata.annotations or {}) and status)

        status = wait_until("the model to move to its UID selector and serve", moved, 420, lambda: models.describe(NAME))
        time.sleep(5)  # a few answers from the new server alone
    finally:
        chatter.stop.set()
        chatter.join(150)
    print(f"\nupgrade from {PREVIOUS_RELEASE} with a model serving: {time.monotonic() - started:.0f}s, "
          f"{chatter.answers} answers, {len(chatter.failures)} failures")
    assert chatter.answers >= 10 and not chatter.failures, chatter.failures
    assert status["observedGeneration"] == models.get(NAME)["metadata"]["generation"]
    assert condition(status, "ServerUpToDate")["status"] == "True"
    # The values the previous release did not have come from the new chart (--reset-then-reuse-values).
    manager = client.AppsV1Api(api).read_namespaced_deployment(MANAGER, OPERATOR_NAMESPACE).spec.template.spec.containers[0]
    env = {e.name: e.value for e in manager.env}
    assert json.loads(env["LLMMODEL_PULLER_RESOURCES"])["limits"], env
    assert env["LLMMODEL_IMAGE_LLAMACPP"] == SERVER_IMAGE


def test_a_new_preset_image_restarts_no_server_until_asked(api, models):
    tagged = subprocess.run(
        [str(REPO / "bin" / "ctr"), "--address", str(node.CONTAINERD_SOCKET), "-n", "k8s.io", "images", "tag", "--force",
         SERVER_IMAGE, NEW_PRESET_IMAGE], capture_output=True, text=True, check=False)
    assert tagged.returncode == 0, tagged.stderr
    pods_before, generation_before = server_pods(models, NAME), deployment(api, models.namespace).metadata.generation
    managers_before = manager_pods(api)
    helm("upgrade", RELEASE, str(CHART), "-n", OPERATOR_NAMESPACE, "--reuse-values",
         "--set", f"runtimeImages.llamacpp={NEW_PRESET_IMAGE}", "--wait", "--timeout", "4m")
    new_managers = manager_pods(api) - managers_before
    assert new_managers, "the manager did not restart with the new preset image"

    def told():
        status = models.get(NAME).get("status", {})
        return condition(status, "ServerUpToDate").get("reason") == "PresetUpgradeAvailable" and status

    status = wait_until("the model to say a newer preset is available", told, 180, lambda: models.describe(NAME))
    message = condition(status, "ServerUpToDate")["message"]
    assert f"image {SERVER_IMAGE} -> {NEW_PRESET_IMAGE}" in message and UPGRADE in message, message
    assert status["phase"] == "Serving" and condition(status, "Ready")["status"] == "True"
    live = deployment(api, models.namespace)
    assert live.metadata.generation == generation_before, "the new manager changed the server's Deployment"
    assert live.spec.template.spec.containers[0].image == SERVER_IMAGE
    assert server_pods(models, NAME) == pods_before, "the new preset image restarted the server"
    answer_of(models, NAME, served_name=NAME)

    kubectl("annotate", "llmmodel", NAME, "-n", models.namespace, f"{UPGRADE}=1", "--overwrite")

    def rolled():
        status = models.get(NAME).get("status", {})
        image = deployment(api, models.namespace).spec.template.spec.containers[0].image
        # The old pod's object may outlive its container a moment (Recreate waits for the container only).
        pods = server_pods(models, NAME)
        replaced = bool(pods) and set(pods).isdisjoint(pods_before)
        return (image == NEW_PRESET_IMAGE and replaced and condition(status, "ServerUpToDate").get("status") == "True"
                and status.get("phase") == "Serving" and condition(status, "Ready").get("reason") == "Available" and status)

    started = time.monotonic()
    # Until the new pod answers, the model does not say its server is up to date and Available.
    status = wait_until("the annotation to roll the server onto the new preset", rolled, 300, lambda: models.describe(NAME))
    assert status["inferenceURL"]
    print(f"\nthe upgrade-server annotation rolled the server onto the new preset in {time.monotonic() - started:.0f}s")

    def answers():  # kube-proxy may take a moment to route to the new pod
        try:
            return answer_of(models, NAME, served_name=NAME)
        except OSError:
            return False

    wait_until("the new server to answer through the Service", answers, 60, lambda: models.describe(NAME))
