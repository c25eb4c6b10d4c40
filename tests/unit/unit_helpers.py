"""Paths and helpers shared by the unit tests of the llmmodel role's Python parts."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
ROLE = REPO / "roles" / "llmmodel"
LIBRARY = ROLE / "library"
MODULE_UTILS = ROLE / "module_utils"
KUBECTL = str(REPO / "bin" / "kubectl")

# Modules import their helpers as ansible.module_utils.<name>, the way Ansible ships a role's
# module_utils; make the same import work in-process.
import ansible.module_utils  # noqa: E402

if str(MODULE_UTILS) not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(MODULE_UTILS))


@contextlib.contextmanager
def module_args(args: dict):
    """Hand ``args`` to the next AnsibleModule created in this process, as Ansible does for a module
    run. ansible-core 2.18 (the image's) reads them from ``basic._ANSIBLE_ARGS``; 2.19 added
    ``ansible.module_utils.testing.patch_module_args`` for it, used when present."""
    try:
        from ansible.module_utils.testing import patch_module_args
    except ImportError:
        patch_module_args = None
    if patch_module_args is not None:
        with patch_module_args(args):
            yield
        return
    from ansible.module_utils import basic

    payload = {"_ansible_remote_tmp": "/tmp", "_ansible_keep_remote_files": False, **args}
    saved = basic._ANSIBLE_ARGS
    basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": payload}).encode()
    try:
        yield
    finally:
        basic._ANSIBLE_ARGS = saved


def load_library_module(name: str):
    return _load("llmmodel_library_" + name, LIBRARY / (name + ".py"))


def load_filter_plugin(name: str):
    """The role's filter plugin file ``name`` (filter_plugins/<name>.py), imported as Ansible would."""
    return _load("llmmodel_filter_" + name, ROLE / "filter_plugins" / (name + ".py"))


def _load(module_name: str, path: Path):
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def task_results(events, action):
    """The ``res`` of each finished task with this action, in order, as (event name, res)."""
    return [
        (e["event"], e["event_data"]["res"])
        for e in events
        if e["event"] in ("runner_on_ok", "runner_on_failed") and e["event_data"].get("task_action") == action
    ]


def kubectl(kubeconfig, *args):
    """bin/kubectl against ``kubeconfig``; it must succeed. Returns its output."""
    done = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout
