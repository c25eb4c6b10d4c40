# -*- coding: utf-8 -*-
"""llmmodel_selector_migration, run inside ansible-playbook (module_utils/llmmodel_inprocess.py says why).

The documentation is in library/llmmodel_selector_migration.py, the same name, so ansible-doc finds it.
"""

from __future__ import annotations

import os

import ansible.module_utils

_ROLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if os.path.join(_ROLE, "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(os.path.join(_ROLE, "module_utils"))

from ansible.module_utils.llmmodel_inprocess import InProcessModuleAction  # noqa: E402  pylint: disable=wrong-import-position


class ActionModule(InProcessModuleAction):
    """Move the server to the selector of the model's UID, one step per run."""

    MODULE = "llmmodel_selector_migration"
