"""Reading what the operator and the API server leave: timestamps, Prometheus text, the operator's
log, ansible-runner's artifacts (per-run stages and per-task durations)."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import re
import statistics

from .common import FLOW_SCHEMA, RUNNER_ROOT


def parse_time(text: str) -> float:
    """RFC 3339 (any fraction length, Z or offset) -> POSIX seconds."""
    match = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", text)
    if not match:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    base, fraction, zone = match.groups()
    stamp = dt.datetime.fromisoformat(base + ("+00:00" if zone == "Z" else zone))
    return stamp.timestamp() + (float("0." + fraction) if fraction else 0.0)


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str, names: tuple[str, ...]) -> dict[tuple[str, tuple], float]:
    """Samples of the given metric names: {(name, sorted label items): value}."""
    samples = {}
    for line in text.splitlines():
        if not line.startswith(names):
            continue
        match = _SAMPLE.match(line)
        if not match or match.group(1) not in names:
            continue
        labels = tuple(sorted(_LABEL.findall(match.group(2) or "")))
        samples[(match.group(1), labels)] = float(match.group(3))
    return samples


API_METRICS = ("apiserver_request_total", "apiserver_flowcontrol_dispatched_requests_total")


def metric_sum(samples: dict, name: str, **match: str) -> float:
    total = 0.0
    for (sample_name, labels), value in samples.items():
        if sample_name == name and all(dict(labels).get(k) == v for k, v in match.items()):
            total += value
    return total


def api_delta(before: dict, after: dict) -> dict:
    """Requests between two scrapes: the operator's (its FlowSchema), everybody's, and by verb/resource."""
    flows = {}
    for (name, labels), value in after.items():
        if name == "apiserver_flowcontrol_dispatched_requests_total":
            flow = dict(labels).get("flow_schema", "?")
            flows[flow] = flows.get(flow, 0) + value - before.get((name, labels), 0)
    by_kind = {}
    for (name, labels), value in after.items():
        if name != "apiserver_request_total":
            continue
        delta = value - before.get((name, labels), 0)
        if delta <= 0:
            continue
        lab = dict(labels)
        what = lab.get("resource") or lab.get("subresource")
        if lab.get("resource") and lab.get("subresource"):
            what += "/" + lab["subresource"]
        key = f"{lab.get('verb')} {what}"
        by_kind[key] = by_kind.get(key, 0) + delta
    return {
        "operator": flows.get(FLOW_SCHEMA, 0.0),
        "all_dispatched": sum(flows.values()),
        "all_request_total": sum(by_kind.values()),
        "by_flow_schema": {k: v for k, v in sorted(flows.items(), key=lambda kv: -kv[1]) if v},
        "by_verb_resource": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
    }


class OperatorLog:
    """The JSON lines of the operator's log, read from a byte offset."""

    def __init__(self, path: pathlib.Path):
        self.path = path

    def offset(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def entries(self, since: int = 0) -> list[dict]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as handle:
            handle.seek(since)
            data = handle.read()
        entries = []
        for raw in data.splitlines():
            if not raw.startswith(b"{"):
                continue
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if isinstance(entry, dict):
                entries.append(entry)
        return entries

    def runs(self, since: int = 0) -> list[dict]:
        """Finished ansible-runner runs: {job, name, namespace, ts, ok}."""
        found = []
        for entry in self.entries(since):
            if entry.get("logger") != "runner" or "job" not in entry:
                continue
            ok = entry.get("msg") == "Ansible-runner exited successfully"
            if not ok and entry.get("level") != "error":
                continue
            ts = entry.get("ts")
            found.append({
                "job": str(entry["job"]),
                "name": entry.get("name"),
                "namespace": entry.get("namespace"),
                "ts": parse_time(ts) if isinstance(ts, str) else float(ts),
                "ok": ok,
            })
        return found


def artifact_dir(namespace: str, name: str, job: str) -> pathlib.Path:
    return RUNNER_ROOT / namespace / name / "artifacts" / job


def read_run(namespace: str, name: str, job: str, exited_at: float | None = None) -> dict | None:
    """One run's timings and result from its runner artifacts (None when they are gone)."""
    directory = artifact_dir(namespace, name, job)
    events = []
    try:
        for path in (directory / "job_events").glob("*.json"):
            try:
                events.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue
    except OSError:
        return None
    if not events:
        return None
    events.sort(key=lambda e: e.get("counter", 0))
    created = [parse_time(e["created"]) for e in events if e.get("created")]
    stats = [e for e in events if e.get("event") == "playbook_on_stats"]
    play = [e for e in events if e.get("event") == "playbook_on_play_start"]
    result = {
        "namespace": namespace,
        "name": name,
        "job": job,
        "first_event": min(created),
        "play_start": parse_time(play[0]["created"]) if play else None,
        "stats": parse_time(stats[-1]["created"]) if stats else None,
        "changed": sum((stats[-1].get("event_data", {}).get("changed") or {}).values()) if stats else None,
        "failed": sum((stats[-1].get("event_data", {}).get("failures") or {}).values()) if stats else None,
        "tasks": [],
    }
    for event in events:
        data = event.get("event_data") or {}
        if event.get("event") in ("runner_on_ok", "runner_on_skipped", "runner_on_failed") and "duration" in data:
            result["tasks"].append({
                "task": data.get("task"),
                "action": data.get("task_action") or data.get("resolved_action"),
                "event": event["event"],
                "duration": float(data["duration"] or 0),
                "changed": bool((data.get("res") or {}).get("changed")),
            })
    # The operator writes the run's input (env/extravars) right before it starts ansible-runner;
    # ansible-runner writes `command` once it is up, and `status` when the playbook has ended.
    try:
        result["input_written"] = (RUNNER_ROOT / namespace / name / "env" / "extravars").stat().st_mtime
    except OSError:
        result["input_written"] = None
    for key, file in (("runner_up", "command"), ("runner_done", "status")):
        try:
            result[key] = (directory / file).stat().st_mtime
        except OSError:
            result[key] = None
    result["exited"] = exited_at if exited_at is not None else result["runner_done"]
    result["playbook_seconds"] = result["stats"] - result["first_event"] if result["stats"] else None
    if result["input_written"] and result["exited"] and result["input_written"] <= result["first_event"]:
        result["total_seconds"] = result["exited"] - result["input_written"]
    else:
        result["total_seconds"] = None  # the input was rewritten by a later run
    return result


def stage_summary(runs: list[dict]) -> dict:
    """Medians of where a run's time goes."""
    def median_of(pairs):
        values = [b - a for a, b in pairs if a is not None and b is not None]
        return round(statistics.median(values), 3) if values else None

    return {
        "runs": len(runs),
        "operator_input_to_runner_up": median_of([(r["input_written"], r["runner_up"]) for r in runs if r["total_seconds"] is not None]),
        "runner_up_to_first_event": median_of([(r["runner_up"], r["first_event"]) for r in runs]),
        "first_event_to_play_start": median_of([(r["first_event"], r["play_start"]) for r in runs]),
        "play_start_to_stats": median_of([(r["play_start"], r["stats"]) for r in runs]),
        "stats_to_runner_exit": median_of([(r["stats"], r["exited"]) for r in runs]),
        "playbook_first_event_to_stats": median_of([(r["first_event"], r["stats"]) for r in runs]),
        "total_input_to_exit": median_of([(r["input_written"], r["exited"]) for r in runs if r["total_seconds"] is not None]),
    }


def task_profile(runs: list[dict], top: int = 25) -> list[dict]:
    """Per task name: how often it ran (not skipped), its mean and total duration, over the runs."""
    by_task = {}
    for run_ in runs:
        for task in run_["tasks"]:
            entry = by_task.setdefault(task["task"], {"task": task["task"], "action": task["action"], "ran": 0, "skipped": 0, "seconds": 0.0})
            if task["event"] == "runner_on_skipped":
                entry["skipped"] += 1
            else:
                entry["ran"] += 1
            entry["seconds"] += task["duration"]
    for entry in by_task.values():
        count = entry["ran"] + entry["skipped"]
        entry["mean"] = round(entry["seconds"] / count, 3) if count else 0.0
        entry["per_run"] = round(entry["seconds"] / len(runs), 3) if runs else 0.0
        entry["seconds"] = round(entry["seconds"], 2)
    return sorted(by_task.values(), key=lambda e: -e["seconds"])[:top]


def existing_jobs(namespaces: list[str]) -> set[tuple[str, str, str]]:
    found = set()
    for namespace in namespaces:
        for directory in (RUNNER_ROOT / namespace).glob("*/artifacts/*"):
            if directory.name != "latest" and directory.is_dir():
                found.add((namespace, directory.parent.parent.name, directory.name))
    return found
