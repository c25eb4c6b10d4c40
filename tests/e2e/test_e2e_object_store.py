"""Weights from a private object store on the real node: versitygw (conftest.object_store) checks every
request's AWS Signature V4, the key pair reaches the pull pod from the model's credentialsSecret by
reference only, and SmolLM2 pulled from a private bucket's folder answers. The failures a user meets
(a wrong secret, an unknown key, a key without access, no bucket, no object, an empty folder, a wrong
region; a missing Secret or one without the key pair) each end the pull once with what to fix, a fixed
Secret is taken by retry-pull (or by the waiting pod itself), and no key shows in anything a viewer
reads or in the operator's log. gs:// with a service-account key file reads fake-gcs-server behind a
token endpoint that verifies the key's JWT (conftest.gcs_store)."""

from __future__ import annotations

import json

from kubernetes.client.rest import ApiException

from e2e_helpers import (GROUP, MANAGER, MODEL_FILE, MODEL_FOLDER, OPERATOR_NAMESPACE, PLURAL, PRIVATE_BUCKET, VERSION, kubectl, llmmodel,
                         wait_until)
from llm_model_puller.s3_auth import Credentials
from s3_server import READER_KEY, ROOT_KEY
from test_e2e_lifecycle import Models, answer_of, namespace  # noqa: F401  (namespace: the module's fixture)

FOLDER_URL = f"s3://{PRIVATE_BUCKET}/{MODEL_FOLDER}/"
UNKNOWN = Credentials("AKIAUNKNOWNKEY000001", "unknown/Secret+Key/ForTheS3Gateway000001")
WRONG = Credentials(ROOT_KEY.access_key, "wrong/Secret+Key/ForTheS3Gateway00000001")
KEYS = (ROOT_KEY, READER_KEY, UNKNOWN, WRONG)
RETRY_ANNOTATION = "inference.ai.example.com/retry-pull"
# case: (key pair in the Secret, source URL, words of the pull's one-line failure)
FAILURES = {
    "wrong-secret": (WRONG, FOLDER_URL, "(SignatureDoesNotMatch): AWS_SECRET_ACCESS_KEY is not the secret of AWS_ACCESS_KEY_ID"),
    "unknown-key": (UNKNOWN, FOLDER_URL, "does not know the access key (InvalidAccessKeyId)"),
    "access-denied": (READER_KEY, FOLDER_URL, "access denied to"),
    "no-bucket": (ROOT_KEY, "s3://no-such-bucket/m.gguf", "(NoSuchBucket)"),
    "no-key": (ROOT_KEY, f"s3://{PRIVATE_BUCKET}/{MODEL_FOLDER}/missing.gguf", "(NoSuchKey)"),
    "empty-prefix": (ROOT_KEY, f"s3://{PRIVATE_BUCKET}/empty/", f"no object under s3://{PRIVATE_BUCKET}/empty/"),
    "wrong-region": (ROOT_KEY, FOLDER_URL, "is not in region eu-west-1 (AuthorizationHeaderMalformed; the store says us-east-1): "
                     "set AWS_REGION"),
}
SECRET_EXTRA = {"wrong-region": {"AWS_REGION": "eu-west-1"}}


def secret(name, store, key, **extra):
    """The Secret a user writes for the store: the AWS SDKs' variables (store.env())."""
    return {"metadata": {"name": name}, "stringData": {**store.env(key), **extra}}


def wait_weights_ready(models, name, timeout=240):
    def ready():
        status = models.get(name).get("status", {})
        return {c["type"]: c["status"] for c in status.get("conditions", [])}.get("WeightsReady") == "True" and status

    return wait_until(f"LLMModel {name}'s weights to be ready", ready, timeout, lambda: models.describe(name))


def assert_no_key_shows(models):
    """No secret key, access key or session of the store in what a viewer reads, nor in the operator's log."""
    seen = kubectl("get", "llmmodels,jobs,pods,events,pvc", "-n", models.namespace, "-o", "json", check=False).stdout
    seen += kubectl("logs", "-n", OPERATOR_NAMESPACE, f"deployment/{MANAGER}", "--tail=-1", check=False).stdout
    for key in KEYS:
        assert key.secret_key not in seen and key.access_key not in seen, "a key of the store shows"


