# -*- coding: utf-8 -*-
"""llmmodel_conflicts: which of the children the role has read are not the model's
(module_utils/llmmodel_ownership.py decides). Runs inside ansible-playbook over objects already read:
no API call of its own. The messages quote object names and field managers others chose, so they are
marked unsafe and never templated again.
"""

from __future__ import annotations

import os

import ansible.module_utils
from ansible.utils.unsafe_proxy import wrap_var

_ROLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if os.path.join(_ROLE, "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(os.path.join(_ROLE, "module_utils"))

from ansible.module_utils.llmmodel_ownership import conflict, owned  # noqa: E402  pylint: disable=wrong-import-position


def conflicts(objects_by_kind, owner, adopt=None):
    """[{kind, name, message}] of the objects (kind -> object, {} when absent) that exist and are not the owner's."""
    adopt = adopt or {}
    found = [conflict(kind, live, owner) for kind, live in (objects_by_kind or {}).items()
             if live and not owned(live, owner, adopt.get(kind))]
    return wrap_var(found)


class FilterModule:
    """llmmodel_conflicts."""

    def filters(self):
        return {"llmmodel_conflicts": conflicts}
