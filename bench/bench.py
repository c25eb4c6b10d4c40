#!/usr/bin/env python3
"""How fast and how light the operator is, at 1 and at 100 models (`make bench`).

    .venv/bin/python bench/bench.py [--operator-args "..."] [--models 100] [--namespaces 10]
                                    [--idle-seconds 60] [--pokes 5] [--label NAME] [--wait-free 0]
    .venv/bin/python bench/bench.py --check      read-only self-check of the parsers (no cluster change)

What it does, in order (it owns the local cluster while it runs):

1. restarts the local cluster with LLM_TESTBED_JOB_SECONDS=5 (a simulated pull takes 5 s);
2. creates a ServiceAccount for the operator and a FlowSchema that matches only it, so the API
   server's own APF metric (apiserver_flowcontrol_dispatched_requests_total{flow_schema=...})
   counts exactly the operator's requests: apiserver_request_total has no client label;
3. starts the real ansible-operator (`make operator-start`, with that ServiceAccount's kubeconfig,
   OPERATOR_ARGS from --operator-args and its log in bench/out/operator.log);
4. single model: kubectl apply -> phase Serving (a watch), minus the 5 s pull;
5. no-op reconcile: pokes a dependent Service of the Serving model (an annotation the role does not
   own, so the dependent watch fires and nothing changes) and times each run from the runner
   artifacts: first event -> playbook_on_stats, and operator writes the run's input -> runner exits;
6. 100 models in 10 namespaces, one kubectl apply: time until all are Serving, API requests per
   model, peak RSS of the operator and all its descendants (0.5 s samples), CPU per reconcile;
7. idle: with the 100 models Serving and Ready, operator CPU (its whole process tree) over 60 s and
   the reconciles that ran meanwhile (should be none);
8. operator restart: every model gets one no-op reconcile; all must report changed=0;
9. stops the operator and brings the local cluster back up with its default job time.

Prints one table (metric, value, target, result) and writes it, with every detail (per-task
durations, per-stage timings of the runs, API requests by verb and resource) to bench/out/.
"""

from __future__ import annotations

import _thread
import argparse
import datetime as dt
import json
import os
import pathlib
import platform
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
BIN = ROOT / "bin"
KUBECTL = BIN / "kubectl"
ADMIN_KUBECONFIG = ROOT / ".cluster" / "kubeconfig"
PIDFILE = ROOT / ".cluster" / "operator.pid"
OPERATOR_LOG = OUT / "operator.log"
RUNNER_ROOT = pathlib.Path("/tmp/ansible-operator/runner/inference.ai.example.com/v1alpha1/LLMModel")
OPERATOR_METRICS = "http://127.0.0.1:8686/metrics"

GROUP, VERSION, PLURAL = "inference.ai.example.com", "v1alpha1", "llmmodels"
PULL_SECONDS = 5
RUN_LABEL = "bench.llm-operator.io/run"
POKE_ANNOTATION = "bench.llm-operator.io/poke"
SA_NAMESPACE = SA_NAME = FLOW_SCHEMA = "llm-operator-bench"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
MiB = 1 << 20


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def run(cmd: list[str], *, env: dict | None = None, input_text: str | None = None, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=ROOT, env=env, input=input_text, capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def kubectl(*args: str, input_text: str | None = None, check: bool = True, kubeconfig: pathlib.Path = ADMIN_KUBECONFIG) -> str:
    return run([str(KUBECTL), "--kubeconfig", str(kubeconfig), *args], input_text=input_text, check=check).stdout


# ---------------------------------------------------------------------------------------------
# Parsing: timestamps, Prometheus text, operator log, runner artifacts


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


# ---------------------------------------------------------------------------------------------
# The operator's process tree: RSS and CPU


def proc_table() -> dict[int, dict]:
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                raw = handle.read().decode(errors="replace")
        except OSError:
            continue
        close = raw.rfind(")")
        fields = raw[close + 2:].split()
        table[int(entry.name)] = {
            "comm": raw[raw.find("(") + 1:close],
            "ppid": int(fields[1]),
            "cpu_ticks": int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14]),
            "own_ticks": int(fields[11]) + int(fields[12]),
            "rss": int(fields[21]) * PAGE,
        }
    return table


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


