"""Bringing models up: one model, then many at once (time to Serving and Ready, API requests, CPU, RSS)."""

from __future__ import annotations

import json
import time

from .common import PULL_SECONDS, kubectl, log
from .control import wait_quiet
from .models import apply_objects, model_manifest
from .parsing import api_delta, existing_jobs, read_run, stage_summary, task_profile
from .report import fmt, median, percentile
from .sampling import scrape_apiserver
from .session import Bench


def single(bench: Bench) -> None:
    namespace, name = f"bench-{bench.run_id}-single", "single"
    key = f"{namespace}/{name}"
    kubectl("create", "namespace", namespace)
    log("single model: applying")
    applied_in = apply_objects([model_manifest(namespace, name, 999, bench.run_id, "single", bench.opts.runtime)])
    t0 = time.monotonic()
    serving = bench.watcher.wait_for([key], "serving_at", 120)
    ready = bench.watcher.wait_for([key], "ready_at", 60)
    serving_at, ready_at = bench.watcher.times([key], "serving_at")[0], bench.watcher.times([key], "ready_at")[0]
    to_serving = serving_at - t0 if serving else None
    to_ready = ready_at - t0 if ready else None
    wait_quiet(bench.oplog, bench.root, 6, 60)
    runs = [r for r in bench.oplog.runs() if r["name"] == name]
    bench.details["single"] = {"apply_seconds": round(applied_in, 3), "to_serving": to_serving, "to_ready": to_ready,
                              "runs": len(runs), "phases": bench.watcher.models.get(key, {}).get("phases")}
    value = None if to_serving is None else to_serving - PULL_SECONDS
    bench.row("1 model: apply -> Serving, minus 5 s pull", fmt(value), "< 5 s", value is not None and value < 5)
    bench.row("1 model: apply -> Ready (Deployment available)", fmt(to_ready), "", None)
    bench.row("1 model: reconciles until quiet", str(len(runs)), "", None)
    bench.single_key = (namespace, name)



def hundred(bench: Bench) -> None:
    n, per_ns = bench.opts.models, max(1, bench.opts.models // bench.opts.namespaces)
    namespaces = bench.namespaces()
    kubectl("apply", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces]}))
    models = [model_manifest(namespaces[i // per_ns % len(namespaces)], f"m{i:03d}", i, bench.run_id, "many", bench.opts.runtime) for i in range(n)]
    keys = [f"{m['metadata']['namespace']}/{m['metadata']['name']}" for m in models]
    bench.fleet = keys
    wait_quiet(bench.oplog, bench.root, 3, 60)
    api_before, log_since = scrape_apiserver(), bench.oplog.offset()
    started = time.monotonic()
    log(f"{n} models: applying in {len(namespaces)} namespaces")
    applied_in = apply_objects(models)
    t0 = time.monotonic()
    all_serving = bench.watcher.wait_for(keys, "serving_at", bench.opts.timeout)
    t_serving = time.monotonic()
    api_serving = scrape_apiserver()
    log(f"{n} models: {'all Serving' if all_serving else 'NOT all Serving'} after {t_serving - t0:.1f}s; waiting for Ready")
    all_ready = bench.watcher.wait_for(keys, "ready_at", bench.opts.timeout)
    api_ready = scrape_apiserver()
    quiet_after = wait_quiet(bench.oplog, bench.root, 12, 300)
    usage = bench.sampler.window(started)
    runs = [r for r in bench.oplog.runs(log_since) if r["namespace"] in namespaces]
    serving = [t - t0 if t else None for t in bench.watcher.times(keys, "serving_at")]
    ready = [t - t0 if t else None for t in bench.watcher.times(keys, "ready_at")]
    to_serving = (max(serving) if all_serving else None)
    to_serving_delta = api_delta(api_before, api_serving)
    to_ready_delta = api_delta(api_before, api_ready)
    # What the artifacts still hold (the last runs of each model, maxRunnerArtifacts of them).
    kept = [read_run(ns, nm, job) for ns, nm, job in existing_jobs(namespaces)]
    kept = [k for k in kept if k]
    bench.details["hundred"] = {
        "apply_seconds": round(applied_in, 2), "all_serving": all_serving, "all_ready": all_ready,
        "to_all_serving": to_serving, "serving_p50": median(serving), "serving_p95": percentile(serving, 0.95),
        "to_all_ready": max(ready) if all_ready else None, "quiet_after_ready": quiet_after,
        "runs": len(runs), "failed_runs": sum(1 for r in runs if not r["ok"]), "usage": usage,
        "serving_seconds": dict(zip(keys, serving, strict=True)), "ready_seconds": dict(zip(keys, ready, strict=True)),
        "runs_per_model": {k: sum(1 for r in runs if f"{r['namespace']}/{r['name']}" == k) for k in keys},
        "api_to_serving": to_serving_delta, "api_to_ready": to_ready_delta,
        "stages_of_kept_runs": stage_summary(kept), "profile_of_kept_runs": task_profile(kept),
    }
    done = sum(1 for t in serving if t is not None)
    value = fmt(to_serving) if all_serving else f"> {bench.opts.timeout:.0f} s ({done} of {n} Serving)"
    bench.row(f"{n} models at once: apply -> all Serving", value, "< 180 s", to_serving is not None and to_serving < 180)
    bench.row(f"{n} models: Serving p50 / p95 per model", f"{fmt(median(serving))} / {fmt(percentile(serving, 0.95))}", "", None)
    bench.row(f"{n} models: apply -> all Ready", fmt(max(ready) if all_ready else None), "", None)
    bench.row(f"{n} models: reconciles (ansible runs) per model", f"{len(runs) / n:.1f}", "", None)
    bench.row(f"{n} models: operator CPU per reconcile", fmt(usage.get("cpu_seconds", 0) / max(1, len(runs)), "CPU-s", 2), "", None)
    per_model = to_serving_delta["operator"] / n
    bench.row("API requests per model to Serving (operator)", f"{per_model:.1f}", "", None)
    bench.row("API requests per model to Serving (all clients)", f"{to_serving_delta['all_dispatched'] / n:.1f}", "", None)
    peak = usage.get("peak_rss_mib")
    bench.row(f"peak RSS, operator + ansible processes ({n} models)", fmt(peak, "MiB", 0), "< 500 MiB", peak is not None and peak < 500)
    bench.row(f"peak PSS, operator + ansible processes ({n} models)", fmt(usage.get("peak_pss_mib"), "MiB", 0), "", None)
    bench.row("peak RSS of ansible-operator itself / most ansible-runners at once",
             f"{fmt(usage.get('peak_rss_root_mib'), 'MiB', 0)} / {usage.get('peak_runners')}", "", None)

