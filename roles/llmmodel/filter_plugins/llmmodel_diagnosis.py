# -*- coding: utf-8 -*-
"""Filters that say why a model's server or pull does not run (module_utils/llmmodel_diagnosis.py),
and whose events are worth reading to say it.

They run inside ansible-playbook over objects the role has already read with a lookup: no module
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

from ansible.module_utils.llmmodel_diagnosis import (  # noqa: E402  pylint: disable=wrong-import-position
    CREATING_GRACE_SECONDS,
    diagnose_pull,
    diagnose_server,
    event_subjects,
)


def server_problem(pods, config_hash=None, hash_annotation=None, deployment=None, events=None, grace_seconds=CREATING_GRACE_SECONDS):
    """{reason, message} of the server pods of the current configuration and of the Deployment's
    conditions (``deployment``: the Deployment as read), with ``events`` when they were read; {} when none."""
    found = diagnose_server(list(pods or []), config_hash, hash_annotation, deployment=deployment or {},
                            events=list(events or []), grace_seconds=int(grace_seconds))
    return wrap_var(found or {})


def pull_problem(job, pods, events=None, grace_seconds=CREATING_GRACE_SECONDS):
    """{reason, message} of the pull Job and its pods, with ``events`` when they were read; {} when none."""
    return wrap_var(diagnose_pull(job or {}, list(pods or []), events=list(events or []), grace_seconds=int(grace_seconds)) or {})


def stuck_event_subjects(pods, job=None, config_hash=None, hash_annotation=None, grace_seconds=CREATING_GRACE_SECONDS):
    """[{kind, name, uid, fieldSelector}] of the objects whose events would say why they are stuck; [] when none."""
    return wrap_var(event_subjects(list(pods or []), job or {}, config_hash, hash_annotation, grace_seconds=int(grace_seconds)))


class FilterModule:
    """llmmodel_server_problem, llmmodel_pull_problem, llmmodel_event_subjects."""

    def filters(self):
        return {
            "llmmodel_server_problem": server_problem,
            "llmmodel_pull_problem": pull_problem,
            "llmmodel_event_subjects": stuck_event_subjects,
        }
