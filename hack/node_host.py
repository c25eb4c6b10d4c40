"""What the real node changes on the host, and how each change is undone (used by hack/node.py).

Every change is recorded or findable so that `down` can remove exactly it: the host settings
(sysctls) are snapshotted before the first change and written back; the bridge, the iptables chains,
the mounts and the cgroups all carry names or paths of this project only.

The traffic rule (nothing leaves this machine but to the package registries; kwok's fake pod IPs
exist nowhere) is enforced in the mangle table, which kube-proxy never touches, so the order of the
rules cannot change under it:
  LLMOP-OUT (from POSTROUTING, sees forwarded and local packets after kube-proxy's DNAT):
    let loopback traffic pass (the host to its own bridge address); drop packets from the pod subnet that would leave through any interface but the bridge;
    drop packets to kwok's fake pod range and to the Service range (a VIP that was not translated).
  LLMOP-IN (from INPUT): the API server and kubelet ports answer only on loopback and the bridge.
"""

from __future__ import annotations

import json
import os
import pathlib
import shlex
import subprocess

# Host settings the node's parts change: the node turns on forwarding, the kubelet rewrites the
# kernel defaults it wants (protectKernelDefaults is false), kube-proxy may touch the bridge hooks.
SYSCTLS = [
    "net/ipv4/ip_forward",
    "net/ipv4/conf/all/route_localnet",
    "net/bridge/bridge-nf-call-iptables",
    "net/bridge/bridge-nf-call-ip6tables",
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
]
CHAIN_OUT = "LLMOP-OUT"
CHAIN_IN = "LLMOP-IN"
CGROUP_ROOT = pathlib.Path("/sys/fs/cgroup")


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, check=check)


# --- host settings ---------------------------------------------------------------------------------

def snapshot_sysctls(path: pathlib.Path) -> None:
    """Record the current values once; a second `up` keeps the first record (the original host)."""
    if path.exists():
        return
    values = {}
    for key in SYSCTLS:
        file = pathlib.Path("/proc/sys") / key
        if file.exists():
            values[key] = file.read_text().strip()
    path.write_text(json.dumps(values, indent=1) + "\n")


def restore_sysctls(path: pathlib.Path) -> list[str]:
    """Write the recorded values back; returns the settings that had changed."""
    if not path.exists():
        return []
    changed = []
    for key, value in json.loads(path.read_text()).items():
        file = pathlib.Path("/proc/sys") / key
        if file.exists() and file.read_text().strip() != value:
            file.write_text(value + "\n")
            changed.append(f"{key.replace('/', '.')}={value}")
    path.unlink()
    return changed


def set_sysctl(key: str, value: str) -> None:
    (pathlib.Path("/proc/sys") / key).write_text(value + "\n")


# --- /etc/hosts --------------------------------------------------------------------------------------

HOSTS = pathlib.Path("/etc/hosts")
HOSTS_MARK = "# llm-operator real node"


def add_host(name: str, address: str) -> None:
    """The API server reaches a kubelet by the node's Hostname address first (logs, exec): let this
    machine resolve the node's name to its bridge address, without asking any DNS server."""
    remove_host()
    with HOSTS.open("a") as hosts:
        hosts.write(f"{address} {name} {HOSTS_MARK}\n")


def remove_host() -> None:
    if HOSTS.exists() and HOSTS_MARK in HOSTS.read_text():
        HOSTS.write_text("".join(line for line in HOSTS.read_text().splitlines(keepends=True) if HOSTS_MARK not in line))


# --- bridge ----------------------------------------------------------------------------------------

def link_exists(name: str) -> bool:
    return run("ip", "link", "show", "dev", name, check=False).returncode == 0


def create_bridge(name: str, address: str) -> None:
    """The pod network's bridge, with the node's address: the kubelet and the API server's
    advertised address need it before the first pod exists (the CNI bridge plugin reuses it)."""
    if not link_exists(name):
        run("ip", "link", "add", name, "type", "bridge")
    if address not in run("ip", "-o", "addr", "show", "dev", name).stdout:
        run("ip", "addr", "add", address, "dev", name)
    run("ip", "link", "set", name, "up")


def delete_bridge(name: str) -> None:
    if not link_exists(name):
        return
    # veths left attached (a pod whose netns went first) go with their bridge.
    for line in run("ip", "-o", "link", "show", "master", name, check=False).stdout.splitlines():
        port = line.split(":")[1].strip().split("@")[0]
        run("ip", "link", "delete", port, check=False)
    run("ip", "link", "delete", name)


# --- iptables --------------------------------------------------------------------------------------

