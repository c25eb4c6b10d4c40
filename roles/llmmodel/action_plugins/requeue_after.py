# -*- coding: utf-8 -*-
"""requeue_after, run inside ansible-playbook: no module process for the last task of a reconcile.

The documentation is in library/requeue_after.py (the same name, so ansible-doc finds it). The result
is the module's: ansible-operator reads ``period`` from it (see the module's description).
"""

from __future__ import annotations

import os

import ansible.module_utils
from ansible.plugins.action import ActionBase

# The role's module_utils, importable here as they are inside the role's modules.
_ROLE_MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "module_utils")
if _ROLE_MODULE_UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_ROLE_MODULE_UTILS)

from ansible.module_utils.llmmodel_duration import parse_go_duration  # noqa: E402  pylint: disable=wrong-import-position

ARGUMENT_SPEC = {"time": {"type": "str", "required": True, "aliases": ["period"]}}


class ActionModule(ActionBase):
    """Validate the period and return it; change nothing."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        period = args["time"].strip()
        try:
            nanoseconds = parse_go_duration(period)
        except ValueError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        result.update(changed=False, period=period, seconds=nanoseconds / 1e9)
        return result
