# -*- coding: utf-8 -*-
"""The discovery answers of optional kinds' group-versions (``when_served``), remembered across runs.

Each reconcile is a new ansible-playbook, so a client's in-memory discovery (llmmodel_kube.Resources)
lasts one run: every no-op reconcile of a model would ask the API server once more, per optional
group-version, whether it serves it (the Prometheus Operator's, the Gateway API Inference
Extension's). Where ``LLMMODEL_DISCOVERY_CACHE`` names a directory (the operator's Deployment sets
one on its pod's own /tmp volume), the answer is kept there for ``LLMMODEL_DISCOVERY_TTL`` seconds
(300 by default), per API server and group-version: a no-op reconcile then asks nothing, and CRDs
installed later are found within that time, on the model's next reconcile. Without the variable
(tests, ``make run`` unless set) every run asks, as before. Only the list of resources is kept: no
credential, nothing of any object.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time

DEFAULT_TTL_SECONDS = 300


def _path(base_url, api_version):
    directory = os.environ.get("LLMMODEL_DISCOVERY_CACHE")
    if not directory:
        return None
    key = hashlib.sha256(("%s %s" % (base_url, api_version)).encode("utf-8")).hexdigest()[:32]
    return os.path.join(directory, key + ".json")


def _ttl():
    try:
        return float(os.environ.get("LLMMODEL_DISCOVERY_TTL") or DEFAULT_TTL_SECONDS)
    except ValueError:
        return DEFAULT_TTL_SECONDS


def recall(base_url, api_version):
    """The remembered resource list (``[]``: not served) if still fresh, else None."""
    path = _path(base_url, api_version)
    if path is None:
        return None
    try:
        if time.time() - os.stat(path).st_mtime >= _ttl():
            return None
        with open(path, encoding="utf-8") as handle:
            listing = json.load(handle)
    except (OSError, ValueError):
        return None
    return listing if isinstance(listing, list) else None


def remember(base_url, api_version, listing):
    """Keep ``listing``; a directory that cannot be written only costs the next run a request."""
    path = _path(base_url, api_version)
    if path is None:
        return
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        handle, scratch = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(listing, out)
        os.replace(scratch, path)  # whole or not at all, for a run reading it at the same time
    except OSError:
        pass


def forget(base_url, api_version):
    """Drop a remembered answer the API server has since contradicted (a kind served no longer)."""
    path = _path(base_url, api_version)
    if path is not None:
        try:
            os.unlink(path)
        except OSError:
            pass
