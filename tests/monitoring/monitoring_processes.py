"""A real kube-state-metrics and a real Prometheus as processes on this machine, for the monitoring
tests (tests/monitoring) and the e2e suite (tests/e2e/test_e2e_monitoring.py).

Both listen on 127.0.0.1 only, on free ports, and are stopped (with everything they wrote) when the
`with` block ends. kube-state-metrics reads the cluster through a kubeconfig, as it would through its
ServiceAccount in a cluster, with the shipped model-metrics configuration. Prometheus gets a
configuration from the caller: what it may scrape is the caller's decision, and the e2e suite's
says why it never reaches a kwok pod.
"""

from __future__ import annotations

import json
import pathlib
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = REPO / "bin"
KSM_CONFIG = REPO / "config" / "prometheus" / "kube-state-metrics.yaml"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http_get(url: str, timeout: float = 10) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


class Process:
    """A child process with its log in a file; stop() ends it (SIGTERM, then SIGKILL) and waits."""

    def __init__(self, name: str, command: list[str], workdir: pathlib.Path):
        self.name, self.log = name, workdir / f"{name}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def check_running(self):
        if self.process.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self.process.returncode}:\n{self.tail()}")

    def wait_ready(self, url: str, timeout: float = 60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_running()
            try:
                http_get(url, timeout=2)
                return
            except (OSError, urllib.error.URLError):
                time.sleep(0.3)
        raise AssertionError(f"{self.name} did not answer {url} within {timeout:.0f} s:\n{self.tail()}")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


class KubeStateMetrics:
    """kube-state-metrics with the shipped model metrics (and, with `resources`, some built-in ones)."""

    def __init__(self, kubeconfig: str, namespaces: list[str], resources: list[str] | None = None):
        self.kubeconfig, self.namespaces, self.resources = kubeconfig, namespaces, resources
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/metrics"

    def __enter__(self):
        self._dir = tempfile.TemporaryDirectory(prefix="ksm-")
        workdir = pathlib.Path(self._dir.name)
        command = [str(BIN / "kube-state-metrics"), "--kubeconfig", self.kubeconfig,
                   "--host", "127.0.0.1", "--port", str(self.port),
                   "--telemetry-host", "127.0.0.1", "--telemetry-port", str(free_port()),
                   "--custom-resource-state-config-file", str(KSM_CONFIG),
                   "--namespaces", ",".join(self.namespaces)]
        command += ["--resources", ",".join(self.resources)] if self.resources else ["--custom-resource-state-only"]
        self.process = Process("kube-state-metrics", command, workdir)
        try:
            self.process.wait_ready(self.url)
        except BaseException:
            self.__exit__()
            raise
        return self

    def metrics(self) -> str:
        self.process.check_running()
        return http_get(self.url)

    def __exit__(self, *exc):
        self.process.stop()
        self._dir.cleanup()


class Prometheus:
    """Prometheus with the given configuration (a dict) and rule files (name -> rule-file dict)."""

    def __init__(self, config: dict, rules: dict[str, dict] | None = None):
        self.config, self.rules = config, rules or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        self._dir = tempfile.TemporaryDirectory(prefix="prometheus-")
        workdir = pathlib.Path(self._dir.name)
        config = dict(self.config, rule_files=[])
        for name, groups in self.rules.items():
            (workdir / name).write_text(yaml.safe_dump(groups, sort_keys=False))
            config["rule_files"].append(str(workdir / name))
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        checked = subprocess.run([str(BIN / "promtool"), "check", "config", str(workdir / "prometheus.yml")],
                                 capture_output=True, text=True, check=False)
        assert checked.returncode == 0, f"promtool check config:\n{checked.stdout}{checked.stderr}"
        self.process = Process("prometheus", [
            str(BIN / "prometheus"), f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}",
        ], workdir)
        try:
            self.process.wait_ready(f"{self.url}/-/ready")
        except BaseException:
            self.__exit__()
            raise
        return self

    def api(self, path: str, **params) -> dict:
        self.process.check_running()
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        answer = json.loads(http_get(f"{self.url}/api/v1/{path}{query}"))
        assert answer["status"] == "success", answer
        return answer["data"]

    def query(self, expr: str) -> list[dict]:
        """An instant query: [{metric: labels, value: float}, ...]."""
        data = self.api("query", query=expr)
        assert data["resultType"] in ("vector", "scalar"), data
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": float(data["result"][1])}]
        return [{"metric": item["metric"], "value": float(item["value"][1])} for item in data["result"]]

    def targets(self) -> list[dict]:
        return self.api("targets")["activeTargets"]

    def alerts(self) -> list[dict]:
        return self.api("alerts")["alerts"]

    def __exit__(self, *exc):
        self.process.stop()
        self._dir.cleanup()