def assert_folder_served_by_reference(models, name, prefix, secret_name):
    """The model folder is on the volume with its layout, and every credential variable (names starting
    with prefix) of the pull came from secret_name by reference, none as a value."""
    served = models.served_dir(name)
    assert (served / MODEL_FILE.name).stat().st_size == MODEL_FILE.stat().st_size
    assert (served / "licenses" / "LICENSE").read_bytes() == b"Apache-2.0\n"  # the folder's layout is kept
    env = models.batch.read_namespaced_job(f"{name}-pull", models.namespace).spec.template.spec.containers[0].env
    refs = {e.name: e for e in env if e.name.startswith(prefix)}
    assert refs and all(e.value is None and e.value_from.secret_key_ref.name == secret_name for e in refs.values()), refs


def test_a_private_folder_waits_for_its_secret_then_serves(api, namespace, operator, object_store):  # noqa: F811
    models = Models(api, namespace)
    name = "smollm-s3"
    body = llmmodel(name, {"url": FOLDER_URL, "credentialsSecret": "store-key"}, None, purge=True)
    models.create(body)
    weights = models.wait_condition(name, "Failed", "WeightsReady", "CredentialsNotFound", "say its Secret is missing", 180)
    assert (f"Secret store-key not found in namespace {namespace}; create it: kubectl -n {namespace} create secret generic "
            "store-key --from-literal=AWS_ACCESS_KEY_ID=<access key id> "
            "--from-literal=AWS_SECRET_ACCESS_KEY=<secret access key>") in weights["message"], weights

    models.core.create_namespaced_secret(namespace, secret("store-key", object_store, ROOT_KEY))
    models.wait_serving(name)
    print(f"\n{name} answered (a private bucket's folder, key pair from its Secret): {answer_of(models, name, served_name=name)!r}")
    assert_folder_served_by_reference(models, name, "AWS_", "store-key")
    assert_no_key_shows(models)
    models.delete_purged(name)


def test_hmac_keys_pull_a_gs_object_once_its_secret_has_them(api, namespace, operator, object_store):  # noqa: F811
    """gs:// with HMAC keys: the same signed protocol; the store stands in for storage.googleapis.com
    (AWS_ENDPOINT_URL in the Secret). A gs:// Secret may hold HMAC keys or a key file, so none is
    required: a Secret with neither fails the pull once with what to put, and retry-pull takes the fix."""
    models = Models(api, namespace)
    name = "smollm-gs"
    models.core.create_namespaced_secret(namespace, {"metadata": {"name": "gcs-hmac"}, "stringData": {"AWS_REGION": "us-east-1"}})
    url = f"gs://{PRIVATE_BUCKET}/{MODEL_FOLDER}/{MODEL_FILE.name}"
    models.create(llmmodel(name, {"url": url, "credentialsSecret": "gcs-hmac"}, None, purge=True))
    weights = models.wait_condition(name, "Failed", "WeightsReady", "PullFailed", "say its Secret has neither form", 180)
    assert ("put a service-account key file's JSON under the credentials Secret's key GOOGLE_APPLICATION_CREDENTIALS, "
            "or HMAC keys under AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") in weights["message"], weights

    models.core.replace_namespaced_secret("gcs-hmac", namespace, secret("gcs-hmac", object_store, ROOT_KEY))
    models.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name,
                                                 {"metadata": {"annotations": {RETRY_ANNOTATION: "hmac-keys"}}})
    status = wait_weights_ready(models, name)
    assert status["weights"]["source"] == url, status
    models.delete_purged(name)


