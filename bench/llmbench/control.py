"""Control of the machine's one cluster and operator slot: who else runs, the cluster, the operator's
identity and process, waiting for its runs."""

from __future__ import annotations

import _thread
import json
import os
import pathlib
import socket
import sys
import threading
import time

import proctree

from .common import FLOW_SCHEMA, OPERATOR_LOG, OUT, PIDFILE, SA_NAME, SA_NAMESPACE, kubectl, log, run
from .parsing import OperatorLog, metric_sum
from .sampling import scrape_apiserver, tree_usage


def leftovers() -> list[str]:
    """ansible-runner / ansible-playbook processes already running: an operator's orphans, or
    someone's playbook. Either would take CPU from the run and make every figure wrong."""
    return [f"{pid} {line[:120]}" for pid, line in sorted(proctree.ansible_processes().items())]


def others_running(check_port: bool = True) -> list[str]:
    """What would break someone else's run or this one: Molecule, or an operator on :8888. Tests that
    need no cluster (unit tests of other checkouts) only share the CPU: the load is recorded instead
    (report.machine), and the one cluster slot is taken with the machine's cluster lock."""
    found = []
    for pattern in ("bin/molecule",):
        pids = [p for p in run(["pgrep", "-f", pattern], check=False).stdout.split() if int(p) != os.getpid()]
        if pids:
            found.append(f"{pattern} (pid {', '.join(pids)})")
    with socket.socket() as sock:
        sock.settimeout(1)
        if check_port and sock.connect_ex(("127.0.0.1", 8888)) == 0:
            found.append("something listens on 127.0.0.1:8888 (another ansible-operator)")
    return found


class Guard(threading.Thread):
    """Stops the bench as soon as someone else's tests start or its operator is stopped or replaced
    by someone else (a shared pidfile): numbers taken then would be wrong, and restarting the cluster
    would break their tests."""

    def __init__(self):
        super().__init__(daemon=True)
        self.expected_pid: int | None = None  # None while the bench itself (re)starts the operator
        self.reason: str | None = None
        self.stopped = threading.Event()

    def problem(self) -> str | None:
        tests = others_running(check_port=False)
        if tests:
            return "other tests started: " + "; ".join(tests)
        pid = self.expected_pid
        if pid is not None:
            try:
                os.kill(pid, 0)
                current = int(PIDFILE.read_text().strip())
            except (OSError, ValueError):
                return f"the bench's operator (pid {pid}) was stopped by someone else"
            if current != pid:
                return f"someone else's operator (pid {current}) took the pidfile"
        return None

    def run(self) -> None:
        while not self.stopped.wait(3):
            reason = self.problem()
            if reason:
                self.reason = reason
                log(f"stopping: {reason}")
                _thread.interrupt_main()
                return


def refuse_leftovers() -> None:
    found = leftovers()
    if found:
        sys.exit("bench: not starting, ansible processes run on this machine (an operator's leftovers, or another run):\n  "
                 + "\n  ".join(found) + "\nbench: end them (their operator's `make operator-stop`) and start again")


def wait_until_free(seconds: float, quiet: float = 60) -> None:
    """Return when nothing else runs; after waiting, only once that has lasted `quiet` seconds (test
    suites start one step after the other, with short gaps)."""
    deadline = time.monotonic() + seconds
    waited, free_since = False, None
    while True:
        busy = others_running()
        now = time.monotonic()
        if not busy:
            free_since = free_since or now
            if not waited or now - free_since >= quiet:
                return
        else:
            free_since, waited = None, True
            if now >= deadline:
                sys.exit("bench: not starting, the machine is in use: " + "; ".join(busy)
                         + "\nbench: only one ansible-operator may run at a time; retry later or pass --wait-free SECONDS")
            log("waiting for " + "; ".join(busy))
        time.sleep(5 if free_since else min(30, max(1, deadline - now)))


def cluster(action: str, job_seconds: int | None = None) -> None:
    env = dict(os.environ)
    env.pop("LLM_TESTBED_JOB_SECONDS", None)
    if job_seconds is not None:
        env["LLM_TESTBED_JOB_SECONDS"] = str(job_seconds)
    done = run(["python3", "hack/cluster.py", action], env=env, check=False, timeout=900)
    for line in (done.stdout + done.stderr).splitlines():
        log(line)
    if done.returncode != 0:
        raise RuntimeError(f"hack/cluster.py {action} failed")


