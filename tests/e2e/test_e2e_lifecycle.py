"""The real lifecycle: the operator from its image pulls SmolLM2 into a real volume, llama.cpp's
server answers a chat completion through the model's Service, and deletion keeps or removes the bytes
as asked. Sources: a local HTTP server (URL + sha256; the server's command line is the user's) and a
local Hub-compatible endpoint (served through the llamacpp runtime preset)."""

from __future__ import annotations

import pathlib
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e_helpers import (GATED_REPO, GATED_TOKEN, HUB_REPO, GROUP, MANAGER, MODEL_FILE, OPERATOR_NAMESPACE, PLURAL, ROOT_IMAGE,
                         SERVED_NAME, VERSION, chat, kubectl, llmmodel, node, sha256_of, wait_until)

QUESTION = "What is the capital of France? Answer in one word."


@pytest.fixture(scope="module")
def namespace(api, operator):
    name = f"e2e-{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(api)
    manifest = node.real_namespace(name)
    # The models' pods are hardened by default: restricted Pod Security admits them, and the project's
    # llama-server image runs under it.
    manifest["metadata"]["labels"] = {"llm-operator-test": "e2e", "pod-security.kubernetes.io/enforce": "restricted",
                                      "pod-security.kubernetes.io/enforce-version": "latest"}
    core.create_namespace(manifest)
    wait_until(f"the default ServiceAccount of {name}",
               lambda: kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode == 0, 30)
    yield name
    kubectl("delete", "llmmodels", "--all", "-n", name, "--timeout=180s", check=False, timeout=200)
    core.delete_namespace(name)


class Models:
    def __init__(self, api, namespace):
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.batch = client.BatchV1Api(api)
        self.namespace = namespace

    def create(self, body):
        return self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, body)

    def get(self, name):
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)

    def patch(self, name, spec):
        return self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name, {"spec": spec})

    def delete(self, name):
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)

    def gone(self, name):
        try:
            self.get(name)
        except ApiException as error:
            return error.status == 404
        return False

    def describe(self, name):
        out = kubectl("get", "llmmodels,jobs,pods,pvc,svc", "-n", self.namespace, "-o", "wide", check=False).stdout
        try:
            status = self.get(name).get("status", {})
        except ApiException as error:
            status = f"({error.status})"
        events = kubectl("get", "events", "-n", self.namespace, "--sort-by=.lastTimestamp", check=False).stdout
        manager = kubectl("logs", "-n", OPERATOR_NAMESPACE, f"deployment/{MANAGER}", "--tail=60", check=False).stdout
        return (f"{out}\nstatus of {name}: {status}\nevents:\n{events[-4000:]}"
                f"\noperator log (last lines):\n{manager[-6000:]}")

    def wait_serving(self, name, timeout=420, on_poll=None):
        def serving():
            if on_poll is not None:
                on_poll()
            status = self.get(name).get("status", {})
            ready = {c["type"]: c["status"] for c in status.get("conditions", [])}.get("Ready")
            return status.get("phase") == "Serving" and ready == "True" and status

        return wait_until(f"LLMModel {name} to be Serving and Ready", serving, timeout, lambda: self.describe(name))

    def wait_condition(self, name, phase, condition, reason, what, timeout):
        """Waits until the model is in `phase` with `condition` of `reason`, and returns that condition."""
        def reached():
            status = self.get(name).get("status", {})
            found = {c["type"]: c for c in status.get("conditions", [])}.get(condition, {})
            return status.get("phase") == phase and found.get("reason") == reason and found

        return wait_until(f"LLMModel {name} to {what}", reached, timeout, lambda: self.describe(name))

    def delete_purged(self, name):
        """Deletes a model whose weights are purged, and waits until it and its volume's directory are gone."""
        volume_dir = self.volume_dir(name)
        self.delete(name)
        wait_until(f"LLMModel {name} and its volume to be gone",
                   lambda: self.gone(name) and not volume_dir.exists()
                   and kubectl("get", "pvc", f"{name}-weights", "-n", self.namespace, check=False).returncode != 0,
                   240, lambda: self.describe(name))

    def volume_dir(self, name) -> pathlib.Path:
        claim = self.core.read_namespaced_persistent_volume_claim(f"{name}-weights", self.namespace)
        volume = self.core.read_persistent_volume(claim.spec.volume_name)
        return pathlib.Path(volume.spec.host_path.path)

    def served_dir(self, name) -> pathlib.Path:
        """The directory of the revision the model serves, in its real volume (status.weights.revisions)."""
        revisions = self.get(name)["status"]["weights"]["revisions"]
        served = [revision for revision in revisions if revision.get("served")]
        assert len(served) == 1, revisions
        return self.volume_dir(name) / served[0]["path"]

    def cluster_ip(self, name) -> str:
        return self.core.read_namespaced_service(name, self.namespace).spec.cluster_ip

    def job_exists(self, name) -> bool:
        try:
            self.batch.read_namespaced_job(f"{name}-pull", self.namespace)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True


