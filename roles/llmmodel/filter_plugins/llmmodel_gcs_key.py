# -*- coding: utf-8 -*-
"""``llmmodel_gcs_key_volumes``, ``llmmodel_gcs_key_mounts``: the pull pod's read-only file of a gs://
source's service-account key (module_utils/llmmodel_gcs_key.py says which key, where, and why a file).

The Secret's name is a spec string, which ansible-operator hands over marked unsafe: the answers are
marked unsafe again."""

from __future__ import annotations

import os

import ansible.module_utils
from ansible.utils.unsafe_proxy import wrap_var

_ROLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if os.path.join(_ROLE, "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(os.path.join(_ROLE, "module_utils"))

from ansible.module_utils.llmmodel_gcs_key import gcs_key_mounts, gcs_key_volumes  # noqa: E402  pylint: disable=wrong-import-position


def llmmodel_gcs_key_volumes(source):
    """spec.source -> [the optional Secret volume of its key GOOGLE_APPLICATION_CREDENTIALS], [] otherwise."""
    return wrap_var(gcs_key_volumes(dict(source or {})))


def llmmodel_gcs_key_mounts(source):
    """spec.source -> [the puller's read-only mount of that volume], [] otherwise."""
    return wrap_var(gcs_key_mounts(dict(source or {})))


class FilterModule:
    """llmmodel_gcs_key_volumes, llmmodel_gcs_key_mounts."""

    def filters(self):
        return {"llmmodel_gcs_key_volumes": llmmodel_gcs_key_volumes, "llmmodel_gcs_key_mounts": llmmodel_gcs_key_mounts}
