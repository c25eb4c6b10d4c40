"""The diagnosis against what the real control plane writes: a Deployment whose pods PodSecurity, a
ResourceQuota or a LimitRange refuse (the ReplicaSet's ReplicaFailure, copied to the Deployment), a
Deployment past its progress deadline, and a pull Job whose pod is refused (the Job controller's
FailedCreate event, read with the field selector event_subjects gives). No node is needed: the pods
never exist, or are never scheduled."""

from __future__ import annotations

import time

import pytest
import unit_helpers  # noqa: F401  (puts the role's module_utils on ansible.module_utils' path)
from ansible.module_utils.llmmodel_diagnosis import diagnose_pull, diagnose_server, event_subjects  # noqa: E402

pytestmark = pytest.mark.cluster

LABELS = {"app.kubernetes.io/component": "server", "inference.ai.example.com/model": "m"}
# A plain container: neither hardened for the restricted level nor placed on any node.
CONTAINER = {"name": "server", "image": "registry.invalid/server:1", "resources": {"limits": {"cpu": "1", "memory": "2Gi"}}}


def deployment_body(progress_deadline=600):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "m", "labels": LABELS},
        "spec": {
            "replicas": 1,
            "progressDeadlineSeconds": progress_deadline,
            "selector": {"matchLabels": LABELS},
            "template": {"metadata": {"labels": LABELS},
                         "spec": {"containers": [CONTAINER], "nodeSelector": {"example.com/no-such-node": "true"}}},
        },
    }


def wait_for(read, check, what, timeout=90):
    deadline = time.monotonic() + timeout
    while True:
        found = read()
        if check(found):
            return found
        if time.monotonic() > deadline:
            pytest.fail("no %s within %ss: %s" % (what, timeout, found))
        time.sleep(0.5)


def conditions_of(obj):
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def create_and_wait(dynamic, namespace, body, condition, status="True"):
    deployments = dynamic.resources.get(api_version="apps/v1", kind="Deployment")
    deployments.create(body=body, namespace=namespace)
    return wait_for(
        lambda: deployments.get(name=body["metadata"]["name"], namespace=namespace).to_dict(),
        lambda d: conditions_of(d).get(condition, {}).get("status") == status,
        "condition %s=%s on the Deployment" % (condition, status),
    )


def label_namespace(dynamic, namespace, labels):
    dynamic.resources.get(api_version="v1", kind="Namespace").patch(
        body={"metadata": {"labels": labels}}, name=namespace, content_type="application/merge-patch+json")


def test_pods_refused_by_pod_security(dynamic, namespace):
    label_namespace(dynamic, namespace, {"pod-security.kubernetes.io/enforce": "restricted"})
    deployment = create_and_wait(dynamic, namespace, deployment_body(), "ReplicaFailure")

    found = diagnose_server([], now=None, deployment=deployment)

    assert found["reason"] == "PodCreationFailed", found
    assert found["message"].startswith('Deployment m cannot create its pods (FailedCreate: violates PodSecurity "restricted:latest"')
    assert "namespace %s enforces the Pod Security level restricted:latest" % namespace in found["message"]


@pytest.mark.parametrize("kind, spec, advice", [
    ("ResourceQuota", {"hard": {"limits.memory": "1Gi"}}, "raise the namespace's ResourceQuota"),
    ("LimitRange", {"limits": [{"type": "Container", "max": {"memory": "1Gi"}}]}, "within the namespace's LimitRange"),
])
def test_pods_refused_by_quota_or_limit_range(dynamic, namespace, kind, spec, advice):
    resource = dynamic.resources.get(api_version="v1", kind=kind)
    resource.create(body={"apiVersion": "v1", "kind": kind, "metadata": {"name": "limits"}, "spec": spec}, namespace=namespace)
    if kind == "ResourceQuota":  # refused as "status unknown" until the quota controller counted the usage
        wait_for(lambda: resource.get(name="limits", namespace=namespace).to_dict(), lambda q: (q.get("status") or {}).get("hard"),
                 "the quota's status")
    deployment = create_and_wait(dynamic, namespace, deployment_body(), "ReplicaFailure")

    found = diagnose_server([], now=None, deployment=deployment)

    assert found["reason"] == "PodCreationFailed", found
    assert advice in found["message"], found