def answer_of(models, name, served_name=SERVED_NAME):
    reply = chat(models.cluster_ip(name), QUESTION, served_name)
    content = reply["choices"][0]["message"]["content"]
    assert reply["model"] == served_name, reply
    assert content.strip(), f"an empty completion: {reply}"
    assert reply["usage"]["completion_tokens"] > 0, reply
    return content


def test_url_model_serves_keeps_its_bytes_and_serves_again_without_a_pull(api, namespace, model_server, model_sha256):
    models = Models(api, namespace)
    name = "smollm-url"
    path = f"/models/{MODEL_FILE.name}"
    source = {"url": model_server.url + path, "sha256": model_sha256}
    models.create(llmmodel(name, source, MODEL_FILE.name, purge=False))
    status = models.wait_serving(name)
    # The canonical source names the checksum too (a different sha256 is a different source).
    assert status["weights"]["ready"] is True and status["weights"]["source"] == f"{source['url']}#sha256={model_sha256}", status
    assert status["weights"]["revision"] == model_sha256, status
    assert model_server.seen("GET", path), "the pull Job never asked the local server for the file"
    print(f"\n{name} answered: {answer_of(models, name)!r}")

    weights = models.served_dir(name) / MODEL_FILE.name
    assert sha256_of(weights) == model_sha256, "the volume does not hold the pulled bytes"
    pulled_at, gets = weights.stat().st_mtime_ns, len(model_server.seen("GET", path))

    # purgeWeightsOnDelete false: the model goes, its volume and the bytes stay.
    models.delete(name)
    wait_until(f"LLMModel {name} to be gone", lambda: models.gone(name), 240, lambda: models.describe(name))
    claim = models.core.read_namespaced_persistent_volume_claim(f"{name}-weights", namespace)
    assert claim.status.phase == "Bound" and not claim.metadata.deletion_timestamp, claim.status
    assert sha256_of(weights) == model_sha256, "the kept volume lost its bytes"

    # The same model again serves from the kept volume: no pull Job, no request to the source.
    jobs_seen = []
    models.create(llmmodel(name, source, MODEL_FILE.name, purge=False))
    models.wait_serving(name, on_poll=lambda: jobs_seen.append(models.job_exists(name)))
    assert not any(jobs_seen), "a pull Job ran although the kept volume holds the weights"
    assert len(model_server.seen("GET", path)) == gets and weights.stat().st_mtime_ns == pulled_at
    answer_of(models, name)

    # purgeWeightsOnDelete true: the volume and its directory go with the model.
    models.patch(name, {"purgeWeightsOnDelete": True})
    models.delete_purged(name)


def test_hub_model_is_pulled_through_the_configured_endpoint_and_answers(api, namespace, hub):
    models = Models(api, namespace)
    name = "smollm-hub"
    # The llamacpp preset: no file named, no command line; it serves the GGUF file the pull recorded.
    models.create(llmmodel(name, {"huggingFaceRepo": HUB_REPO}, None, purge=True))
    status = models.wait_serving(name)
    assert status["weights"]["source"] == f"hf://{HUB_REPO}@main", status
    assert status["weights"]["revision"] == hub.repos[HUB_REPO].commit, status
    assert status["server"]["runtime"] == "llamacpp" and status["server"]["modelFile"] == MODEL_FILE.name, status
    assert hub.seen("GET"), "the pull never reached the Hub endpoint of LLMMODEL_HF_ENDPOINT"
    print(f"\n{name} answered (llamacpp preset): {answer_of(models, name, served_name=name)!r}")
    assert (models.served_dir(name) / MODEL_FILE.name).stat().st_size == MODEL_FILE.stat().st_size
    models.delete_purged(name)


