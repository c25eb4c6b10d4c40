#!/usr/bin/env python3
"""The local test cluster: a real control plane from bin/ with kwok playing the kubelets.

    cluster.py up       start it (a no-op that says so when it is already up)
    cluster.py down     stop it and remove its state; no process or listening port is left
    cluster.py status   say whether it is up, and show its nodes
    cluster.py stop     stop every component (etcd, the control plane, kwok), keeping their state
    cluster.py start    start them again after a stop; returns once the API server is ready
                        (tests/reliability restarts the control plane under a running operator;
                        a real node, when one runs, is not stopped: its kubelet reconnects)

Environment: LLM_CLUSTER_PORT (API server port, default 36443), LLM_TESTBED_JOB_SECONDS (how long a
simulated Job pod runs before it succeeds, default 3), LLM_REAL_NODE=1 (also start the real node of
hack/node.py: containerd, kube-proxy and a kubelet; the API server then also answers on the node's
bridge address for its pods). Everything else binds to 127.0.0.1. The kubeconfig is written to
.cluster/kubeconfig. `down` stops the real node too when it runs.
"""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import node  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = ROOT / "bin"
STATE = ROOT / ".cluster"
KUBECONFIG = STATE / "kubeconfig"
WORKDIR = STATE / "kwok"
NAME = "llm-operator"
CLUSTER_DIR = WORKDIR / "clusters" / NAME
TEMPLATES = ROOT / "hack" / "cluster"
# The kwok nodes of objects.yaml (CPU nodes and a GPU pool).
NODES = (TEMPLATES / "objects.yaml").read_text().count("\nkind: Node\n")
BINARIES = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "kwokctl"]


def fail(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr)
    sys.exit(1)


def api_port() -> int:
    raw = os.environ.get("LLM_CLUSTER_PORT", "36443")
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        fail(f"LLM_CLUSTER_PORT={raw!r} is not a port number")
    return int(raw)


def kubectl(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "kubectl"), "--kubeconfig", str(KUBECONFIG), *args],
        capture_output=True,
        text=True,
        check=check,
        timeout=timeout,
    )


def is_ready() -> bool:
    if not KUBECONFIG.exists() or not (BIN / "kubectl").exists():
        return False
    try:
        return kubectl("get", "--raw", "/readyz", check=False, timeout=5).stdout.strip() == "ok"
    except subprocess.TimeoutExpired:
        return False


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def real_node_wanted() -> bool:
    raw = os.environ.get("LLM_REAL_NODE", "0")
    if raw not in ("0", "1", ""):
        fail(f"LLM_REAL_NODE={raw!r}: use 1 (with the real node) or 0")
    return raw == "1"


def render_config(port: int, real_node: bool) -> pathlib.Path:
    job_seconds = os.environ.get("LLM_TESTBED_JOB_SECONDS", "3")
    try:
        job_ms = int(float(job_seconds) * 1000)
    except ValueError:
        fail(f"LLM_TESTBED_JOB_SECONDS={job_seconds!r} is not a number of seconds")
    values = {
        "API_PORT": str(port),
        "BIN": str(BIN),
        "JOB_DURATION_MS": str(job_ms),
        "ADVERTISE_ADDRESS": node.NODE_IP if real_node else "127.0.0.1",
        "API_BIND_ADDRESS": "0.0.0.0" if real_node else "127.0.0.1",
        "VOLUME_DIR": str(node.VOLUMES),
    }
    parts = []
    for name in ("kwokctl.yaml", "stages.yaml"):
        text = (TEMPLATES / name).read_text()
        for key, value in values.items():
            text = text.replace("${" + key + "}", value)
        parts.append(text)
    path = STATE / "kwokctl.yaml"
    path.write_text("\n---\n".join(parts))
    return path


def kwokctl(*args: str, log: pathlib.Path) -> int:
    env = dict(os.environ, KWOK_WORKDIR=str(WORKDIR))
    with log.open("a") as out:
        return subprocess.run([str(BIN / "kwokctl"), "--name", NAME, *args], env=env, stdout=out, stderr=out, check=False).returncode


