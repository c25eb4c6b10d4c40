#!/usr/bin/env python3
"""The real node of the local cluster: containerd, kube-proxy and a kubelet on this machine.

    node.py up       start them and wait until the node is Ready (the cluster must be up, started
                     with LLM_REAL_NODE=1: `make cluster-up REAL_NODE=1` does both)
    node.py down     stop every process it started; remove pods, mounts, network namespaces,
                     cgroups, the bridge and the iptables chains; restore the host settings
    node.py status   say whether it runs

The node `real-node-1` registers next to the kwok nodes with the taint
llm-operator.io/real-node=true:NoSchedule, so only pods that ask for it land there (kwok leaves it
alone: it manages only nodes annotated kwok.x-k8s.io/node=fake). Address plan, none overlapping:
  pods on the bridge llmop0   10.244.0.0/24 (the node itself is 10.244.0.1)
  Services                    10.96.0.0/16  (kube-proxy, iptables mode)
  kwok's fake pod IPs         10.0.0.0/24   (exist nowhere: dropped, never routed)
Machine-wide state lives in /run/llm-operator and /var/lib/llm-operator (one node per machine);
logs in .cluster/node/. containerd's image store (/var/lib/llm-operator/containerd) is kept across
`down` so imported images survive; `node.py down --purge-images` removes it too.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import node_host  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = ROOT / "bin"
TEMPLATES = ROOT / "hack" / "node"
KUBECONFIG = ROOT / ".cluster" / "kubeconfig"
LOGS = ROOT / ".cluster" / "node"

NODE_NAME = "real-node-1"
BRIDGE = "llmop0"
POD_CIDR = "10.244.0.0/24"
NODE_IP = "10.244.0.1"
SERVICE_CIDR = "10.96.0.0/16"
FAKE_POD_CIDR = "10.0.0.0/24"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"
KUBELET_PORT = 10250
TAINT_KEY = "llm-operator.io/real-node"
# Pods of a namespace with these annotations all run on the real node (the API server's
# PodNodeSelector and PodTolerationRestriction admission plugins add the selector and toleration).
REAL_NAMESPACE_ANNOTATIONS = {
    "scheduler.alpha.kubernetes.io/node-selector": f"{TAINT_KEY}=true",
    "scheduler.alpha.kubernetes.io/defaultTolerations": f'[{{"key": "{TAINT_KEY}", "operator": "Exists", "effect": "NoSchedule"}}]',
}
# This checkout's models (`make model`), served over HTTP to the node's pods on the bridge address.
MODELS_DIR = pathlib.Path(os.environ.get("LLM_NODE_MODELS", str(ROOT / ".cache" / "models")))
MODELS_PORT = 8090

RUN = pathlib.Path("/run/llm-operator")
LIB = pathlib.Path("/var/lib/llm-operator")
CONTAINERD_STATE = RUN / "containerd"
CONTAINERD_SOCKET = CONTAINERD_STATE / "containerd.sock"
CONTAINERD_ROOT = LIB / "containerd"
IMPORTED = LIB / "imported-images.json"
KUBELET_ROOT = LIB / "kubelet"
VOLUMES = LIB / "volumes"
CNI_DATA = LIB / "cni"
STATE = RUN / "node"
SYSCTL_RECORD = STATE / "sysctls.json"
# Paths the kubelet uses whatever its root directory: the pod log directories, and the device
# plugins' socket directory (a constant in the kubelet, /var/lib/kubelet/device-plugins/kubelet.sock).
# Those that did not exist before the node started are removed when it stops.
DEVICE_PLUGIN_SOCKET = pathlib.Path("/var/lib/kubelet/device-plugins/kubelet.sock")
HOST_DIRS = [pathlib.Path("/var/log/pods"), pathlib.Path("/var/log/containers"), DEVICE_PLUGIN_SOCKET.parent.parent,
             DEVICE_PLUGIN_SOCKET.parent]
BINARIES = ["kubelet", "kube-proxy", "containerd", "ctr", "containerd-shim-runc-v2", "runc", "crictl",
            "cni/bridge", "cni/host-local", "cni/loopback", "cni/portmap"]
# The kubelet's pod cgroups, and containerd's default parent for sandboxes made without one.
CGROUPS = ["kubepods", "k8s.io"]
# Started in this order, stopped in the reverse one.
COMPONENTS = ["containerd", "kube-proxy", "volumes", "models", "kubelet"]


def say(message: str) -> None:
    print(f"node: {message}", flush=True)


def fail(message: str) -> None:
    print(f"node: {message}", file=sys.stderr)
    sys.exit(1)


def values(api_port: int) -> dict[str, str]:
    return {
        "BIN": str(BIN), "BRIDGE": BRIDGE, "POD_CIDR": POD_CIDR, "NODE_IP": NODE_IP, "NODE_NAME": NODE_NAME,
        "SERVICE_CIDR": SERVICE_CIDR, "PAUSE_IMAGE": PAUSE_IMAGE, "KUBECONFIG": str(KUBECONFIG),
        "CONTAINERD_ROOT": str(CONTAINERD_ROOT), "CONTAINERD_STATE": str(CONTAINERD_STATE),
        "CONTAINERD_SOCKET": str(CONTAINERD_SOCKET), "CNI_CONF_DIR": str(STATE / "cni"),
        "CNI_DATA_DIR": str(CNI_DATA), "API_PORT": str(api_port),
    }


def render(name: str, target: pathlib.Path, vals: dict[str, str]) -> pathlib.Path:
    text = (TEMPLATES / name).read_text()
    for key, value in vals.items():
        text = text.replace("${" + key + "}", value)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


def kubectl(*args: str, check: bool = False, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "kubectl"), "--kubeconfig", str(KUBECONFIG), *args],
                          capture_output=True, text=True, check=check, timeout=timeout)


def pid_file(component: str) -> pathlib.Path:
    return STATE / f"{component}.pid"


# The processes this run started (a child that died is a zombie until we reap it: poll() tells).
STARTED: dict[str, subprocess.Popen] = {}


def running_pid(component: str) -> int | None:
    if component in STARTED and STARTED[component].poll() is not None:
        return None
    try:
        pid = int(pid_file(component).read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def start(component: str, args: list[str]) -> None:
    log = (LOGS / f"{component}.log").open("a")
    env = dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}")
    process = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env,
                               start_new_session=True, cwd=str(STATE))
    pid_file(component).write_text(f"{process.pid}\n")
    STARTED[component] = process


def wait_for(what: str, check, timeout: float, component: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if running_pid(component) is None:
            break
        time.sleep(0.5)
    tail = "\n".join((LOGS / f"{component}.log").read_text(errors="replace").splitlines()[-20:])
    down()
    fail(f"{what} did not happen within {timeout:.0f}s; last lines of .cluster/node/{component}.log:\n{tail}")


def healthz(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def node_ready() -> bool:
    out = kubectl("get", "node", NODE_NAME, "-o",
                  "jsonpath={.status.conditions[?(@.type=='Ready')].status}").stdout
    return out.strip() == "True"


def api_port_of_cluster() -> int:
    server = kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}").stdout
    return int(server.rsplit(":", 1)[1])


def pause_image_present() -> bool:
    out = subprocess.run([str(BIN / "ctr"), "--address", str(CONTAINERD_SOCKET), "-n", "k8s.io", "images",
                          "ls", "-q", f"name=={PAUSE_IMAGE}"], capture_output=True, text=True, check=False)
    return PAUSE_IMAGE in out.stdout


def import_images(directory: pathlib.Path) -> None:
    """Import the image archives of `directory` (docker or OCI archives, e.g. `make images`) into the
    node's containerd, namespace k8s.io where the kubelet looks. Pods never pull them. The image store
    outlives `down`, so an archive already imported (same path, size and time) is not read again.
    The record is kept by the archive's file name (puller.tar, ...), which names the same image tags
    in every checkout: another checkout's archive imported since replaces the tags, and this one is
    imported again."""
    archives = sorted(directory.glob("*.tar")) if directory.is_dir() else []
    record = json.loads(IMPORTED.read_text()) if IMPORTED.exists() else {}
    for archive in archives:
        stat = archive.stat()
        key = f"{archive}:{stat.st_size}:{stat.st_mtime_ns}"
        if record.get(archive.name) == key:
            continue
        started = time.monotonic()
        result = subprocess.run([str(BIN / "ctr"), "--address", str(CONTAINERD_SOCKET), "-n", "k8s.io", "images", "import",
                                 str(archive)], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            fail(f"importing {archive} failed: {result.stderr.strip()}")
        record[archive.name] = key
        IMPORTED.write_text(json.dumps(record, indent=1) + "\n")
        say(f"imported {archive.name} in {time.monotonic() - started:.1f}s")


def real_namespace(name: str) -> dict:
    """A Namespace whose pods all run on the real node (and tolerate its taint)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "annotations": dict(REAL_NAMESPACE_ANNOTATIONS)}}


