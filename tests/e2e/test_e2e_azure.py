"""Weights from a private Azure storage account on the real node: Azurite (conftest.azure_store) checks
every request's Shared Key signature, the connection string reaches the pull pod from the model's
credentialsSecret by reference only, and SmolLM2 pulled from the container's folder answers. A missing
Secret is told as CredentialsNotFound with the command that creates it and is taken by retry-pull; a
wrong key and a missing blob each end the pull once with what to fix; no key shows anywhere a viewer
reads or in the operator's log."""

from __future__ import annotations

from azure_server import KEY, WRONG_KEY
from e2e_helpers import (GROUP, MANAGER, MODEL_FOLDER, OPERATOR_NAMESPACE, PLURAL, PRIVATE_BUCKET, VERSION, kubectl,
                         llmmodel)
from test_e2e_lifecycle import Models, answer_of, namespace  # noqa: F401  (namespace: the module's fixture)
from test_e2e_object_store import RETRY_ANNOTATION, assert_folder_served_by_reference

FOLDER_URL = f"az://{PRIVATE_BUCKET}/{MODEL_FOLDER}/"


def secret(name, store, key=KEY):
    """The Secret a user writes for the account: the connection string Azure's tools read."""
    return {"metadata": {"name": name}, "stringData": store.env(key)}


def assert_no_key_shows(models):
    seen = kubectl("get", "llmmodels,jobs,pods,events,pvc", "-n", models.namespace, "-o", "json", check=False).stdout
    seen += kubectl("logs", "-n", OPERATOR_NAMESPACE, f"deployment/{MANAGER}", "--tail=-1", check=False).stdout
    assert KEY not in seen and WRONG_KEY not in seen, "an account key shows"


def test_a_private_azure_folder_is_pulled_with_its_secret_and_serves(api, namespace, operator, azure_store):  # noqa: F811
    models = Models(api, namespace)
    name = "smollm-az"
    models.create(llmmodel(name, {"url": FOLDER_URL, "credentialsSecret": "azure-key"}, None, purge=True))
    weights = models.wait_condition(name, "Failed", "WeightsReady", "CredentialsNotFound", "say its Secret is missing", 240)
    assert weights["message"].startswith(f"Secret azure-key in namespace {namespace} is missing or holds no Azure Storage "
                                         "credentials"), weights
    assert f"kubectl -n {namespace} create secret generic azure-key --from-literal=AZURE_STORAGE_ACCOUNT=" in weights["message"]

    models.core.create_namespaced_secret(namespace, secret("azure-key", azure_store))
    models.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name,
                                                 {"metadata": {"annotations": {RETRY_ANNOTATION: "secret-created"}}})
    models.wait_serving(name)
    print(f"\n{name} answered (a private Azure container's folder, Shared Key from its Secret): "
          f"{answer_of(models, name, served_name=name)!r}")
    assert_folder_served_by_reference(models, name, "AZURE_", "azure-key")
    assert_no_key_shows(models)
    models.delete_purged(name)


def test_a_wrong_key_and_a_missing_blob_end_the_pull_once(api, namespace, operator, azure_store):  # noqa: F811
    models = Models(api, namespace)
    cases = {
        "az-wrong-key": (WRONG_KEY, FOLDER_URL, "AZURE_STORAGE_KEY is not a key of the account"),
        "az-no-blob": (KEY, f"az://{PRIVATE_BUCKET}/{MODEL_FOLDER}/missing.gguf", "(BlobNotFound)"),
    }
    for name, (key, url, _words) in cases.items():
        models.core.create_namespaced_secret(namespace, secret(f"key-{name}", azure_store, key))
        models.create(llmmodel(name, {"url": url, "credentialsSecret": f"key-{name}"}, None, purge=True))
    for name, (_key, _url, words) in cases.items():
        weights = models.wait_condition(name, "Failed", "WeightsReady", "PullFailed", f"fail its pull ({name})", 240)
        assert words in weights["message"], (name, weights)
        job = models.batch.read_namespaced_job(f"{name}-pull", namespace)
        assert (job.status.failed, job.status.succeeded) == (1, None), (name, job.status)
    assert_no_key_shows(models)
    for name in cases:
        models.delete(name)
