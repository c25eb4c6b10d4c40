"""The processes under test, each on loopback with its own port, and what they cost."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "router" / "tests" / "fake_openai.py"
API_KEY = "sk-bench-0123456789abcdef"
TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def pids_of(pid: int) -> list[int]:
    """The process and its children (nginx's workers)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return [pid] + [int(child) for child in children]


def cpu_seconds(pid: int) -> float:
    total = 0
    for each in pids_of(pid):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


def rss_mib(pid: int) -> float:
    total = 0
    for each in pids_of(pid):
        for line in Path(f"/proc/{each}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


class Proc:
    """A started process; `port` is where it serves; stopped with SIGTERM, then SIGKILL."""

    def __init__(self, name: str, argv: list[str], port: int, cpu: str | None, env: dict | None = None):
        self.name = name
        self.port = port
        prefix = ["taskset", "-c", cpu] if cpu is not None and shutil.which("taskset") else []
        self.log = tempfile.NamedTemporaryFile(prefix=f"router-bench-{name}-", suffix=".log", delete=False)
        self.popen = subprocess.Popen(prefix + argv, stdout=self.log, stderr=subprocess.STDOUT,
                                      start_new_session=True, env=env)
        wait_port(port)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def pin(self, cpu: str) -> None:
        """Moves the running process (all its threads) to these CPUs ("0,1": anywhere)."""
        subprocess.run(["taskset", "-a", "-p", "-c", cpu, str(self.pid)], check=True, capture_output=True)

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(5)
        self.log.close()


def start_fake(cpu: str | None) -> Proc:
    port = free_port()
    return Proc("fake", [sys.executable, str(FAKE), str(port)], port, cpu)


def start_router(fake_port: int, workdir: Path, cpu: str | None, src: Path | None = None) -> Proc:
    """One router process (API keys, metrics, routing on); `src`: another tree's router/src (a
    baseline from git), run in place of the installed one."""
    workdir.mkdir(parents=True, exist_ok=True)
    table = workdir / "table.json"
    table.write_text(json.dumps({"models": [
        {"namespace": "bench", "name": "bench", "phase": "Serving", "endpoints": [f"127.0.0.1:{fake_port}"]}]}))
    keys = workdir / "keys.json"
    keys.write_text(json.dumps([{"name": "bench", "key": API_KEY, "namespaces": ["bench"]}]))
    port, admin = free_port(), free_port()
    argv = [sys.executable, "-m", "llm_router", "--host", "127.0.0.1", "--port", str(port), "--admin-port",
            str(admin), "--table-file", str(table), "--api-keys-file", str(keys)]
    env = None if src is None else {**os.environ, "PYTHONPATH": str(src)}
    proc = Proc("router", argv, port, cpu, env)
    proc.admin_port = admin
    time.sleep(1.5)  # the table file is read on the first tick
    return proc


def answered(proc: Proc) -> int:
    """Requests the router answered with 200, from its own metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{proc.admin_port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(int(float(value)) for value in re.findall(r'^llm_router_requests_total\{[^}]*code="200"\} (\S+)$',
                                                          text, re.M))


def baseline_src(ref: str, workdir: Path) -> Path:
    """router/src of a git commit, extracted under workdir (the router before a change, for one run)."""
    target = workdir / "baseline"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "router/src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target / "router" / "src"


NGINX_CONF = """
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    upstream fake {{ server 127.0.0.1:{fake}; keepalive 256; }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        client_max_body_size 8m;
        location / {{
            proxy_pass http://fake;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
    }}
}}
"""


def start_nginx(fake_port: int, workdir: Path, cpu: str | None) -> Proc | None:
    binary = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if binary is None:
        return None
    port = free_port()
    conf = workdir / "nginx.conf"
    conf.write_text(NGINX_CONF.format(dir=workdir, fake=fake_port, port=port))
    return Proc("nginx", [binary, "-c", str(conf), "-p", str(workdir)], port, cpu)
