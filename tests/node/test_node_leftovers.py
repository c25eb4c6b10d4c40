"""After `make cluster-down`: the real node left nothing behind and the host is as it was.

Runs only when the node is down (`make node-test` runs it after cluster-down, marker after_down),
against the record that host_state.py wrote before the node started (LLM_NODE_HOST_RECORD).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import pytest

from host_state import host_paths, sysctls
from node_helpers import REPO, node, node_host

pytestmark = pytest.mark.after_down
PORTS = {10248, 10249, 10250, 10256, node.MODELS_PORT, int(os.environ.get("LLM_CLUSTER_PORT", "36443"))}
NODE_BINARIES = ["kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "runc"]


def listening_ports() -> set[int]:
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in pathlib.Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_no_process_of_the_node_is_left():
    targets = {str((REPO / "bin" / b).resolve()) for b in NODE_BINARIES}
    left = []
    for proc in pathlib.Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                exe = os.readlink(proc / "exe").removesuffix(" (deleted)")
            except OSError:
                continue
            if exe in targets:
                left.append((proc.name, exe))
    assert not left, f"processes of the node still run: {left}"
    assert not (PORTS & listening_ports()), f"ports still listening: {sorted(PORTS & listening_ports())}"


def test_no_network_mount_or_cgroup_is_left():
    assert not node_host.link_exists(node.BRIDGE), f"bridge {node.BRIDGE} is still there"
    mangle = subprocess.run(["iptables", "-w", "5", "-t", "mangle", "-S"], capture_output=True, text=True, check=True).stdout
    assert "LLMOP" not in mangle, mangle
    for command in ("iptables", "ip6tables"):
        for table in ("filter", "nat", "mangle"):
            rules = subprocess.run([command, "-w", "5", "-t", table, "-S"], capture_output=True, text=True, check=True).stdout
            assert "KUBE-" not in rules, f"the kubelet's or kube-proxy's chains are left in {command} {table}:\n{rules}"
    assert not node_host.mounts_under(node.RUN, node.KUBELET_ROOT, node.CONTAINERD_ROOT, node.VOLUMES)
    for cgroup in node.CGROUPS:
        assert not node_host.cgroup_dirs(cgroup), f"cgroups {cgroup} are left"
    assert node_host.HOSTS_MARK not in node_host.HOSTS.read_text(), "the node's /etc/hosts line is left"
    assert not node.RUN.exists() and not node.KUBELET_ROOT.exists() and not node.VOLUMES.exists()


def test_host_settings_are_restored():
    record = os.environ.get("LLM_NODE_HOST_RECORD")
    assert record and pathlib.Path(record).exists(), "LLM_NODE_HOST_RECORD names no record of the host (make node-test writes one)"
    before = json.loads(pathlib.Path(record).read_text())
    assert sysctls() == before["sysctls"]
    # The kubelet's device-plugin socket and the pod log directories, outside the node's own directories.
    assert host_paths() == before["paths"]
