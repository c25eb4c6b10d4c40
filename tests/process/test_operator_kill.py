"""The real ansible-operator, stopped or SIGKILLed in the middle of a reconcile, leaves no ansible process.

Needs the local cluster (`make cluster-up`) and the machine's one operator slot (ports 8888, 6789,
8686): run it under the cluster lock, like every cluster suite. It starts the operator with
`make operator-start` (own log and pidfile, watching only its namespace), waits until an
ansible-playbook of a reconcile runs under it, ends the operator and checks that every process of
its tree is gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid

import pytest
from process_helpers import assert_all_gone, wait_for
from process_paths import REPO

import proctree

pytestmark = pytest.mark.cluster

KUBECONFIG = os.environ.get("KUBECONFIG") or str(REPO / ".cluster" / "kubeconfig")
KUBECTL = str(REPO / "bin" / "kubectl")


def kubectl(*args: str, input_text: str | None = None) -> str:
    done = subprocess.run([KUBECTL, "--kubeconfig", KUBECONFIG, *args], input=input_text, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def make(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "--no-print-directory", "-C", str(REPO), *args], env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def model(namespace: str, name: str) -> str:
    return json.dumps({
        "apiVersion": "inference.ai.example.com/v1alpha1", "kind": "LLMModel",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"source": {"huggingFaceRepo": f"process-test/{name}"}, "storageSize": "1Gi",
                 "serve": {"image": "vllm/vllm-openai:v0.6.3", "args": ["--model", "/model-weights"]}},
    })


def playbooks_under(root: int) -> list[int]:
    """ansible-playbook processes below root (the reconcile's playbook and its task workers)."""
    table = proctree.parents()
    return [pid for pid in proctree.descendants(root, table) if pid in proctree.ansible_processes()]


@pytest.fixture
def operator(tmp_path):
    """Start the real operator watching one fresh namespace; yields (namespace, supervisor pid, start)."""
    namespace = f"process-test-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", namespace)
    pidfile, log = tmp_path / "operator.pid", tmp_path / "operator.log"
    env = {**os.environ, "KUBECONFIG": KUBECONFIG, "WATCH_NAMESPACE": namespace}

    def start() -> int:
        done = make("operator-start", f"OPERATOR_LOG={log}", f"OPERATOR_PIDFILE={pidfile}", env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        return int(pidfile.read_text())

    yield namespace, start, pidfile
    make("operator-stop", f"OPERATOR_PIDFILE={pidfile}")
    # The models' finalizer needs the operator; the test is done with them: let them go.
    for name in kubectl("get", "llmmodels", "-n", namespace, "-o", "name").split():
        kubectl("patch", "-n", namespace, name, "--type", "merge", "-p", '{"metadata":{"finalizers":null}}')
    kubectl("delete", "namespace", namespace, "--wait=false")


def in_flight_reconcile(namespace: str, supervisor: int, name: str) -> tuple[list[int], list[int]]:
    """Apply a model and wait until its reconcile's ansible-playbook runs; return (tree, playbooks)."""
    kubectl("apply", "-f", "-", input_text=model(namespace, name))
    playbooks = wait_for(lambda: playbooks_under(supervisor), 60, "an ansible-playbook of a reconcile runs under the operator")
    return proctree.descendants(supervisor), playbooks


def test_sigkill_of_ansible_operator_mid_reconcile_leaves_no_ansible_process(operator):
    namespace, start, pidfile = operator
    supervisor = start()
    tree, playbooks = in_flight_reconcile(namespace, supervisor, "killed")
    ansible_operator = [p for p in proctree.descendants(supervisor) if proctree.command_line(p).split()[0].endswith("ansible-operator")]
    assert len(ansible_operator) == 1, [proctree.command_line(p) for p in proctree.descendants(supervisor)]

    os.kill(ansible_operator[0], signal.SIGKILL)

    assert_all_gone([*tree, *playbooks, supervisor], 15)
    assert not set(proctree.ansible_processes()) & set(tree + playbooks)
    assert not pidfile.exists()


def test_operator_stop_mid_reconcile_leaves_no_ansible_process(operator):
    namespace, start, pidfile = operator
    supervisor = start()
    tree, playbooks = in_flight_reconcile(namespace, supervisor, "stopped")

    done = make("operator-stop", f"OPERATOR_PIDFILE={pidfile}")

    assert done.returncode == 0, done.stdout + done.stderr
    # operator-stop returns only once the supervisor has ended everything.
    assert not [p for p in [*tree, *playbooks, supervisor] if proctree.alive(p)]
    assert not pidfile.exists()
