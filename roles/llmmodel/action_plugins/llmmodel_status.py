# -*- coding: utf-8 -*-
"""llmmodel_status, run inside ansible-playbook.

The module (library/llmmodel_status.py, which also holds the documentation) is loaded in-process and
its ``run`` called with the validated arguments: the same code and result, but no module process
and no second import of the Kubernetes client, which ansible-playbook has already loaded for the
role's k8s lookups. On every reconcile that changes the status this saves about a CPU-second.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import ansible.module_utils
from ansible.plugins.action import ActionBase

_ROLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_MODULE_NAME = "llmmodel_status"


def load_module():
    """The role's llmmodel_status module, imported once per process, its module_utils importable."""
    key = "_llmmodel_role_" + _MODULE_NAME
    if key not in sys.modules:
        module_utils = os.path.join(_ROLE, "module_utils")
        if module_utils not in ansible.module_utils.__path__:
            ansible.module_utils.__path__.append(module_utils)
        spec = importlib.util.spec_from_file_location(key, os.path.join(_ROLE, "library", _MODULE_NAME + ".py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[key] = module
    return sys.modules[key]


class ActionModule(ActionBase):
    """Merge fields and conditions into the object's status with one merge patch."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        module = load_module()
        _, params = self.validate_argument_spec(argument_spec=module.ARGUMENT_SPEC)
        try:
            result.update(module.run(params, check_mode=self._task.check_mode, diff=self._task.diff))
        except module.StatusError as exc:
            result.update(exc.extra, failed=True, msg=exc.msg)
        return result