def test_a_gs_folder_pulled_with_a_service_account_key_file_answers(api, namespace, operator, gcs_store):  # noqa: F811
    """The Secret's GOOGLE_APPLICATION_CREDENTIALS reaches the pull pod as one read-only file, the
    variable its path; the token endpoint verified the key's JWT; SmolLM2 from the bucket's folder answers."""
    models = Models(api, namespace)
    name = "smollm-gcs"
    endpoint = f"{gcs_store.host}:{gcs_store.port}"
    key = json.dumps(gcs_store.key)
    models.core.create_namespaced_secret(namespace, {"metadata": {"name": "gcs-key"}, "stringData": {
        "GOOGLE_APPLICATION_CREDENTIALS": key, "STORAGE_EMULATOR_HOST": endpoint}})
    grants = gcs_store.grants
    models.create(llmmodel(name, {"url": f"gs://{PRIVATE_BUCKET}/{MODEL_FOLDER}/", "credentialsSecret": "gcs-key"}, None,
                           purge=True))
    models.wait_serving(name)
    print(f"\n{name} answered (a gs:// folder, a service-account key file from its Secret): "
          f"{answer_of(models, name, served_name=name)!r}")
    assert gcs_store.grants > grants  # the key's JWT was verified and a token issued
    served = models.served_dir(name)
    assert (served / MODEL_FILE.name).stat().st_size == MODEL_FILE.stat().st_size
    assert (served / "licenses" / "LICENSE").read_bytes() == b"Apache-2.0\n"
    pod = models.batch.read_namespaced_job(f"{name}-pull", namespace).spec.template.spec
    env = {e.name: e for e in pod.containers[0].env}
    path = env["GOOGLE_APPLICATION_CREDENTIALS"].value
    (mount,) = [m for m in pod.containers[0].volume_mounts if path.startswith(m.mount_path + "/")]
    assert mount.read_only and path.endswith("/key.json"), (path, mount)
    seen = kubectl("get", "llmmodels,jobs,pods,events,pvc", "-n", namespace, "-o", "json", check=False).stdout
    seen += kubectl("logs", "-n", OPERATOR_NAMESPACE, f"deployment/{MANAGER}", "--tail=-1", check=False).stdout
    assert gcs_store.key["private_key"].splitlines()[1] not in seen and not any(t in seen for t in gcs_store.tokens)
    models.delete_purged(name)


def test_object_store_failures_end_the_pull_once_with_what_to_fix(api, namespace, operator, object_store):  # noqa: F811
    models = Models(api, namespace)
    for case, (key, url, _words) in FAILURES.items():
        models.core.create_namespaced_secret(namespace, secret(f"key-{case}", object_store, key, **SECRET_EXTRA.get(case, {})))
        models.create(llmmodel(f"fail-{case}", {"url": url, "credentialsSecret": f"key-{case}"}, None, purge=True))
    for case, (_key, _url, words) in FAILURES.items():
        name = f"fail-{case}"
        weights = models.wait_condition(name, "Failed", "WeightsReady", "PullFailed", f"fail its pull ({case})", 240)
        assert words in weights["message"], (case, weights)
        job = models.batch.read_namespaced_job(f"{name}-pull", namespace)
        # One pod, and the Job gave up at once (the puller's permanent exit code): no retry loop.
        assert (job.status.failed, job.status.succeeded) == (1, None), (case, job.status)
        events = [e for e in models.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
                  if e.reason == "PullFailed"]
        assert len(events) == 1 and events[0].count in (None, 1), (case, [(e.reason, e.count) for e in events])
    assert_no_key_shows(models)

    # The Secret fixed, retry-pull takes the new key: a failed pull is retried only when asked.
    models.core.replace_namespaced_secret("key-wrong-secret", namespace, secret("key-wrong-secret", object_store, ROOT_KEY))
    models.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "fail-wrong-secret",
                                                 {"metadata": {"annotations": {RETRY_ANNOTATION: "fixed-secret"}}})
    wait_weights_ready(models, "fail-wrong-secret")
    for case in FAILURES:
        try:
            models.delete(f"fail-{case}")
        except ApiException as error:
            assert error.status == 404
    wait_until("the failed models to be gone", lambda: all(models.gone(f"fail-{case}") for case in FAILURES), 240,
               lambda: models.describe("fail-wrong-secret"))
