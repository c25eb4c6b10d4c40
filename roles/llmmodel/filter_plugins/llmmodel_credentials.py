# -*- coding: utf-8 -*-
"""``llmmodel_credentials_env``: the pull container's secretKeyRefs to spec.source.credentialsSecret
(module_utils/llmmodel_credentials.py says which keys, for which source, and why by reference).

The Secret's name is a spec string, which ansible-operator hands over marked unsafe: the answer is
marked unsafe again."""

from __future__ import annotations

import os

import ansible.module_utils
from ansible.utils.unsafe_proxy import wrap_var

_ROLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if os.path.join(_ROLE, "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(os.path.join(_ROLE, "module_utils"))

from ansible.module_utils.llmmodel_credentials import credentials_env  # noqa: E402  pylint: disable=wrong-import-position


def llmmodel_credentials_env(source):
    """spec.source -> [{name, valueFrom: {secretKeyRef: {name, key[, optional]}}}], [] without a Secret."""
    return wrap_var(credentials_env(dict(source or {})))


class FilterModule:
    """llmmodel_credentials_env."""

    def filters(self):
        return {"llmmodel_credentials_env": llmmodel_credentials_env}
