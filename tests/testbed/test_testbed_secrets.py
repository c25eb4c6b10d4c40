"""The test bed's kubelet Secret check (hack/cluster/secret_gate.py and the stages it drives): a pod
whose env names a missing Secret, or a Secret without the key, waits with CreateContainerConfigError
and the kubelet's own message, and starts by itself once the Secret holds the key."""

from testbed_helpers import pod_manifest, wait_until


def waiting(kube, namespace, name):
    pod = kube.core.read_namespaced_pod(name, namespace)
    statuses = pod.status.container_statuses or []
    state = statuses[0].state.waiting if statuses and statuses[0].state else None
    return pod.status.phase, (state.reason, state.message) if state else None


def test_a_missing_secret_holds_the_pod_until_it_holds_the_key(kube, namespace):
    pod = pod_manifest("gated")
    pod["spec"]["containers"][0]["env"] = [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN"}}}]
    kube.core.create_namespaced_pod(namespace, pod)
    missing = ("Pending", ("CreateContainerConfigError", 'secret "hf-token" not found'))
    wait_until("the pod to wait for its Secret", lambda: waiting(kube, namespace, "gated") == missing, 30,
               lambda: str(waiting(kube, namespace, "gated")))

    kube.core.create_namespaced_secret(namespace, {"metadata": {"name": "hf-token"}, "stringData": {"OTHER": "x"}})
    no_key = ("Pending", ("CreateContainerConfigError", f"couldn't find key HF_TOKEN in Secret {namespace}/hf-token"))
    wait_until("the pod to wait for the key", lambda: waiting(kube, namespace, "gated") == no_key, 30,
               lambda: str(waiting(kube, namespace, "gated")))

    kube.core.patch_namespaced_secret("hf-token", namespace, {"stringData": {"HF_TOKEN": "hf_x"}})
    wait_until("the pod to start", lambda: waiting(kube, namespace, "gated") == ("Running", None), 30,
               lambda: str(waiting(kube, namespace, "gated")))


def test_a_pod_without_secret_references_starts_at_once(kube, namespace):
    kube.core.create_namespaced_pod(namespace, pod_manifest("plain"))
    wait_until("the pod to start", lambda: waiting(kube, namespace, "plain") == ("Running", None), 15,
               lambda: str(waiting(kube, namespace, "plain")))
