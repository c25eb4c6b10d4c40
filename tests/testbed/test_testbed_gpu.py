"""GPU scheduling: the real scheduler places pods by the extended resource nvidia.com/gpu of the GPU pool."""

from testbed_helpers import condition, pod_manifest, wait_until

GPU_POOL = {"kwok-gpu-1", "kwok-gpu-2"}


def gpus(n):
    return {"limits": {"nvidia.com/gpu": str(n)}, "requests": {"nvidia.com/gpu": str(n)}}


def test_gpu_pods_are_scheduled_by_gpu_count(kube, namespace):
    kube.core.create_namespaced_pod(namespace, pod_manifest("one-gpu", resources=gpus(1)))
    kube.core.create_namespaced_pod(namespace, pod_manifest("five-gpus", resources=gpus(5)))

    def gpu_use():
        pods = [p for node in sorted(GPU_POOL) for p in kube.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items]
        return [(f"{p.spec.node_name}: {p.metadata.namespace}/{p.metadata.name}", p.status.phase) for p in pods]

    def describe(name):
        return lambda: f"{kube.core.read_namespaced_pod(name, namespace).status}; pods on the GPU pool: {gpu_use()}"

    one = wait_until(
        "pod one-gpu to be Running", lambda: (p := kube.core.read_namespaced_pod("one-gpu", namespace)).status.phase == "Running" and p,
        30, describe("one-gpu"),
    )
    assert one.spec.node_name in GPU_POOL, f"the 1-GPU pod landed on {one.spec.node_name}"

    def unschedulable():
        p = kube.core.read_namespaced_pod("five-gpus", namespace)
        c = condition(p, "PodScheduled")
        return p if c is not None and c.status == "False" and c.reason == "Unschedulable" else None

    five = wait_until("pod five-gpus to be reported Unschedulable", unschedulable, 30, describe("five-gpus"))
    assert five.status.phase == "Pending" and not five.spec.node_name, five.status
    assert "nvidia.com/gpu" in condition(five, "PodScheduled").message, condition(five, "PodScheduled")
