"""Paths and helpers shared by the unit tests of the llmmodel role's Python parts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
ROLE = REPO / "roles" / "llmmodel"
LIBRARY = ROLE / "library"
MODULE_UTILS = ROLE / "module_utils"

# Modules import their helpers as ansible.module_utils.<name>, the way Ansible ships a role's
# module_utils; make the same import work in-process.
import ansible.module_utils  # noqa: E402

if str(MODULE_UTILS) not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(MODULE_UTILS))


def load_library_module(name: str):
    spec = importlib.util.spec_from_file_location("llmmodel_library_" + name, LIBRARY / (name + ".py"))
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
