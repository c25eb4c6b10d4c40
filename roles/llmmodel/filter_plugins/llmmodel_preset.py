# -*- coding: utf-8 -*-
"""llmmodel_preset_pin: the runtime preset a server runs, kept as it was deployed until the model's
spec changes or its user asks for the new one (module_utils/llmmodel_preset.py decides). It takes the
server decision of templates/server.yaml.j2 (its preset_image, command and args are the preset as it
resolves now) and returns it with ``pin`` added, in the task that makes the decision. It reads the
Deployment already read: no API call of its own. The recorded values come from an annotation that
others can write, so the pin is marked unsafe: never templated again.
"""

from __future__ import annotations

import os

import ansible.module_utils
from ansible.utils.unsafe_proxy import wrap_var

_ROLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if os.path.join(_ROLE, "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(os.path.join(_ROLE, "module_utils"))

# pylint: disable=wrong-import-position
from ansible.module_utils.llmmodel_preset import pin  # noqa: E402


def llmmodel_preset_pin(server, deployment, key, generation, upgrade="", observed=None):
    """The server decision with ``pin``: {preset, record, pinned, changes}, see module_utils/llmmodel_preset.pin."""
    fresh = {"image": server.get("preset_image"), "command": server.get("command"), "args": server.get("args")}
    return dict(server, pin=wrap_var(pin(fresh, deployment or {}, str(key), generation, upgrade, observed)))


class FilterModule:
    """llmmodel_preset_pin."""

    def filters(self):
        return {"llmmodel_preset_pin": llmmodel_preset_pin}