def test_gated_model_waits_for_its_secret_then_serves(api, namespace, hub):
    """The operator reads no Secret: the pull pod's real kubelet says the credentials Secret is missing,
    the model says so (Failed, CredentialsNotFound), and once the Secret exists the pull runs with it."""
    models = Models(api, namespace)
    name = "smollm-gated"
    body = llmmodel(name, {"huggingFaceRepo": GATED_REPO, "credentialsSecret": "hub-token"}, None, purge=True)
    models.create(body)
    weights = models.wait_condition(name, "Failed", "WeightsReady", "CredentialsNotFound",
                                    "say its Secret is missing", 180)
    assert f"Secret hub-token not found in namespace {namespace}" in weights["message"], weights
    assert not [r for r in hub.seen() if GATED_REPO in r.path], "the pull ran without its Secret"

    models.core.create_namespaced_secret(namespace, {"metadata": {"name": "hub-token"}, "stringData": {"HF_TOKEN": GATED_TOKEN}})
    models.wait_serving(name)
    print(f"\n{name} answered (gated repo, token from its Secret): {answer_of(models, name, served_name=name)!r}")
    everything = kubectl("get", "llmmodels,jobs,pods,events", "-n", namespace, "-o", "json", check=False).stdout
    assert GATED_TOKEN not in everything, "the token shows up in an object"
    models.delete_purged(name)


def test_an_image_that_needs_root_is_told_by_the_real_kubelet_not_left_hanging(api, namespace, model_server, model_sha256):
    """Pods are hardened by default (runAsNonRoot): an image whose user is root is refused by the node's
    kubelet, and the model says so with the kubelet's words and what to do, instead of 'deploying' forever."""
    models = Models(api, namespace)
    name = "root-image"
    body = llmmodel(name, {"url": f"{model_server.url}/models/{MODEL_FILE.name}", "sha256": model_sha256},
                    MODEL_FILE.name, purge=True)
    body["spec"]["serve"]["image"] = ROOT_IMAGE
    models.create(body)
    ready = models.wait_condition(name, "Degraded", "Ready", "ContainerConfigError", "say its image runs as root", 300)
    assert ready["status"] == "False", ready
    assert "image will run as root" in ready["message"], ready  # the real kubelet's words
    assert "spec.serve.securityContext.runAsUser" in ready["message"] and "runAsNonRoot: false" in ready["message"], ready
    models.delete_purged(name)


