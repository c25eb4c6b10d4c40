"""Admission of spec.serve's runtime, model file, startup budget, replicas and autoscaling, and of
spec.storageAccessMode: every rule rejects with a message naming the field (CRD CEL rules)."""

import copy

import pytest
from kubernetes.client.rest import ApiException
from test_admission import dry_run_create, dry_run_patch, llmmodel, rejection, stored_llmmodel  # noqa: F401 (fixture)


def serving(**serve):
    return llmmodel(serve=serve)


INVALID = {
    "unknown runtime": (serving(runtime="tgi"), "spec.serve.runtime: Unsupported value"),
    "custom without image": (serving(runtime="custom"), "spec.serve.image is required when spec.serve.runtime is custom"),
    "replicas zero": (serving(runtime="vllm", replicas=0), "spec.serve.replicas must be at least 1"),
    "replicas above 100": (serving(runtime="vllm", replicas=101), "spec.serve.replicas must be at most 100"),
    "replicas and autoscaling": (
        serving(runtime="vllm", replicas=2, autoscaling={"maxReplicas": 3}),
        "set spec.serve.replicas or spec.serve.autoscaling, not both",
    ),
    "min above max": (
        serving(runtime="vllm", autoscaling={"minReplicas": 4, "maxReplicas": 2}),
        "spec.serve.autoscaling.minReplicas must not be greater than spec.serve.autoscaling.maxReplicas",
    ),
    "max without min above default": (
        serving(runtime="vllm", autoscaling={"maxReplicas": 0}),
        "spec.serve.autoscaling.maxReplicas must be between 1 and 100",
    ),
    "no maxReplicas": (serving(runtime="vllm", autoscaling={"minReplicas": 1}), "spec.serve.autoscaling.maxReplicas: Required value"),
    "cpu and metric": (
        serving(runtime="vllm", autoscaling={"maxReplicas": 3, "targetCPUUtilizationPercentage": 70,
                                             "metric": {"name": "queue", "averageValue": "5"}}),
        "spec.serve.autoscaling takes targetCPUUtilizationPercentage or metric, not both",
    ),
    "metric name with a space": (
        serving(runtime="vllm", autoscaling={"maxReplicas": 3, "metric": {"name": "a b", "averageValue": 5}}),
        "spec.serve.autoscaling.metric.name must be a metric name",
    ),
    "min below zero": (
        serving(runtime="vllm", autoscaling={"minReplicas": -1, "maxReplicas": 1}),
        "spec.serve.autoscaling.minReplicas must be at least 0",
    ),
    "zero with a cpu target": (
        serving(runtime="vllm", autoscaling={"minReplicas": 0, "maxReplicas": 1, "targetCPUUtilizationPercentage": 70}),
        "spec.serve.autoscaling.minReplicas 0 is scaled by the router, not by an HPA",
    ),
    "zero with a metric": (
        serving(runtime="vllm", autoscaling={"minReplicas": 0, "maxReplicas": 1, "metric": {"name": "q", "averageValue": "1"}}),
        "spec.serve.autoscaling.minReplicas 0 is scaled by the router, not by an HPA",
    ),
    "zero to more than one": (
        serving(runtime="vllm", autoscaling={"minReplicas": 0, "maxReplicas": 3}),
        "spec.serve.autoscaling.maxReplicas must be 1 with minReplicas 0",
    ),
    "in flight with a cpu target": (
        serving(runtime="vllm", autoscaling={"maxReplicas": 3, "targetInFlightRequests": 4, "targetCPUUtilizationPercentage": 70}),
        "spec.serve.autoscaling.targetInFlightRequests is the router's target",
    ),
    "in flight of zero": (
        serving(runtime="vllm", autoscaling={"maxReplicas": 3, "targetInFlightRequests": 0}),
        "spec.serve.autoscaling.targetInFlightRequests must be between 1 and 10000",
    ),
    "stabilisation without in flight": (
        serving(runtime="vllm", autoscaling={"maxReplicas": 3, "scaleDownStabilizationSeconds": 60}),
        "apply only with targetInFlightRequests",
    ),
    "idleSeconds without zero": (
        serving(runtime="vllm", autoscaling={"minReplicas": 1, "maxReplicas": 2, "idleSeconds": 60}),
        "spec.serve.autoscaling.idleSeconds applies only with minReplicas 0",
    ),
    "idleSeconds too short": (
        serving(runtime="vllm", autoscaling={"minReplicas": 0, "maxReplicas": 1, "idleSeconds": 5}),
        "spec.serve.autoscaling.idleSeconds must be between 30 and 86400",
    ),
    "modelFile with ..": (serving(runtime="llamacpp", modelFile="../other/secret.gguf"), "spec.serve.modelFile must not contain '..'"),
    "modelFile with inner ..": (serving(runtime="llamacpp", modelFile="a/../../b.gguf"), "spec.serve.modelFile must not contain '..'"),
    "modelFile absolute": (serving(runtime="ollama", modelFile="/etc/passwd"), "spec.serve.modelFile must be relative to the weights volume"),
    "modelFile with shell characters": (
        serving(runtime="llamacpp", modelFile="m.gguf;rm -rf /"),
        "spec.serve.modelFile may contain only letters, digits",
    ),
    "modelFile with custom": (
        serving(image="registry.example/s:1", modelFile="m.gguf"),
        "spec.serve.modelFile is only used by the runtime presets",
    ),
    "startupTimeout not a duration": (serving(runtime="vllm", startupTimeout="ten minutes"), "spec.serve.startupTimeout must be a duration"),
    "startupTimeout too long": (serving(runtime="vllm", startupTimeout="25h"), "spec.serve.startupTimeout must be between 1m and 24h"),
    "startupTimeout too short": (serving(runtime="vllm", startupTimeout="30s"), "spec.serve.startupTimeout must be between 1m and 24h"),
    "healthPath relative": (serving(runtime="vllm", healthPath="health"), "spec.serve.healthPath must be a path starting with '/'"),
    "root without saying so": (
        serving(runtime="vllm", securityContext={"runAsUser": 0}),
        "spec.serve.securityContext.runAsUser 0 is root: set runAsNonRoot: false",
    ),
    "root while refusing root": (
        serving(runtime="vllm", securityContext={"runAsUser": 0, "runAsNonRoot": True}),
        "spec.serve.securityContext.runAsUser 0 is root: set runAsNonRoot: false",
    ),
    "negative user": (serving(runtime="vllm", securityContext={"runAsUser": -1}), "spec.serve.securityContext.runAsUser"),
    "storageAccessMode unknown": (
        llmmodel(storageAccessMode="ReadOnlyMany"),
        "spec.storageAccessMode: Unsupported value",
    ),
}


