"""The diagnosis of a model's pods and pull Job, over objects shaped as the API server returns them.

The pod and Job bodies below follow what `kubectl get -o json` shows on a real cluster (kubelet,
scheduler and Job controller fields and wording), trimmed to the fields that matter.
"""

from __future__ import annotations

import copy

import unit_helpers  # noqa: F401 - makes the role's module_utils importable as ansible.module_utils.*

from ansible.module_utils.llmmodel_diagnosis import diagnose_pod, diagnose_pull, diagnose_server, startup_budget_seconds

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