def model_url(file_name: str) -> str:
    """Where the node's pods download a file of MODELS_DIR (`make model`) from."""
    return f"http://{NODE_IP}:{MODELS_PORT}/{file_name}"


def prepare(api_port: int) -> None:
    """The host side, before the API server starts (it advertises the bridge address): directories,
    the record of the host settings, the bridge, the traffic rules, forwarding. Idempotent."""
    for directory in (STATE, LOGS, CONTAINERD_ROOT, KUBELET_ROOT, VOLUMES, CNI_DATA):
        directory.mkdir(parents=True, exist_ok=True)
    node_host.snapshot_sysctls(SYSCTL_RECORD)
    created = STATE / "created-dirs"
    if not created.exists():
        created.write_text("".join(f"{d}\n" for d in HOST_DIRS if not d.exists()))
    node_host.create_bridge(BRIDGE, f"{NODE_IP}/24")
    node_host.add_host(NODE_NAME, NODE_IP)
    node_host.add_rules(BRIDGE, POD_CIDR, FAKE_POD_CIDR, SERVICE_CIDR, [api_port, KUBELET_PORT, MODELS_PORT])
    # Pods reach each other and the API server through Service VIPs: the host routes between them.
    node_host.set_sysctl("net/ipv4/ip_forward", "1")


