"""The kwok nodes: Ready, schedulable, the GPU pool's capacity and labels, and live node leases."""

from datetime import datetime, timedelta, timezone

from testbed_helpers import condition

GPU_POOL = {"kwok-gpu-1", "kwok-gpu-2"}
NODES = {"kwok-cpu-1", "kwok-cpu-2"} | GPU_POOL
# What NVIDIA's GPU Feature Discovery and the cloud put on a GPU node (users select by them).
GPU_LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "4", "pool": "gpu"}


def test_nodes_ready_untainted_and_gpu_node_advertises_gpus(kube, namespace):
    nodes = {n.metadata.name: n for n in kube.core.list_node().items}
    assert NODES <= set(nodes), f"expected nodes {sorted(NODES)}, the cluster has {sorted(nodes)}"

    for name in sorted(NODES):
        node = nodes[name]
        ready = condition(node, "Ready")
        assert ready is not None and ready.status == "True", f"node {name} is not Ready: {ready}"
        assert not node.spec.unschedulable, f"node {name} is cordoned"
        blocking = [t for t in node.spec.taints or [] if t.effect in ("NoSchedule", "NoExecute")]
        assert not blocking, f"node {name} has taints that keep pods off it: {blocking}"

    for name in sorted(GPU_POOL):
        gpu = nodes[name]
        assert gpu.status.allocatable.get("nvidia.com/gpu") == "4", f"{name} allocatable: {gpu.status.allocatable}"
        assert gpu.status.capacity.get("nvidia.com/gpu") == "4", f"{name} capacity: {gpu.status.capacity}"
        assert GPU_LABELS.items() <= gpu.metadata.labels.items(), f"{name} labels: {gpu.metadata.labels}"
        assert gpu.metadata.labels.get("node.kubernetes.io/instance-type"), f"{name} labels: {gpu.metadata.labels}"
    for name in sorted(NODES - GPU_POOL):
        assert "nvidia.com/gpu" not in (nodes[name].status.allocatable or {}), f"CPU node {name} advertises GPUs"
        assert "nvidia.com/gpu.present" not in nodes[name].metadata.labels, f"CPU node {name} is labelled a GPU node"


def test_every_node_has_a_live_lease(kube, namespace):
    """kwok renews the nodes' leases (it plays their kubelets), so the node lifecycle controller keeps them Ready."""
    now = datetime.now(timezone.utc)
    nodes = {n.metadata.name: n for n in kube.core.list_node().items}
    leases = {l.metadata.name: l for l in kube.coordination.list_namespaced_lease("kube-node-lease").items}
    for name in sorted(NODES):
        assert name in leases, f"no Lease for node {name} in kube-node-lease (leases: {sorted(leases)})"
        lease = leases[name]
        owners = [(o.kind, o.name, o.uid) for o in lease.metadata.owner_references or []]
        assert ("Node", name, nodes[name].metadata.uid) in owners, f"lease {name} is not owned by its node: {owners}"
        assert lease.spec.holder_identity, f"lease {name} has no holder"
        assert lease.spec.renew_time is not None, f"lease {name} was never renewed"
        expires = lease.spec.renew_time + timedelta(seconds=lease.spec.lease_duration_seconds or 40)
        assert expires > now, f"lease {name} expired at {expires} (renewed {lease.spec.renew_time}, now {now})"
