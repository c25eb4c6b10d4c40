"""What the reliability scenarios share: the suite's size, LLMModels, waits, the locally run operator
(started, stopped and SIGKILLed as a whole process group), the figures each scenario measures, and
the checks that hold after any fault: every model converged or gone, nothing duplicated, no pull
run twice for one source, kept volumes kept and purged ones gone.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

REPO = pathlib.Path(__file__).resolve().parents[2]
KUBECONFIG = os.environ.get("KUBECONFIG") or str(REPO / ".cluster" / "kubeconfig")
KUBECTL = os.environ.get("KUBECTL") or str(REPO / "bin" / "kubectl")
PIDFILE = REPO / ".cluster" / "operator.pid"
OPERATOR_LOG = REPO / ".cluster" / "operator.log"
FIGURES = REPO / ".cluster" / "reliability-figures.json"
# The second cluster slot of a shared machine moves the ports (LLM_OPERATOR_HEALTH_URL, OPERATOR_ARGS).
HEALTH_URL = os.environ.get("LLM_OPERATOR_HEALTH_URL", "http://127.0.0.1:6789/readyz")

# The suite's size: 1 fits CI (the whole suite in a few minutes); RELIABILITY_SCALE=4 makes four
# times the models and the kills. RELIABILITY_SEED picks the random kill moments.
SCALE = max(1, int(os.environ.get("RELIABILITY_SCALE", "1")))
SEED = int(os.environ.get("RELIABILITY_SEED", "13"))

GROUP, VERSION, PLURAL = "inference.ai.example.com", "v1alpha1", "llmmodels"
MODEL_LABEL = "inference.ai.example.com/model"
GOOD_REPO = "acme/tiny-chat"
# The test bed fails a pull whose source holds "kwok-fail" with the puller's 404 (hack/cluster/stages.yaml).
FAILING_REPO = "acme/kwok-fail"


def model_manifest(name: str, repo: str = GOOD_REPO, purge: bool = False, node: str | None = None) -> dict:
    serve = {"image": "ghcr.io/ggml-org/llama.cpp:server", "port": 8080, "args": ["--model", "/model-weights"]}
    if node:
        serve["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "LLMModel",
        "metadata": {"name": name},
        "spec": {
            "source": {"huggingFaceRepo": repo, "revision": "v1.0"},
            "serve": serve,
            "storageSize": "1Gi",
            "purgeWeightsOnDelete": purge,
        },
    }


def wait_until(what, probe, timeout, describe=None, interval=0.5):
    """Poll ``probe()`` until it returns something truthy and return that; fail after ``timeout`` s
    with ``what`` and, when given, ``describe()`` (the state seen last)."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() >= deadline:
            state = ""
            if describe is not None:
                try:
                    state = f"\nlast seen:\n{describe()}"
                except Exception as error:  # the description must not hide the timeout
                    state = f"\n(could not describe the state: {error})"
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}{state}", pytrace=False)
        time.sleep(interval)