def test_a_failed_re_pull_leaves_the_served_revision_answering_after_a_restart(api, namespace, model_server, model_sha256):
    """A change of source to a URL that answers 404 fails the pull, never the weights being served:
    the revision's bytes stay on the real volume, a restarted server pod loads them and answers, and
    setting the source back serves that revision again without asking the source for a byte."""
    models = Models(api, namespace)
    name = "smollm-rev"
    path = f"/models/{MODEL_FILE.name}"
    source = {"url": model_server.url + path, "sha256": model_sha256}
    models.create(llmmodel(name, source, MODEL_FILE.name, purge=True))
    served = models.wait_serving(name)["weights"]["revisions"][0]
    weights = models.volume_dir(name) / served["path"] / MODEL_FILE.name
    assert served["served"] and sha256_of(weights) == model_sha256, served
    gets = len(model_server.seen("GET", path))

    models.patch(name, {"source": {"url": model_server.url + "/models/missing.gguf", "sha256": None}})
    models.wait_condition(name, "Failed", "Ready", "ServingPreviousWeights", "fail its pull while the served revision answers", 300)
    status = models.get(name)["status"]
    assert {c["type"]: c["reason"] for c in status["conditions"]}["WeightsReady"] == "PullFailed", status
    assert [(r["source"], r["path"], r["served"]) for r in status["weights"]["revisions"]] == [
        (served["source"], served["path"], True)], status
    assert sha256_of(weights) == model_sha256, "the failed pull touched the served revision"

    selector = f"inference.ai.example.com/model={name},app.kubernetes.io/component=server"
    old = {pod.metadata.uid for pod in models.core.list_namespaced_pod(namespace, label_selector=selector).items}
    models.core.delete_collection_namespaced_pod(namespace, label_selector=selector)

    def restarted_and_ready():
        pods = [pod for pod in models.core.list_namespaced_pod(namespace, label_selector=selector).items
                if pod.metadata.uid not in old and not pod.metadata.deletion_timestamp]
        return any(c.type == "Ready" and c.status == "True" for pod in pods for c in pod.status.conditions or [])

    wait_until(f"a new server pod of {name} to be Ready on the served revision", restarted_and_ready, 300,
               lambda: models.describe(name))
    print(f"\n{name} answered after its failed re-pull and a restart: {answer_of(models, name)!r}")

    models.patch(name, {"source": source})
    models.wait_serving(name)
    assert len(model_server.seen("GET", path)) == gets, "going back to the served source downloaded it again"
    answer_of(models, name)
    models.delete_purged(name)


def test_a_signed_link_in_a_secret_is_pulled_and_shows_nowhere_a_viewer_reads(api, namespace, model_server, model_sha256):
    """spec.source.urlSecret: the real kubelet holds the pull until the Secret exists, the real puller
    fetches the link from it (user info and signed query reach the HTTP server), and neither part of
    the credential shows in the model, its children, the pods, the Events, the pull's log or the
    operator's log."""
    models = Models(api, namespace)
    name = "smollm-signed"
    signature, password = f"E2eSig{uuid.uuid4().hex[:12]}", f"E2ePw{uuid.uuid4().hex[:12]}"
    path = f"/models/{MODEL_FILE.name}"
    host = model_server.url.split("://", 1)[1]
    url = f"http://reader:{password}@{host}{path}?X-Amz-Credential=AKIAEXAMPLE&X-Amz-Signature={signature}"
    source = {"urlSecret": {"name": "weights-link", "key": "url"}, "sha256": model_sha256}
    models.create(llmmodel(name, source, MODEL_FILE.name, purge=True))
    weights = models.wait_condition(name, "Failed", "WeightsReady", "CredentialsNotFound", "say its URL Secret is missing", 180)
    assert f"Secret weights-link not found in namespace {namespace}" in weights["message"], weights

    # As `kubectl create secret --from-file` leaves it: with a trailing newline.
    models.core.create_namespaced_secret(namespace, {"metadata": {"name": "weights-link"}, "stringData": {"url": url + "\n"}})
    status = models.wait_serving(name)
    assert status["model"] == "secret://weights-link/url", status
    assert status["weights"]["source"] == f"secret://weights-link/url#sha256={model_sha256}", status
    assert [r for r in model_server.seen("GET", path) if r.path.endswith(signature)], "the pull never fetched the signed link"
    print(f"\n{name} answered (URL from its Secret): {answer_of(models, name)!r}")

    seen = "\n".join([
        kubectl("get", "llmmodels,jobs,pods,events,deployments,services,pvc,serviceaccounts,roles,rolebindings",
                "-n", namespace, "-o", "json").stdout,
        kubectl("get", "llmmodel", name, "-n", namespace, "-o", "yaml").stdout,
        kubectl("logs", "-n", namespace, "-l", f"batch.kubernetes.io/job-name={name}-pull", "--tail=-1", check=False).stdout,
        kubectl("logs", "-n", OPERATOR_NAMESPACE, f"deployment/{MANAGER}", "--tail=-1").stdout,
    ])
    assert f"{name}-pull" in seen and MODEL_FILE.name in seen, "the search did not cover the pull"
    assert signature not in seen and password not in seen, "the signed link shows up where a viewer reads"
    models.delete_purged(name)
