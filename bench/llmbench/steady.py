"""The steady state: isolated no-op reconciles, idle, an operator restart."""

from __future__ import annotations

import time

from .common import POKE_ANNOTATION, MiB, kubectl, log
from .control import wait_quiet, wait_runs
from .parsing import api_delta, existing_jobs, metric_sum, read_run, stage_summary, task_profile
from .report import fmt, median
from .sampling import scrape_apiserver, scrape_operator, tree_usage
from .session import Bench


def noop_pokes(bench: Bench) -> None:
    namespace, name = bench.single_key
    results, metrics_before, usage_before, api_before = [], scrape_operator(), tree_usage(bench.root), scrape_apiserver()
    for poke in range(bench.opts.pokes):
        since = bench.oplog.offset()
        kubectl("annotate", "service", name, "-n", namespace, f"{POKE_ANNOTATION}={poke}", "--overwrite")
        poked = time.time()
        runs = wait_runs(bench.oplog, since, {f"{namespace}/{name}"}, 60)
        if not runs:
            log(f"poke {poke}: no reconcile within 60 s")
            continue
        detail = read_run(namespace, name, runs[-1]["job"], runs[-1]["ts"])
        if detail:
            detail["poke_to_exit"] = runs[-1]["ts"] - poked
            results.append(detail)
        time.sleep(1)
    metrics_after, usage_after, api = scrape_operator(), tree_usage(bench.root), api_delta(api_before, scrape_apiserver())
    count, total = (metric_sum(metrics_after, f"controller_runtime_reconcile_time_seconds_{part}")
                    - metric_sum(metrics_before, f"controller_runtime_reconcile_time_seconds_{part}") for part in ("count", "sum"))
    playbook = median([r["playbook_seconds"] for r in results])
    whole = median([r["total_seconds"] for r in results])
    changed = [r["changed"] for r in results]
    cpu = (usage_after["cpu"] - usage_before["cpu"]) / max(1, count or len(results))
    bench.details["noop"] = {"stages": stage_summary(results), "profile": task_profile(results), "cpu_per_reconcile": cpu,
                            "controller_runtime_mean": total / count if count else None, "reconciles": count,
                            "poke_to_exit": median([r["poke_to_exit"] for r in results]),
                            "api": api, "runs": [{k: v for k, v in r.items() if k != "tasks"} for r in results]}
    bench.row(f"no-op reconcile, playbook (1st event -> stats), median of {len(results)}", fmt(playbook, digits=2), "< 2 s",
             playbook is not None and playbook < 2)
    bench.row("no-op reconcile, whole run (runner start -> exit)", fmt(whole, digits=2), "< 2 s", whole is not None and whole < 2)
    bench.row("no-op reconcile: operator CPU per run", fmt(cpu, "CPU-s", 2), "", None)
    bench.row("no-op reconcile: operator's API requests per run", f"{api['operator'] / max(1, count or len(results)):.1f}", "", None)
    bench.row("no-op reconcile: changed", f"{sum(1 for c in changed if c == 0)} of {len(changed)} runs changed=0",
             "all changed=0", bool(changed) and all(c == 0 for c in changed))



def idle(bench: Bench) -> None:
    namespaces = bench.namespaces() + [bench.single_key[0]]
    # The finished pull Jobs go after llmmodel_pull_ttl_seconds (10 min), each removal being one
    # reconcile of its model (a dependent deleted; the weights stay recorded, nothing is pulled).
    # That would fall into the window by chance: remove them now, as the TTL would, count those
    # reconciles apart, and measure the steady state after them.
    log("idle: removing the finished pull Jobs first, as their TTL would")
    since = bench.oplog.offset()
    for namespace in namespaces:
        kubectl("delete", "jobs", "--all", "-n", namespace, "--cascade=background", "--wait=false")
    wait_quiet(bench.oplog, bench.root, 12, 300)
    after_ttl = [r for r in bench.oplog.runs(since) if r["namespace"] in namespaces]
    pulls = sum(len(kubectl("get", "jobs", "-n", ns, "-o", "name").split()) for ns in namespaces)
    bench.details["idle_ttl"] = {"reconciles": len(after_ttl), "jobs_left": pulls}
    bench.row("pull Jobs removed (as by their TTL): reconciles caused, per model", f"{len(after_ttl) / len(bench.watcher.models):.1f}",
             "", None)
    bench.row("pull Jobs removed: pulled again", f"{pulls} Jobs", "0", pulls == 0)
    jobs_before, log_since = existing_jobs(namespaces), bench.oplog.offset()
    before, started = tree_usage(bench.root), time.monotonic()
    seen = set(jobs_before)
    log(f"idle: {bench.opts.idle_seconds}s with every model Serving")
    while time.monotonic() - started < bench.opts.idle_seconds:
        time.sleep(0.5)
        seen |= existing_jobs(namespaces)  # artifact dirs are pruned; remember every one seen
    after = tree_usage(bench.root)
    elapsed = time.monotonic() - started
    cpu = after["cpu"] - before["cpu"]
    reconciles = max(len(seen - jobs_before), len(bench.oplog.runs(log_since)))
    bench.details["idle"] = {"seconds": elapsed, "cpu_seconds": cpu, "reconciles": reconciles, "rss_mib": after["rss"] / MiB}
    bench.row(f"idle, {bench.opts.models} models Serving: operator CPU over {elapsed:.0f} s",
             f"{cpu:.2f} CPU-s ({100 * cpu / elapsed:.2f} % of a core)", "< 1 % of a core", cpu / elapsed < 0.01)
    bench.row("idle: reconciles during the window", str(reconciles), "0", reconciles == 0)
    bench.row("idle: RSS of operator + processes", fmt(after["rss"] / MiB, "MiB", 0), "", None)



def restart(bench: Bench) -> None:
    namespaces = bench.namespaces() + [bench.single_key[0]]
    keys = {k for k in bench.watcher.models}
    log(f"restart: every one of {len(keys)} models gets a no-op reconcile")
    bench.guard.expected_pid = None
    bench.operator.stop()
    since = bench.oplog.offset()
    started = time.monotonic()
    bench.root = bench.operator.start()
    bench.guard.expected_pid = bench.sampler.root = bench.root
    runs = wait_runs(bench.oplog, since, keys, bench.opts.timeout)
    elapsed = time.monotonic() - started
    first = {}
    for r in runs:
        first.setdefault(f"{r['namespace']}/{r['name']}", r)
    details = [read_run(r["namespace"], r["name"], r["job"], r["ts"]) for r in first.values() if r["namespace"] in namespaces]
    details = [d for d in details if d]
    changed = [d["changed"] for d in details]
    usage = bench.sampler.window(started)
    bench.details["restart"] = {"seconds": elapsed, "runs": len(runs), "stages": stage_summary(details),
                               "profile": task_profile(details), "usage": usage,
                               "changed_runs": [f"{d['namespace']}/{d['name']}" for d in details if d["changed"]]}
    bench.row(f"restart: {len(keys)} no-op reconciles done after", fmt(elapsed), "", None)
    bench.row("restart: no-op run, median whole run (concurrent)", fmt(median([d["total_seconds"] for d in details]), digits=2), "", None)
    bench.row("restart: runs with changed=0", f"{sum(1 for c in changed if c == 0)} of {len(changed)}", "all",
             bool(changed) and len(changed) == len(keys) and all(c == 0 for c in changed))
    bench.row("restart: peak RSS, operator + ansible processes", fmt(usage.get("peak_rss_mib"), "MiB", 0), "< 500 MiB",
             usage.get("peak_rss_mib", 0) < 500)