def up() -> None:
    missing = [b for b in BINARIES if not (BIN / b).exists()]
    if missing:
        fail(f"missing {', '.join('bin/' + b for b in missing)}: run `make node-tools` first")
    if os.geteuid() != 0:
        fail("the real node needs root (bridge, iptables, mounts, cgroups)")
    if kubectl("get", "--raw", "/readyz").stdout.strip() != "ok":
        fail("the cluster is not up: `make cluster-up REAL_NODE=1`")
    endpoints = kubectl("get", "endpointslices", "-n", "default", "-l", "kubernetes.io/service-name=kubernetes",
                        "-o", "jsonpath={.items[*].endpoints[*].addresses[*]}").stdout.split()
    if NODE_IP not in endpoints:
        fail(f"the cluster was started without the real node (the API server advertises {endpoints}, "
             f"pods need {NODE_IP}): `make cluster-down`, then `make cluster-up REAL_NODE=1`")
    if all(running_pid(c) for c in COMPONENTS) and node_ready():
        say(f"already up ({NODE_NAME} Ready)")
        return
    started = time.monotonic()
    vals = values(api_port_of_cluster())
    prepare(int(vals["API_PORT"]))

    render("cni.conflist", STATE / "cni" / "10-llm-operator.conflist", vals)
    start("containerd", [str(BIN / "containerd"), "--config", str(render("containerd.toml", STATE / "containerd.toml", vals))])
    wait_for("containerd's socket", lambda: CONTAINERD_SOCKET.is_socket() and subprocess.run(
        [str(BIN / "ctr"), "--address", str(CONTAINERD_SOCKET), "version"], capture_output=True, check=False).returncode == 0,
        30, "containerd")
    import_images(pathlib.Path(os.environ.get("LLM_NODE_IMAGES", str(ROOT / ".cache" / "images"))))
    if not pause_image_present():
        say(f"warning: {PAUSE_IMAGE} is not imported: no pod can start until it is (make images-import)")

    start("volumes", [sys.executable, str(ROOT / "hack" / "node_volumes.py"), str(BIN / "kubectl"), str(KUBECONFIG), str(VOLUMES)])
    MODELS_DIR.mkdir(parents=True, exist_ok=True)
    start("models", [sys.executable, "-m", "http.server", "--bind", NODE_IP, "--directory", str(MODELS_DIR), str(MODELS_PORT)])
    start("kubelet", [
        str(BIN / "kubelet"), "--config", str(render("kubelet.yaml", STATE / "kubelet.yaml", vals)),
        "--kubeconfig", str(KUBECONFIG), "--root-dir", str(KUBELET_ROOT), "--cert-dir", str(KUBELET_ROOT / "pki"),
        "--hostname-override", NODE_NAME, "--node-ip", NODE_IP,
        "--node-labels", "type=real,llm-operator.io/real-node=true", "--v=1",
    ])
    wait_for(f"{NODE_NAME} Ready", node_ready, 120, "kubelet")
    # kube-proxy after the Node exists: it reads the node's address from it, and its health check
    # fails while there is no Node of its name.
    start("kube-proxy", [str(BIN / "kube-proxy"), "--config", str(render("kube-proxy.yaml", STATE / "kube-proxy.yaml", vals)), "--v=1"])
    wait_for("kube-proxy healthz", lambda: healthz("http://127.0.0.1:10256/healthz"), 60, "kube-proxy")
    version = kubectl("get", "node", NODE_NAME, "-o", "jsonpath={.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion}").stdout
    say(f"{NODE_NAME} Ready in {time.monotonic() - started:.1f}s ({version}); pods {POD_CIDR} on {BRIDGE}, Services {SERVICE_CIDR}")