def test_a_deployment_past_its_progress_deadline(dynamic, namespace):
    deployment = create_and_wait(dynamic, namespace, deployment_body(progress_deadline=1), "Progressing", "False")
    pods = dynamic.resources.get(api_version="v1", kind="Pod").get(namespace=namespace).to_dict()["items"]

    found = diagnose_server(pods, now=None, deployment=deployment)

    # The pod waits for a node: the scheduler's words come first, the deadline when they are absent.
    assert found["reason"] in ("Unschedulable", "ProgressDeadlineExceeded"), found
    assert diagnose_server([], now=None, deployment=deployment)["reason"] == "ProgressDeadlineExceeded"


def test_a_pull_job_whose_pod_is_refused(dynamic, namespace):
    label_namespace(dynamic, namespace, {"pod-security.kubernetes.io/enforce": "restricted"})
    jobs = dynamic.resources.get(api_version="batch/v1", kind="Job")
    jobs.create(namespace=namespace, body={
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "m-pull"},
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [dict(CONTAINER, name="puller")]}}},
    })
    job = jobs.get(name="m-pull", namespace=namespace).to_dict()
    [subject] = event_subjects([], job)
    events = dynamic.resources.get(api_version="v1", kind="Event")
    read = wait_for(
        lambda: events.get(namespace=namespace, field_selector=subject["fieldSelector"]).to_dict()["items"],
        lambda items: any(e["reason"] == "FailedCreate" for e in items),
        "FailedCreate event of the Job",
    )

    found = diagnose_pull(jobs.get(name="m-pull", namespace=namespace).to_dict(), [], events=read)

    assert found["reason"] == "PullPodCreationFailed", found
    assert found["message"].startswith('the pull Job m-pull cannot create its pod (FailedCreate: violates PodSecurity "restricted:latest"')


def pull_job_on_claim(dynamic, namespace, storage_class):
    """A pull Job mounting a fresh claim of ``storage_class``, and the Job as read."""
    dynamic.resources.get(api_version="v1", kind="PersistentVolumeClaim").create(namespace=namespace, body={
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "m-weights"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class, "resources": {"requests": {"storage": "1Gi"}}},
    })
    jobs = dynamic.resources.get(api_version="batch/v1", kind="Job")
    jobs.create(namespace=namespace, body={
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "m-pull"},
        "spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never", "containers": [dict(CONTAINER, name="puller", volumeMounts=[{"name": "w", "mountPath": "/w"}])],
            # No node fits: the pod stays with the scheduler, whose verdict is the point.
            "nodeSelector": {"example.com/no-such-node": "true"},
            "volumes": [{"name": "w", "persistentVolumeClaim": {"claimName": "m-weights"}}]}}},
    })
    pods = dynamic.resources.get(api_version="v1", kind="Pod")
    unschedulable = wait_for(
        lambda: pods.get(namespace=namespace, label_selector="batch.kubernetes.io/job-name=m-pull").to_dict()["items"],
        lambda items: items and conditions_of(items[0]).get("PodScheduled", {}).get("reason") == "Unschedulable",
        "the scheduler's verdict on the pull pod",
    )
    return jobs.get(name="m-pull", namespace=namespace).to_dict(), unschedulable


def test_a_pull_pod_held_for_an_unbound_immediate_claim(dynamic, namespace):
    # A class nothing provisions, bound Immediate (the default mode): the claim stays unbound and the
    # scheduler holds the pod for it; that is the volume's problem.
    job, pods = pull_job_on_claim(dynamic, namespace, "no-such-class")
    found = diagnose_pull(job, pods)
    assert found["reason"] == "VolumeNotBound", found
    assert "unbound immediate PersistentVolumeClaims" in found["message"], found


def test_a_pull_pod_of_a_wait_for_first_consumer_claim_says_why_it_fits_no_node(dynamic, namespace):
    # The test bed's node-local class binds only where the pod is scheduled: no node fits, and that
    # (not the unbound claim) is what the pull is told.
    job, pods = pull_job_on_claim(dynamic, namespace, "node-local")
    found = diagnose_pull(job, pods)
    assert found["reason"] == "PullUnschedulable", found
    assert "didn't match Pod's node affinity/selector" in found["message"], found
