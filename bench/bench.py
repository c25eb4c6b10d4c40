#!/usr/bin/env python3
"""How fast and how light the operator is: models up, steady, and down (`make bench`).

    .venv/bin/python bench/bench.py [--operator-args "..."] [--models 100] [--namespaces 10]
                                    [--idle-seconds 60] [--pokes 5] [--steady-minutes 3] [--steady-share 0.1]
                                    [--skip PHASE,...] [--label NAME] [--wait-free 0]
    .venv/bin/python bench/bench.py --check      read-only self-check of the parsers (no cluster change)

It refuses to start while other tests or operators run, or while ansible-runner/ansible-playbook
processes are on the machine (an operator's leftovers would skew every figure). Then, in order (it
owns the local cluster while it runs):

1. setup: restarts the local cluster with LLM_TESTBED_JOB_SECONDS=5 (a simulated pull takes 5 s),
   gives the operator a ServiceAccount whose FlowSchema lets the API server count exactly its
   requests, starts the real ansible-operator (`make operator-start`, under its supervisor);
2. single: one model, kubectl apply -> Serving (a watch), minus the 5 s pull;
3. noop: pokes a dependent Service of that model (the role does not own the annotation) and times
   each no-op run from the runner artifacts; CPU of the operator's process tree per run;
4. many: 100 models in 10 namespaces, one kubectl apply: until all are Serving and Ready, API
   requests per model, peak RSS of the operator and its descendants, CPU per reconcile;
5. idle: the finished pull Jobs removed (as their TTL would), then 60 s: CPU and reconciles;
6. restart: the operator restarted, every model gets one no-op reconcile, all changed=0;
7. mixed: the 100 Serving while 10 % of them change spec every minute (a few minutes): how many
   changes converge and how fast, CPU, reconciles per change;
8. delete-many: the 100 deleted at once: until all are gone, CPU, reconciles, what is left;
9. delete-single: the one model deleted: until gone (target < 5 s), CPU;
then stops the operator and brings the local cluster back with its default job time.

Every row prints its target (issue 14) and the Go peer's figures head the table for reference. The
table and every detail (per-task durations, per-stage timings, API requests by verb and resource)
go to bench/out/. The parts live in bench/llmbench/ (one file, one job).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys

from llmbench import apply, changes, delete, steady
from llmbench.common import ADMIN_KUBECONFIG, FLOW_SCHEMA, GO_PEER, MiB, OUT, PIDFILE, ROOT, log
from llmbench.control import cluster, others_running, refuse_leftovers, wait_until_free
from llmbench.parsing import API_METRICS, OperatorLog, api_delta, parse_metrics, parse_time, read_run, stage_summary, task_profile
from llmbench.report import machine
from llmbench.sampling import scrape_apiserver, tree_usage
from llmbench.session import Bench

PHASES = {
    "single": apply.single, "noop": steady.noop_pokes, "many": apply.hundred, "idle": steady.idle, "restart": steady.restart,
    "mixed": changes.mixed, "delete-many": delete.delete_many, "delete-single": delete.delete_single,
}
NEEDS = {"noop": "single", "delete-single": "single", "idle": "many", "restart": "many", "mixed": "many", "delete-many": "many"}


def check() -> int:
    """Read-only checks of the parsers against what this machine has: no cluster change."""
    ok = True
    assert abs(parse_time("2026-12-02T15:19:44.891744+00:00") - parse_time("2026-12-02T15:19:44.891744123Z")) < 1e-6
    assert parse_time("2026-12-02T15:19:50Z") == dt.datetime(2026, 12, 2, 15, 19, 50, tzinfo=dt.UTC).timestamp()
    sample = 'apiserver_request_total{code="200",resource="pods",verb="GET"} 12\napiserver_request_total_x 3\n# c\n'
    assert parse_metrics(sample, API_METRICS) == {("apiserver_request_total", (("code", "200"), ("resource", "pods"), ("verb", "GET"))): 12.0}
    before = {("apiserver_flowcontrol_dispatched_requests_total", (("flow_schema", FLOW_SCHEMA), ("priority_level", "workload-low"))): 10.0}
    after = {("apiserver_flowcontrol_dispatched_requests_total", (("flow_schema", FLOW_SCHEMA), ("priority_level", "workload-low"))): 25.0,
             ("apiserver_flowcontrol_dispatched_requests_total", (("flow_schema", "exempt"), ("priority_level", "exempt"))): 5.0}
    delta = api_delta(before, after)
    assert delta["operator"] == 15 and delta["all_dispatched"] == 20, delta
    print("check: time, metrics and delta parsers: ok")
    if ADMIN_KUBECONFIG.exists():
        try:
            samples = scrape_apiserver()
            flows = {dict(k[1]).get("flow_schema") for k in samples if k[0] == "apiserver_flowcontrol_dispatched_requests_total"}
            print(f"check: API server metrics: {len(samples)} samples, flow schemas seen: {sorted(flows)}")
        except RuntimeError as error:
            print(f"check: API server not reachable ({error.args[0].splitlines()[0]})")
    oplog = OperatorLog(ROOT / ".cluster" / "operator.log")
    runs = oplog.runs()
    print(f"check: .cluster/operator.log: {len(runs)} finished runs")
    details = [read_run(r["namespace"], r["name"], r["job"], r["ts"]) for r in runs[-20:]]
    details = [d for d in details if d]
    if details:
        print(f"check: artifacts of {len(details)} recent runs: stages {json.dumps(stage_summary(details))}")
        for task in task_profile(details, 6):
            print(f"check:   {task['seconds']:7.2f}s  ran {task['ran']:3d} skipped {task['skipped']:3d}  {task['task']}")
    if PIDFILE.exists():
        try:
            pid = int(PIDFILE.read_text())
            usage = tree_usage(pid)
            print(f"check: operator pid {pid}: tree of {usage['processes']} processes, RSS {usage['rss'] / MiB:.0f} MiB, CPU {usage['cpu']:.1f}s")
        except (ValueError, OSError):
            pass
    busy = others_running()
    print("check: machine " + ("busy: " + "; ".join(busy) if busy else "free for a bench run"))
    print(f"check: machine {json.dumps(machine())}")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--operator-args", default="--watches-file watches.yaml --health-probe-bind-address 127.0.0.1:6789 "
                        "--metrics-bind-address 127.0.0.1:8686 --metrics-secure=false --max-concurrent-reconciles 2 "
                        "--zap-log-level info --zap-time-encoding=rfc3339nano",
                        help="OPERATOR_ARGS for make operator-start (keep --zap-time-encoding=rfc3339nano)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment of the operator and its ansible runs (e.g. ANSIBLE_PIPELINING=True); repeatable")
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--idle-seconds", type=float, default=60)
    parser.add_argument("--pokes", type=int, default=5, help="isolated no-op reconciles to time")
    parser.add_argument("--steady-minutes", type=float, default=3, help="length of the mixed steady state")
    parser.add_argument("--steady-share", type=float, default=0.10, help="share of the models changing spec each minute")
    parser.add_argument("--skip", default="", help=f"phases to leave out, comma-separated: {', '.join(PHASES)}")
    parser.add_argument("--timeout", type=float, default=600, help="longest wait for the models to be Serving")
    parser.add_argument("--label", default="", help="tag for the output files, e.g. baseline")
    parser.add_argument("--runtime", default="", help="the models' spec.serve.runtime (default: a plain image); vllm gets a PodMonitor")
    parser.add_argument("--prometheus-operator-crds", action="store_true",
                        help="install the Prometheus Operator's CRDs first (PodMonitors are then made; docs/monitoring.md)")
    parser.add_argument("--wait-free", type=float, default=0, help="wait up to this long for other tests/operators to end")
    parser.add_argument("--reuse-cluster", action="store_true", help="do not restart the cluster (its job time may not be 5 s)")
    parser.add_argument("--keep-cluster", action="store_true", help="leave the bench cluster up instead of the default one")
    parser.add_argument("--check", action="store_true", help="read-only self-check, changes nothing")
    opts = parser.parse_args()
    if opts.check:
        return check()
    skip = {s for s in opts.skip.split(",") if s}
    unknown = skip - set(PHASES)
    if unknown:
        parser.error(f"unknown phase(s) {', '.join(sorted(unknown))}; phases: {', '.join(PHASES)}")
    phases = [p for p in PHASES if p not in skip and NEEDS.get(p) not in skip]
    if "rfc3339nano" not in opts.operator_args:
        opts.operator_args += " --zap-time-encoding=rfc3339nano"
    wait_until_free(opts.wait_free)
    refuse_leftovers()
    bench = Bench(opts)
    bench.details["machine"] = machine()
    started_at = dt.datetime.now(dt.UTC)
    failed = None
    try:
        bench.setup()
        for phase in phases:
            log(f"phase {phase}")
            try:
                PHASES[phase](bench)
            except Exception as error:  # noqa: BLE001 (one phase's trouble: say so, measure the rest)
                log(f"phase {phase} failed: {type(error).__name__}: {error}")
                bench.row(f"phase {phase}", f"failed: {type(error).__name__}: {str(error)[:80]}", "runs", False)
    except Exception as error:  # noqa: BLE001 (report what was measured, then clean up)
        failed = error
        log(f"aborted: {type(error).__name__}: {error}")
    except KeyboardInterrupt:
        failed = (bench.guard.reason if hasattr(bench, "guard") else None) or "interrupted"
        log(f"aborted: {failed}")
    finally:
        bench.stop()
        others = hasattr(bench, "guard") and bench.guard.reason
        if others:
            log("leaving the cluster as it is: someone else is using it now")
        elif not opts.keep_cluster and not opts.reuse_cluster:
            log("bringing the local cluster back up with its default job time")
            try:
                cluster("down")
                cluster("up")
            except RuntimeError as error:
                log(str(error))
    m = bench.details["machine"]
    caption = (f"llm-operator bench {started_at:%Y-%m-%d %H:%M} UTC{' [' + opts.label + ']' if opts.label else ''} - "
               f"{m['nproc']} cores {m['cpu']}, {m['memory_gib']} GiB, load at start {m['load_average'][0]:.2f}, "
               f"at end {os.getloadavg()[0]:.2f}; {m['ansible_core']}; "
               f"{' '.join(opts.env) + ' ' if opts.env else ''}ansible-operator run {opts.operator_args}\n"
               f"reference: {GO_PEER}")
    text = caption + "\n" + bench.table() + ("\n" + f"ABORTED: {failed}" if failed else "") + "\n"
    print(text, end="")
    stamp = started_at.strftime("%Y%m%dT%H%M%SZ") + (f"-{opts.label}" if opts.label else "")
    OUT.mkdir(parents=True, exist_ok=True)
    bench.details["table"] = bench.rows
    for name in (f"bench-{stamp}", "latest"):
        (OUT / f"{name}.txt").write_text(text)
        (OUT / f"{name}.json").write_text(json.dumps(bench.details, indent=1, default=str))
    log(f"written: bench/out/bench-{stamp}.txt and .json (details: stages, per-task profile, API requests by verb)")
    return 1 if failed or any(r[3] == "FAIL" for r in bench.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