def stop(component: str, timeout: float = 20) -> None:
    """SIGTERM to the component's process group (each runs in its own session), SIGKILL after
    `timeout`. containerd's shims leave that group on purpose: down() finds them separately."""
    pid = running_pid(component)
    if pid is not None:
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while running_pid(component) is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        time.sleep(0.2)
    pid_file(component).unlink(missing_ok=True)


def kill_all(pids, why: str) -> None:
    pids = sorted(set(pids) - {os.getpid()})
    if not pids:
        return
    say(f"killing {len(pids)} leftover {why}")
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.5)


def remove_pods() -> None:
    """Stop and remove every pod sandbox through the CRI, while containerd still runs: that tears
    down their network (CNI DEL: veths, IP leases) and unmounts their root filesystems."""
    if running_pid("containerd") is None or not (BIN / "crictl").exists():
        return
    crictl = [str(BIN / "crictl"), "--runtime-endpoint", f"unix://{CONTAINERD_SOCKET}", "--timeout", "30s"]
    subprocess.run([*crictl, "rmp", "--all", "--force"], capture_output=True, check=False, timeout=120)


def down(purge_images: bool = False, quiet: bool = False) -> None:
    if not STATE.exists() and not node_host.link_exists(BRIDGE) and not node_host.rules_present():
        if not quiet:
            say("not running")
        return
    stop("kubelet")
    stop("volumes")
    stop("models")
    remove_pods()
    stop("kube-proxy")
    if (STATE / "kube-proxy.yaml").exists():
        # Removes kube-proxy's KUBE-* chains from every table.
        subprocess.run([str(BIN / "kube-proxy"), "--cleanup", "--config", str(STATE / "kube-proxy.yaml")],
                       capture_output=True, check=False, timeout=60)
    stop("containerd")
    kill_all(node_host.processes_of(BIN / "containerd-shim-runc-v2", str(CONTAINERD_SOCKET)), "containerd shims")
    for cgroup in CGROUPS:
        kill_all(node_host.cgroup_pids(cgroup), f"processes in the {cgroup} cgroups")
    left_mounts = node_host.unmount_all(RUN, KUBELET_ROOT, CONTAINERD_ROOT, VOLUMES)
    left_cgroups = [d for cgroup in CGROUPS for d in node_host.remove_cgroups(cgroup)]
    node_host.delete_bridge(BRIDGE)
    node_host.remove_rules()
    node_host.remove_kube_chains()
    node_host.remove_host()
    restored = node_host.restore_sysctls(SYSCTL_RECORD)
    created_dirs = (STATE / "created-dirs").read_text().split() if (STATE / "created-dirs").exists() else []
    for directory in created_dirs:
        shutil.rmtree(directory, ignore_errors=True)
    # The stopped kubelet's socket, also where its directory was there before.
    DEVICE_PLUGIN_SOCKET.unlink(missing_ok=True)
    for directory in (RUN, KUBELET_ROOT, VOLUMES, CNI_DATA, *([CONTAINERD_ROOT] if purge_images else [])):
        shutil.rmtree(directory, ignore_errors=True)
    if purge_images:
        IMPORTED.unlink(missing_ok=True)
    if left_mounts or left_cgroups:
        fail(f"down left mounts {left_mounts} and cgroups {left_cgroups}")
    say("down" + (f" (restored {', '.join(restored)})" if restored else ""))


def status() -> None:
    states = {c: running_pid(c) for c in COMPONENTS}
    if not any(states.values()):
        say("down")
        sys.exit(1)
    say(", ".join(f"{c} {'pid ' + str(p) if p else 'NOT running'}" for c, p in states.items()))
    print(kubectl("get", "node", NODE_NAME, "-o", "wide").stdout, end="")


def main(argv: list[str]) -> None:
    if argv[:1] == ["up"] and len(argv) == 1:
        up()
    elif argv[:1] == ["down"] and set(argv[1:]) <= {"--purge-images"}:
        down(purge_images="--purge-images" in argv)
    elif argv == ["status"]:
        status()
    else:
        fail("usage: node.py up|down [--purge-images]|status")


if __name__ == "__main__":
    main(sys.argv[1:])
