# -*- coding: utf-8 -*-
"""requeue_after, run inside ansible-playbook: no module process for the last task of a reconcile.

The documentation is in library/requeue_after.py (the same name, so ansible-doc finds it). The result
is the module's: ansible-operator reads ``period`` from it (see the module's description).
"""

from __future__ import annotations

import os

import ansible.module_utils

_ROLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if os.path.join(_ROLE, "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(os.path.join(_ROLE, "module_utils"))

from ansible.module_utils.llmmodel_inprocess import InProcessModuleAction  # noqa: E402  pylint: disable=wrong-import-position


class ActionModule(InProcessModuleAction):
    """Validate the period and return it; change nothing."""

    MODULE = "requeue_after"
