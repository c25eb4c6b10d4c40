#!/usr/bin/env python3
"""Two shards of the operator on the local cluster: each watches half of the namespaces (docs/scaling.md).

    .venv/bin/python bench/shards.py [--models 100] [--namespaces 10] [--reuse-cluster]

Restarts the local cluster with 5 s pulls, starts two real ansible-operators from this checkout,
each under its supervisor with its own WATCH_NAMESPACE and leader-election id, the second in a
network namespace of its own (bench/llmbench/netns.py says why), applies the models in one kubectl apply, and measures: time until all are Serving,
reconciles and CPU of each shard, that no shard touched the other's namespaces, then deletes them
all and measures again. Prints one table; the details go to bench/out/shards-*.json. Owns the
cluster while it runs (run it under the cluster lock); brings the default cluster back at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.parse

from llmbench.common import GO_PEER, OUT, PULL_SECONDS, ROOT, RUN_LABEL, FLEET_LABEL, kubectl, log, run
from llmbench.control import cluster, refuse_leftovers, wait_quiet, wait_until_free
from llmbench.models import ModelWatcher, apply_objects, model_manifest
from llmbench.parsing import OperatorLog
from llmbench.report import fmt, table
from llmbench.sampling import Sampler

# Shard b runs in a network namespace of its own (llmbench/netns.py says why), so both use the same
# ports, as two pods would.
SHARDS = (
    {"name": "a", "health": 6789, "metrics": 8686, "netns": False},
    {"name": "b", "health": 6789, "metrics": 8686, "netns": True},
)
BENCH = ROOT / "bench"


class Shard:
    def __init__(self, spec: dict, namespaces: list[str]):
        self.name, self.namespaces = spec["name"], namespaces
        self.log_path = OUT / f"shard-{self.name}.log"
        self.pidfile = ROOT / ".cluster" / f"shard-{self.name}.pid"
        self.args = (f"--watches-file watches.yaml --health-probe-bind-address 127.0.0.1:{spec['health']} "
                     f"--metrics-bind-address 127.0.0.1:{spec['metrics']} --metrics-secure=false "
                     f"--max-concurrent-reconciles 2 --leader-elect --leader-election-id llm-operator-shard-{self.name} "
                     f"--leader-election-namespace default --zap-log-level info --zap-time-encoding=rfc3339nano")
        self.health = f"http://127.0.0.1:{spec['health']}/readyz"
        self.netns = spec["netns"]
        self.oplog = OperatorLog(self.log_path)
        self.bridges: list[subprocess.Popen] = []

    def start(self) -> int:
        if self.log_path.exists():
            self.log_path.unlink()
        env = {**os.environ, "WATCH_NAMESPACE": ",".join(self.namespaces), "LLM_OPERATOR_HEALTH_URL": self.health}
        make = ["make", "--no-print-directory", "-s", "operator-start", f"OPERATOR_ARGS={self.args}", f"OPERATOR_LOG={self.log_path}",
                f"OPERATOR_PIDFILE={self.pidfile}"]
        if self.netns:
            port = int(urllib.parse.urlparse(json.loads(kubectl("config", "view", "--minify", "-o", "json"))["clusters"][0]["cluster"]["server"]).port)
            socket_path = str(ROOT / ".cluster" / f"shard-{self.name}-apiserver.sock")
            if os.path.exists(socket_path):
                os.unlink(socket_path)
            python = [sys.executable, "-m", "llmbench.netns"]
            self.bridges.append(subprocess.Popen([*python, "outside", socket_path, str(port)], cwd=BENCH))
            time.sleep(0.5)
            inside = " ".join(shlex.quote(a) for a in [*python, "inside", socket_path, str(port)])
            script = (f"ip link set lo up && cd {shlex.quote(str(BENCH))} && {{ {inside} & echo $! > {shlex.quote(socket_path)}.pid; }} "
                      f"&& cd {shlex.quote(str(ROOT))} && exec " + " ".join(shlex.quote(a) for a in make))
            done = run(["unshare", "--net", "--", "bash", "-c", script], env=env, check=False)
        else:
            done = run(make, env=env, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"shard {self.name} did not start:\n{done.stdout}{done.stderr}")
        self.root = int(self.pidfile.read_text())
        self.sampler = Sampler(self.root)
        self.sampler.start()
        return self.root

    def stop(self) -> None:
        if hasattr(self, "sampler"):
            self.sampler.stopped.set()
        run(["make", "--no-print-directory", "-s", "operator-stop", f"OPERATOR_PIDFILE={self.pidfile}"], check=False)
        inside = ROOT / ".cluster" / f"shard-{self.name}-apiserver.sock.pid"
        if inside.exists():
            try:
                os.kill(int(inside.read_text()), signal.SIGTERM)
            except (ValueError, ProcessLookupError):
                pass
            inside.unlink()
        for bridge in self.bridges:
            bridge.terminate()
            bridge.wait(5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--reuse-cluster", action="store_true")
    opts = parser.parse_args()
    wait_until_free(0)
    refuse_leftovers()
    run_id = "s" + dt.datetime.now(dt.UTC).strftime("%H%M%S")
    namespaces = [f"bench-{run_id}-{i:02d}" for i in range(opts.namespaces)]
    half = len(namespaces) // 2
    shards = [Shard(SHARDS[0], namespaces[:half]), Shard(SHARDS[1], namespaces[half:])]
    rows: list[tuple[str, str, str, str]] = []
    details: dict = {"run_id": run_id, "options": vars(opts)}

    def row(metric: str, value: str, target: str = "", ok: bool | None = None) -> None:
        rows.append((metric, value, target, "info" if ok is None else ("PASS" if ok else "FAIL")))

    failed = None
    watcher = None
    try:
        OUT.mkdir(parents=True, exist_ok=True)
        if not opts.reuse_cluster:
            log(f"restarting the local cluster with LLM_TESTBED_JOB_SECONDS={PULL_SECONDS}")
            cluster("down")
            cluster("up", job_seconds=PULL_SECONDS)
        kubectl("apply", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces]}))
        for shard in shards:
            log(f"starting shard {shard.name} for {', '.join(shard.namespaces)}")
            shard.start()
        watcher = ModelWatcher(f"{RUN_LABEL}={run_id}")
        watcher.start()
        per_ns = max(1, opts.models // len(namespaces))
        models = [model_manifest(namespaces[i // per_ns % len(namespaces)], f"m{i:03d}", i, run_id, "many") for i in range(opts.models)]
        keys = [f"{m['metadata']['namespace']}/{m['metadata']['name']}" for m in models]
        since = {s.name: s.oplog.offset() for s in shards}
        started = time.monotonic()
        apply_objects(models)
        all_serving = watcher.wait_for(keys, "serving_at", opts.timeout)
        to_serving = max(t for t in watcher.times(keys, "serving_at") if t) - started if all_serving else None
        for shard in shards:
            wait_quiet(shard.oplog, shard.root, 6, 300)
        up = {}
        for shard in shards:
            runs = shard.oplog.runs(since[shard.name])
            foreign = [r for r in runs if r["namespace"] not in shard.namespaces]
            up[shard.name] = {"runs": len(runs), "foreign_runs": len(foreign), "usage": shard.sampler.window(started)}
        row(f"2 shards, {opts.models} models: apply -> all Serving", fmt(to_serving), "< 180 s", to_serving is not None and to_serving < 180)
        for shard in shards:
            u = up[shard.name]
            row(f"shard {shard.name} ({len(shard.namespaces)} namespaces): reconciles / CPU / peak RSS",
                f"{u['runs']} / {fmt(u['usage'].get('cpu_seconds'), 'CPU-s')} / {fmt(u['usage'].get('peak_rss_mib'), 'MiB', 0)}", "", None)
        foreign = sum(u["foreign_runs"] for u in up.values())
        row("reconciles of a model outside the shard's namespaces", str(foreign), "0", foreign == 0)
        since = {s.name: s.oplog.offset() for s in shards}
        started = time.monotonic()
        kubectl("delete", "llmmodels", "-A", "-l", f"{RUN_LABEL}={run_id},{FLEET_LABEL}=many", "--wait=false")
        all_gone = watcher.wait_for(keys, "gone_at", opts.timeout)
        to_gone = max(t for t in watcher.times(keys, "gone_at") if t) - started if all_gone else None
        for shard in shards:
            wait_quiet(shard.oplog, shard.root, 3, 120)
        down = {s.name: {"runs": len(s.oplog.runs(since[s.name])), "usage": s.sampler.window(started)} for s in shards}
        row(f"2 shards, {opts.models} models: delete -> all gone", fmt(to_gone), "< 60 s", to_gone is not None and to_gone < 60)
        cpu_down = sum(d["usage"].get("cpu_seconds", 0) for d in down.values())
        row("2 shards delete: reconciles / CPU of both", f"{sum(d['runs'] for d in down.values())} / {fmt(cpu_down, 'CPU-s')}", "", None)
        details.update(up=up, down=down, to_serving=to_serving, to_gone=to_gone)
    except Exception as error:  # noqa: BLE001 (report what was measured, then clean up)
        failed = error
        log(f"aborted: {type(error).__name__}: {error}")
    finally:
        if watcher:
            watcher.stopped.set()
        for shard in shards:
            shard.stop()
        if not opts.reuse_cluster:
            cluster("down")
            cluster("up")
    text = f"llm-operator shards {run_id}\nreference: {GO_PEER}\n{table(rows)}\n" + (f"ABORTED: {failed}\n" if failed else "")
    print(text, end="")
    (OUT / f"shards-{run_id}.json").write_text(json.dumps({**details, "table": rows}, indent=1, default=str))
    (OUT / f"shards-{run_id}.txt").write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