def tree_of(root: int, table: dict[int, dict]) -> list[int]:
    """root and all its descendants (ansible-runner starts ansible-playbook in a session of its own,
    so the process group or session is not enough)."""
    children = {}
    for pid, info in table.items():
        children.setdefault(info["ppid"], []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            found.append(pid)
            todo.extend(children.get(pid, []))
    return found


def tree_usage(root: int) -> dict:
    """RSS (bytes) and CPU seconds of the tree. CPU counts each live process's own time plus that of
    the children it has reaped (cutime/cstime), so a process that came and went is still counted."""
    table = proc_table()
    pids = tree_of(root, table)
    return {
        "rss": sum(table[p]["rss"] for p in pids),
        "pss": sum(pss(p) for p in pids),
        "rss_root": table[root]["rss"] if root in table else 0,
        "cpu": sum(table[p]["cpu_ticks"] for p in pids) / CLK_TCK,
        "cpu_root": table[root]["own_ticks"] / CLK_TCK if root in table else 0.0,
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


# ---------------------------------------------------------------------------------------------
# The models: a watch that records when each one first reached Serving and Ready


class ModelWatcher(threading.Thread):
    def __init__(self, selector: str):
        super().__init__(daemon=True)
        from kubernetes import client, config

        self.api = client.CustomObjectsApi(config.new_client_from_config(str(ADMIN_KUBECONFIG)))
        self.selector = selector
        self.models: dict[str, dict] = {}
        self.changed = threading.Condition()
        self.stopped = threading.Event()

    def _update(self, obj: dict, now: float) -> None:
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        status = obj.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        with self.changed:
            model = self.models.setdefault(key, {"phase": None, "serving_at": None, "ready_at": None, "phases": []})
            phase = status.get("phase")
            if phase != model["phase"]:
                model["phases"].append((round(now, 3), phase))
            model["phase"] = phase
            if phase == "Serving" and model["serving_at"] is None:
                model["serving_at"] = now
            if ready and model["ready_at"] is None:
                model["ready_at"] = now
            self.changed.notify_all()

    def run(self) -> None:
        from kubernetes import watch

        while not self.stopped.is_set():
            try:
                listing = self.api.list_cluster_custom_object(GROUP, VERSION, PLURAL, label_selector=self.selector)
                now = time.monotonic()
                for item in listing["items"]:
                    self._update(item, now)
                stream = watch.Watch()
                for event in stream.stream(self.api.list_cluster_custom_object, GROUP, VERSION, PLURAL, label_selector=self.selector,
                                           resource_version=listing["metadata"]["resourceVersion"], timeout_seconds=20):
                    if self.stopped.is_set():
                        stream.stop()
                        break
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._update(event["object"], time.monotonic())
                    elif event["type"] == "ERROR":
                        break
            except Exception as error:  # noqa: BLE001 (re-list and watch again on any trouble)
                log(f"model watch restarts after {type(error).__name__}: {error}")
                self.stopped.wait(0.5)

    def wait_for(self, keys: list[str], field: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                if all(self.models.get(k, {}).get(field) is not None for k in keys):
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(min(left, 1.0))

    def times(self, keys: list[str], field: str) -> list[float | None]:
        with self.changed:
            return [self.models.get(k, {}).get(field) for k in keys]


# ---------------------------------------------------------------------------------------------
# Cluster and operator


def queued(pid: int) -> bool:
    """A command that only waits for its turn on the machine (the `cluster-lock run NAME -- CMD` queue of
    a shared machine carries CMD in its own command line) runs nothing yet."""
    try:
        argv = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(arg.endswith(b"/cluster-lock") for arg in argv[:2])


def others_running(check_port: bool = True) -> list[str]:
    """What would make this run unfair or break someone else's: tests, or an operator on :8888."""
    found = []
    for pattern in ("molecule", "pytest", "make .*test"):
        pids = [p for p in run(["pgrep", "-f", pattern], check=False).stdout.split()
                if int(p) != os.getpid() and not queued(int(p))]
        if pids:
            found.append(f"{pattern} (pid {', '.join(pids)})")
    with socket.socket() as sock:
        sock.settimeout(1)
        if check_port and sock.connect_ex(("127.0.0.1", 8888)) == 0:
            found.append("something listens on 127.0.0.1:8888 (another ansible-operator)")
    return found


class Guard(threading.Thread):
    """Stops the bench as soon as someone else's tests start or its operator is stopped or replaced
    by someone else (a shared pidfile): numbers taken then would be wrong, and restarting the cluster
    would break their tests."""

    def __init__(self):
        super().__init__(daemon=True)
        self.expected_pid: int | None = None  # None while the bench itself (re)starts the operator
        self.reason: str | None = None
        self.stopped = threading.Event()

    def problem(self) -> str | None:
        tests = others_running(check_port=False)
        if tests:
            return "other tests started: " + "; ".join(tests)
        pid = self.expected_pid
        if pid is not None:
            try:
                os.kill(pid, 0)
                current = int(PIDFILE.read_text().strip())
            except (OSError, ValueError):
                return f"the bench's operator (pid {pid}) was stopped by someone else"
            if current != pid:
                return f"someone else's operator (pid {current}) took the pidfile"
        return None

    def run(self) -> None:
        while not self.stopped.wait(3):
            reason = self.problem()
            if reason:
                self.reason = reason
                log(f"stopping: {reason}")
                _thread.interrupt_main()
                return


def wait_until_free(seconds: float, quiet: float = 60) -> None:
    """Return when nothing else runs; after waiting, only once that has lasted `quiet` seconds (test
    suites start one step after the other, with short gaps)."""
    deadline = time.monotonic() + seconds
    waited, free_since = False, None
    while True:
        busy = others_running()
        now = time.monotonic()
        if not busy:
            free_since = free_since or now
            if not waited or now - free_since >= quiet:
                return
        else:
            free_since, waited = None, True
            if now >= deadline:
                sys.exit("bench: not starting, the machine is in use: " + "; ".join(busy)
                         + "\nbench: only one ansible-operator may run at a time; retry later or pass --wait-free SECONDS")
            log("waiting for " + "; ".join(busy))
        time.sleep(5 if free_since else min(30, max(1, deadline - now)))


def cluster(action: str, job_seconds: int | None = None) -> None:
    env = dict(os.environ)
    env.pop("LLM_TESTBED_JOB_SECONDS", None)
    if job_seconds is not None:
        env["LLM_TESTBED_JOB_SECONDS"] = str(job_seconds)
    done = run(["python3", "hack/cluster.py", action], env=env, check=False, timeout=900)
    for line in (done.stdout + done.stderr).splitlines():
        log(line)
    if done.returncode != 0:
        raise RuntimeError(f"hack/cluster.py {action} failed")


def operator_identity() -> pathlib.Path:
    """A ServiceAccount for the operator, a FlowSchema that matches only it (same priority level as any
    ServiceAccount, workload-low), and a kubeconfig with its token."""
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SA_NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SA_NAME, "namespace": SA_NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": SA_NAME},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
         "subjects": [{"kind": "ServiceAccount", "name": SA_NAME, "namespace": SA_NAMESPACE}]},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": FLOW_SCHEMA},
         "spec": {"priorityLevelConfiguration": {"name": "workload-low"}, "matchingPrecedence": 1000,
                  "distinguisherMethod": {"type": "ByUser"},
                  "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": SA_NAME, "namespace": SA_NAMESPACE}}],
                             "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True, "namespaces": ["*"]}],
                             "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}},
    ]
    kubectl("apply", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    token = kubectl("create", "token", SA_NAME, "-n", SA_NAMESPACE, "--duration", "6h").strip()
    admin = json.loads(kubectl("config", "view", "--minify", "--raw", "-o", "json"))
    server = admin["clusters"][0]["cluster"]
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "bench",
        "clusters": [{"name": "bench", "cluster": server}],
        "users": [{"name": SA_NAME, "user": {"token": token}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": SA_NAME}}],
    }
    path = OUT / "operator.kubeconfig"
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    # The APF configuration is picked up asynchronously: wait until the schema classifies requests.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        kubectl("get", "namespace", SA_NAMESPACE, kubeconfig=path)
        if metric_sum(scrape_apiserver(), "apiserver_flowcontrol_dispatched_requests_total", flow_schema=FLOW_SCHEMA) > 0:
            return path
        time.sleep(1)
    raise RuntimeError(f"FlowSchema {FLOW_SCHEMA} does not classify the ServiceAccount's requests")


class Operator:
    def __init__(self, args: str, kubeconfig: pathlib.Path, env: dict[str, str]):
        self.args, self.kubeconfig, self.env = args, kubeconfig, env
        self.started: int | None = None

    def start(self) -> int:
        # make operator-start says "already running" and succeeds when the pidfile names a live
        # operator: here that would be someone else's, so refuse instead of measuring it.
        if PIDFILE.exists():
            try:
                os.kill(int(PIDFILE.read_text().strip()), 0)
                raise RuntimeError(f"another operator is running (pid {PIDFILE.read_text().strip()} in {PIDFILE})")
            except (ValueError, ProcessLookupError):
                pass
        make = ["make", "--no-print-directory", "-s", "operator-start", f"OPERATOR_ARGS={self.args}",
                f"OPERATOR_LOG={OPERATOR_LOG}", f"OPERATOR_PIDFILE={PIDFILE}", f"KUBECONFIG={self.kubeconfig}"]
        # Extra environment (--env) reaches ansible-operator and, through it, ansible-runner and ansible.
        done = run(make, env={**os.environ, **self.env}, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"make operator-start failed:\n{done.stdout}{done.stderr}")
        pid = self.pid()
        cmdline = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        if "rfc3339nano" not in cmdline or not OPERATOR_LOG.exists():
            raise RuntimeError(f"the operator in {PIDFILE} (pid {pid}) is not the one this bench started: {cmdline}")
        self.started = pid
        return pid

    def stop(self) -> None:
        """Stop the operator this bench started (and nobody else's)."""
        try:
            ours = self.started is not None and self.pid() == self.started
        except (OSError, ValueError):
            ours = False
        if ours:
            self.started = None
            run(["make", "--no-print-directory", "-s", "operator-stop", f"OPERATOR_PIDFILE={PIDFILE}"], check=False)

    @staticmethod
    def pid() -> int:
        return int(PIDFILE.read_text().strip())


def model_manifest(namespace: str, name: str, index: int, run_id: str) -> dict:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "LLMModel",
        "metadata": {"name": name, "namespace": namespace, "labels": {RUN_LABEL: run_id}},
        "spec": {
            "source": {"huggingFaceRepo": f"bench/model-{index:03d}"},
            "serve": {"image": "vllm/vllm-openai:v0.6.3", "args": ["--model", "/model-weights", "--served-model-name", name]},
            "storageSize": "1Gi",
        },
    }


def apply_objects(objects: list[dict]) -> float:
    """One `kubectl apply` of all objects; returns how long it took."""
    started = time.monotonic()
    kubectl("apply", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return time.monotonic() - started


def wait_runs(oplog: OperatorLog, since: int, want: set[str], timeout: float) -> list[dict]:
    """Wait until a run finished (after log offset `since`) for every "namespace/name" in want."""
    deadline = time.monotonic() + timeout
    while True:
        runs = oplog.runs(since)
        seen = {f"{r['namespace']}/{r['name']}" for r in runs}
        if want <= seen or time.monotonic() > deadline:
            return runs
        time.sleep(0.2)


def wait_quiet(oplog: OperatorLog, root: int, quiet: float, timeout: float) -> float:
    """Wait until no ansible-runner runs and no run has ended for `quiet` seconds."""
    started = time.monotonic()
    last_size, last_change = oplog.offset(), time.monotonic()
    while time.monotonic() - started < timeout:
        size = oplog.offset()
        busy = tree_usage(root)["runners"] > 0
        if size != last_size or busy:
            last_size, last_change = size, time.monotonic()
        elif time.monotonic() - last_change >= quiet:
            return time.monotonic() - started
        time.sleep(0.5)
    return -1.0


def median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def percentile(values: list[float], q: float) -> float | None:
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def fmt(value, unit: str = "s", digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f} {unit}".strip()


# ---------------------------------------------------------------------------------------------
# The scenarios


class Bench:
    def __init__(self, opts: argparse.Namespace):
        self.opts = opts
        self.run_id = dt.datetime.now(dt.UTC).strftime("%H%M%S")
        self.rows: list[tuple[str, str, str, str]] = []
        self.details: dict = {"run_id": self.run_id, "options": vars(opts)}
        self.oplog = OperatorLog(OPERATOR_LOG)

    def row(self, metric: str, value: str, target: str = "", ok: bool | None = None) -> None:
        self.rows.append((metric, value, target, "info" if ok is None else ("PASS" if ok else "FAIL")))

    def namespaces(self) -> list[str]:
        return [f"bench-{self.run_id}-{i:02d}" for i in range(self.opts.namespaces)]

    def setup(self) -> None:
        OUT.mkdir(parents=True, exist_ok=True)
        # Runner directories of earlier bench runs only (others' runs stay).
        for old in RUNNER_ROOT.glob("bench-*") if RUNNER_ROOT.exists() else []:
            run(["rm", "-rf", str(old)], check=False)
        if OPERATOR_LOG.exists():
            OPERATOR_LOG.rename(OUT / "operator.previous.log")
        if not self.opts.reuse_cluster:
            log(f"restarting the local cluster with LLM_TESTBED_JOB_SECONDS={PULL_SECONDS}")
            cluster("down")
            cluster("up", job_seconds=PULL_SECONDS)
        self.guard = Guard()
        self.guard.start()
        kubeconfig = operator_identity()
        self.operator = Operator(self.opts.operator_args, kubeconfig, dict(e.split("=", 1) for e in self.opts.env))
        log(f"starting the operator: {' '.join(self.opts.env)} ansible-operator run {self.opts.operator_args}")
        self.root = self.operator.start()
        self.guard.expected_pid = self.root
        self.sampler = Sampler(self.root)
        self.sampler.start()
        self.watcher = ModelWatcher(f"{RUN_LABEL}={self.run_id}")
        self.watcher.start()
        self.details["operator"] = {"args": self.opts.operator_args, "pid": self.root}

    def single(self) -> None:
        namespace, name = f"bench-{self.run_id}-single", "single"
        key = f"{namespace}/{name}"
        kubectl("create", "namespace", namespace)
        log("single model: applying")
        applied_in = apply_objects([model_manifest(namespace, name, 999, self.run_id)])
        t0 = time.monotonic()
        serving = self.watcher.wait_for([key], "serving_at", 120)
        ready = self.watcher.wait_for([key], "ready_at", 60)
        serving_at, ready_at = self.watcher.times([key], "serving_at")[0], self.watcher.times([key], "ready_at")[0]
        to_serving = serving_at - t0 if serving else None
        to_ready = ready_at - t0 if ready else None
        wait_quiet(self.oplog, self.root, 6, 60)
        runs = [r for r in self.oplog.runs() if r["name"] == name]
        self.details["single"] = {"apply_seconds": round(applied_in, 3), "to_serving": to_serving, "to_ready": to_ready,
                                  "runs": len(runs), "phases": self.watcher.models.get(key, {}).get("phases")}
        value = None if to_serving is None else to_serving - PULL_SECONDS
        self.row("1 model: apply -> Serving, minus 5 s pull", fmt(value), "< 5 s", value is not None and value < 5)
        self.row("1 model: apply -> Ready (Deployment available)", fmt(to_ready), "", None)
        self.row("1 model: reconciles until quiet", str(len(runs)), "", None)
        self.single_key = (namespace, name)

    def noop_pokes(self) -> None:
        namespace, name = self.single_key
        results, metrics_before, usage_before = [], scrape_operator(), tree_usage(self.root)
        for poke in range(self.opts.pokes):
            since = self.oplog.offset()
            kubectl("annotate", "service", name, "-n", namespace, f"{POKE_ANNOTATION}={poke}", "--overwrite")
            poked = time.time()
            runs = wait_runs(self.oplog, since, {f"{namespace}/{name}"}, 60)
            if not runs:
                log(f"poke {poke}: no reconcile within 60 s")
                continue
            detail = read_run(namespace, name, runs[-1]["job"], runs[-1]["ts"])
            if detail:
                detail["poke_to_exit"] = runs[-1]["ts"] - poked
                results.append(detail)
            time.sleep(1)
        metrics_after, usage_after = scrape_operator(), tree_usage(self.root)
        count, total = (metric_sum(metrics_after, f"controller_runtime_reconcile_time_seconds_{part}")
                        - metric_sum(metrics_before, f"controller_runtime_reconcile_time_seconds_{part}") for part in ("count", "sum"))
        playbook = median([r["playbook_seconds"] for r in results])
        whole = median([r["total_seconds"] for r in results])
        changed = [r["changed"] for r in results]
        cpu = (usage_after["cpu"] - usage_before["cpu"]) / max(1, count or len(results))
        self.details["noop"] = {"stages": stage_summary(results), "profile": task_profile(results), "cpu_per_reconcile": cpu,
                                "controller_runtime_mean": total / count if count else None, "reconciles": count,
                                "poke_to_exit": median([r["poke_to_exit"] for r in results]),
                                "runs": [{k: v for k, v in r.items() if k != "tasks"} for r in results]}
        self.row(f"no-op reconcile, playbook (1st event -> stats), median of {len(results)}", fmt(playbook, digits=2), "< 2 s",
                 playbook is not None and playbook < 2)
        self.row("no-op reconcile, whole run (runner start -> exit)", fmt(whole, digits=2), "< 2 s", whole is not None and whole < 2)
        self.row("no-op reconcile: operator CPU per run", fmt(cpu, "CPU-s", 2), "", None)
        self.row("no-op reconcile: changed", f"{sum(1 for c in changed if c == 0)} of {len(changed)} runs changed=0",
                 "all changed=0", bool(changed) and all(c == 0 for c in changed))

    def hundred(self) -> None:
        n, per_ns = self.opts.models, max(1, self.opts.models // self.opts.namespaces)
        namespaces = self.namespaces()
        kubectl("apply", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces]}))
        models = [model_manifest(namespaces[i // per_ns % len(namespaces)], f"m{i:03d}", i, self.run_id) for i in range(n)]
        keys = [f"{m['metadata']['namespace']}/{m['metadata']['name']}" for m in models]
        wait_quiet(self.oplog, self.root, 3, 60)
        api_before, log_since = scrape_apiserver(), self.oplog.offset()
        started = time.monotonic()
        log(f"{n} models: applying in {len(namespaces)} namespaces")
        applied_in = apply_objects(models)
        t0 = time.monotonic()
        all_serving = self.watcher.wait_for(keys, "serving_at", self.opts.timeout)
        t_serving = time.monotonic()
        api_serving = scrape_apiserver()
        log(f"{n} models: {'all Serving' if all_serving else 'NOT all Serving'} after {t_serving - t0:.1f}s; waiting for Ready")
        all_ready = self.watcher.wait_for(keys, "ready_at", self.opts.timeout)
        api_ready = scrape_apiserver()
        quiet_after = wait_quiet(self.oplog, self.root, 12, 300)
        usage = self.sampler.window(started)
        runs = [r for r in self.oplog.runs(log_since) if r["namespace"] in namespaces]
        serving = [t - t0 if t else None for t in self.watcher.times(keys, "serving_at")]
        ready = [t - t0 if t else None for t in self.watcher.times(keys, "ready_at")]
        to_serving = (max(serving) if all_serving else None)
        to_serving_delta = api_delta(api_before, api_serving)
        to_ready_delta = api_delta(api_before, api_ready)
        # What the artifacts still hold (the last runs of each model, maxRunnerArtifacts of them).
        kept = [read_run(ns, nm, job) for ns, nm, job in existing_jobs(namespaces)]
        kept = [k for k in kept if k]
        self.details["hundred"] = {
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
        value = fmt(to_serving) if all_serving else f"> {self.opts.timeout:.0f} s ({done} of {n} Serving)"
        self.row(f"{n} models at once: apply -> all Serving", value, "< 180 s", to_serving is not None and to_serving < 180)
        self.row(f"{n} models: Serving p50 / p95 per model", f"{fmt(median(serving))} / {fmt(percentile(serving, 0.95))}", "", None)
        self.row(f"{n} models: apply -> all Ready", fmt(max(ready) if all_ready else None), "", None)
        self.row(f"{n} models: reconciles (ansible runs) per model", f"{len(runs) / n:.1f}", "", None)
        self.row(f"{n} models: operator CPU per reconcile", fmt(usage.get("cpu_seconds", 0) / max(1, len(runs)), "CPU-s", 2), "", None)
        per_model = to_serving_delta["operator"] / n
        self.row("API requests per model to Serving (operator)", f"{per_model:.1f}", "", None)
        self.row("API requests per model to Serving (all clients)", f"{to_serving_delta['all_dispatched'] / n:.1f}", "", None)
        peak = usage.get("peak_rss_mib")
        self.row(f"peak RSS, operator + ansible processes ({n} models)", fmt(peak, "MiB", 0), "< 500 MiB", peak is not None and peak < 500)
        self.row(f"peak PSS, operator + ansible processes ({n} models)", fmt(usage.get("peak_pss_mib"), "MiB", 0), "", None)
        self.row("peak RSS of ansible-operator itself / most ansible-runners at once",
                 f"{fmt(usage.get('peak_rss_root_mib'), 'MiB', 0)} / {usage.get('peak_runners')}", "", None)

    def idle(self) -> None:
        namespaces = self.namespaces() + [self.single_key[0]]
        # The finished pull Jobs go after llmmodel_pull_ttl_seconds (10 min), each removal being one
        # reconcile of its model (a dependent deleted; the weights stay recorded, nothing is pulled).
        # That would fall into the window by chance: remove them now, as the TTL would, count those
        # reconciles apart, and measure the steady state after them.
        log("idle: removing the finished pull Jobs first, as their TTL would")
        since = self.oplog.offset()
        for namespace in namespaces:
            kubectl("delete", "jobs", "--all", "-n", namespace, "--cascade=background", "--wait=false")
        wait_quiet(self.oplog, self.root, 12, 300)
        after_ttl = [r for r in self.oplog.runs(since) if r["namespace"] in namespaces]
        pulls = sum(len(kubectl("get", "jobs", "-n", ns, "-o", "name").split()) for ns in namespaces)
        self.details["idle_ttl"] = {"reconciles": len(after_ttl), "jobs_left": pulls}
        self.row("pull Jobs removed (as by their TTL): reconciles caused, per model", f"{len(after_ttl) / len(self.watcher.models):.1f}",
                 "", None)
        self.row("pull Jobs removed: pulled again", f"{pulls} Jobs", "0", pulls == 0)
        jobs_before, log_since = existing_jobs(namespaces), self.oplog.offset()
        before, started = tree_usage(self.root), time.monotonic()
        seen = set(jobs_before)
        log(f"idle: {self.opts.idle_seconds}s with every model Serving")
        while time.monotonic() - started < self.opts.idle_seconds:
            time.sleep(0.5)
            seen |= existing_jobs(namespaces)  # artifact dirs are pruned; remember every one seen
        after = tree_usage(self.root)
        elapsed = time.monotonic() - started
        cpu = after["cpu"] - before["cpu"]
        reconciles = max(len(seen - jobs_before), len(self.oplog.runs(log_since)))
        self.details["idle"] = {"seconds": elapsed, "cpu_seconds": cpu, "reconciles": reconciles, "rss_mib": after["rss"] / MiB}
        self.row(f"idle, {self.opts.models} models Serving: operator CPU over {elapsed:.0f} s",
                 f"{cpu:.2f} CPU-s ({100 * cpu / elapsed:.2f} % of a core)", "< 1 % of a core", cpu / elapsed < 0.01)
        self.row("idle: reconciles during the window", str(reconciles), "0", reconciles == 0)
        self.row("idle: RSS of operator + processes", fmt(after["rss"] / MiB, "MiB", 0), "", None)

    def restart(self) -> None:
        namespaces = self.namespaces() + [self.single_key[0]]
        keys = {k for k in self.watcher.models}
        log(f"restart: every one of {len(keys)} models gets a no-op reconcile")
        self.guard.expected_pid = None
        self.operator.stop()
        since = self.oplog.offset()
        started = time.monotonic()
        self.root = self.operator.start()
        self.guard.expected_pid = self.sampler.root = self.root
        runs = wait_runs(self.oplog, since, keys, self.opts.timeout)
        elapsed = time.monotonic() - started
        first = {}
        for r in runs:
            first.setdefault(f"{r['namespace']}/{r['name']}", r)
        details = [read_run(r["namespace"], r["name"], r["job"], r["ts"]) for r in first.values() if r["namespace"] in namespaces]
        details = [d for d in details if d]
        changed = [d["changed"] for d in details]
        usage = self.sampler.window(started)
        self.details["restart"] = {"seconds": elapsed, "runs": len(runs), "stages": stage_summary(details),
                                   "profile": task_profile(details), "usage": usage,
                                   "changed_runs": [f"{d['namespace']}/{d['name']}" for d in details if d["changed"]]}
        self.row(f"restart: {len(keys)} no-op reconciles done after", fmt(elapsed), "", None)
        self.row("restart: no-op run, median whole run (concurrent)", fmt(median([d["total_seconds"] for d in details]), digits=2), "", None)
        self.row("restart: runs with changed=0", f"{sum(1 for c in changed if c == 0)} of {len(changed)}", "all",
                 bool(changed) and len(changed) == len(keys) and all(c == 0 for c in changed))
        self.row("restart: peak RSS, operator + ansible processes", fmt(usage.get("peak_rss_mib"), "MiB", 0), "< 500 MiB",
                 usage.get("peak_rss_mib", 0) < 500)

    def table(self) -> str:
        headers = ("metric", "value", "target", "result")
        widths = [max(len(str(r[i])) for r in [headers, *self.rows]) for i in range(4)]
        line = "+-" + "-+-".join("-" * w for w in widths) + "-+"
        out = [line, "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |", line]
        out += ["| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in self.rows]
        out.append(line)
        return "\n".join(out)


def machine() -> dict:
    cpuinfo = pathlib.Path("/proc/cpuinfo").read_text().splitlines()
    meminfo = pathlib.Path("/proc/meminfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), platform.processor())
    mem = next((int(line.split()[1]) for line in meminfo if line.startswith("MemTotal")), 0)

    def version(cmd: list[str]) -> str:
        try:
            return run(cmd, check=False).stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"

    return {
        "nproc": os.cpu_count(), "memory_gib": round(mem / (1 << 20), 1), "cpu": cpu, "kernel": platform.release(),
        "python": platform.python_version(),
        "ansible_operator": version([str(BIN / "ansible-operator"), "version"]),
        "ansible_core": version([str(ROOT / ".venv" / "bin" / "ansible"), "--version"]),
        "kubernetes": version([str(KUBECTL), "version", "--client"]),
    }


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
    parser.add_argument("--timeout", type=float, default=600, help="longest wait for the models to be Serving")
    parser.add_argument("--label", default="", help="tag for the output files, e.g. baseline")
    parser.add_argument("--wait-free", type=float, default=0, help="wait up to this long for other tests/operators to end")
    parser.add_argument("--reuse-cluster", action="store_true", help="do not restart the cluster (its job time may not be 5 s)")
    parser.add_argument("--keep-cluster", action="store_true", help="leave the bench cluster up instead of the default one")
    parser.add_argument("--check", action="store_true", help="read-only self-check, changes nothing")
    opts = parser.parse_args()
    if opts.check:
        return check()
    if "rfc3339nano" not in opts.operator_args:
        opts.operator_args += " --zap-time-encoding=rfc3339nano"
    wait_until_free(opts.wait_free)
    bench = Bench(opts)
    bench.details["machine"] = machine()
    started_at = dt.datetime.now(dt.UTC)
    failed = None
    try:
        bench.setup()
        bench.single()
        bench.noop_pokes()
        bench.hundred()
        bench.idle()
        bench.restart()
    except Exception as error:  # noqa: BLE001 (report what was measured, then clean up)
        failed = error
        log(f"aborted: {type(error).__name__}: {error}")
    except KeyboardInterrupt:
        failed = (bench.guard.reason if hasattr(bench, "guard") else None) or "interrupted"
        log(f"aborted: {failed}")
    finally:
        for thread in ("guard", "sampler", "watcher"):
            if hasattr(bench, thread):
                getattr(bench, thread).stopped.set()
        if hasattr(bench, "operator"):
            bench.operator.stop()
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
               f"{m['nproc']} cores {m['cpu']}, {m['memory_gib']} GiB; {' '.join(opts.env) + ' ' if opts.env else ''}"
               f"ansible-operator run {opts.operator_args}")
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
