"""A mixed steady state: the many models Serving while a share of them changes spec every minute.

Each change is a new server argument (the server rolls, nothing is pulled again), spread evenly over
the window; a change has converged when its model reports Serving and Ready with that generation
observed.
"""

from __future__ import annotations

import json
import time

from .common import MiB, kubectl, log
from .control import wait_quiet
from .report import fmt, median, percentile
from .sampling import tree_usage
from .session import Bench


def change(key: str, serial: int) -> tuple[float, int]:
    """Give the model a new server argument; returns (when, the generation it made)."""
    namespace, name = key.split("/")
    args = ["--model", "/model-weights", "--served-model-name", name, "--seed", str(serial)]
    at = time.monotonic()
    out = kubectl("patch", "llmmodel", name, "-n", namespace, "--type", "merge", "-p", json.dumps({"spec": {"serve": {"args": args}}}),
                  "-o", "jsonpath={.metadata.generation}")
    return at, int(out)


def mixed(bench: Bench) -> None:
    keys, minutes, share = bench.fleet, bench.opts.steady_minutes, bench.opts.steady_share
    n = len(keys)
    per_minute = max(1, round(share * n))
    interval = 60.0 / per_minute
    wait_quiet(bench.oplog, bench.root, 3, 120)
    log(f"mixed: {n} models Serving, {per_minute} spec changes a minute for {minutes:g} min")
    log_since, before, started = bench.oplog.offset(), tree_usage(bench.root), time.monotonic()
    changes = []
    serial = 0
    while time.monotonic() - started < minutes * 60:
        key = keys[(serial * 7) % n]  # a stride, so consecutive changes land in different namespaces
        at, generation = change(key, serial)
        changes.append({"key": key, "at": at, "generation": generation})
        serial += 1
        time.sleep(max(0.0, started + serial * interval - time.monotonic()))
    window = time.monotonic() - started
    after = tree_usage(bench.root)
    runs_in_window = len(bench.oplog.runs(log_since))
    # The last changes converge after the window; their time still counts.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(bench.watcher.converged_at(c["key"], c["generation"]) is None for c in changes):
        time.sleep(0.5)
    latencies = []
    for item in changes:
        done = bench.watcher.converged_at(item["key"], item["generation"])
        item["converged_after"] = None if done is None else done - item["at"]
        latencies.append(item["converged_after"])
    converged = sum(1 for value in latencies if value is not None)
    cpu = after["cpu"] - before["cpu"]
    bench.details["mixed"] = {"window_seconds": window, "changes": changes, "cpu_seconds": cpu, "reconciles": runs_in_window,
                              "rss_mib": after["rss"] / MiB}
    label = f"mixed, {n} Serving, {100 * share:.0f} % changing spec a minute, {window / 60:.1f} min"
    bench.row(f"{label}: changes Serving+Ready on their generation", f"{converged} of {len(changes)}", "all",
              bool(changes) and converged == len(changes))
    bench.row(f"{label}: change -> converged, p50 / p95 / max",
              f"{fmt(median(latencies))} / {fmt(percentile(latencies, 0.95))} / {fmt(max((v for v in latencies if v is not None), default=None))}",
              "", None)
    bench.row(f"{label}: operator CPU", f"{cpu:.1f} CPU-s ({100 * cpu / window:.1f} % of a core)", "", None)
    bench.row(f"{label}: reconciles per change", f"{runs_in_window / max(1, len(changes)):.1f}", "", None)
