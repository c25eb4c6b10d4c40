"""The test bed's failure mechanism: Job pods fail on demand, with the exit code and message asked for."""

from testbed_helpers import (
    EXIT_CODE_ANNOTATION,
    MESSAGE_ANNOTATION,
    OUTCOME_LABEL,
    condition,
    job_manifest,
    wait_until,
)


def test_jobs_fail_on_demand(kube, namespace):
    # Both Jobs at once: one fails by its env (as an LLMModel with a kwok-fail source would), one by label.
    kube.batch.create_namespaced_job(namespace, job_manifest("by-env", env={"HF_REPO": "acme/kwok-fail"}))
    kube.batch.create_namespaced_job(
        namespace,
        job_manifest(
            "by-label",
            job_labels={OUTCOME_LABEL: "fail"},
            pod_labels={OUTCOME_LABEL: "fail"},
            pod_annotations={EXIT_CODE_ANNOTATION: "3", MESSAGE_ANNOTATION: "auth refused"},
        ),
    )

    def state(name):
        job = kube.batch.read_namespaced_job_status(name, namespace)
        return {t: condition(job, t).status for t in ("Complete", "Failed") if condition(job, t) is not None}

    def describe():
        return f"by-env {state('by-env')}, by-label {state('by-label')}; pods {kube.pods_summary(namespace)}; events:\n  {kube.events(namespace)}"

    wait_until(
        "Jobs by-env and by-label to finish",
        lambda: all(state(n) for n in ("by-env", "by-label")), 30, describe,
    )
    for name, exit_code, message in (("by-env", 4, None), ("by-label", 3, "auth refused")):
        job = kube.batch.read_namespaced_job_status(name, namespace)
        failed = condition(job, "Failed")
        assert failed is not None and failed.status == "True", f"Job {name} did not fail: {job.status}"
        assert failed.reason == "BackoffLimitExceeded", failed
        assert condition(job, "Complete") is None and not job.status.succeeded, job.status
        assert job.status.failed == 1, f"Job {name} (backoffLimit 0) has {job.status.failed} failed pods"
        pods = kube.pods(namespace, f"job-name={name}")
        assert len(pods) == 1, f"Job {name} (backoffLimit 0) made {len(pods)} pods"
        pod = pods[0]
        assert pod.status.phase == "Failed", pod.status
        terminated = pod.status.container_statuses[0].state.terminated
        assert terminated is not None, pod.status.container_statuses
        assert terminated.exit_code == exit_code, f"pod of Job {name}: exit code {terminated.exit_code}, expected {exit_code}"
        assert terminated.reason == "Error", terminated
        if message is None:
            assert terminated.message, f"pod of Job {name} failed without a message"
        else:
            assert terminated.message == message, f"pod of Job {name}: message {terminated.message!r}"
