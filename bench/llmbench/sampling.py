"""Sampling while the bench runs: the operator's process tree (RSS, PSS, CPU) and the metrics of the
API server and the operator."""

from __future__ import annotations

import threading
import time
import urllib.request

import proctree

from .common import CLK_TCK, MiB, OPERATOR_METRICS, PAGE, kubectl
from .parsing import API_METRICS, parse_metrics


def scrape_apiserver() -> dict:
    return parse_metrics(kubectl("get", "--raw", "/metrics"), API_METRICS)


def scrape_operator() -> dict:
    try:
        with urllib.request.urlopen(OPERATOR_METRICS, timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    return parse_metrics(text, ("controller_runtime_reconcile_time_seconds_sum", "controller_runtime_reconcile_time_seconds_count",
                                "controller_runtime_reconcile_total"))



def proc_table() -> dict[int, dict]:
    return {
        pid: {
            "comm": comm,
            "ppid": int(fields[1]),
            "cpu_ticks": int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14]),
            "own_ticks": int(fields[11]) + int(fields[12]),
            "rss": int(fields[21]) * PAGE,
        }
        for pid, (comm, fields) in proctree.stats().items()
    }


def pss(pid: int) -> int:
    """Proportional set size (bytes): shared pages (forked ansible workers, libraries) counted once."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_usage(root: int) -> dict:
    """RSS (bytes) and CPU seconds of the tree. CPU counts each live process's own time plus that of
    the children it has reaped (cutime/cstime), so a process that came and went is still counted."""
    table = proc_table()
    # root and all below it (ansible-runner starts ansible-playbook in a session of its own, so the
    # process group or session is not enough).
    pids = ([root] if root in table else []) + proctree.descendants(root, {pid: info["ppid"] for pid, info in table.items()})
    # root is the supervisor (hack/operator_supervisor.py); "itself" is ansible-operator below it.
    itself = next((p for p in pids if table[p]["comm"].startswith("ansible-operat")), root)
    return {
        "rss": sum(table[p]["rss"] for p in pids),
        "pss": sum(pss(p) for p in pids),
        "rss_root": table[itself]["rss"] if itself in table else 0,
        "cpu": sum(table[p]["cpu_ticks"] for p in pids) / CLK_TCK,
        "cpu_root": table[itself]["own_ticks"] / CLK_TCK if itself in table else 0.0,
        "processes": len(pids),
        "runners": sum(1 for p in pids if table[p]["comm"].startswith("ansible-runner")),
    }


class Sampler(threading.Thread):
    """Samples the operator's process tree every `interval` seconds."""

    def __init__(self, root: int, interval: float = 0.5):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.samples: list[tuple[float, dict]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                self.samples.append((time.monotonic(), tree_usage(self.root)))
            except (OSError, ValueError, IndexError):
                pass
            self.stopped.wait(self.interval)

    def stop(self) -> None:
        self.stopped.set()
        self.join(5)

    def window(self, start: float, end: float | None = None) -> dict:
        chosen = [s for t, s in self.samples if t >= start and (end is None or t <= end)]
        if not chosen:
            return {"samples": 0}
        peak = max(chosen, key=lambda s: s["rss"])
        return {
            "samples": len(chosen),
            "peak_rss_mib": round(peak["rss"] / MiB, 1),
            "peak_rss_root_mib": round(max(s["rss_root"] for s in chosen) / MiB, 1),
            "peak_pss_mib": round(max(s["pss"] for s in chosen) / MiB, 1),
            "peak_processes": max(s["processes"] for s in chosen),
            "peak_runners": max(s["runners"] for s in chosen),
            "cpu_seconds": round(chosen[-1]["cpu"] - chosen[0]["cpu"], 2),
            "cpu_seconds_operator_itself": round(chosen[-1]["cpu_root"] - chosen[0]["cpu_root"], 2),
        }
