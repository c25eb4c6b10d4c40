# -*- coding: utf-8 -*-
"""Import the Kubernetes client once in ansible-playbook, before it forks a worker for each task.

Every task runs in a worker process forked from ansible-playbook. The role's in-process modules
(action_plugins/) and the kubernetes.core lookup import the Kubernetes client inside that worker,
and the import dies with it: about 0.4 CPU-seconds, paid again by each task that talks to the API
server, three or four times per reconcile. Imported here, in ansible-playbook itself, every worker
inherits it through fork() for free.

Ansible loads the callback plugins of a role's callback_plugins/ directory for any play that uses
the role; this one needs no enabling (CALLBACK_NEEDS_ENABLED is False) and reacts to no event.
"""

from __future__ import annotations

DOCUMENTATION = r"""
---
name: llmmodel_preload
type: aggregate
short_description: Import the Kubernetes client before ansible-playbook forks its task workers
description:
  - Imports the Kubernetes Python client, its dynamic client and kubernetes.core's client helpers when
    ansible-playbook loads its callbacks, so that the workers forked for each task inherit them
    instead of importing them again. Then freezes the garbage collector's view of what is loaded.
  - Reacts to no event. Missing libraries are ignored here; the tasks that need them report it.
requirements:
  - kubernetes (Python client)
"""

import gc

from ansible.plugins.callback import CallbackBase


def _preload():
    try:
        import kubernetes.client  # noqa: F401  pylint: disable=unused-import
        import kubernetes.config  # noqa: F401  pylint: disable=unused-import
        import kubernetes.dynamic  # noqa: F401  pylint: disable=unused-import
    except ImportError:
        return
    try:
        # What the kubernetes.core k8s lookup loads for each read.
        import ansible_collections.kubernetes.core.plugins.module_utils.k8s.client  # noqa: F401  pylint: disable=unused-import
    except ImportError:
        pass
    # The loaded modules never go away: keep the collector from scanning them again in every worker.
    gc.freeze()


class CallbackModule(CallbackBase):
    """Preloads on construction; no event handlers."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "llmmodel_preload"
    CALLBACK_NEEDS_ENABLED = False

    def __init__(self, display=None):
        super().__init__(display)
        _preload()
