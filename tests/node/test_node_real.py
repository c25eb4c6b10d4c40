"""The real node beside the kwok nodes: a real kubelet, real containers, and the traffic rule."""

from __future__ import annotations

import ipaddress
import subprocess

from build_tools import pinned_version
from node_helpers import crictl, drop_counters, in_netns, node, node_host, pod_netns, real_pod
from testbed_helpers import condition, wait_until

KWOK_NODES = {"kwok-cpu-1", "kwok-cpu-2", "kwok-gpu-1", "kwok-gpu-2"}
# TEST-NET-2 (RFC 5737): documentation addresses, nobody's host. The gateway of this machine sits in
# TEST-NET-1 here, so that range is left alone.
OUTSIDE = "198.51.100.1"
POD_RULE = "llm-operator: pod traffic never leaves the machine"


def test_real_node_is_ready_with_a_real_kubelet_beside_the_kwok_nodes(kube, namespace):
    nodes = {n.metadata.name: n for n in kube.core.list_node().items}
    real = nodes[node.NODE_NAME]
    assert condition(real, "Ready").status == "True", real.status.conditions
    info = real.status.node_info
    assert info.kubelet_version == pinned_version("kubernetes", "k8s.io/kubernetes"), info
    assert info.container_runtime_version.startswith("containerd://2.3."), info
    assert "kwok" not in info.kernel_version, info
    assert {a.type: a.address for a in real.status.addresses}["InternalIP"] == node.NODE_IP
    assert "kwok.x-k8s.io/node" not in (real.metadata.annotations or {}), "the real node must not look like a kwok node"
    taints = {(t.key, t.effect) for t in real.spec.taints or []}
    assert ("llm-operator.io/real-node", "NoSchedule") in taints, taints
    # The kubelet's own heartbeat: a Lease it creates soon after it registers, and renews.
    lease = wait_until(f"the Lease of {node.NODE_NAME}", lambda: next(
        (l for l in kube.coordination.list_namespaced_lease("kube-node-lease").items if l.metadata.name == node.NODE_NAME), None), 40)
    assert lease.spec.holder_identity == node.NODE_NAME, lease.spec
    for name in sorted(KWOK_NODES):
        fake = nodes[name]
        assert condition(fake, "Ready").status == "True", f"{name}: {fake.status.conditions}"
        assert fake.status.node_info.kubelet_version.startswith("kwok-"), f"{name} is no longer kwok's"


def test_a_pod_on_the_real_node_runs_its_command(kube, namespace):
    kube.core.create_namespaced_pod(namespace, real_pod("hello", ["sh", "-c", "echo hello from $(cat /proc/sys/kernel/hostname) as $(id -u)"]))

    def describe():
        return f"{kube.pods_summary(namespace)}; events:\n  {kube.events(namespace)}"

    pod = wait_until("pod hello to succeed on the real node",
                     lambda: (p := kube.core.read_namespaced_pod("hello", namespace)).status.phase in ("Succeeded", "Failed") and p,
                     90, describe)
    assert pod.status.phase == "Succeeded", describe()
    assert pod.spec.node_name == node.NODE_NAME
    state = pod.status.container_statuses[0]
    assert state.container_id.startswith("containerd://"), state
    assert state.state.terminated.exit_code == 0, state
    assert ipaddress.ip_address(pod.status.pod_ip) in ipaddress.ip_network(node.POD_CIDR), pod.status.pod_ip
    # The kubelet's own API serves the log: the command really ran, as the pod's user.
    logs = kube.kubectl("logs", "-n", namespace, "hello").stdout
    assert logs.strip() == "hello from hello as 10001", logs


def test_pod_traffic_that_would_leave_the_machine_is_dropped(kube, namespace):
    rules = subprocess.run(["iptables", "-w", "5", "-t", "mangle", "-S", node_host.CHAIN_OUT], capture_output=True, text=True, check=True).stdout
    assert f"-s {node.POD_CIDR} ! -o {node.BRIDGE}" in rules and "-j DROP" in rules, rules
    assert f"-d {node.FAKE_POD_CIDR}" in rules, f"kwok's fake pod range is not dropped: {rules}"
    assert f"-d {node.SERVICE_CIDR}" in rules, rules
    hooked = subprocess.run(["iptables", "-w", "5", "-t", "mangle", "-C", "POSTROUTING", "-j", node_host.CHAIN_OUT], check=False)
    assert hooked.returncode == 0, "LLMOP-OUT is not hooked into mangle POSTROUTING"

    kube.core.create_namespaced_pod(namespace, real_pod("idle", ["sleep", "600"]))
    pod = wait_until("pod idle to run", lambda: (p := kube.core.read_namespaced_pod("idle", namespace)).status.phase == "Running" and p,
                     90, lambda: f"{kube.pods_summary(namespace)}; events:\n  {kube.events(namespace)}")
    netns = pod_netns(pod.metadata.uid)

    # Inside the pod's network: the API server through the `kubernetes` Service VIP (kube-proxy's
    # DNAT to the node's bridge address) answers; a TEST-NET address outside does not.
    reach_api = in_netns(netns, "import socket; socket.create_connection(('10.96.0.1', 443), timeout=5).close(); print('ok')")
    assert reach_api.stdout.strip() == "ok", reach_api.stderr

    before = drop_counters()[POD_RULE]
    send = in_netns(netns, f"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nfor _ in range(3): s.sendto(b'x', ('{OUTSIDE}', 9))")
    assert send.returncode == 0, send.stderr
    after = drop_counters()[POD_RULE]
    assert after - before >= 3, f"the drop rule counted {after - before} of 3 packets toward {OUTSIDE}"
    # The sandbox is a real one: containerd knows it.
    assert pod.metadata.uid in crictl("pods", "-o", "json")
