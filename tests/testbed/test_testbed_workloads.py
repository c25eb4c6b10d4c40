"""Jobs, Deployments and deletion on the kwok nodes: the controllers are real, kwok plays the kubelet."""

import json
import time

from kubernetes.client.rest import ApiException

from testbed_helpers import (
    DURATION_ANNOTATION,
    condition,
    deployment_manifest,
    gone,
    job_manifest,
    pod_manifest,
    wait_until,
)


def job_pod(kube, namespace, job):
    pods = kube.pods(namespace, f"job-name={job}")
    return pods[0] if pods else None


def finished(job):
    for type_ in ("Complete", "Failed"):
        c = condition(job, type_)
        if c is not None and c.status == "True":
            return type_
    return None


def test_job_runs_then_completes(kube, namespace):
    kube.batch.create_namespaced_job(namespace, job_manifest("quick"))
    seen = []  # (job active, pod phase) in the order they were observed

    def probe():
        job = kube.batch.read_namespaced_job_status("quick", namespace)
        pod = job_pod(kube, namespace, "quick")
        state = (job.status.active or 0, pod.status.phase if pod else None)
        if not seen or seen[-1] != state:
            seen.append(state)
        return job if finished(job) else None

    job = wait_until(
        "Job quick to finish", probe, 45,
        describe=lambda: f"states {seen}; events:\n  {kube.events(namespace)}", interval=0.1,
    )
    assert finished(job) == "Complete", f"Job quick ended {finished(job)}: {job.status}"
    assert job.status.succeeded == 1 and not job.status.failed, job.status
    running = [i for i, (active, phase) in enumerate(seen) if active >= 1 and phase == "Running"]
    assert running, f"the Job was never seen active with a Running pod; states seen: {seen}"
    succeeded = [i for i, (_, phase) in enumerate(seen) if phase == "Succeeded"]
    assert succeeded and running[0] < succeeded[0], f"the pod did not run before it succeeded; states seen: {seen}"
    pod = job_pod(kube, namespace, "quick")
    terminated = pod.status.container_statuses[0].state.terminated
    assert terminated is not None and terminated.exit_code == 0, pod.status.container_statuses
    # Like llm-model-puller, the simulated pod leaves a success record naming what it "pulled".
    record = json.loads(terminated.message)
    assert record == {"commit": pod.metadata.uid, "simulated": True, "size": 1 << 30}, terminated.message


def test_job_duration_annotation_keeps_the_job_running(kube, namespace):
    created = time.monotonic()
    kube.batch.create_namespaced_job(namespace, job_manifest("slow", pod_annotations={DURATION_ANNOTATION: "8s"}))

    def describe():
        job = kube.batch.read_namespaced_job_status("slow", namespace)
        return f"job {job.status}; pods {kube.pods_summary(namespace)}; events:\n  {kube.events(namespace)}"

    wait_until("the pod of Job slow to be Running", lambda: (p := job_pod(kube, namespace, "slow")) and p.status.phase == "Running", 30, describe)
    # Throughout the first 4 s (the default duration is 3 s) the Job stays active with its pod Running.
    while time.monotonic() - created < 4:
        job = kube.batch.read_namespaced_job_status("slow", namespace)
        pod = job_pod(kube, namespace, "slow")
        elapsed = time.monotonic() - created
        assert not finished(job), f"Job slow finished ({finished(job)}) after {elapsed:.1f}s despite job-duration 8s"
        assert job.status.active == 1, f"Job slow not active after {elapsed:.1f}s: {job.status}"
        assert pod.status.phase == "Running", f"pod of Job slow is {pod.status.phase} after {elapsed:.1f}s"
        time.sleep(0.5)
    # ... and it does complete: the annotation delays the pod's success, it does not block it.
    def done():
        job = kube.batch.read_namespaced_job_status("slow", namespace)
        return job if finished(job) else None

    job = wait_until("Job slow to finish", done, 30, describe)
    assert finished(job) == "Complete", f"Job slow ended {finished(job)}: {job.status}"
    pod = job_pod(kube, namespace, "slow")
    ran = (pod.status.container_statuses[0].state.terminated.finished_at - pod.status.start_time).total_seconds()
    assert ran >= 7, f"the pod of Job slow ran {ran:.0f}s, expected about 8s"


def test_deployment_becomes_available(kube, namespace):
    kube.apps.create_namespaced_deployment(namespace, deployment_manifest("web", 3))

    def available():
        d = kube.apps.read_namespaced_deployment_status("web", namespace)
        c = condition(d, "Available")
        return d if c is not None and c.status == "True" and d.status.ready_replicas == 3 else None

    d = wait_until(
        "Deployment web to be Available with 3 ready replicas", available, 30,
        describe=lambda: f"{kube.apps.read_namespaced_deployment_status('web', namespace).status}; pods {kube.pods_summary(namespace)}",
    )
    assert d.status.ready_replicas == d.status.replicas == d.status.available_replicas == d.status.updated_replicas == 3, d.status
    pods = kube.pods(namespace, "app=web")
    assert len(pods) == 3 and all(p.status.phase == "Running" and p.spec.node_name for p in pods), kube.pods_summary(namespace)
    assert all(condition(p, "Ready").status == "True" for p in pods), kube.pods_summary(namespace)


def test_pod_and_namespace_deletion(kube, namespace):
    # The API's default grace period (30 s) everywhere, as the operator's pods have it.
    kube.core.create_namespaced_pod(namespace, pod_manifest("doomed", grace=None))
    kube.core.create_namespaced_config_map(namespace, {"metadata": {"name": "data"}, "data": {"k": "v"}})
    kube.apps.create_namespaced_deployment(namespace, deployment_manifest("web", 2, grace=None))
    kube.batch.create_namespaced_job(namespace, job_manifest("work"))
    wait_until(
        "pod doomed and the 2 pods of Deployment web to be Running",
        lambda: sum(p.status.phase == "Running" for p in kube.pods(namespace)) >= 3
        and kube.core.read_namespaced_pod("doomed", namespace).status.phase == "Running",
        30, describe=lambda: kube.pods_summary(namespace),
    )

    # A Running pod deleted with the default grace period: kwok confirms the deletion like a kubelet.
    started = time.monotonic()
    kube.core.delete_namespaced_pod("doomed", namespace)
    wait_until(
        "the deleted pod doomed to be gone", lambda: gone(lambda: kube.core.read_namespaced_pod("doomed", namespace)), 10,
        describe=lambda: kube.core.read_namespaced_pod("doomed", namespace).metadata,
    )
    assert time.monotonic() - started < 10

    # The namespace (with a Deployment, a Job and their pods in it) is deleted completely.
    kube.core.delete_namespace(namespace)

    def phase():
        try:
            ns = kube.core.read_namespace(namespace)
        except ApiException as error:
            return f"{error.status}"
        return f"{ns.status.phase}, conditions {ns.status.conditions}; pods {kube.pods_summary(namespace)}"

    wait_until(f"namespace {namespace} to be deleted", lambda: gone(lambda: kube.core.read_namespace(namespace)), 45, describe=phase)
