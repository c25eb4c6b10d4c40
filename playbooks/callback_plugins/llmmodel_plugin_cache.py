# -*- coding: utf-8 -*-
"""Load the Jinja2 filter and test plugins, and the lookups the role reads with, once, in
ansible-playbook's own process before the first task: every task runs in a process forked from it,
which then finds them loaded.

Without this, nothing in that process uses a filter or a test (the first use is a task's `when`, in the
task's fork), so every task's fork loaded all of them again from their files: Ansible's own and the
role's (filter_plugins/, with the module_utils they import), about 25 ms per task, skipped tasks
included, and more with each filter file the role gains; each task that reads the cluster loaded
lookup_plugins/llmmodel_read.py and its client (about 15 ms), each template lookup its plugin
(bench/RESULTS.md). What is loaded is the same plugins from the same files, once per reconcile instead
of once per task; the role's behaviour does not change. Loaded automatically, as a callback next to the
playbook that ansible-operator runs (playbooks/llmmodel.yml), and prints nothing.
"""

from __future__ import annotations

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import filter_loader, lookup_loader, test_loader

# The lookups of the role's tasks (roles/llmmodel/tasks/): loaded by name, not all of Ansible's.
LOOKUPS = ("ansible.builtin.template", "ansible.builtin.env", "llmmodel_read")

DOCUMENTATION = """
    name: llmmodel_plugin_cache
    type: aggregate
    short_description: Load the filter and test plugins once per run, before the tasks fork
    description:
      - Loads every filter and test plugin (Ansible's and the role's), and the lookups the role's tasks use, in
        ansible-playbook's process when the play starts, so that the process of each task, forked from it, does
        not load them again.
"""


class CallbackModule(CallbackBase):
    """Loads the plugins when the play starts (the role, and so its filter_plugins/, is loaded by then)."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "llmmodel_plugin_cache"
    CALLBACK_NEEDS_ENABLED = False

    def v2_playbook_on_play_start(self, play):
        for loader in (filter_loader, test_loader):
            for _plugin in loader.all():
                pass
        for name in LOOKUPS:
            lookup_loader.get(name, class_only=True)
