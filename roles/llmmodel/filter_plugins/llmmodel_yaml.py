# -*- coding: utf-8 -*-
"""llmmodel_json: a value as JSON text that YAML reads back as the same value.

The role's templates render values with JSON syntax (a JSON text is a YAML flow value), then read the
whole rendering with from_yaml. json.dumps escapes a character beyond the Basic Multilingual Plane
(an emoji in a URL, in a server's termination message) as a UTF-16 surrogate pair, "\\ud83d\\ude00",
which YAML refuses ("surrogates not allowed"): every reconcile of such a model failed. Here the pair
becomes YAML's own escape, "\\U0001f600"; everything else is json.dumps' output, so control
characters, quotes and line separators stay escaped and the value comes back verbatim.
"""

from __future__ import annotations

import json
import re

from ansible.module_utils.common.json import AnsibleJSONEncoder

# A \\uD8xx\\uDCxx pair that is an escape of its own (not preceded by an odd number of backslashes).
_SURROGATE_PAIR = re.compile(r"(?<!\\)((?:\\\\)*)\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})")


def _astral(match):
    high, low = int(match.group(2), 16), int(match.group(3), 16)
    return "%s\\U%08x" % (match.group(1), 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


def to_yaml_json(value):
    """JSON text of ``value`` whose non-BMP characters are YAML \\U escapes."""
    return _SURROGATE_PAIR.sub(_astral, json.dumps(value, cls=AnsibleJSONEncoder))


class FilterModule:
    """llmmodel_json."""

    def filters(self):
        return {"llmmodel_json": to_yaml_json}
