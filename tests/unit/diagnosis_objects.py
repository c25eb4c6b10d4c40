"""Pods, Jobs, Deployments and Events of a model as the API server returns them, for the diagnosis
tests (test_llmmodel_pod_diagnosis.py, test_llmmodel_diagnosis.py).

The bodies follow what `kubectl get -o json` shows on a real cluster (kubelet, scheduler and Job
controller fields and wording), trimmed to the fields that matter.
"""

from __future__ import annotations

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


# --- events -------------------------------------------------------------------------------------

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


def pull_job_with_url_secret(secret="weights-link", key="url"):
    """A pull Job whose URL comes from a Secret (spec.source.urlSecret)."""
    job = pull_job_with_credentials()
    job["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "MODEL_DEST", "value": "/model-weights"},
        {"name": "MODEL_URL", "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}]
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


JOB_REFUSAL = ('Error creating: pods "qwen-pull-8x2lk" is forbidden: exceeded quota: compute, requested: requests.cpu=250m, '
               'used: requests.cpu=4, limited: requests.cpu=4')