def kubectl(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    result = subprocess.run([KUBECTL, "--kubeconfig", KUBECONFIG, *args], capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result


def make(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    result = subprocess.run(
        ["make", "-s", "--no-print-directory", "-C", str(REPO), *args, f"KUBECONFIG={KUBECONFIG}"],
        capture_output=True, text=True, timeout=timeout,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"make {' '.join(args)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result


class Kube:
    """The API groups the scenarios use, plain dicts for objects, and the models' own readers."""

    def __init__(self, api: client.ApiClient):
        self.api = api
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.batch = client.BatchV1Api(api)
        self.custom = client.CustomObjectsApi(api)

    def plain(self, obj) -> dict:
        return self.api.sanitize_for_serialization(obj)

    def read(self, reader, *args) -> dict | None:
        """The object as a dict, or None when the API server answers 404."""
        try:
            return self.plain(reader(*args))
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    # LLMModels
    def create_model(self, namespace: str, manifest: dict) -> dict:
        return self.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, manifest)

    def model(self, namespace: str, name: str) -> dict | None:
        return self.read(self.custom.get_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL, name)

    def models(self, namespace: str) -> dict[str, dict]:
        items = self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]
        return {m["metadata"]["name"]: m for m in items}

    def set_source(self, namespace: str, name: str, repo: str) -> None:
        body = {"spec": {"source": {"huggingFaceRepo": repo}}}
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name, body)

    def delete_model(self, namespace: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)

    # Children
    def pvc(self, namespace: str, name: str) -> dict | None:
        return self.read(self.core.read_namespaced_persistent_volume_claim, f"{name}-weights", namespace)

    def names(self, lister, namespace: str) -> list[str]:
        return sorted(item.metadata.name for item in lister(namespace).items)

    def server_pods(self, namespace: str, name: str) -> list[dict]:
        pods = self.core.list_namespaced_pod(namespace, label_selector=f"{MODEL_LABEL}={name}").items
        return [self.plain(p) for p in pods if any(o.kind == "ReplicaSet" for o in p.metadata.owner_references or [])]

    def pull_runs(self, namespace: str) -> dict[str, dict[str, int]]:
        """Pull Job name -> {Job uid: pods it created}, from the Job controller's SuccessfulCreate
        Events. Events outlive the Jobs (a replaced or garbage-collected Job leaves its Events), so
        this counts every pull that ever ran in the namespace, whoever deleted the Job since."""
        runs: dict[str, dict[str, int]] = {}
        for event in self.core.list_namespaced_event(namespace).items:
            involved = event.involved_object
            if involved.kind == "Job" and event.reason == "SuccessfulCreate":
                per_job = runs.setdefault(involved.name, {})
                per_job[involved.uid] = per_job.get(involved.uid, 0) + (event.count or 1)
        return runs

    def describe(self, namespace: str) -> str:
        """The models' phases and messages, for failure messages."""
        lines = []
        for name, model in sorted(self.models(namespace).items()):
            status = model.get("status") or {}
            deleting = " (deleting)" if model["metadata"].get("deletionTimestamp") else ""
            lines.append(f"  {name}{deleting}: gen {model['metadata'].get('generation')} observed "
                         f"{status.get('observedGeneration')} {status.get('phase')}: {status.get('message')}")
        return "\n".join(lines) or "  (no LLMModel)"


def condition(model: dict, kind: str) -> dict:
    return next((c for c in (model.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def current(model: dict | None) -> bool:
    """Whether the status describes the model's current spec."""
    return bool(model) and (model.get("status") or {}).get("observedGeneration") == model["metadata"].get("generation")


def serving(model: dict | None) -> bool:
    return current(model) and model["status"].get("phase") == "Serving" and condition(model, "Ready").get("status") == "True"


def failed(model: dict | None) -> bool:
    return current(model) and model["status"].get("phase") == "Failed"


def converged(kube: Kube, namespace: str, serve: set[str], gone: set[str]) -> bool:
    models = kube.models(namespace)
    return all(serving(models.get(n)) for n in serve) and not gone & models.keys()


class Operator:
    """The operator as `make operator-start` runs it: the real ansible-operator, this checkout's
    role, its log in .cluster/operator.log."""

    def __init__(self):
        self.watches: str | None = None

    def start(self, watches: str | None = None) -> int:
        if watches is not None:
            self.watches = watches
        extra = []
        if self.watches:
            # OPERATOR_ARGS from the environment (another port set) names a watches file of its own.
            args = os.environ.get("OPERATOR_ARGS")
            extra = [f"OPERATOR_ARGS={re.sub(r'--watches-file [^ ]+', '--watches-file ' + self.watches, args)}"
                     if args else f"WATCHES={self.watches}"]
        make("operator-start", *extra)
        return self.pid()

    def stop(self) -> None:
        make("operator-stop")

    def pid(self) -> int:
        """The ansible-operator process (under hack/operator_supervisor.py when that runs it)."""
        top = int(PIDFILE.read_text().strip())
        if "operator_supervisor" not in cmdline(top):
            return top
        children = [p for p, parent in process_parents().items() if parent == top and "ansible-operator" in cmdline(p)]
        assert len(children) == 1, f"the supervisor {top} runs {children}, not one ansible-operator"
        return children[0]

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(HEALTH_URL, timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def kill(self) -> None:
        """SIGKILL the operator's whole process group, as the kernel's OOM killer or a node loss
        would end it: no chance to clean up. Then wait until what started it has gone too."""
        top = int(PIDFILE.read_text().strip())
        operator = self.pid()
        # ansible-runner starts ansible-playbook in a session of its own, out of the group's reach;
        # the operator's supervisor (or, without one, this) ends those runs too.
        tree = [operator, *descendants(operator)]
        group = os.getpgid(operator)
        assert group != os.getpgrp(), "the operator runs in the test's own process group"
        os.killpg(group, signal.SIGKILL)
        wait_until("the killed operator's supervisor to exit", lambda: not alive(top), 30, interval=0.1)
        for pid in tree:
            if alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        PIDFILE.unlink(missing_ok=True)


def process_parents() -> dict[int, int]:
    table = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                raw = pathlib.Path(f"/proc/{entry.name}/stat").read_text(errors="replace")
            except OSError:
                continue
            table[int(entry.name)] = int(raw[raw.rfind(")") + 2:].split()[1])
    return table


def descendants(root: int) -> list[int]:
    table = process_parents()
    found, todo = [], [root]
    while todo:
        parent = todo.pop()
        children = [p for p, pp in table.items() if pp == parent]
        found.extend(children)
        todo.extend(children)
    return found


def alive(pid: int) -> bool:
    """Whether pid runs (a zombie does not)."""
    try:
        raw = pathlib.Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return False
    return raw[raw.rfind(")") + 2:].split()[0] != "Z"


def cmdline(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


class EventLog:
    """Every Event created in a namespace while it runs (a watch, so Events that the garbage
    collector removes with their LLMModel are still seen)."""

    def __init__(self, kube: Kube, namespace: str):
        self.kube, self.namespace = kube, namespace
        self.events: list[dict] = []
        self.errors: list[str] = []
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._listed = threading.Event()

    def __enter__(self):
        self._thread.start()
        self._listed.wait(30)
        return self

    def __exit__(self, *_):
        self._watch.stop()

    def _run(self):
        version = self.kube.core.list_namespaced_event(self.namespace).metadata.resource_version
        self._listed.set()
        while True:
            try:
                for change in self._watch.stream(self.kube.core.list_namespaced_event, self.namespace, resource_version=version):
                    event = change["object"]
                    version = event.metadata.resource_version
                    self.events.append(self.kube.plain(event))
                return  # stopped
            except Exception as error:  # a broken watch: resume from the last version seen
                self.errors.append(repr(error))
                time.sleep(0.5)

    def describe(self) -> str:
        seen = [f"  {e['involvedObject'].get('kind')}/{e['involvedObject'].get('name')} {e.get('reason')}: {e.get('message')}"
                for e in self.events]
        return "\n".join(seen + [f"  watch error: {error}" for error in self.errors[-3:]]) or "  (no Event)"

    def about(self, kind: str, name: str, reason: str) -> list[dict]:
        return [e for e in self.events if e["involvedObject"].get("kind") == kind
                and e["involvedObject"].get("name") == name and e.get("reason") == reason]


class Figures:
    """What the scenarios measure, kept in .cluster/reliability-figures.json and printed at the end
    of the run (README, "Guarantees under faults", quotes them)."""

    def __init__(self):
        self.rows: list[dict] = []

    def record(self, scenario: str, figure: str, value: float, unit: str = "s") -> None:
        self.rows.append({"scenario": scenario, "figure": figure, "value": round(value, 1), "unit": unit,
                          "scale": SCALE, "seed": SEED})
        FIGURES.parent.mkdir(exist_ok=True)
        FIGURES.write_text(json.dumps(self.rows, indent=1) + "\n")


def log_offset() -> int:
    return OPERATOR_LOG.stat().st_size if OPERATOR_LOG.exists() else 0


def assert_no_artifact_rotation_failure(since: int) -> None:
    """ansible-runner's artifact rotation must never have failed a run (see test_artifact_rotation)."""
    text = OPERATOR_LOG.read_bytes()[since:].decode(errors="replace") if OPERATOR_LOG.exists() else ""
    assert "Cannot call rmtree on a symbolic link" not in text, "a run failed in ansible-runner's artifact rotation"


def assert_world(kube: Kube, namespace: str, serve: set[str], gone: set[str], sources: dict[str, int],
                 kept: dict[str, str], purged: set[str]) -> None:
    """The state every fault must end in.

    serve    models that must be Serving and Ready for their current spec
    gone     models that must not exist any more, nor any of their children
    sources  model -> the number of distinct sources it was given: exactly one pull Job ran per
             source, each with one pod
    kept     model -> uid of the weights volume that must have outlived the model, unowned
    purged   models whose weights volume must be gone
    """
    models = kube.models(namespace)
    for name in serve:
        assert serving(models.get(name)), f"{name} does not serve:\n{kube.describe(namespace)}"
        assert models[name]["status"]["weights"]["ready"] is True
    assert not gone & models.keys(), f"deleted models still exist:\n{kube.describe(namespace)}"
    # Nothing duplicated: one server Deployment with one ReplicaSet (no spurious rollout) and one
    # pod per serving model, one Service, one volume owned by the model; nothing left of the others.
    assert kube.names(kube.apps.list_namespaced_deployment, namespace) == sorted(serve)
    assert kube.names(kube.core.list_namespaced_service, namespace) == sorted(serve)
    for name in serve:
        sets = kube.apps.list_namespaced_replica_set(namespace, label_selector=f"{MODEL_LABEL}={name}").items
        assert len(sets) == 1, f"{name}: {len(sets)} ReplicaSets, the server was rolled for nothing"
        assert len(kube.server_pods(namespace, name)) == 1, f"{name}: not exactly one server pod"
        owners = [o["uid"] for o in kube.pvc(namespace, name)["metadata"].get("ownerReferences") or []]
        assert owners == [models[name]["metadata"]["uid"]], f"{name}: weights volume owned by {owners}"
    jobs = set(kube.names(kube.batch.list_namespaced_job, namespace))
    assert not jobs & {f"{n}-pull" for n in gone}, f"pull Jobs of deleted models remain: {sorted(jobs)}"
    # No pull ran twice for the same source.
    runs = kube.pull_runs(namespace)
    for name, count in sources.items():
        per_job = runs.get(f"{name}-pull", {})
        assert len(per_job) == count, f"{name}: {len(per_job)} pull Jobs ran for {count} source(s): {per_job}"
        assert all(pods == 1 for pods in per_job.values()), f"{name}: a pull Job ran more than one pod: {per_job}"
    for name, uid in kept.items():
        pvc = kube.pvc(namespace, name)
        assert pvc is not None, f"{name}: the kept weights volume was lost"
        assert pvc["metadata"]["uid"] == uid, f"{name}: the weights volume was replaced"
        assert not pvc["metadata"].get("ownerReferences"), f"{name}: the kept volume is still owned"
    for name in purged:
        assert kube.pvc(namespace, name) is None, f"{name}: the purged weights volume is still there"
