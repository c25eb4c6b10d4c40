# -*- coding: utf-8 -*-
"""The runtime preset a server runs, pinned until the model's spec changes or its user asks for the new
one (docs/design.md, "Upgrades roll no server"; docs/install.md, "Upgrade").

A release of the operator, or the manager's LLMMODEL_IMAGE_<PRESET>, may change what a preset resolves
to: its image, its command, its arguments (adding ``--metrics`` to llama.cpp's did). Rendered afresh,
every model of that preset would be rolled at once, and a one-replica model (Recreate) stops answering
while its new pod loads. So the server Deployment records what the preset resolved to, and for which value of the model's
``upgrade-server`` annotation, in its annotation ``inference.ai.example.com/server-preset`` (on the
Deployment, not its pod template: writing it rolls nothing)::

    {"upgrade": "", "image": "ghcr.io/ggml-org/llama.cpp:server-b7131", "command": [],
     "args": ["--model", "/model-weights/m.gguf", ...]}

Whether the spec changed since the last reconcile is the model's own word: ``metadata.generation``
ahead of ``status.observedGeneration`` (the role writes the latter at the end of every reconcile).
The generation is not part of the record: the API server moves a Deployment's generation for any
change of its annotations (the last-applied record included), so a spec change that keeps the
preset would then write the Deployment.

While the spec is as last reconciled and the annotation's value as recorded, the recorded values are
rendered again; a spec change or a new annotation value renders the preset as it is now. The record
is read from the Deployment the reconcile reads anyway: no request of its own.
"""

from __future__ import annotations

import json
import re

# What the preset decides of the server's container, pinned together.
FIELDS = ("image", "command", "args")
_IMAGE = re.compile(r"^[^\s]+$")


def _strings(value):
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def recorded(deployment, key):
    """The record of the Deployment's annotation ``key``, or None when it has none or not a sound one
    (a Deployment of a release before the pin, or an annotation written by hand)."""
    text = (((deployment or {}).get("metadata") or {}).get("annotations") or {}).get(key)
    try:
        record = json.loads(text) if text else None
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("upgrade"), str):
        return None
    image = record.get("image")
    if image is not None and not (isinstance(image, str) and _IMAGE.match(image)):
        return None
    if not (_strings(record.get("command")) and _strings(record.get("args"))):
        return None
    return record


def _changes(pinned, fresh):
    said = []
    if pinned["image"] != fresh["image"]:
        said.append("image %s -> %s" % (pinned["image"], fresh["image"]))
    if pinned["command"] != fresh["command"]:
        said.append("command %s -> %s" % (" ".join(pinned["command"]) or "(the image's)", " ".join(fresh["command"]) or "(the image's)"))
    if pinned["args"] != fresh["args"]:
        added = [arg for arg in fresh["args"] if arg not in pinned["args"]]
        gone = [arg for arg in pinned["args"] if arg not in fresh["args"]]
        said.append("arguments" + "".join([" +" + " +".join(added)] if added else []) + "".join([" -" + " -".join(gone)] if gone else []))
    return said


def pin(fresh, deployment, key, generation, upgrade="", observed=None):
    """What the server runs of its preset after this reconcile.

    ``fresh``: {image, command, args} as the preset resolves now (image None: the spec names its own);
    ``deployment``: the live server Deployment ({} when none); ``key``: the annotation of the record;
    ``generation``: the model's; ``upgrade``: the value of its ``upgrade-server`` annotation;
    ``observed``: its ``status.observedGeneration`` (None: never reconciled).

    Returns {preset: {image, command, args} to render, record: the annotation's JSON text,
    pinned: whether the recorded values were kept, changes: what the fresh preset would change
    (empty: the server runs the current preset)}.
    """
    fresh = {field: fresh.get(field) for field in FIELDS}
    fresh["command"], fresh["args"] = list(fresh["command"] or []), list(fresh["args"] or [])
    unchanged = observed is not None and str(observed) == str(int(generation))
    upgrade = str(upgrade or "")
    live = recorded(deployment, key)
    kept = live is not None and unchanged and live["upgrade"] == upgrade
    preset = {field: live[field] for field in FIELDS} if kept else fresh
    record = json.dumps(dict(upgrade=upgrade, **preset), sort_keys=True, separators=(",", ":"))
    return {"preset": preset, "record": record, "pinned": kept, "changes": _changes(preset, fresh)}
