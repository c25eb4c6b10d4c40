"""Taking models down: the many at once, then the single one (time until gone, CPU, what is left)."""

from __future__ import annotations

import json
import time

from .common import FLEET_LABEL, RUN_LABEL, kubectl, log
from .control import wait_quiet
from .report import fmt
from .session import Bench


def delete_fleet(bench: Bench, fleet: str, keys: list[str], target_seconds: float) -> dict:
    """Delete every model of the fleet with one kubectl call; wait until all are gone and the operator
    is quiet. Returns the figures."""
    namespaces = sorted({k.split("/")[0] for k in keys})
    wait_quiet(bench.oplog, bench.root, 3, 120)
    log_since, started = bench.oplog.offset(), time.monotonic()
    kubectl("delete", "llmmodels", "-A", "-l", f"{RUN_LABEL}={bench.run_id},{FLEET_LABEL}={fleet}", "--wait=false")
    gone = bench.watcher.wait_for(keys, "gone_at", max(120.0, 3 * target_seconds))
    times = [t - started if t else None for t in bench.watcher.times(keys, "gone_at")]
    wait_quiet(bench.oplog, bench.root, 3, 120)
    usage = bench.sampler.window(started)
    runs = [r for r in bench.oplog.runs(log_since) if r["namespace"] in namespaces]
    # What the models leave: no server, Service or Job; the kept weights volumes owned by nobody.
    left = {}
    for kind in ("deployments", "services", "jobs", "persistentvolumeclaims"):
        items = []
        for namespace in namespaces:
            items += json.loads(kubectl("get", kind, "-n", namespace, "-o", "json"))["items"]
        left[kind] = items
    owned_volumes = sum(1 for pvc in left["persistentvolumeclaims"] if pvc["metadata"].get("ownerReferences"))
    figures = {
        "all_gone": gone, "seconds": max(times) if gone else None, "runs": len(runs),
        "failed_runs": sum(1 for r in runs if not r["ok"]), "usage": usage,
        "children_left": sum(len(left[k]) for k in ("deployments", "services", "jobs")),
        "volumes_kept": len(left["persistentvolumeclaims"]), "volumes_owned": owned_volumes,
    }
    log(f"delete {len(keys)}: {'all gone' if gone else 'NOT all gone'} after {fmt(figures['seconds'])}, {len(runs)} reconciles")
    return figures


def delete_many(bench: Bench) -> None:
    keys = bench.fleet
    n = len(keys)
    figures = delete_fleet(bench, "many", keys, 60)
    bench.details["delete_many"] = figures
    value = fmt(figures["seconds"]) if figures["all_gone"] else f"> wait ({sum(1 for t in bench.watcher.times(keys, 'gone_at') if t)} of {n} gone)"
    bench.row(f"{n} models at once: delete -> all gone", value, "< 60 s", figures["seconds"] is not None and figures["seconds"] < 60)
    bench.row(f"{n} models delete: operator CPU in all", fmt(figures["usage"].get("cpu_seconds"), "CPU-s", 1), "", None)
    bench.row(f"{n} models delete: reconciles (ansible runs) per model", f"{figures['runs'] / n:.2f}", "", None)
    bench.row(f"{n} models delete: servers, Services, Jobs left / kept volumes still owned",
              f"{figures['children_left']} / {figures['volumes_owned']} of {figures['volumes_kept']}", "0 / 0",
              figures["children_left"] == 0 and figures["volumes_owned"] == 0 and figures["volumes_kept"] == n)


def delete_single(bench: Bench) -> None:
    namespace, name = bench.single_key
    figures = delete_fleet(bench, "single", [f"{namespace}/{name}"], 5)
    bench.details["delete_single"] = figures
    bench.row("1 model: delete -> gone", fmt(figures["seconds"]), "< 5 s", figures["seconds"] is not None and figures["seconds"] < 5)
    bench.row("1 model delete: operator CPU / reconciles", f"{fmt(figures['usage'].get('cpu_seconds'), 'CPU-s', 2)} / {figures['runs']}",
              "", None)
    bench.row("1 model delete: children left / kept volume still owned", f"{figures['children_left']} / {figures['volumes_owned']}",
              "0 / 0", figures["children_left"] == 0 and figures["volumes_owned"] == 0 and figures["volumes_kept"] == 1)
