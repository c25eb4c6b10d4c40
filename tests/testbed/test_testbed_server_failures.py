"""The test bed's server failures: pods that crash-loop, cannot pull their image or are OOMKilled,
selected by a label or by their image name (so an LLMModel's serve.image alone selects them); Job
pods that are OOMKilled or run longer (kwok-slow); the success record with the size."""

import json

from testbed_helpers import MESSAGE_ANNOTATION, OUTCOME_LABEL, condition, job_manifest, pod_manifest, wait_until


def failing_pod(name, *, outcome=None, image=None, message=None):
    manifest = pod_manifest(name, labels={OUTCOME_LABEL: outcome} if outcome else None)
    if image:
        manifest["spec"]["containers"][0]["image"] = image
    if message:
        manifest["metadata"]["annotations"] = {MESSAGE_ANNOTATION: message}
    return manifest


def container_status(kube, namespace, name):
    pod = kube.core.read_namespaced_pod(name, namespace)
    statuses = pod.status.container_statuses or []
    return pod, (statuses[0] if statuses else None)


def test_server_pods_fail_on_demand(kube, namespace):
    pods = {
        "crash-label": failing_pod("crash-label", outcome="crashloop", message="boom: no weights"),
        "crash-image": failing_pod("crash-image", image="registry.invalid/kwok-crashloop/server:1"),
        "pull-image": failing_pod("pull-image", image="registry.invalid/kwok-imagepull/server:1"),
        "oom-label": failing_pod("oom-label", outcome="oomkilled"),
        "healthy": failing_pod("healthy"),
    }
    for manifest in pods.values():
        kube.core.create_namespaced_pod(namespace, manifest)

    def settled():
        return all(container_status(kube, namespace, name)[1] is not None for name in pods)

    wait_until("every pod to get a container status", settled, 30, lambda: kube.pods_summary(namespace))

    pod, status = container_status(kube, namespace, "crash-label")
    assert pod.status.phase == "Running" and not status.ready and status.restart_count > 0, pod.status
    assert status.state.waiting.reason == "CrashLoopBackOff", status.state
    last = status.last_state.terminated
    assert (last.exit_code, last.reason, last.message) == (1, "Error", "boom: no weights"), last
    assert condition(pod, "Ready").status == "False"

    _, status = container_status(kube, namespace, "crash-image")
    assert status.state.waiting.reason == "CrashLoopBackOff" and status.last_state.terminated.message, status

    pod, status = container_status(kube, namespace, "pull-image")
    assert pod.status.phase == "Pending" and status.state.waiting.reason == "ImagePullBackOff", pod.status
    assert "registry.invalid/kwok-imagepull/server:1" in status.state.waiting.message

    _, status = container_status(kube, namespace, "oom-label")
    assert status.state.waiting.reason == "CrashLoopBackOff", status.state
    assert (status.last_state.terminated.exit_code, status.last_state.terminated.reason) == (137, "OOMKilled")

    pod, status = container_status(kube, namespace, "healthy")
    assert pod.status.phase == "Running" and status.ready, pod.status


def test_job_pods_oomkilled_slow_and_their_success_record(kube, namespace):
    kube.batch.create_namespaced_job(namespace, job_manifest("oom", env={"HF_REPO": "acme/kwok-oomkilled"}))
    kube.batch.create_namespaced_job(namespace, job_manifest("slow", env={"HF_REPO": "acme/kwok-slow"}))
    kube.batch.create_namespaced_job(namespace, job_manifest("quick"))

    def finished(name):
        job = kube.batch.read_namespaced_job_status(name, namespace)
        return any(condition(job, t) is not None and condition(job, t).status == "True" for t in ("Complete", "Failed"))

    wait_until("Jobs oom and quick to finish", lambda: finished("oom") and finished("quick"), 30,
               lambda: kube.pods_summary(namespace))
    oom = kube.pods(namespace, "job-name=oom")[0]
    terminated = oom.status.container_statuses[0].state.terminated
    assert oom.status.phase == "Failed" and (terminated.exit_code, terminated.reason) == (137, "OOMKilled"), oom.status

    quick = kube.pods(namespace, "job-name=quick")[0]
    record = json.loads(quick.status.container_statuses[0].state.terminated.message)
    assert record["simulated"] is True and record["size"] == 1073741824, record

    # The default run is 3 s; kwok-slow runs 25 s.
    assert not finished("slow"), kube.pods_summary(namespace)
    assert [p.status.phase for p in kube.pods(namespace, "job-name=slow")] == ["Running"]
