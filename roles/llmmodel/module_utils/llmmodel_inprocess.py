# -*- coding: utf-8 -*-
"""Run one of the role's modules inside ansible-playbook, from an action plugin of the same name.

A module process costs about a second of CPU per task (a new Python, ansible's module wrapper, the
client set up again); the reconciles of an operator pay that on every run. The role's own modules keep
their documentation and a ``main`` for plain module use, and expose ``run(params, check_mode, diff)``,
which the action plugin calls here with the validated arguments: the same code and the same result.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from ansible.module_utils.llmmodel_module import ModuleFailure
from ansible.plugins.action import ActionBase


# This file is the role's module_utils/llmmodel_inprocess.py; the modules are in the role's library/.
ROLE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def load_library_module(name):
    """The role's library module ``name``, imported once per process."""
    key = "_llmmodel_library_" + name
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, os.path.join(ROLE_DIR, "library", name + ".py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[key] = module
    return sys.modules[key]


class InProcessModuleAction(ActionBase):
    """Base of the role's action plugins: validate the arguments, call the module's ``run``."""

    TRANSFERS_FILES = False
    _requires_connection = False
    MODULE = ""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        module = load_library_module(self.MODULE)
        _, params = self.validate_argument_spec(argument_spec=module.ARGUMENT_SPEC)
        try:
            result.update(module.run(params, check_mode=self._task.check_mode, diff=self._task.diff))
        except ModuleFailure as exc:
            result.update(exc.extra, failed=True, msg=exc.msg)
        return result
