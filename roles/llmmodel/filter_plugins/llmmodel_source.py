# -*- coding: utf-8 -*-
"""Filters for the weights' identity and a URL people may see (module_utils/llmmodel_source.py).

``llmmodel_source_id`` is what status.weights.source, the PVC's and the Job's source annotations
and every message show; ``llmmodel_display_model`` is status.model; ``llmmodel_redact_url`` is a URL
as an Event may show it. None ever carries a URL's user info or query string (signed links carry
credentials there), nor anything of a URL kept in a Secret (``secret://<name>/<key>`` stands for it).

Their answers are built from spec strings, which ansible-operator hands over marked unsafe: a new
string made from them is not, so the answers are marked unsafe again, and a URL holding "{{ ... }}"
stays text (ansible-core 2.18 templates facts again when they are read).
"""

from __future__ import annotations

import os

import ansible.module_utils
from ansible.utils.unsafe_proxy import wrap_var

_ROLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if os.path.join(_ROLE, "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(os.path.join(_ROLE, "module_utils"))

from ansible.module_utils.llmmodel_source import display_model, redact_url, source_id  # noqa: E402  pylint: disable=wrong-import-position


def llmmodel_source_id(source, default_revision="main"):
    """spec.source -> hf://<repo>@<revision>, or the URL without user info and fragment, its query
    replaced by ?query-sha256=<digest>, plus #sha256=<checksum> when given."""
    return wrap_var(source_id(dict(source or {}), str(default_revision)))


def llmmodel_display_model(source):
    """spec.source -> the repository id, the URL without user info and query, or secret://<name>/<key>."""
    return wrap_var(display_model(dict(source or {})))


def llmmodel_redact_url(url):
    """A URL without user info and fragment, its query replaced by ?<redacted>."""
    return wrap_var(redact_url("" if url is None else str(url)))


class FilterModule:
    """llmmodel_source_id, llmmodel_display_model, llmmodel_redact_url."""

    def filters(self):
        return {"llmmodel_source_id": llmmodel_source_id, "llmmodel_display_model": llmmodel_display_model,
                "llmmodel_redact_url": llmmodel_redact_url}
