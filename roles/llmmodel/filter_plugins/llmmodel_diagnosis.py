# -*- coding: utf-8 -*-
"""Filters that say why a model's server or pull does not run (module_utils/llmmodel_diagnosis.py).

They run inside ansible-playbook over pods the role has already read with a lookup: no module
process, no API call of their own. Their answers quote what containers and the cluster wrote (a
termination message is any text a container leaves), so they are marked unsafe: a fact holding
"{{ ... }}" from a crashing server stays text and is never templated (ansible-core 2.18 templates
facts again when they are read; 2.19 trusts no string a filter makes).
"""

from __future__ import annotations

import os

import ansible.module_utils
from ansible.utils.unsafe_proxy import wrap_var

_ROLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if os.path.join(_ROLE, "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(os.path.join(_ROLE, "module_utils"))

from ansible.module_utils.llmmodel_diagnosis import diagnose_pull, diagnose_server  # noqa: E402  pylint: disable=wrong-import-position


def server_problem(pods, config_hash=None, hash_annotation=None):
    """{reason, message} of the server pods of the current configuration, or {} when none."""
    return wrap_var(diagnose_server(list(pods or []), config_hash, hash_annotation) or {})


def pull_problem(job, pods):
    """{reason, message} of the pull Job and its pods, or {} when none."""
    return wrap_var(diagnose_pull(job or {}, list(pods or [])) or {})


class FilterModule:
    """llmmodel_server_problem, llmmodel_pull_problem."""

    def filters(self):
        return {"llmmodel_server_problem": server_problem, "llmmodel_pull_problem": pull_problem}
