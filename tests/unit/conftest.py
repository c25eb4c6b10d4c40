"""Fixtures: run the role's modules in-process like Ansible would, or through a real ansible-runner."""

from __future__ import annotations

import json
import os
import subprocess
import uuid

import pytest

from kubernetes import config as k8s_config
from kubernetes.client import ApiClient, Configuration, VersionApi
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError
from unit_helpers import REPO, ROLE, VENV_BIN, kubectl, module_args, task_results


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cluster: needs a reachable Kubernetes API server (KUBECONFIG); run by the cluster suite"
    )


@pytest.fixture
def run_module(capsys):
    """Run ``module.main()`` with ``args``; return the JSON result it printed (failed ones included)."""

    def run(module, args: dict) -> dict:
        capsys.readouterr()
        with module_args(args), pytest.raises(SystemExit) as exited:
            module.main()
        out = capsys.readouterr().out
        result = json.loads(out)
        assert (exited.value.code == 0) == (not result.get("failed")), out
        return result

    return run


@pytest.fixture
def run_probe_role(tmp_path):
    """Run ``tasks`` as a role that carries llmmodel's plugins, library and module_utils, through a REAL
    ``ansible-runner run`` in role mode (ansible-operator runs roles this way; this project's watches.yaml
names a playbook, docs/design.md). Returns (process, events)."""

    def run(tasks: str, extravars: dict | None = None, env: dict | None = None):
        role = tmp_path / "roles" / "probe"
        (role / "tasks").mkdir(parents=True, exist_ok=True)
        (role / "tasks" / "main.yml").write_text(tasks)
        for sub in ("action_plugins", "lookup_plugins", "library", "module_utils"):
            if not (role / sub).exists():
                (role / sub).symlink_to(ROLE / sub)
        inputdir = tmp_path / "input"
        for sub in ("env", "project", "inventory"):
            (inputdir / sub).mkdir(parents=True, exist_ok=True)
        (inputdir / "env" / "settings").write_text("{}")
        (inputdir / "env" / "extravars").write_text(json.dumps(extravars or {}))
        ident = uuid.uuid4().hex[:12]
        process_env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", ANSIBLE_GATHERING="explicit")
        process_env.update(env or {})
        command = [
            str(VENV_BIN / "ansible-runner"), "run", str(inputdir), "--role", "probe",
            "--roles-path", str(tmp_path / "roles"), "--hosts", "localhost", "-i", ident, "--role-skip-facts",
        ]
        completed = subprocess.run(command, env=process_env, capture_output=True, text=True, timeout=600)
        events_dir = inputdir / "artifacts" / ident / "job_events"
        events = sorted((json.loads(p.read_text()) for p in events_dir.glob("*.json")), key=lambda e: e["counter"])
        return completed, events

    return run


@pytest.fixture
def run_role_twice(run_probe_role, kubeconfig):
    """Run ``tasks`` twice through ``run_probe_role`` with the kubeconfig in K8S_AUTH_KUBECONFIG, as
    ansible-operator sets it; both runs must succeed. Returns the ``changed`` of each task of ``action``,
    one list per run, and the second run's events."""

    def run(tasks: str, action: str):
        env = {"K8S_AUTH_KUBECONFIG": kubeconfig, "KUBECONFIG": kubeconfig}
        runs = [run_probe_role(tasks, env=env) for _ in range(2)]
        assert all(completed.returncode == 0 for completed, _ in runs), "".join(completed.stdout for completed, _ in runs)
        return [[res["changed"] for _, res in task_results(events, action)] for _, events in runs], runs[1][1]

    return run


@pytest.fixture(scope="session")
def kubeconfig():
    """The kubeconfig of a reachable cluster; FAILS (never skips) when there is none."""
    path = os.environ.get("KUBECONFIG") or str(REPO / ".cluster" / "kubeconfig")
    hint = "start the local cluster with `make cluster-up`, or point KUBECONFIG at a cluster"
    if not all(os.path.isfile(p) for p in path.split(os.pathsep)):
        pytest.fail("no kubeconfig at %s: %s" % (path, hint), pytrace=False)
    try:
        configuration = Configuration()
        k8s_config.load_kube_config(config_file=path, client_configuration=configuration, persist_config=False)
        with ApiClient(configuration) as api:
            VersionApi(api).get_code(_request_timeout=10)
    except Exception as exc:  # noqa: BLE001 - any failure here means "no cluster"
        pytest.fail("no cluster reachable through %s (%s: %s): %s" % (path, type(exc).__name__, exc, hint), pytrace=False)
    return path


@pytest.fixture(scope="session")
def llmmodel_crd(kubeconfig):
    """The LLMModel CRD of config/crd/bases, applied (as `make install` does) and established."""
    kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", str(REPO / "config" / "crd" / "bases"))
    kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=60s", "crd/llmmodels.inference.ai.example.com")


@pytest.fixture(scope="session")
def dynamic(kubeconfig):
    configuration = Configuration()
    k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=configuration, persist_config=False)
    return DynamicClient(ApiClient(configuration))


@pytest.fixture
def namespace(dynamic):
    """A namespace of its own for one cluster test, deleted at the end."""
    namespaces = dynamic.resources.get(api_version="v1", kind="Namespace")
    name = "llmunit-%s" % uuid.uuid4().hex[:8]
    namespaces.create(body={"metadata": {"name": name}})
    yield name
    try:
        namespaces.delete(name=name)
    except NotFoundError:
        pass


@pytest.fixture
def read(dynamic, namespace):
    """Read a core/v1 object of ``namespace`` as a dict; None when there is none."""

    def get(kind, name):
        try:
            return dynamic.resources.get(api_version="v1", kind=kind).get(name=name, namespace=namespace).to_dict()
        except NotFoundError:
            return None

    return get
