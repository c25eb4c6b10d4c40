"""Helpers of the real-node tests (tests/node): the node's constants, its pods, its host side."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "hack"))
sys.path.insert(0, str(REPO / "tests" / "testbed"))

import node  # noqa: E402  (hack/node.py: the one place of the node's names and addresses)
import node_host  # noqa: E402

# An image with /bin/sh that is imported into the node (never pulled): the puller image by default.
TEST_IMAGE = os.environ.get("LLM_NODE_TEST_IMAGE", "ghcr.io/llm-operator/llm-model-puller:0.1.0")
TOLERATION = {"key": "llm-operator.io/real-node", "operator": "Exists", "effect": "NoSchedule"}


def real_pod(name: str, command: list[str], *, restart: str = "Never") -> dict:
    """A pod for the real node: tolerates its taint, selects it by name, runs `command` for real."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node.NODE_NAME},
            "tolerations": [TOLERATION],
            "restartPolicy": restart,
            "terminationGracePeriodSeconds": 1,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "main",
                "image": TEST_IMAGE,
                "imagePullPolicy": "Never",
                "command": command,
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }],
        },
    }


def crictl(*args: str) -> str:
    result = subprocess.run(
        [str(REPO / "bin" / "crictl"), "--runtime-endpoint", f"unix://{node.CONTAINERD_SOCKET}", *args],
        capture_output=True, text=True, timeout=60, check=True,
    )
    return result.stdout


def pod_netns(pod_uid: str) -> str:
    """The network namespace file of a running pod's sandbox (containerd keeps it under its state dir)."""
    sandboxes = json.loads(crictl("pods", "--label", f"io.kubernetes.pod.uid={pod_uid}", "-o", "json"))["items"]
    assert sandboxes, f"no sandbox for pod uid {pod_uid}"
    info = json.loads(crictl("inspectp", sandboxes[0]["id"]))
    for namespace in info["info"]["runtimeSpec"]["linux"]["namespaces"]:
        if namespace["type"] == "network":
            return namespace["path"]
    raise AssertionError(f"sandbox {sandboxes[0]['id']} has no network namespace: {info['info']['runtimeSpec']['linux']}")


def in_netns(netns: str, python_code: str) -> subprocess.CompletedProcess:
    """Run a few lines of this machine's Python inside a pod's network namespace."""
    return subprocess.run(["nsenter", f"--net={netns}", sys.executable, "-c", python_code],
                          capture_output=True, text=True, timeout=60, check=False)


def drop_counters() -> dict[str, int]:
    """Packets counted by each rule of the node's LLMOP-OUT chain, keyed by the rule's comment."""
    out = subprocess.run(["iptables", "-w", "5", "-t", "mangle", "-L", node_host.CHAIN_OUT, "-v", "-x", "-n"],
                         capture_output=True, text=True, check=True).stdout
    counters = {}
    for line in out.splitlines()[2:]:
        comment = re.search(r"/\* (.*) \*/", line)
        if comment:
            counters[comment.group(1)] = int(line.split()[0])
    return counters
