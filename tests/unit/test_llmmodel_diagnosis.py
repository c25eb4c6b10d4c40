"""The diagnosis of a model's pods and pull Job, over objects shaped as the API server returns them.

The pod and Job bodies below follow what `kubectl get -o json` shows on a real cluster (kubelet,
scheduler and Job controller fields and wording), trimmed to the fields that matter.
"""

from __future__ import annotations

import copy

import pytest
import unit_helpers  # noqa: F401 - makes the role's module_utils importable as ansible.module_utils.*

from ansible.module_utils.llmmodel_diagnosis import (
    creating_since,
    diagnose_pod,
    diagnose_pull,
    diagnose_server,
    event_subjects,
    startup_budget_seconds,
)
from ansible.module_utils.llmmodel_events import event_time, events_of, parse_time
from ansible.utils.unsafe_proxy import AnsibleUnsafe
from unit_helpers import load_filter_plugin

HASH_KEY = "inference.ai.example.com/config-hash"
NOW = "2026-03-01T12:00:00Z"


def pod(name, created, spec, status, **metadata):
    """A Pod of the namespace models as the API server returns it; ``metadata`` adds labels, owners..."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "models", "creationTimestamp": created, **metadata},
        "spec": spec,
        "status": status,
    }


def server_pod(name="qwen-7d9c8b5f4-x2x7k", created="2026-03-01T11:50:00Z", config_hash="abc", containers=None, **status):
    """A server pod of the model's Deployment with a startup probe of 10 s x 180."""
    return pod(
        name,
        created,
        labels={"app.kubernetes.io/component": "server", "inference.ai.example.com/model": "qwen"},
        annotations={HASH_KEY: config_hash},
        ownerReferences=[{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "qwen-7d9c8b5f4", "controller": True}],
        spec={
            "containers": containers
            or [
                {
                    "name": "server",
                    "image": "vllm/vllm-openai:v0.6.3",
                    "resources": {"limits": {"memory": "16Gi", "nvidia.com/gpu": "1"}},
                    "startupProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10, "failureThreshold": 180},
                }
            ],
            "restartPolicy": "Always",
        },
        status=status,
    )


