"""What the role renders for spec.serve: runtime presets, the startup budget, replicas, autoscaling,
the rollout strategy and status.server (templates/server.yaml.j2 and the object templates).

Every case runs through the role's real tasks and templates in one ansible-playbook run
(render_helpers.py); the assertions read the rendered manifests as the API server would get them.
"""

from __future__ import annotations

import json

import pytest
from render_helpers import GIB, case, model, pulled_by_pod, render, server_container

from ansible.module_utils.llmmodel_manifests import LAST_APPLIED, with_record  # noqa: E402  (render_helpers' path)

FILE_ANNOTATION = "inference.ai.example.com/weights-file"
BYTES_ANNOTATION = "inference.ai.example.com/weights-bytes"
CHILDREN_ANNOTATION = "inference.ai.example.com/scaling-children"


def url_model(url, **serve):
    return source_model({"url": url}, **serve)


def source_model(source, **serve):
    obj = model(**serve)
    obj["spec"]["source"] = source
    return obj


SIGNED = "https://bucket.s3.amazonaws.com/m.gguf?X-Amz-Credential=AKIAEXAMPLE&X-Amz-Signature=SIGNATURE0123"


CASES = {
    "custom": case(model(image="registry.example/server:1", port=8000, args=["--model", "/model-weights"])),
    "custom with replicas": case(model(image="registry.example/server:1", port=8000, args=["--model", "/model-weights"], replicas=3)),
    "vllm": case(model(runtime="vllm", args=["--max-model-len", "4096"]), server_ready=True),
    "vllm file": case(model(runtime="vllm", modelFile="q4/model.gguf", image="registry.example/vllm:2")),
    "llamacpp from the pull": case(model(runtime="llamacpp"), pulled={"gguf": "tiny.Q4_K_M.gguf", "size": 3 * GIB}),
    "llamacpp from the volume": case(
        model(runtime="llamacpp", port=9000, args=["--ctx-size", "4096"]),
        pvc_annotations={FILE_ANNOTATION: "kept.gguf", BYTES_ANNOTATION: str(100 * GIB)},
    ),
    "llamacpp from the url": case(url_model("https://models.example/dir/Tiny%2BChat.Q4.gguf?download=true", runtime="llamacpp")),
    "llamacpp modelFile wins": case(model(runtime="llamacpp", modelFile="mine.gguf"), pulled={"gguf": "found.gguf", "size": GIB // 10}),
    "llamacpp from the pod": pulled_by_pod(model(runtime="llamacpp"), {"source": "hf://acme/tiny-chat@main", "commit": "c0ffee",
                                                                        "size": 2 * GIB, "gguf": "q4/m-00001-of-00002.gguf"}),
    "llamacpp escaping record": pulled_by_pod(model(runtime="llamacpp"), {"commit": "c0ffee", "size": GIB, "gguf": "../../etc/x.gguf"}),
    "llamacpp shell record": pulled_by_pod(model(runtime="llamacpp"), {"commit": "c0ffee", "size": GIB, "gguf": "$(reboot).gguf"}),
    "llamacpp without a file": case(model(runtime="llamacpp"), pulled={"gguf": "", "size": GIB}),
    "llamacpp escaping annotation": case(model(runtime="llamacpp"), pvc_annotations={FILE_ANNOTATION: "../../etc/shadow.gguf"}),
    "llamacpp shell annotation": case(model(runtime="llamacpp"), pvc_annotations={FILE_ANNOTATION: "x.gguf; rm -rf /"}),
    "ollama": case(model(runtime="ollama", modelFile="chat.gguf", startupTimeout="1h30m")),
    "ollama health override": case(model(runtime="ollama", modelFile="chat.gguf", healthPath="/", port=8000)),
    "rwx": case({**model(runtime="vllm", replicas=2), "spec": {**model(runtime="vllm", replicas=2)["spec"], "storageAccessMode": "ReadWriteMany"}}),
    "autoscaling new": case(model(runtime="vllm", autoscaling={"minReplicas": 2, "maxReplicas": 5})),
    "autoscaling live": case(
        model(runtime="vllm", autoscaling={"maxReplicas": 5, "metric": {"name": "vllm:num_requests_waiting", "averageValue": "5"}}),
        deployment={"metadata": {"name": "m"}, "spec": {"replicas": 4}},
    ),
    "to zero new": case(model(runtime="vllm", autoscaling={"minReplicas": 0, "maxReplicas": 1})),
    "to zero idle": case(
        model(runtime="vllm", autoscaling={"minReplicas": 0, "maxReplicas": 1, "idleSeconds": 120}),
        deployment={"metadata": {"name": "m"}, "spec": {"replicas": 0}, "status": {}},
    ),
    "to zero woken": case(
        model(runtime="vllm", autoscaling={"minReplicas": 0, "maxReplicas": 1}),
        deployment={"metadata": {"name": "m"}, "spec": {"replicas": 1}, "status": {}},
    ),
    "in flight": case(
        model(runtime="vllm", autoscaling={"minReplicas": 0, "maxReplicas": 4, "targetInFlightRequests": 8}),
        deployment={"metadata": {"name": "m"}, "spec": {"replicas": 3}, "status": {}},
    ),
    "autoscaling one": case(model(runtime="vllm", autoscaling={"maxReplicas": 1, "targetCPUUtilizationPercentage": 60})),
    "weights not ready": case(model(runtime="llamacpp"), weights_ready=False, job_state="running", pulled={"gguf": "x.gguf", "size": GIB}),
    "autoscaling removed": case(model(runtime="vllm"), deployment={
        "metadata": {"name": "m", "annotations": {CHILDREN_ANNOTATION: "HorizontalPodAutoscaler,PodDisruptionBudget"}},
        "spec": {"replicas": 3}, "status": {"replicas": 3}}),
    "root image": case(model(image="registry.example/needs-root:1", securityContext={"runAsNonRoot": False, "runAsUser": 0})),
    "gpu pool": case(model(runtime="vllm", gpuCount=1, nodeSelector={"pool": "gpu"}), weights_ready=False),
    "gpu first pull": case(model(runtime="vllm", gpuCount=2), weights_ready=False, volume_bound=False),
    "gpu repull beside the server": case(model(runtime="vllm", gpuCount=2), weights_ready=False,
                                         pull_beside_server=True, volume_bound=False),
    "repull beside the server": case(model(runtime="vllm"), weights_ready=False, pull_beside_server=True),
    "url in a secret": case(source_model({"urlSecret": {"name": "weights-link", "key": "signed"}, "sha256": "b" * 64},
                                         runtime="llamacpp", modelFile="m.gguf"), weights_ready=False),
    "signed url": case(source_model({"url": SIGNED}, runtime="llamacpp"), weights_ready=False),
    "s3 folder with a key pair": case(source_model({"url": "s3://acme-models/llama-ft/", "credentialsSecret": "weights-s3"},
                                                   runtime="vllm"), weights_ready=False),
    "gs object with a secret": case(source_model({"url": "gs://acme-models/m.gguf", "credentialsSecret": "weights-gcs"},
                                                 runtime="llamacpp"), weights_ready=False),
    "gs folder without a secret": case(source_model({"url": "gs://acme-models/llama/"}, runtime="vllm"), weights_ready=False),
    "hub with a token": case(source_model({"huggingFaceRepo": "acme/gated", "credentialsSecret": "hub-token"},
                                          runtime="vllm"), weights_ready=False),
    "s3 without a secret": case(source_model({"url": "s3://acme-models/m.gguf"}, runtime="llamacpp"), weights_ready=False),
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return render(CASES, tmp_path_factory.mktemp("render"))


def probes(container):
    return {kind: container[kind] for kind in ("startupProbe", "livenessProbe", "readinessProbe")}


def test_custom_is_the_spec_as_given(rendered):
    result = rendered["custom"]
    server = server_container(result)
    deployment = result["objects"]["Deployment"]
    assert server["image"] == "registry.example/server:1"
    assert "command" not in server and "env" not in server
    assert server["args"] == ["--model", "/model-weights"]
    assert server["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert {probe["httpGet"]["path"] for probe in probes(server).values()} == {"/health"}
    assert server["startupProbe"]["periodSeconds"] * server["startupProbe"]["failureThreshold"] == 1800
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert "affinity" not in deployment["spec"]["template"]["spec"]
    assert CHILDREN_ANNOTATION not in deployment["metadata"]["annotations"]
    assert set(result["objects"]) == {"PersistentVolumeClaim", "Deployment", "Service", "InferencePool"}
    assert result["state"]["status"]["server"]["runtime"] == "custom"


def test_scaling_does_not_change_the_configuration_hash(rendered):
    assert rendered["custom"]["hash"] == rendered["custom with replicas"]["hash"]
    assert rendered["custom"]["hash"] != rendered["vllm"]["hash"]


def test_vllm_serves_the_directory_under_the_model_name_then_the_users_args(rendered):
    server = server_container(rendered["vllm"])
    assert server["image"] == "vllm/vllm-openai:v0.11.0"
    assert server["command"] == ["vllm", "serve"]
    assert server["args"] == [
        "/model-weights", "--served-model-name", "m", "--host", "0.0.0.0", "--port", "8000", "--max-model-len", "4096",
    ]
    assert server["ports"][0]["containerPort"] == 8000
    assert server["readinessProbe"]["httpGet"]["path"] == "/health"
    assert rendered["vllm"]["objects"]["Service"]["spec"]["ports"][0]["port"] == 8000
    assert rendered["vllm"]["state"]["status"]["inferenceURL"] == "http://m.ns.svc.cluster.local:8000"  # Serving: the URL answers


def test_vllm_with_a_model_file_and_an_image_of_ones_own(rendered):
    server = server_container(rendered["vllm file"])
    assert server["image"] == "registry.example/vllm:2"
    assert server["args"][0] == "/model-weights/q4/model.gguf"


def test_llamacpp_loads_the_gguf_the_pull_found(rendered):
    result = rendered["llamacpp from the pull"]
    server = server_container(result)
    assert server["image"] == "ghcr.io/ggml-org/llama.cpp:server-b7131"
    assert "command" not in server
    assert server["args"] == ["--model", "/model-weights/tiny.Q4_K_M.gguf", "--alias", "m", "--host", "0.0.0.0", "--port", "8080",
                              "--metrics"]
    assert server["ports"][0]["containerPort"] == 8080
    assert result["objects"]["Service"]["spec"]["ports"][0]["port"] == 8080
    # Recorded on the volume, so a later reconcile or a new model reusing it finds the same file.
    annotations = result["objects"]["PersistentVolumeClaim"]["metadata"]["annotations"]
    assert annotations[FILE_ANNOTATION] == "tiny.Q4_K_M.gguf"
    assert annotations[BYTES_ANNOTATION] == str(3 * GIB)
    assert result["state"]["status"]["server"]["modelFile"] == "tiny.Q4_K_M.gguf"


def test_llamacpp_reads_the_pull_pods_record(rendered):
    result = rendered["llamacpp from the pod"]
    assert server_container(result)["args"][1] == "/model-weights/q4/m-00001-of-00002.gguf"
    assert server_container(result)["startupProbe"]["failureThreshold"] == 42  # 300 s + 2 x 60 s
    assert result["objects"]["PersistentVolumeClaim"]["metadata"]["annotations"][BYTES_ANNOTATION] == str(2 * GIB)


def test_llamacpp_reads_the_volumes_record_and_the_users_port(rendered):
    result = rendered["llamacpp from the volume"]
    server = server_container(result)
    assert server["args"] == [
        "--model", "/model-weights/kept.gguf", "--alias", "m", "--host", "0.0.0.0", "--port", "9000", "--metrics",
        "--ctx-size", "4096",
    ]
    assert server["ports"][0]["containerPort"] == 9000
    assert result["objects"]["PersistentVolumeClaim"]["metadata"]["annotations"][FILE_ANNOTATION] == "kept.gguf"


def test_llamacpp_takes_a_url_sources_file_name(rendered):
    assert server_container(rendered["llamacpp from the url"])["args"][1] == "/model-weights/Tiny+Chat.Q4.gguf"


def test_model_file_overrides_what_the_pull_found(rendered):
    assert server_container(rendered["llamacpp modelFile wins"])["args"][1] == "/model-weights/mine.gguf"


@pytest.mark.parametrize(
    "name",
    ["llamacpp without a file", "llamacpp escaping annotation", "llamacpp shell annotation", "llamacpp escaping record", "llamacpp shell record"],
)
def test_llamacpp_without_a_usable_file_deploys_nothing_and_says_what_to_set(rendered, name):
    result = rendered[name]
    assert "Deployment" not in result["objects"]
    ready = next(c for c in result["state"]["conditions"] if c["type"] == "Ready")
    assert result["state"]["status"]["phase"] == "Failed"
    assert ready["status"] == "False" and ready["reason"] == "ModelFileUnknown"
    assert "set spec.serve.modelFile" in result["state"]["status"]["message"]
    assert result["objects"]["PersistentVolumeClaim"]["metadata"]["annotations"][FILE_ANNOTATION] == ""


def test_ollama_creates_the_model_in_an_init_container_then_serves(rendered):
    pod = rendered["ollama"]["objects"]["Deployment"]["spec"]["template"]["spec"]
    server, init = pod["containers"][0], pod["initContainers"][0]
    assert server["image"] == init["image"] == "ollama/ollama:0.13.5"
    assert server["args"] == ["serve"]
    assert {e["name"]: e["value"] for e in server["env"]} == {"OLLAMA_HOST": "0.0.0.0:11434", "OLLAMA_MODELS": "/ollama-models",
                                                             "HOME": "/tmp"}
    assert server["ports"][0]["containerPort"] == 11434
    assert {probe["httpGet"]["path"] for probe in probes(server).values()} == {"/api/version"}
    init_env = {e["name"]: e["value"] for e in init["env"]}
    assert init_env["LLMMODEL_MODEL_PATH"] == "/model-weights/chat.gguf"
    assert init_env["LLMMODEL_SERVED_NAME"] == "m"
    assert init["command"][:2] == ["/bin/sh", "-c"]
    assert 'ollama create "$LLMMODEL_SERVED_NAME"' in init["command"][2]
    mounts = {m["name"]: m for m in init["volumeMounts"]}
    assert mounts["weights"]["readOnly"] is True and "readOnly" not in mounts["ollama-models"]
    assert {"name": "ollama-models", "emptyDir": {}} in pod["volumes"]


def test_ollama_overrides(rendered):
    server = server_container(rendered["ollama health override"])
    assert server["readinessProbe"]["httpGet"]["path"] == "/"
    assert {e["name"]: e["value"] for e in server["env"]}["OLLAMA_HOST"] == "0.0.0.0:8000"


@pytest.mark.parametrize(
    "name, seconds, reason",
    [
        ("custom", 1800, "not recorded"),
        ("llamacpp from the pull", 480, "3.0 GiB of weights"),
        ("llamacpp modelFile wins", 310, "0.1 GiB of weights"),
        ("llamacpp from the volume", 3600, "100.0 GiB of weights"),
        ("ollama", 5400, "spec.serve.startupTimeout"),
    ],
)
def test_startup_budget(rendered, name, seconds, reason):
    server = server_container(rendered[name])
    startup = server["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] == seconds
    # Liveness and readiness keep short periods: the startup probe holds them off until it passes.
    assert server["livenessProbe"]["failureThreshold"] * server["livenessProbe"]["periodSeconds"] == 30
    status = rendered[name]["state"]["status"]["server"]
    assert status["startupBudgetSeconds"] == seconds
    assert reason in status["startupBudgetReason"]


def test_several_replicas_roll_one_at_a_time_on_the_volumes_node_without_a_budget(rendered):
    result = rendered["custom with replicas"]
    deployment = result["objects"]["Deployment"]
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    affinity = deployment["spec"]["template"]["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert affinity == [{
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": deployment["spec"]["selector"]["matchLabels"]},
    }]
    # All on the node of the ReadWriteOnce volume: a budget of one at a time would block a drain for good.
    assert "PodDisruptionBudget" not in result["objects"] and "HorizontalPodAutoscaler" not in result["objects"]
    assert CHILDREN_ANNOTATION not in deployment["metadata"]["annotations"]
    status = result["state"]["status"]["server"]
    assert status["strategy"] == "RollingUpdate" and "maxSurge 0" in status["strategyReason"]
    assert status["replicas"] == 3
    assert rendered["custom"]["state"]["status"]["server"]["strategy"] == "Recreate"


def test_read_write_many_needs_no_affinity(rendered):
    result = rendered["rwx"]
    assert "affinity" not in result["objects"]["Deployment"]["spec"]["template"]["spec"]
    assert result["objects"]["PersistentVolumeClaim"]["spec"]["accessModes"] == ["ReadWriteMany"]
    deployment = result["objects"]["Deployment"]
    pdb = result["objects"]["PodDisruptionBudget"]
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": deployment["spec"]["selector"]["matchLabels"]}}
    assert deployment["metadata"]["annotations"][CHILDREN_ANNOTATION] == "PodDisruptionBudget"


def test_autoscaling_creates_an_hpa_and_starts_at_its_minimum(rendered):
    result = rendered["autoscaling new"]
    hpa = result["objects"]["HorizontalPodAutoscaler"]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "m"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 5)
    assert hpa["spec"]["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
    ]
    deployment = result["objects"]["Deployment"]
    assert deployment["spec"]["replicas"] == 2
    assert deployment["metadata"]["annotations"][CHILDREN_ANNOTATION] == "HorizontalPodAutoscaler"
    status = result["state"]["status"]["server"]
    assert status["replicas"] is None and status["autoscaling"] == "HPA m, 2-5 replicas"


def test_autoscaling_leaves_the_live_count_to_the_hpa(rendered):
    """The count the HPA set is not rendered back: the Deployment's count is the one it is created
    with, and the apply is told the HPA's range (its keeping of the live count, read when it applies:
    tests/unit/test_llmmodel_replicas_cluster.py)."""
    result = rendered["autoscaling live"]
    assert result["objects"]["Deployment"]["spec"]["replicas"] == 1
    assert result["server"]["scaled"] == [{"kind": "Deployment", "name": "m", "minReplicas": 1, "maxReplicas": 5}]
    assert rendered["autoscaling new"]["server"]["scaled"] == [{"kind": "Deployment", "name": "m", "minReplicas": 2, "maxReplicas": 5}]
    assert rendered["custom with replicas"]["server"]["scaled"] == []
    assert result["objects"]["HorizontalPodAutoscaler"]["spec"]["metrics"] == [
        {"type": "Pods", "pods": {"metric": {"name": "vllm:num_requests_waiting"}, "target": {"type": "AverageValue", "averageValue": "5"}}}
    ]
    assert result["objects"]["HorizontalPodAutoscaler"]["spec"]["minReplicas"] == 1


def test_scale_to_zero_has_no_hpa_and_a_new_deployment_starts_with_one_replica(rendered):
    result = rendered["to zero new"]
    assert "HorizontalPodAutoscaler" not in result["objects"]
    deployment = result["objects"]["Deployment"]
    assert deployment["spec"]["replicas"] == 1
    assert CHILDREN_ANNOTATION not in deployment["metadata"]["annotations"]
    server = result["state"]["status"]["server"]
    assert server["idleSeconds"] == 300 and server["replicas"] is None
    assert server["autoscaling"].startswith("router: scaled to zero after 300 s")


def test_the_role_leaves_the_count_to_the_router(rendered):
    """Zero or one, the count the router set is not rendered back: the apply is told the router's range."""
    for name in ("to zero idle", "to zero woken"):
        assert rendered[name]["objects"]["Deployment"]["spec"]["replicas"] == 1  # a new Deployment's
        assert rendered[name]["server"]["scaled"] == [{"kind": "Deployment", "name": "m", "minReplicas": 0, "maxReplicas": 1}]


def test_a_model_at_zero_is_idle_not_serving_nor_degraded(rendered):
    status = rendered["to zero idle"]["state"]["status"]
    assert status["phase"] == "Idle"
    ready = next(c for c in rendered["to zero idle"]["state"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ScaledToZero")
    assert "120 s" in ready["message"] and "llm-operator-router" in ready["message"]
    assert status["inferenceURL"] is None and status["server"]["idleSeconds"] == 120
    # woken, not ready yet: the model loads (Deploying), it is not idle any more
    assert rendered["to zero woken"]["state"]["status"]["phase"] == "Deploying"


def test_in_flight_scaling_is_the_routers_with_its_defaults(rendered):
    result = rendered["in flight"]
    assert "HorizontalPodAutoscaler" not in result["objects"]
    assert result["server"]["scaled"] == [{"kind": "Deployment", "name": "m", "minReplicas": 0, "maxReplicas": 4}]
    server = result["state"]["status"]["server"]
    assert server["inFlightScaling"] == {"targetPerReplica": 8, "minReplicas": 0, "maxReplicas": 4,
                                         "scaleUpStabilizationSeconds": 0, "scaleDownStabilizationSeconds": 300}
    assert server["idleSeconds"] == 300
    assert server["autoscaling"] == ("router: 0-4 replicas, 8 requests in flight per replica, "
                                     "scaled to zero after 300 s without a request")
    assert rendered["autoscaling new"]["state"]["status"]["server"]["inFlightScaling"] is None


def test_autoscaling_to_one_replica_has_no_disruption_budget(rendered):
    result = rendered["autoscaling one"]
    assert "PodDisruptionBudget" not in result["objects"]
    assert result["objects"]["HorizontalPodAutoscaler"]["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 60
    assert result["objects"]["Deployment"]["spec"]["strategy"] == {"type": "Recreate"}


def test_the_objects_applied_are_the_roles_decision_in_its_order(rendered):
    # templates/children.yaml.j2, which apply.yml runs: the volume first, then what the state needs.
    assert rendered["custom"]["order"] == ["PersistentVolumeClaim", "Service", "Deployment", "InferencePool"]
    assert rendered["rwx"]["order"] == [
        "PersistentVolumeClaim", "Service", "Deployment", "PodDisruptionBudget", "PodMonitor", "InferencePool"]
    assert rendered["autoscaling new"]["order"] == [
        "PersistentVolumeClaim", "Service", "Deployment", "HorizontalPodAutoscaler", "PodMonitor", "InferencePool"]
    # A pull starts (no Job, weights missing): its identity for progress reports before the Job.
    assert rendered["gpu pool"]["order"] == ["PersistentVolumeClaim", "ServiceAccount", "Role", "RoleBinding", "Job"]
    # A pull in flight: nothing more to apply than the volume.
    assert rendered["weights not ready"]["order"] == ["PersistentVolumeClaim"]
    # Scaling objects no longer wanted are not applied (apply.yml removes them).
    assert rendered["autoscaling removed"]["order"] == [
        "PersistentVolumeClaim", "Service", "Deployment", "PodMonitor", "InferencePool"]


def test_nothing_about_the_server_while_the_weights_are_missing(rendered):
    result = rendered["weights not ready"]
    assert set(result["objects"]) == {"PersistentVolumeClaim"}
    annotations = result["objects"]["PersistentVolumeClaim"]["metadata"]["annotations"]
    assert annotations[FILE_ANNOTATION] == "" and annotations[BYTES_ANNOTATION] == ""
    # Nothing deployed: no server described (a merge patch's null removes one that is not the role's).
    assert result["state"]["status"]["server"] is None


POD_RESTRICTED = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


@pytest.mark.parametrize("name, user", [("custom", None), ("vllm", 1000), ("llamacpp from the pull", 10001), ("ollama", 1000)])
def test_server_pods_are_hardened_with_the_presets_user(rendered, name, user):
    pod = rendered[name]["objects"]["Deployment"]["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    security = pod["securityContext"]
    assert security["runAsNonRoot"] is True and security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert security.get("runAsUser") == user
    for container in pod["containers"] + pod.get("initContainers", []):
        assert container["securityContext"] == POD_RESTRICTED


def test_an_image_that_needs_root_says_so_in_its_spec(rendered):
    pod = rendered["root image"]["objects"]["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": False, "runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["containers"][0]["securityContext"] == POD_RESTRICTED  # root, but still no capability


def test_the_rollout_deadline_leaves_room_for_the_startup_budget(rendered):
    for name in ("custom", "ollama", "llamacpp from the volume"):
        deployment = rendered[name]["objects"]["Deployment"]
        budget = rendered[name]["state"]["status"]["server"]["startupBudgetSeconds"]
        assert deployment["spec"]["progressDeadlineSeconds"] == budget + 600


def test_the_pull_runs_where_the_server_may_run(rendered):
    pod = rendered["gpu pool"]["objects"]["Job"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "gpu"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert "affinity" not in pod
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["containers"][0]["securityContext"] == {**POD_RESTRICTED, "readOnlyRootFilesystem": True}


def test_a_gpu_model_s_first_pull_asks_for_the_server_s_gpus(rendered):
    # The pull is the volume's first consumer: it lands where the server's GPUs are, and a
    # WaitForFirstConsumer volume is provisioned there.
    puller = rendered["gpu first pull"]["objects"]["Job"]["spec"]["template"]["spec"]["containers"][0]
    assert puller["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert puller["resources"]["limits"]["cpu"] and puller["resources"]["limits"]["memory"]
    assert puller["resources"]["requests"]["cpu"] and puller["resources"]["requests"]["memory"]
    # A volume already placed (bound), or a pull beside the server that holds the GPUs: none.
    for name in ("gpu pool", "gpu repull beside the server"):
        limits = rendered[name]["objects"]["Job"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
        assert "nvidia.com/gpu" not in limits, name
        assert set(limits) == {"cpu", "memory"}, name


def test_a_new_pull_beside_a_running_server_goes_to_its_node(rendered):
    result = rendered["repull beside the server"]
    job = result["objects"]["Job"]
    terms = job["spec"]["template"]["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == [{"topologyKey": "kubernetes.io/hostname",
                      "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "server", "inference.ai.example.com/model-uid": "u-1"}}}]
    assert job["metadata"]["annotations"]["inference.ai.example.com/retry-pull"] == ""


def test_a_url_in_a_secret_reaches_the_puller_by_reference_only(rendered):
    result = rendered["url in a secret"]
    job = result["objects"]["Job"]
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e for e in env if e["name"] == "MODEL_URL"] == [
        {"name": "MODEL_URL", "valueFrom": {"secretKeyRef": {"name": "weights-link", "key": "signed"}}}]
    assert {"name": "MODEL_SHA256", "value": "b" * 64} in env
    identity = "secret://weights-link/signed#sha256=" + "b" * 64
    assert job["metadata"]["annotations"]["inference.ai.example.com/weights-source"] == identity
    status = result["state"]["status"]
    assert status["model"] == "secret://weights-link/signed" and status["weights"]["source"] == identity
    # What llmmodel_apply records on the Job (last-applied-configuration) is the Job as rendered.
    assert "secretKeyRef" in with_record(job)["metadata"]["annotations"][LAST_APPLIED]


def test_a_signed_url_in_the_spec_shows_nowhere_but_the_pull_jobs_env(rendered):
    """What a URL in spec.source.url costs: its credential is a literal value of the Job's environment
    (and so of its last-applied-configuration), which is why urlSecret exists; nothing else has it."""
    result = rendered["signed url"]
    job = result["objects"]["Job"]
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "MODEL_URL", "value": SIGNED} in env
    outside_env = dict(job, spec=dict(job["spec"], template={}))
    assert "SIGNATURE0123" not in json.dumps([outside_env, result["state"], result["objects"]["PersistentVolumeClaim"]])
    assert result["state"]["status"]["model"] == "https://bucket.s3.amazonaws.com/m.gguf?<redacted>"


def pull_env(result):
    return result["objects"]["Job"]["spec"]["template"]["spec"]["containers"][0]["env"]


def secret_refs(env):
    return {e["name"]: e["valueFrom"]["secretKeyRef"] for e in env if "secretKeyRef" in e.get("valueFrom", {})}


def test_an_s3_key_pair_reaches_the_puller_by_reference_only(rendered):
    """The AWS SDKs' variables, each a secretKeyRef to the credentials Secret: the key pair required
    (a missing key stops the pod, which the diagnosis tells), the rest optional; no Hub token."""
    env = pull_env(rendered["s3 folder with a key pair"])
    refs = secret_refs(env)
    assert refs == {
        "AWS_ACCESS_KEY_ID": {"name": "weights-s3", "key": "AWS_ACCESS_KEY_ID"},
        "AWS_SECRET_ACCESS_KEY": {"name": "weights-s3", "key": "AWS_SECRET_ACCESS_KEY"},
        **{key: {"name": "weights-s3", "key": key, "optional": True}
           for key in ("AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")},
    }
    assert all("value" not in e for e in env if e["name"] in refs)
    job = rendered["s3 folder with a key pair"]["objects"]["Job"]
    assert "AWS_" not in json.dumps([job["metadata"], rendered["s3 folder with a key pair"]["state"]])
    assert [v["name"] for v in job["spec"]["template"]["spec"]["volumes"]] == ["weights", "tmp"]  # no key file


def test_a_gs_secret_gives_hmac_keys_or_a_key_file_mounted_as_one_read_only_file(rendered):
    """Either form may be in the Secret, so no key is required of it (the puller names what is missing);
    the key file's JSON is one Secret key mounted as a file, its path the variable's value, never the JSON."""
    result = rendered["gs object with a secret"]
    env = pull_env(result)
    keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
            "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "STORAGE_EMULATOR_HOST")
    assert secret_refs(env) == {key: {"name": "weights-gcs", "key": key, "optional": True} for key in keys}
    path = "/var/run/secrets/inference.ai.example.com/gcs/key.json"
    assert {"name": "GOOGLE_APPLICATION_CREDENTIALS", "value": path} in env
    pod = result["objects"]["Job"]["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if "secret" in v]
    assert volume["secret"] == {"secretName": "weights-gcs", "optional": True, "defaultMode": 0o440,
                                "items": [{"key": "GOOGLE_APPLICATION_CREDENTIALS", "path": "key.json"}]}
    (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == volume["name"]]
    assert mount == {"name": volume["name"], "mountPath": path.rsplit("/", 1)[0], "readOnly": True}


def test_a_gs_source_without_a_secret_takes_the_pod_s_workload_identity(rendered):
    """No Secret: no credential variable, no key file: the puller asks the GKE metadata server."""
    result = rendered["gs folder without a secret"]
    env = pull_env(result)
    assert secret_refs(env) == {} and not [e for e in env if e["name"] == "GOOGLE_APPLICATION_CREDENTIALS"]
    assert [v["name"] for v in result["objects"]["Job"]["spec"]["template"]["spec"]["volumes"]] == ["weights", "tmp"]


def test_the_hub_token_stays_the_hub_s_only_key(rendered):
    assert secret_refs(pull_env(rendered["hub with a token"])) == {"HF_TOKEN": {"name": "hub-token", "key": "HF_TOKEN"}}


def test_an_s3_source_without_a_secret_takes_the_pod_s_identity(rendered):
    """No Secret: no credential variable at all, so the puller takes the AWS chain (IRSA, pod identity, IMDS)."""
    env = pull_env(rendered["s3 without a secret"])
    assert secret_refs(env) == {} and {"name": "MODEL_URL", "value": "s3://acme-models/m.gguf"} in env
