# -*- coding: utf-8 -*-
"""The shape of the role's modules: ``run(params, check_mode, diff)`` returns the result or raises
ModuleFailure; ``module_main`` runs it as a plain module, module_utils/llmmodel_inprocess.py inside
ansible-playbook. Nothing here talks to the API server, so a module that needs none stays light.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule


class ModuleFailure(Exception):
    """A failure to report: the message, and extra result keys (never secret values)."""

    def __init__(self, msg, **extra):
        super().__init__(msg)
        self.msg = msg
        self.extra = extra


def module_main(argument_spec, run):
    """The plain-module entry point of a module whose work is ``run(params, check_mode, diff)``."""
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    try:
        result = run(module.params, module.check_mode, module._diff)
    except ModuleFailure as exc:
        module.fail_json(msg=exc.msg, **exc.extra)
    module.exit_json(**result)