def wait_for(what: str, check, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    fail(f"timed out after {timeout:.0f}s waiting for {what}; logs: {CLUSTER_DIR / 'logs'}")


def nodes_ready() -> bool:
    out = kubectl("get", "nodes", "-o", "jsonpath={range .items[*]}{.status.conditions[?(@.type=='Ready')].status}{'\\n'}{end}", check=False).stdout
    states = out.split()
    return len(states) >= NODES and all(s == "True" for s in states)


def up() -> None:
    real_node = real_node_wanted()
    if is_ready():
        print(f"cluster: already up (kubeconfig {KUBECONFIG.relative_to(ROOT)})")
        if real_node:
            node.up()
        return
    missing = [b for b in BINARIES if not (BIN / b).exists()]
    if missing:
        fail(f"missing {', '.join('bin/' + b for b in missing)}: run `make tools` first")
    if CLUSTER_DIR.exists():
        # Left over from a crash or a reboot: clear it so the new cluster starts clean.
        down(quiet=True)
    port = api_port()
    if port_in_use(port):
        fail(f"port {port} on 127.0.0.1 is in use: stop what holds it or set LLM_CLUSTER_PORT to a free port")
    STATE.mkdir(exist_ok=True)
    started = time.monotonic()
    if real_node:
        node.prepare(port)
    config = render_config(port, real_node)
    log = STATE / "kwokctl.log"
    log.write_text("")
    code = kwokctl("create", "cluster", "--config", str(config), "--kubeconfig", str(KUBECONFIG), "--wait", "60s", "--timeout", "120s", log=log)
    if code != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        down(quiet=True)
        fail(f"kwokctl create cluster failed (exit {code}); last lines of {log.relative_to(ROOT)}:\n{tail}")
    wait_for("/readyz", is_ready, 60)
    ready_after = time.monotonic() - started
    kubectl("apply", "-f", str(TEMPLATES / "objects.yaml"))
    start_helpers()
    wait_for(f"{NODES} Ready nodes", nodes_ready, 60)
    # Pods of the default namespace can be created once its ServiceAccount exists.
    wait_for("the default ServiceAccount", lambda: kubectl("get", "serviceaccount", "default", "-n", "default", check=False).returncode == 0, 60)
    print(f"cluster: up in {time.monotonic() - started:.1f}s (API ready after {ready_after:.1f}s) at https://127.0.0.1:{port}")
    if real_node:
        node.up()
    print(f"cluster: export KUBECONFIG={KUBECONFIG}")


def start_helpers() -> None:
    """The test bed's own controllers, each logging to .cluster/<name>.log; `down` stops them with the rest:
    the kubelet's Secret check for kwok's pods (hack/cluster/secret_gate.py) and the node-local
    volumes' provisioner (hack/volume_provisioner.py)."""
    helpers = {
        "secret-gate": [str(TEMPLATES / "secret_gate.py"), str(BIN / "kubectl"), str(KUBECONFIG)],
        "volume-provisioner": [str(ROOT / "hack" / "volume_provisioner.py"), str(BIN / "kubectl"), str(KUBECONFIG), str(node.VOLUMES)],
    }
    (CLUSTER_DIR / "pids").mkdir(parents=True, exist_ok=True)
    for name, args in helpers.items():
        log = open(STATE / f"{name}.log", "ab")
        helper = subprocess.Popen([sys.executable, *args], stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        (CLUSTER_DIR / "pids" / f"{name}.pid").write_text(str(helper.pid))


def pids() -> list[int]:
    found = []
    for pid_file in (CLUSTER_DIR / "pids").glob("*.pid") if CLUSTER_DIR.exists() else []:
        try:
            found.append(int(pid_file.read_text().strip()))
        except ValueError:
            continue
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def down(quiet: bool = False) -> None:
    # The real node first, while the API server still answers its kubelet. Only a checkout with the
    # node tools (make node-tools) can have started it; one without them leaves the machine's node alone.
    if (BIN / "kubelet").exists():
        node.down(quiet=True)
    if not CLUSTER_DIR.exists():
        if not quiet:
            print("cluster: not running")
        return
    remaining = pids()
    STATE.mkdir(exist_ok=True)
    kwokctl("delete", "cluster", log=STATE / "kwokctl.log")
    # kwokctl stops what it started; make sure, so no process or port outlives `down`.
    for pid in remaining:
        if alive(pid):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while any(alive(p) for p in remaining) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in remaining:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    subprocess.run(["rm", "-rf", str(WORKDIR), str(KUBECONFIG)], check=True)
    if not quiet:
        print("cluster: down")


def status() -> None:
    if not is_ready():
        print("cluster: down")
        sys.exit(1)
    print(f"cluster: up (kubeconfig {KUBECONFIG.relative_to(ROOT)})")
    print(kubectl("get", "nodes", "-o", "wide").stdout, end="")


def kwokctl_or_fail(action: str) -> None:
    log = STATE / "kwokctl.log"
    code = kwokctl(action, "cluster", log=log)
    if code != 0:
        fail(f"kwokctl {action} cluster failed (exit {code}); see {log.relative_to(ROOT)}")


def stop() -> None:
    if not CLUSTER_DIR.exists():
        fail("not running")
    kwokctl_or_fail("stop")
    print("cluster: stopped (state kept; `cluster.py start` resumes it)")


def start() -> None:
    if not CLUSTER_DIR.exists():
        fail("no stopped cluster to start: use `cluster.py up`")
    started = time.monotonic()
    kwokctl_or_fail("start")
    wait_for("/readyz", is_ready, 120)
    print(f"cluster: started in {time.monotonic() - started:.1f}s")


def main(argv: list[str]) -> None:
    commands = {"up": up, "down": down, "status": status, "stop": stop, "start": start}
    if len(argv) != 1 or argv[0] not in commands:
        fail("usage: cluster.py up|down|status|stop|start")
    commands[argv[0]]()


if __name__ == "__main__":
    main(sys.argv[1:])