def running_conditions(ready="False"):
    return [
        {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-03-01T11:50:03Z"},
        {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-03-01T11:50:01Z"},
        {"type": "Ready", "status": ready, "lastProbeTime": None, "lastTransitionTime": "2026-03-01T11:50:01Z",
         "reason": "ContainersNotReady", "message": "containers with unready status: [server]"},
        {"type": "ContainersReady", "status": ready, "lastProbeTime": None, "lastTransitionTime": "2026-03-01T11:50:01Z",
         "reason": "ContainersNotReady", "message": "containers with unready status: [server]"},
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-03-01T11:50:00Z"},
    ]


def crash_looping(reason="Error", exit_code=1, message=None, started="2026-03-01T11:55:10Z", finished="2026-03-01T11:55:14Z"):
    terminated = {
        "containerID": "containerd://5c1c2b0f0c",
        "exitCode": exit_code,
        "finishedAt": finished,
        "reason": reason,
        "startedAt": started,
    }
    if message:
        terminated["message"] = message
    return server_pod(
        phase="Running",
        conditions=running_conditions(),
        hostIP="10.0.0.12",
        podIP="10.244.1.7",
        startTime="2026-03-01T11:50:00Z",
        containerStatuses=[
            {
                "name": "server",
                "image": "docker.io/vllm/vllm-openai:v0.6.3",
                "imageID": "docker.io/vllm/vllm-openai@sha256:1f2e",
                "containerID": "containerd://5c1c2b0f0c",
                "lastState": {"terminated": terminated},
                "ready": False,
                "restartCount": 5,
                "started": False,
                "state": {"waiting": {"message": "back-off 2m40s restarting failed container=server pod=qwen-7d9c8b5f4-x2x7k_models(0b1c)", "reason": "CrashLoopBackOff"}},
            }
        ],
    )


def image_pull(reason="ImagePullBackOff"):
    message = {
        "ImagePullBackOff": 'Back-off pulling image "registry.invalid/vllm:nope"',
        "ErrImagePull": 'failed to pull and unpack image "registry.invalid/vllm:nope": failed to resolve reference: not found',
    }[reason]
    return server_pod(
        phase="Pending",
        conditions=running_conditions(),
        startTime="2026-03-01T11:50:00Z",
        containerStatuses=[
            {
                "name": "server",
                "image": "registry.invalid/vllm:nope",
                "imageID": "",
                "lastState": {},
                "ready": False,
                "restartCount": 0,
                "started": False,
                "state": {"waiting": {"message": message, "reason": reason}},
            }
        ],
    )


UNSCHEDULABLE_MESSAGE = (
    "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful "
    "for scheduling."
)


def unschedulable():
    return server_pod(
        phase="Pending",
        conditions=[
            {"type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": "2026-03-01T11:50:00Z",
             "reason": "Unschedulable", "message": UNSCHEDULABLE_MESSAGE}
        ],
    )


def starting(started_at="2026-03-01T11:59:00Z"):
    return server_pod(
        phase="Running",
        conditions=running_conditions(),
        containerStatuses=[
            {"name": "server", "image": "vllm/vllm-openai:v0.6.3", "lastState": {}, "ready": False, "restartCount": 0,
             "started": False, "state": {"running": {"startedAt": started_at}}}
        ],
    )


def test_a_pod_that_is_starting_is_no_problem():
    assert diagnose_server([starting()], now=NOW) is None
    assert diagnose_server([], now=NOW) is None


def test_crash_loop_carries_the_last_termination_message():
    found = diagnose_server([crash_looping(message="ValueError: no model found in /model-weights")], now=NOW)
    assert found["reason"] == "CrashLoopBackOff"
    assert "ValueError: no model found in /model-weights" in found["message"]
    assert "exit code 1" in found["message"] and "restarted 5 times" in found["message"]
    assert "qwen-7d9c8b5f4-x2x7k" in found["message"]


def test_crash_loop_without_a_termination_message_names_the_exit():
    found = diagnose_server([crash_looping()], now=NOW)
    assert found["reason"] == "CrashLoopBackOff"
    assert "exit code 1: Error" in found["message"]


def test_crash_loop_between_two_back_offs_is_still_a_crash_loop():
    pod = crash_looping(message="segfault")
    status = pod["status"]["containerStatuses"][0]
    status["state"] = {"running": {"startedAt": "2026-03-01T11:59:55Z"}}
    assert diagnose_server([pod], now=NOW)["reason"] == "CrashLoopBackOff"


def test_oom_killed_wins_over_the_crash_loop_it_causes():
    found = diagnose_server([crash_looping(reason="OOMKilled", exit_code=137)], now=NOW)
    assert found["reason"] == "OOMKilled"
    assert "memory limit 16Gi" in found["message"] and "restarted 5 times" in found["message"]


def test_image_pull_back_off_and_err_image_pull():
    for reason in ("ImagePullBackOff", "ErrImagePull"):
        found = diagnose_server([image_pull(reason)], now=NOW)
        assert found["reason"] == "ImagePullFailed"
        assert reason in found["message"] and "registry.invalid/vllm:nope" in found["message"]


def test_unschedulable_quotes_the_scheduler():
    found = diagnose_server([unschedulable()], now=NOW)
    assert found["reason"] == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in found["message"]


def test_startup_budget_is_the_probe_s():
    assert startup_budget_seconds(server_pod()["spec"]["containers"][0]) == 1800
    assert startup_budget_seconds({"startupProbe": {"initialDelaySeconds": 5, "failureThreshold": 2}}) == 25
    assert startup_budget_seconds({"name": "x"}) is None


def test_startup_budget_ran_out_after_a_probe_kill():
    # The kubelet killed the container after 180 failed startup probes (30 min), then backs off.
    pod = crash_looping(exit_code=137, started="2026-03-01T11:20:00Z", finished="2026-03-01T11:50:05Z")
    found = diagnose_server([pod], now=NOW)
    assert found["reason"] == "StartupTimeout"
    assert "1800s" in found["message"]


def test_startup_budget_ran_out_while_still_running():
    assert diagnose_server([starting(started_at="2026-03-01T11:25:00Z")], now=NOW)["reason"] == "StartupTimeout"
    assert diagnose_server([starting(started_at="2026-03-01T11:45:00Z")], now=NOW) is None


def test_a_ready_pod_is_fine_even_after_restarts():
    pod = crash_looping()
    status = pod["status"]["containerStatuses"][0]
    status.update(ready=True, started=True, state={"running": {"startedAt": "2026-03-01T11:56:00Z"}})
    assert diagnose_server([pod], now=NOW) is None


def test_only_pods_of_the_current_configuration_count():
    old = crash_looping(message="old config")
    old["metadata"]["annotations"][HASH_KEY] = "old"
    assert diagnose_server([old, starting()], "abc", HASH_KEY, now=NOW) is None
    assert diagnose_server([old, starting()], None, None, now=NOW)["reason"] == "CrashLoopBackOff"


def test_a_terminating_pod_is_ignored():
    pod = crash_looping()
    pod["metadata"]["deletionTimestamp"] = "2026-03-01T11:59:00Z"
    assert diagnose_pod(pod) is None


def test_the_most_telling_problem_wins_across_pods():
    pods = [unschedulable(), crash_looping(message="boom")]
    pods[0]["metadata"]["creationTimestamp"] = "2026-03-01T11:58:00Z"
    assert diagnose_server(pods, now=NOW)["reason"] == "CrashLoopBackOff"


# --- the pull Job -------------------------------------------------------------------------------


def pull_job(conditions=None, deadline=None):
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "qwen-pull", "namespace": "models"},
        "spec": {"backoffLimit": 2, "podReplacementPolicy": "Failed"},
        "status": {"active": 1, "startTime": "2026-03-01T11:40:00Z", "conditions": conditions or []},
    }
    if deadline:
        job["spec"]["activeDeadlineSeconds"] = deadline
    return job