def operator_identity() -> pathlib.Path:
    """A ServiceAccount for the operator, a FlowSchema that matches only it (same priority level as any
    ServiceAccount, workload-low), and a kubeconfig with its token."""
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SA_NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SA_NAME, "namespace": SA_NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": SA_NAME},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
         "subjects": [{"kind": "ServiceAccount", "name": SA_NAME, "namespace": SA_NAMESPACE}]},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": FLOW_SCHEMA},
         "spec": {"priorityLevelConfiguration": {"name": "workload-low"}, "matchingPrecedence": 1000,
                  "distinguisherMethod": {"type": "ByUser"},
                  "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": SA_NAME, "namespace": SA_NAMESPACE}}],
                             "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True, "namespaces": ["*"]}],
                             "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}},
    ]
    kubectl("apply", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    token = kubectl("create", "token", SA_NAME, "-n", SA_NAMESPACE, "--duration", "6h").strip()
    admin = json.loads(kubectl("config", "view", "--minify", "--raw", "-o", "json"))
    server = admin["clusters"][0]["cluster"]
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "bench",
        "clusters": [{"name": "bench", "cluster": server}],
        "users": [{"name": SA_NAME, "user": {"token": token}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": SA_NAME}}],
    }
    path = OUT / "operator.kubeconfig"
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    # The APF configuration is picked up asynchronously: wait until the schema classifies requests.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        kubectl("get", "namespace", SA_NAMESPACE, kubeconfig=path)
        if metric_sum(scrape_apiserver(), "apiserver_flowcontrol_dispatched_requests_total", flow_schema=FLOW_SCHEMA) > 0:
            return path
        time.sleep(1)
    raise RuntimeError(f"FlowSchema {FLOW_SCHEMA} does not classify the ServiceAccount's requests")


class Operator:
    def __init__(self, args: str, kubeconfig: pathlib.Path, env: dict[str, str]):
        self.args, self.kubeconfig, self.env = args, kubeconfig, env
        self.started: int | None = None

    def start(self) -> int:
        # make operator-start says "already running" and succeeds when the pidfile names a live
        # operator: here that would be someone else's, so refuse instead of measuring it.
        if PIDFILE.exists():
            try:
                os.kill(int(PIDFILE.read_text().strip()), 0)
                raise RuntimeError(f"another operator is running (pid {PIDFILE.read_text().strip()} in {PIDFILE})")
            except (ValueError, ProcessLookupError):
                pass
        make = ["make", "--no-print-directory", "-s", "operator-start", f"OPERATOR_ARGS={self.args}",
                f"OPERATOR_LOG={OPERATOR_LOG}", f"OPERATOR_PIDFILE={PIDFILE}", f"KUBECONFIG={self.kubeconfig}"]
        # Extra environment (--env) reaches ansible-operator and, through it, ansible-runner and ansible.
        done = run(make, env={**os.environ, **self.env}, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"make operator-start failed:\n{done.stdout}{done.stderr}")
        pid = self.pid()
        cmdline = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        if "rfc3339nano" not in cmdline or not OPERATOR_LOG.exists():
            raise RuntimeError(f"the operator in {PIDFILE} (pid {pid}) is not the one this bench started: {cmdline}")
        self.started = pid
        return pid

    def stop(self) -> None:
        """Stop the operator this bench started (and nobody else's)."""
        try:
            ours = self.started is not None and self.pid() == self.started
        except (OSError, ValueError):
            ours = False
        if ours:
            self.started = None
            run(["make", "--no-print-directory", "-s", "operator-stop", f"OPERATOR_PIDFILE={PIDFILE}"], check=False)

    @staticmethod
    def pid() -> int:
        return int(PIDFILE.read_text().strip())


def wait_runs(oplog: OperatorLog, since: int, want: set[str], timeout: float) -> list[dict]:
    """Wait until a run finished (after log offset `since`) for every "namespace/name" in want."""
    deadline = time.monotonic() + timeout
    while True:
        runs = oplog.runs(since)
        seen = {f"{r['namespace']}/{r['name']}" for r in runs}
        if want <= seen or time.monotonic() > deadline:
            return runs
        time.sleep(0.2)


def wait_quiet(oplog: OperatorLog, root: int, quiet: float, timeout: float) -> float:
    """Wait until no ansible-runner runs and no run has ended for `quiet` seconds."""
    started = time.monotonic()
    last_size, last_change = oplog.offset(), time.monotonic()
    while time.monotonic() - started < timeout:
        size = oplog.offset()
        busy = tree_usage(root)["runners"] > 0
        if size != last_size or busy:
            last_size, last_change = size, time.monotonic()
        elif time.monotonic() - last_change >= quiet:
            return time.monotonic() - started
        time.sleep(0.5)
    return -1.0