@pytest.mark.parametrize("body, message", INVALID.values(), ids=INVALID.keys())
def test_invalid_serving_is_rejected_naming_the_field(custom_objects, namespace, body, message):
    assert message in rejection(custom_objects, namespace, body)


VALID = {
    "runtime only": serving(runtime="ollama"),
    "vllm autoscaled on a metric": serving(
        runtime="vllm", autoscaling={"minReplicas": 2, "maxReplicas": 4, "metric": {"name": "vllm:num_requests_waiting", "averageValue": "500m"}},
    ),
    "scale to zero": serving(runtime="vllm", autoscaling={"minReplicas": 0, "maxReplicas": 1, "idleSeconds": 600}),
    "in flight from zero": serving(runtime="vllm", autoscaling={
        "minReplicas": 0, "maxReplicas": 4, "targetInFlightRequests": 8, "scaleUpStabilizationSeconds": 10,
        "scaleDownStabilizationSeconds": 120}),
    "in flight from one": serving(runtime="vllm", autoscaling={"maxReplicas": 2, "targetInFlightRequests": 8}),
    "scale to zero, default idle": serving(runtime="llamacpp", autoscaling={"minReplicas": 0, "maxReplicas": 1}),
    "llamacpp everything": {
        **llmmodel(serve={"runtime": "llamacpp", "modelFile": "q4/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf", "replicas": 3,
                          "startupTimeout": "1h30m", "healthPath": "/health", "port": 9000, "image": "registry.example/llama:1",
                          "args": ["--ctx-size", "4096"]}),
    },
    "read write many": llmmodel(storageAccessMode="ReadWriteMany", serve={"runtime": "vllm", "replicas": 2}),
    "custom as before": serving(image="registry.example/s:1", runtime="custom", port=8000),
    "an image that needs root": serving(image="registry.example/root:1", securityContext={"runAsNonRoot": False, "runAsUser": 0}),
    "another user": serving(runtime="llamacpp", securityContext={"runAsUser": 2000, "runAsGroup": 2000, "fsGroup": 2000}),
}


@pytest.mark.parametrize("body", VALID.values(), ids=VALID.keys())
def test_valid_serving_is_accepted_unpruned(custom_objects, namespace, body):
    created = dry_run_create(custom_objects, namespace, copy.deepcopy(body))
    assert created["spec"]["serve"] == body["spec"]["serve"]
    assert created["spec"].get("storageAccessMode") == body["spec"].get("storageAccessMode")


def test_storage_access_mode_is_immutable(custom_objects, namespace, stored_llmmodel):
    with pytest.raises(ApiException) as caught:
        dry_run_patch(custom_objects, namespace, stored_llmmodel, {"storageAccessMode": "ReadWriteMany"})
    assert caught.value.status == 422
    assert "spec.storageAccessMode cannot be changed after creation" in caught.value.body
    # Naming the default explicitly is no change.
    assert dry_run_patch(custom_objects, namespace, stored_llmmodel, {"storageAccessMode": "ReadWriteOnce"})


def test_replicas_and_runtime_can_change(custom_objects, namespace, stored_llmmodel):
    changed = dry_run_patch(custom_objects, namespace, stored_llmmodel, {"serve": {"runtime": "vllm", "replicas": 2}})
    assert changed["spec"]["serve"]["replicas"] == 2


def test_a_privileged_server_cannot_be_asked_for(custom_objects, namespace):
    # spec.serve.securityContext has only the user fields: anything else (privileged, capabilities)
    # is not part of the API and never reaches the operator.
    created = dry_run_create(custom_objects, namespace, serving(runtime="vllm", securityContext={
        "privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}, "runAsUser": 1000}))
    assert created["spec"]["serve"]["securityContext"] == {"runAsUser": 1000}