def pull_pod(name, created, phase, terminated=None, reason=None, message=None, disruption=False):
    job_pod = pod(
        name,
        created,
        labels={"batch.kubernetes.io/job-name": "qwen-pull", "app.kubernetes.io/component": "puller"},
        ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job", "name": "qwen-pull", "controller": True}],
        spec={
            "restartPolicy": "Never",
            "containers": [{"name": "puller", "image": "ghcr.io/llm-operator/llm-model-puller:0.1.0",
                            "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "256Mi"}}}],
        },
        status={"phase": phase, "conditions": [], "containerStatuses": []},
    )
    if terminated is not None:
        job_pod["status"]["containerStatuses"] = [
            {"name": "puller", "image": "ghcr.io/llm-operator/llm-model-puller:0.1.0", "ready": False, "restartCount": 0,
             "started": False, "lastState": {}, "state": {"terminated": terminated}}
        ]
    if reason:
        job_pod["status"]["reason"] = reason
        job_pod["status"]["message"] = message
    if disruption:
        job_pod["status"]["conditions"].append(
            {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet", "message": message,
             "lastTransitionTime": "2026-03-01T11:45:00Z"}
        )
    return job_pod


OOM = {"exitCode": 137, "reason": "OOMKilled", "startedAt": "2026-03-01T11:41:00Z", "finishedAt": "2026-03-01T11:44:00Z",
       "containerID": "containerd://9a"}
NOT_FOUND = {"exitCode": 4, "reason": "Error", "message": "not found: HTTP 404 for https://host/m.gguf\n",
             "startedAt": "2026-03-01T11:41:00Z", "finishedAt": "2026-03-01T11:41:02Z"}
FAILED = [
    {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"},
    {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"},
]


def test_pull_oom_killed_and_failed():
    pods = [pull_pod("qwen-pull-%d" % i, "2026-03-01T11:4%d:00Z" % i, "Failed", terminated=OOM) for i in range(3)]
    found = diagnose_pull(pull_job(FAILED), pods, now=NOW)
    assert found["reason"] == "PullOOMKilled"
    assert "memory limit 1Gi" in found["message"] and "retries" not in found["message"]


def test_pull_oom_killed_while_the_job_retries():
    pods = [pull_pod("qwen-pull-a", "2026-03-01T11:40:00Z", "Failed", terminated=OOM),
            pull_pod("qwen-pull-b", "2026-03-01T11:45:00Z", "Running")]
    found = diagnose_pull(pull_job(), pods, now=NOW)
    assert found["reason"] == "PullOOMKilled" and found["message"].endswith("the Job retries")


def test_pull_evicted():
    message = ("The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 9Gi. "
               "Container puller was using 40Gi, request is 0, has larger consumption of ephemeral-storage. ")
    terminated = {"exitCode": 137, "reason": "ContainerStatusUnknown", "message": "The container could not be located when the pod was terminated"}
    pods = [pull_pod("qwen-pull-a", "2026-03-01T11:40:00Z", "Failed", terminated=terminated, reason="Evicted", message=message, disruption=True)]
    found = diagnose_pull(pull_job(), pods, now=NOW)
    assert found["reason"] == "PullEvicted"
    assert "low on resource: ephemeral-storage" in found["message"]


def test_pull_deadline_exceeded():
    conditions = [
        {"type": "FailureTarget", "status": "True", "reason": "DeadlineExceeded", "message": "Job was active longer than specified deadline"},
        {"type": "Failed", "status": "True", "reason": "DeadlineExceeded", "message": "Job was active longer than specified deadline"},
    ]
    found = diagnose_pull(pull_job(conditions, deadline=3600), [], now=NOW)
    assert found["reason"] == "PullDeadlineExceeded" and "3600s" in found["message"]


def test_a_plain_puller_failure_is_left_to_the_puller_s_message():
    pods = [pull_pod("qwen-pull-a", "2026-03-01T11:40:00Z", "Failed", terminated=NOT_FOUND)]
    assert diagnose_pull(pull_job(FAILED), pods, now=NOW) is None


def test_the_last_pull_pod_decides_a_failed_job():
    pods = [pull_pod("qwen-pull-a", "2026-03-01T11:40:00Z", "Failed", terminated=OOM),
            pull_pod("qwen-pull-b", "2026-03-01T11:45:00Z", "Failed", terminated=NOT_FOUND)]
    assert diagnose_pull(pull_job(FAILED), pods, now=NOW) is None


def test_pull_image_and_scheduling_problems():
    pod = image_pull("ErrImagePull")
    pod["metadata"]["name"] = "qwen-pull-a"
    assert diagnose_pull(pull_job(), [pod], now=NOW)["reason"] == "PullImagePullFailed"
    assert diagnose_pull(pull_job(), [unschedulable()], now=NOW)["reason"] == "PullUnschedulable"


def test_inputs_are_not_changed():
    pods = [crash_looping(message="x"), unschedulable()]
    before = copy.deepcopy(pods)
    diagnose_server(pods, "abc", HASH_KEY, now=NOW)
    assert pods == before


# --- pods that cannot be created: the Deployment's conditions ------------------------------------

POD_SECURITY_REFUSAL = (
    'pods "qwen-7d9c8b5f4-x2x7k" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
    '(container "server" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container '
    '"server" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "server" must '
    'set securityContext.runAsNonRoot=true), seccompProfile (pod or container "server" must set '
    'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
)
QUOTA_REFUSAL = (
    'pods "qwen-7d9c8b5f4-x2x7k" is forbidden: exceeded quota: compute, requested: limits.memory=16Gi, '
    'used: limits.memory=0, limited: limits.memory=8Gi'
)
LIMIT_RANGE_REFUSAL = 'pods "qwen-7d9c8b5f4-x2x7k" is forbidden: maximum memory usage per Container is 8Gi, but limit is 16Gi'
WEBHOOK_REFUSAL = 'admission webhook "validate.policy.example.com" denied the request: images must come from registry.example.com'


def deployment(*conditions, replicas=1):
    """The model's Deployment as the API server returns it while its rollout is stuck."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "qwen", "namespace": "models", "generation": 2,
                     "annotations": {HASH_KEY: "abc"}},
        "spec": {"replicas": replicas, "progressDeadlineSeconds": 600,
                 "selector": {"matchLabels": {"app.kubernetes.io/component": "server", "inference.ai.example.com/model": "qwen"}}},
        "status": {"observedGeneration": 2, "replicas": 0, "unavailableReplicas": replicas, "conditions": list(conditions)},
    }


def replica_failure(message):
    return {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": message,
            "lastUpdateTime": "2026-03-01T11:50:00Z", "lastTransitionTime": "2026-03-01T11:50:00Z"}


PROGRESSING = {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
               "message": 'ReplicaSet "qwen-7d9c8b5f4" is progressing.'}
DEADLINE = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
            "message": 'ReplicaSet "qwen-7d9c8b5f4" has timed out progressing.'}


def test_pods_forbidden_by_pod_security_are_told_with_the_namespace_s_level():
    found = diagnose_server([], "abc", HASH_KEY, now=NOW, deployment=deployment(PROGRESSING, replica_failure(POD_SECURITY_REFUSAL)))
    assert found["reason"] == "PodCreationFailed"
    message = found["message"]
    assert message.startswith("Deployment qwen cannot create its pods (FailedCreate: violates PodSecurity")
    assert "allowPrivilegeEscalation != false" in message
    assert 'namespace models enforces the Pod Security level restricted:latest' in message
    assert "spec.serve.securityContext" in message and len(message) <= 1000


@pytest.mark.parametrize("refusal, advice", [
    (QUOTA_REFUSAL, "raise the namespace's ResourceQuota, or lower spec.serve.resources"),
    ('pods "q-1" is forbidden: failed quota: compute: must specify limits.cpu for: server',
     "raise the namespace's ResourceQuota, or lower spec.serve.resources"),
    ('pods "q-1" is forbidden: status unknown for quota: compute, resource: limits.memory', "ResourceQuota"),
    (LIMIT_RANGE_REFUSAL, "keep spec.serve.resources within the namespace's LimitRange"),
    (WEBHOOK_REFUSAL, "an admission policy or webhook"),
])
def test_pods_refused_by_quota_limit_range_or_policy(refusal, advice):
    found = diagnose_server([], now=NOW, deployment=deployment(replica_failure(refusal)))
    assert found["reason"] == "PodCreationFailed"
    assert advice in found["message"]
    assert refusal.split(": ", 1)[-1][:40] in found["message"]


def test_a_pod_s_own_problem_comes_before_the_deployment_s():
    failing = deployment(replica_failure(QUOTA_REFUSAL), DEADLINE, replicas=2)
    assert diagnose_server([crash_looping(message="boom")], "abc", HASH_KEY, now=NOW, deployment=failing)["reason"] == "CrashLoopBackOff"
    # One replica runs fine, the second one is refused: the refusal is the news.
    assert diagnose_server([starting()], "abc", HASH_KEY, now=NOW, deployment=failing)["reason"] == "PodCreationFailed"


def test_pod_creation_failure_wins_when_no_pod_of_the_current_configuration_exists():
    old = crash_looping(message="old config")
    old["metadata"]["annotations"][HASH_KEY] = "old"
    failing = deployment(replica_failure(POD_SECURITY_REFUSAL))
    assert diagnose_server([old], "abc", HASH_KEY, now=NOW, deployment=failing)["reason"] == "PodCreationFailed"
    assert diagnose_server([old], "abc", HASH_KEY, now=NOW, deployment=deployment(PROGRESSING)) is None


def test_a_progress_deadline_is_told_when_the_pods_say_nothing():
    found = diagnose_server([starting()], "abc", HASH_KEY, now=NOW, deployment=deployment(DEADLINE))
    assert found["reason"] == "ProgressDeadlineExceeded"
    assert "within 600s" in found["message"] and "has timed out progressing" in found["message"]
    assert "kubectl describe pods -l app.kubernetes.io/component=server,inference.ai.example.com/model=qwen" in found["message"]
    assert diagnose_server([crash_looping()], "abc", HASH_KEY, now=NOW, deployment=deployment(DEADLINE))["reason"] == "CrashLoopBackOff"


def test_a_healthy_deployment_adds_nothing():
    assert diagnose_server([starting()], "abc", HASH_KEY, now=NOW, deployment=deployment(PROGRESSING)) is None
    resolved = dict(replica_failure(QUOTA_REFUSAL), status="False")
    assert diagnose_server([], now=NOW, deployment=deployment(resolved)) is None


# --- containers that cannot be created or started ------------------------------------------------

def waiting_pod(reason, message=None, name="qwen-7d9c8b5f4-x2x7k", created="2026-03-01T11:50:00Z", scheduled="2026-03-01T11:50:02Z",
                init=False, **extra):
    """A scheduled server pod whose containers all wait with ``reason``."""
    waiting = {"reason": reason, **({"message": message} if message else {})}
    status = {"name": "server", "image": "vllm/vllm-openai:v0.6.3", "imageID": "", "lastState": {}, "ready": False,
              "restartCount": 0, "started": False, "state": {"waiting": waiting}}
    conditions = [
        {"type": "PodReadyToStartContainers", "status": "False", "lastProbeTime": None, "lastTransitionTime": scheduled},
        {"type": "Initialized", "status": "False" if init else "True", "lastProbeTime": None, "lastTransitionTime": scheduled},
        {"type": "Ready", "status": "False", "lastProbeTime": None, "lastTransitionTime": scheduled, "reason": "ContainersNotReady"},
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": scheduled},
    ]
    result = server_pod(name=name, created=created, phase="Pending", conditions=conditions, hostIP="10.0.0.12",
                        startTime=scheduled, containerStatuses=[status], **extra)
    result["metadata"]["uid"] = "0b1c2d3e-" + name
    result["spec"]["volumes"] = [{"name": "weights", "persistentVolumeClaim": {"claimName": "qwen-weights"}}]
    if init:
        result["status"]["initContainerStatuses"] = [dict(status, name="wait-for-weights")]
    return result


RUNS_AS_ROOT = ('container has runAsNonRoot and image will run as root (pod: "qwen-7d9c8b5f4-x2x7k_models'
                '(0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0)", container: server)')
NON_NUMERIC_USER = ('container has runAsNonRoot and image has non-numeric user (llama), cannot verify user is non-root '
                    '(pod: "qwen-7d9c8b5f4-x2x7k_models(0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0)", container: server)')


@pytest.mark.parametrize("kubelet", [RUNS_AS_ROOT, NON_NUMERIC_USER])
def test_an_image_that_runs_as_root_under_run_as_non_root(kubelet):
    found = diagnose_server([waiting_pod("CreateContainerConfigError", kubelet)], now=NOW)
    assert found["reason"] == "ContainerConfigError"
    assert kubelet[:60] in found["message"]
    assert "spec.serve.securityContext.runAsUser" in found["message"] and "runAsNonRoot: false" in found["message"]


def test_other_container_config_errors_quote_the_kubelet():
    found = diagnose_server([waiting_pod("CreateContainerConfigError", 'configmap "qwen-chat-template" not found')], now=NOW)
    assert found["reason"] == "ContainerConfigError"
    assert 'configmap "qwen-chat-template" not found' in found["message"] and "create what it names" in found["message"]
    error = 'failed to generate container "5c1c" spec: failed to apply OCI options: no such file or directory'
    assert error in diagnose_server([waiting_pod("CreateContainerError", error)], now=NOW)["message"]


def test_containers_creating_past_the_grace_period():
    assert diagnose_server([waiting_pod("ContainerCreating")], now="2026-03-01T11:51:30Z") is None
    found = diagnose_server([waiting_pod("ContainerCreating")], now="2026-03-01T11:55:02Z")
    assert found["reason"] == "ContainerCreatingTooLong"
    assert found["message"] == ("pod qwen-7d9c8b5f4-x2x7k has been creating its containers for 300s: "
                                "kubectl describe pod qwen-7d9c8b5f4-x2x7k shows its events")
    assert diagnose_server([waiting_pod("ContainerCreating")], now="2026-03-01T11:55:02Z", grace_seconds=600) is None
    assert diagnose_server([waiting_pod("PodInitializing", init=True)], now=NOW)["reason"] == "ContainerCreatingTooLong"


def test_creating_counts_from_scheduling_and_only_while_every_container_waits():
    pod = waiting_pod("ContainerCreating", created="2026-03-01T11:40:00Z", scheduled="2026-03-01T11:59:00Z")
    assert creating_since(pod) == parse_time("2026-03-01T11:59:00Z")
    assert diagnose_server([pod], now=NOW) is None  # pending for 20 minutes, but scheduled one minute ago
    init_running = waiting_pod("PodInitializing", init=True)
    init_running["status"]["initContainerStatuses"][0]["state"] = {"running": {"startedAt": "2026-03-01T11:51:00Z"}}
    assert creating_since(init_running) is None  # an init container at work is not stuck
    assert creating_since(starting()) is None and creating_since(unschedulable()) is None


def event(reason, message, name="qwen-7d9c8b5f4-x2x7k", kind="Pod", last="2026-03-01T11:58:00Z", kind_of="Warning", uid=None,
          source="kubelet"):
    """A core/v1 Event as the API server returns it."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "%s.1829a%s" % (name, reason.lower()), "namespace": "models", "creationTimestamp": "2026-03-01T11:52:00Z"},
        "involvedObject": {"kind": kind, "namespace": "models", "name": name, "uid": uid or "0b1c2d3e-" + name,
                           "apiVersion": "batch/v1" if kind == "Job" else "v1"},
        "reason": reason, "message": message, "type": kind_of, "source": {"component": source},
        "firstTimestamp": "2026-03-01T11:52:00Z", "lastTimestamp": last, "count": 4, "eventTime": None,
        "reportingComponent": source, "reportingInstance": "",
    }


MULTI_ATTACH = ('Multi-Attach error for volume "pvc-5a1c0a8e-1f7d-4b4e-9d0a-9f3b8e1c2d4f" Volume is already used by pod(s) '
                'qwen-pull-8x2lk')
MOUNT_TIMEOUT = ("Unable to attach or mount volumes: unmounted volumes=[weights], unattached volumes=[], failed to process "
                 "volumes=[]: timed out waiting for the condition")


def test_a_volume_attached_elsewhere_is_told_from_the_events():
    events = [event("FailedAttachVolume", MULTI_ATTACH, last="2026-03-01T11:56:00Z", source="attachdetach-controller"),
              event("FailedMount", MOUNT_TIMEOUT, last="2026-03-01T11:58:00Z"),
              event("Scheduled", "Successfully assigned models/qwen-7d9c8b5f4-x2x7k to gpu-1", last="2026-03-01T11:50:02Z",
                    kind_of="Normal", source="default-scheduler")]
    found = diagnose_server([waiting_pod("ContainerCreating")], now=NOW, events=events)
    assert found["reason"] == "VolumeMountFailed"
    assert MULTI_ATTACH in found["message"] and "ReadWriteOnce volume is attached to another node" in found["message"]


def test_a_mount_failure_without_multi_attach_names_the_claim():
    found = diagnose_server([waiting_pod("ContainerCreating")], now=NOW, events=[event("FailedMount", MOUNT_TIMEOUT)])
    assert found["reason"] == "VolumeMountFailed"
    assert MOUNT_TIMEOUT in found["message"] and "kubectl describe pvc qwen-weights" in found["message"]


def test_the_newest_event_wins():
    events = [event("FailedMount", MOUNT_TIMEOUT, last="2026-03-01T11:55:00Z"),
              event("Pulling", 'Pulling image "vllm/vllm-openai:v0.6.3"', last="2026-03-01T11:57:00Z", kind_of="Normal")]
    found = diagnose_server([waiting_pod("ContainerCreating")], now=NOW, events=events)
    assert found["reason"] == "ContainerCreatingTooLong"
    assert found["message"].endswith('for 598s: Pulling: Pulling image "vllm/vllm-openai:v0.6.3"')
    sandbox = event("FailedCreatePodSandBox", "Failed to create pod sandbox: rpc error: code = Unknown desc = no IP addresses available")
    assert "FailedCreatePodSandBox: Failed to create pod sandbox" in diagnose_server([waiting_pod("ContainerCreating")], now=NOW,
                                                                                     events=[sandbox])["message"]


def test_events_of_other_objects_and_of_an_earlier_pod_of_the_same_name_do_not_count():
    events = [event("FailedMount", MOUNT_TIMEOUT, name="another-pod"),
              event("FailedMount", MOUNT_TIMEOUT, uid="an-earlier-uid"),
              event("FailedMount", MOUNT_TIMEOUT, kind="Job")]
    assert diagnose_server([waiting_pod("ContainerCreating")], now=NOW, events=events)["reason"] == "ContainerCreatingTooLong"


def test_event_times_and_order():
    assert parse_time("2026-03-01T11:58:00.123456Z").microsecond == 123456
    assert parse_time("yesterday") is None and parse_time(None) is None
    micro = dict(event("FailedMount", "m"), lastTimestamp=None, eventTime="2026-03-01T11:59:00.500000Z")
    series = dict(event("FailedMount", "m"), series={"count": 9, "lastObservedTime": "2026-03-01T11:59:30.000000Z"})
    assert event_time(micro) == parse_time("2026-03-01T11:59:00.500000Z")
    assert event_time(series) == parse_time("2026-03-01T11:59:30.000000Z")
    older = event("FailedMount", "older", last="2026-03-01T11:51:00Z")
    assert [e["message"] for e in events_of([older, micro, series], "Pod", "qwen-7d9c8b5f4-x2x7k")] == ["m", "m", "older"]
    regarding = {"regarding": {"kind": "Pod", "name": "p"}, "reason": "FailedMount", "deprecatedLastTimestamp": None}
    assert events_of([regarding], "Pod", "p") == [regarding]


# --- the pull: credentials, pods that cannot be created ------------------------------------------

def pull_job_with_credentials(secret="hf-token", conditions=None, active=1):
    job = pull_job(conditions)
    job["metadata"]["uid"] = "7f3e-job"
    job["status"]["active"] = active
    job["spec"]["template"] = {"spec": {"containers": [{
        "name": "puller", "image": "ghcr.io/llm-operator/llm-model-puller:0.1.0",
        "env": [{"name": "MODEL_DEST", "value": "/model-weights"}, {"name": "HF_REPO", "value": "Qwen/Qwen2.5-7B-Instruct"},
                {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": secret, "key": "HF_TOKEN"}}}],
    }]}}
    return job


def waiting_pull_pod(reason, message=None, created="2026-03-01T11:50:00Z"):
    result = pull_pod("qwen-pull-8x2lk", created, "Pending")
    result["metadata"]["uid"] = "0b1c2d3e-qwen-pull-8x2lk"
    waiting = {"reason": reason, **({"message": message} if message else {})}
    result["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": created}]
    result["status"]["containerStatuses"] = [{"name": "puller", "image": "ghcr.io/llm-operator/llm-model-puller:0.1.0",
                                              "ready": False, "restartCount": 0, "started": False, "lastState": {},
                                              "state": {"waiting": waiting}}]
    return result


def test_a_missing_credentials_secret_is_told_from_the_pull_pod():
    found = diagnose_pull(pull_job_with_credentials(), [waiting_pull_pod("CreateContainerConfigError", 'secret "hf-token" not found')], now=NOW)
    assert found == {
        "reason": "CredentialsNotFound",
        "message": "Secret hf-token not found in namespace models; create it: "
        "kubectl -n models create secret generic hf-token --from-literal=HF_TOKEN=<your token>",
    }


def test_a_credentials_secret_without_the_key_is_told_from_the_pull_pod():
    pods = [waiting_pull_pod("CreateContainerConfigError", "couldn't find key HF_TOKEN in Secret models/hf-token")]
    found = diagnose_pull(pull_job_with_credentials(), pods, now=NOW)
    assert found["reason"] == "CredentialsNotFound"
    assert found["message"].startswith("Secret hf-token has no key HF_TOKEN; put the token under that key: kubectl -n models create")


def test_another_missing_secret_is_a_container_config_error_of_the_pull():
    pods = [waiting_pull_pod("CreateContainerConfigError", 'secret "other" not found')]
    found = diagnose_pull(pull_job_with_credentials(), pods, now=NOW)
    assert found["reason"] == "PullContainerConfigError" and not found["message"].endswith("the Job retries")
    assert diagnose_pull(pull_job(), [waiting_pull_pod("CreateContainerConfigError", 'secret "hf-token" not found')],
                         now=NOW)["reason"] == "PullContainerConfigError"  # no credentials in this pull


JOB_REFUSAL = ('Error creating: pods "qwen-pull-8x2lk" is forbidden: exceeded quota: compute, requested: requests.cpu=250m, '
               'used: requests.cpu=4, limited: requests.cpu=4')


def test_a_pull_job_whose_pod_cannot_be_created():
    events = [event("FailedCreate", JOB_REFUSAL, name="qwen-pull", kind="Job", uid="7f3e-job", source="job-controller")]
    found = diagnose_pull(pull_job_with_credentials(active=0), [], now=NOW, events=events)
    assert found["reason"] == "PullPodCreationFailed"
    assert found["message"].startswith("the pull Job qwen-pull cannot create its pod (FailedCreate: exceeded quota: compute")
    assert "it must also fit the pull pod's resources" in found["message"]
    created = event("SuccessfulCreate", "Created pod: qwen-pull-8x2lk", name="qwen-pull", kind="Job", uid="7f3e-job",
                    last="2026-03-01T11:59:00Z", kind_of="Normal")
    assert diagnose_pull(pull_job_with_credentials(active=0), [], now=NOW, events=events + [created]) is None
    assert diagnose_pull(pull_job_with_credentials(active=0), [], now=NOW) is None  # events not read


def test_a_pull_pod_stuck_on_a_volume_attached_elsewhere():
    events = [event("FailedAttachVolume", MULTI_ATTACH.replace("qwen-pull-8x2lk", "qwen-7d9c8b5f4-x2x7k"), name="qwen-pull-8x2lk")]
    found = diagnose_pull(pull_job_with_credentials(), [waiting_pull_pod("ContainerCreating")], now=NOW, events=events)
    assert found["reason"] == "PullVolumeMountFailed" and "Multi-Attach error" in found["message"]
    found = diagnose_pull(pull_job_with_credentials(), [waiting_pull_pod("ContainerCreating")], now=NOW)
    assert found["reason"] == "PullContainerCreatingTooLong" and "for 600s" in found["message"]


# --- which events are worth a read ---------------------------------------------------------------

def test_event_subjects_are_stuck_pods_and_a_job_without_pods():
    stuck, fresh = waiting_pod("ContainerCreating"), waiting_pod("ContainerCreating", name="qwen-7d9c8b5f4-new",
                                                                  scheduled="2026-03-01T11:59:00Z")
    assert event_subjects([stuck, fresh, starting(), crash_looping()], now=NOW) == [{
        "kind": "Pod", "name": "qwen-7d9c8b5f4-x2x7k", "uid": "0b1c2d3e-qwen-7d9c8b5f4-x2x7k",
        "fieldSelector": "involvedObject.kind=Pod,involvedObject.name=qwen-7d9c8b5f4-x2x7k",
    }]
    assert event_subjects([stuck], now=NOW, grace_seconds=900) == []
    old = copy.deepcopy(stuck)
    old["metadata"]["annotations"][HASH_KEY] = "old"
    assert event_subjects([old], config_hash="abc", hash_annotation=HASH_KEY, now=NOW) == []
    job = pull_job_with_credentials(active=0)
    assert event_subjects([], job, now=NOW) == [{"kind": "Job", "name": "qwen-pull", "uid": "7f3e-job",
                                                 "fieldSelector": "involvedObject.kind=Job,involvedObject.name=qwen-pull"}]
    assert event_subjects([], pull_job(FAILED), now=NOW) == []
    assert event_subjects([waiting_pull_pod("ContainerCreating", created="2026-03-01T11:59:30Z")], job, now=NOW) == []


# --- the filters, as the role calls them ---------------------------------------------------------

def test_the_filters_take_keyword_arguments_and_return_unsafe_values():
    filters = load_filter_plugin("llmmodel_diagnosis").FilterModule().filters()
    assert filters["llmmodel_server_problem"]([], "abc", HASH_KEY) == {}
    found = filters["llmmodel_server_problem"]([], "abc", HASH_KEY, deployment=deployment(replica_failure(POD_SECURITY_REFUSAL)))
    assert found["reason"] == "PodCreationFailed" and isinstance(found["message"], AnsibleUnsafe)
    pods = [waiting_pull_pod("CreateContainerConfigError", 'secret "hf-token" not found')]
    assert filters["llmmodel_pull_problem"](pull_job_with_credentials(), pods)["reason"] == "CredentialsNotFound"
    events = [event("FailedCreate", JOB_REFUSAL, name="qwen-pull", kind="Job", uid="7f3e-job")]
    assert filters["llmmodel_pull_problem"](pull_job_with_credentials(active=0), [], events=events)["reason"] == "PullPodCreationFailed"
    subjects = filters["llmmodel_event_subjects"]([], pull_job_with_credentials(active=0))
    assert [s["kind"] for s in subjects] == ["Job"]