def _ipt(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run("iptables", "-w", "5", "-t", "mangle", *args, check=check)


def add_rules(bridge: str, pod_cidr: str, fake_pod_cidr: str, service_cidr: str, ports: list[int]) -> None:
    remove_rules()
    _ipt("-N", CHAIN_OUT)
    # This machine talking to itself (the API server to the kubelet at the bridge address) leaves
    # through lo with a source in the pod subnet: it never leaves the machine.
    _ipt("-A", CHAIN_OUT, "-o", "lo", "-j", "RETURN")
    _ipt("-A", CHAIN_OUT, "-s", pod_cidr, "!", "-o", bridge, "-m", "comment", "--comment",
         "llm-operator: pod traffic never leaves the machine", "-j", "DROP")
    _ipt("-A", CHAIN_OUT, "-d", fake_pod_cidr, "-m", "comment", "--comment",
         "llm-operator: kwok fake pod IPs exist nowhere", "-j", "DROP")
    _ipt("-A", CHAIN_OUT, "-d", service_cidr, "-m", "comment", "--comment",
         "llm-operator: untranslated Service VIPs never leave", "-j", "DROP")
    _ipt("-I", "POSTROUTING", "1", "-j", CHAIN_OUT)
    _ipt("-N", CHAIN_IN)
    _ipt("-A", CHAIN_IN, "-i", "lo", "-j", "RETURN")
    _ipt("-A", CHAIN_IN, "-i", bridge, "-j", "RETURN")
    _ipt("-A", CHAIN_IN, "-p", "tcp", "-m", "multiport", "--dports", ",".join(map(str, ports)),
         "-m", "comment", "--comment", "llm-operator: cluster ports only on loopback and the bridge", "-j", "DROP")
    _ipt("-I", "INPUT", "1", "-j", CHAIN_IN)


def remove_rules() -> None:
    for hook, chain in (("POSTROUTING", CHAIN_OUT), ("INPUT", CHAIN_IN)):
        while _ipt("-D", hook, "-j", chain, check=False).returncode == 0:
            pass
        _ipt("-F", chain, check=False)
        _ipt("-X", chain, check=False)


def remove_kube_chains() -> list[str]:
    """Remove every KUBE-* chain, and the rules jumping to them, from the IPv4 and IPv6 filter, nat and
    mangle tables: the kubelet's (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT), which
    nothing else removes, and whatever `kube-proxy --cleanup` left. The node's kubelet and kube-proxy
    are the only ones on this machine. Returns what was removed."""
    removed = []
    for command in ("iptables", "ip6tables"):
        for table in ("filter", "nat", "mangle"):
            listing = run(command, "-w", "5", "-t", table, "-S", check=False).stdout.splitlines()
            for line in listing:
                words = shlex.split(line)
                if words[:1] == ["-A"] and not words[1].startswith("KUBE-") and "-j" in words \
                        and words[words.index("-j") + 1].startswith("KUBE-"):
                    run(command, "-w", "5", "-t", table, "-D", *words[1:], check=False)
            chains = [line.split()[1] for line in listing if line.startswith("-N KUBE-")]
            for chain in chains:
                run(command, "-w", "5", "-t", table, "-F", chain, check=False)
            for chain in chains:
                if run(command, "-w", "5", "-t", table, "-X", chain, check=False).returncode == 0:
                    removed.append(f"{command}/{table}/{chain}")
    return removed


def rules_present() -> bool:
    return _ipt("-S", CHAIN_OUT, check=False).returncode == 0


# --- mounts, cgroups, processes ---------------------------------------------------------------------

def mounts_under(*roots: pathlib.Path) -> list[str]:
    """Mount points at or below any of `roots`, deepest first (from /proc/self/mountinfo)."""
    prefixes = [str(r.resolve()) for r in roots]
    found = []
    for line in pathlib.Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if any(point == p or point.startswith(p + "/") for p in prefixes):
            found.append(point)
    return sorted(set(found), key=lambda p: p.count("/"), reverse=True)


def unmount_all(*roots: pathlib.Path) -> list[str]:
    left = []
    for point in mounts_under(*roots):
        if run("umount", point, check=False).returncode != 0:
            if run("umount", "-l", point, check=False).returncode != 0:
                left.append(point)
    return left


def cgroup_dirs(name: str) -> list[pathlib.Path]:
    """The `name` cgroup (e.g. kubepods) in every v1 hierarchy, with everything below it."""
    found = []
    if not CGROUP_ROOT.exists():
        return found
    for hierarchy in CGROUP_ROOT.iterdir():
        top = hierarchy / name
        if top.is_dir():
            found += [pathlib.Path(d) for d, _, _ in os.walk(top)]
    return found


def cgroup_pids(name: str) -> set[int]:
    pids: set[int] = set()
    for directory in cgroup_dirs(name):
        procs = directory / "cgroup.procs"
        try:
            pids |= {int(p) for p in procs.read_text().split()}
        except OSError:
            continue
    return pids


def remove_cgroups(name: str) -> list[str]:
    left = []
    for directory in sorted(cgroup_dirs(name), key=lambda p: len(p.parts), reverse=True):
        try:
            directory.rmdir()
        except OSError:
            left.append(str(directory))
    return left


def processes_of(executable: pathlib.Path, marker: str) -> list[int]:
    """Processes running `executable` whose command line names `marker` (our socket): the shims
    containerd detached, found precisely, never by a name pattern."""
    pids = []
    target = str(executable.resolve())
    for proc in pathlib.Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            exe = os.readlink(proc / "exe").removesuffix(" (deleted)")
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if exe == target and marker in cmdline:
            pids.append(int(proc.name))
    return pids
