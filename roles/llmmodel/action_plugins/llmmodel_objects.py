# -*- coding: utf-8 -*-
"""llmmodel_objects, run inside ansible-playbook (module_utils/llmmodel_inprocess.py says why).

The documentation is in library/llmmodel_objects.py, the same name, so ansible-doc finds it.
"""

from __future__ import annotations

import os

import ansible.module_utils

_ROLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if os.path.join(_ROLE, "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(os.path.join(_ROLE, "module_utils"))

from ansible.module_utils.llmmodel_inprocess import InProcessModuleAction  # noqa: E402  pylint: disable=wrong-import-position


class ActionModule(InProcessModuleAction):
    """Delete or patch objects by name; then wait briefly for others to go."""

    MODULE = "llmmodel_objects"
