"""The server's and the pull's diagnosis (module_utils/llmmodel_diagnosis.py): the pull Job's
failures and credentials, the Deployment's conditions (pods that cannot be created, a progress
deadline), which events are worth a read, and the filters the role calls."""

from __future__ import annotations

import copy

import pytest
import unit_helpers  # noqa: F401 - makes the role's module_utils importable as ansible.module_utils.*
from diagnosis_objects import (
    DEADLINE,
    FAILED,
    HASH_KEY,
    JOB_REFUSAL,
    LIMIT_RANGE_REFUSAL,
    MULTI_ATTACH,
    NOT_FOUND,
    NOW,
    OOM,
    POD_SECURITY_REFUSAL,
    PROGRESSING,
    QUOTA_REFUSAL,
    WEBHOOK_REFUSAL,
    crash_looping,
    deployment,
    event,
    image_pull,
    pull_job,
    pull_job_with_credentials,
    pull_job_with_url_secret,
    pull_pod,
    replica_failure,
    starting,
    unschedulable,
    waiting_pod,
    waiting_pull_pod,
)

from ansible.module_utils.llmmodel_credentials import credentials_env
from ansible.module_utils.llmmodel_diagnosis import diagnose_pull, diagnose_server, event_subjects
from ansible.utils.unsafe_proxy import AnsibleUnsafe
from unit_helpers import load_filter_plugin


# --- the pull Job -------------------------------------------------------------------------------

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


def test_a_pull_pod_held_for_an_unbound_immediate_claim_is_the_volume_s_problem():
    pod = unschedulable()
    # kube-scheduler's words (volumebinding plugin) for a pod whose Immediate claim has no volume yet.
    pod["status"]["conditions"][0]["message"] = ("0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
                                                 "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    found = diagnose_pull(pull_job(), [pod], now=NOW)
    assert found["reason"] == "VolumeNotBound"
    assert found["message"].startswith("the pull pod waits for its volume to be bound: pod qwen-")
    assert "unbound immediate PersistentVolumeClaims" in found["message"]


def test_inputs_are_not_changed():
    pods = [crash_looping(message="x"), unschedulable()]
    before = copy.deepcopy(pods)
    diagnose_server(pods, "abc", HASH_KEY, now=NOW)
    assert pods == before


# --- pods that cannot be created: the Deployment's conditions ------------------------------------

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


# --- the pull: credentials, pods that cannot be created ------------------------------------------

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
    assert found["message"].startswith("Secret hf-token has no key HF_TOKEN; put the value under that key: kubectl -n models create")
    assert "--from-literal=HF_TOKEN=<your token>" in found["message"]


def test_a_missing_object_store_secret_asks_for_the_key_pair():
    """The Job as the role renders its env (module_utils/llmmodel_credentials.py) for an s3:// source."""
    job = pull_job_with_credentials()
    job["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "MODEL_URL", "value": "s3://acme/m/"}] + credentials_env(
        {"url": "s3://acme/m/", "credentialsSecret": "weights-s3"})
    missing = [waiting_pull_pod("CreateContainerConfigError", 'secret "weights-s3" not found')]
    assert diagnose_pull(job, missing, now=NOW) == {
        "reason": "CredentialsNotFound",
        "message": "Secret weights-s3 not found in namespace models; create it: kubectl -n models create secret generic "
        "weights-s3 --from-literal=AWS_ACCESS_KEY_ID=<access key id> --from-literal=AWS_SECRET_ACCESS_KEY=<secret access key>",
    }
    no_secret = [waiting_pull_pod("CreateContainerConfigError", "couldn't find key AWS_SECRET_ACCESS_KEY in Secret models/weights-s3")]
    found = diagnose_pull(job, no_secret, now=NOW)
    assert found["reason"] == "CredentialsNotFound"
    assert found["message"].startswith("Secret weights-s3 has no key AWS_SECRET_ACCESS_KEY; put the value under that key: "
                                       "kubectl -n models create secret generic weights-s3 "
                                       "--from-literal=AWS_SECRET_ACCESS_KEY=<secret access key> --dry-run=client")
    # An optional key (a region) never stops the pod, so it is never the cause.
    optional = [waiting_pull_pod("CreateContainerConfigError", "couldn't find key AWS_REGION in Secret models/weights-s3")]
    assert diagnose_pull(job, optional, now=NOW)["reason"] == "PullContainerConfigError"


def test_a_missing_url_secret_or_key_is_told_from_the_pull_pod():
    missing = [waiting_pull_pod("CreateContainerConfigError", 'secret "weights-link" not found')]
    assert diagnose_pull(pull_job_with_url_secret(), missing, now=NOW) == {
        "reason": "CredentialsNotFound",
        "message": "Secret weights-link not found in namespace models; create it: "
        "kubectl -n models create secret generic weights-link --from-literal=url=<the URL of the weights file>",
    }
    no_key = [waiting_pull_pod("CreateContainerConfigError", "couldn't find key url in Secret models/weights-link")]
    found = diagnose_pull(pull_job_with_url_secret(), no_key, now=NOW)
    assert found["reason"] == "CredentialsNotFound"
    assert found["message"].startswith("Secret weights-link has no key url; put the value under that key: kubectl -n models")
    other_key = [waiting_pull_pod("CreateContainerConfigError", "couldn't find key other in Secret models/weights-link")]
    assert diagnose_pull(pull_job_with_url_secret(), other_key, now=NOW)["reason"] == "PullContainerConfigError"


def test_another_missing_secret_is_a_container_config_error_of_the_pull():
    pods = [waiting_pull_pod("CreateContainerConfigError", 'secret "other" not found')]
    found = diagnose_pull(pull_job_with_credentials(), pods, now=NOW)
    assert found["reason"] == "PullContainerConfigError" and not found["message"].endswith("the Job retries")
    assert diagnose_pull(pull_job(), [waiting_pull_pod("CreateContainerConfigError", 'secret "hf-token" not found')],
                         now=NOW)["reason"] == "PullContainerConfigError"  # no credentials in this pull


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
