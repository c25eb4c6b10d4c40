# -*- coding: utf-8 -*-
"""A service-account key file for a gs:// source: the credentials Secret's key ``GOOGLE_APPLICATION_CREDENTIALS``.

Google's SDKs read a key file from the path in ``GOOGLE_APPLICATION_CREDENTIALS``; the Secret's key of
that name holds the file's JSON. The pull pod mounts that one key, read-only, as a file (an optional
Secret volume with one item) and sets the variable to its path: the JSON never becomes an environment
value, and the Job holds only the Secret's name and the path.

The Secret may instead hold HMAC keys (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``: the S3
interoperability API), so for a gs:// source no key is required of it: each reference is optional, the
pod starts whatever the Secret holds (or when there is none yet), and the puller says in one line which
keys to put when it finds neither form (exit 2, ``PullFailed``; a fixed Secret is taken by
``retry-pull``). Without ``credentialsSecret`` nothing is mounted: the puller asks the GKE metadata
server for the token of the pod's workload identity.
"""

from __future__ import annotations

GCS_KEY_FILE = "GOOGLE_APPLICATION_CREDENTIALS"
# Optional: another endpoint of the JSON API (an emulator, a private endpoint), as Google's SDKs read it.
GCS_ENDPOINT = "STORAGE_EMULATOR_HOST"
GCS_KEY_VOLUME = "gcs-key"
GCS_KEY_DIR = "/var/run/secrets/inference.ai.example.com/gcs"
GCS_KEY_NAME = "key.json"
GCS_KEY_MODE = 0o440  # the puller's user reads it through the pod's fsGroup; nobody else in the pod


def uses_gcs_key(source):
    """True when ``source`` (spec.source) is a gs:// URL with a credentials Secret."""
    source = source or {}
    scheme, sep, _rest = str(source.get("url") or "").partition("://")
    return bool(sep) and scheme.lower() == "gs" and bool(source.get("credentialsSecret"))


def gcs_key_env(source):
    """[GOOGLE_APPLICATION_CREDENTIALS=<the mounted file>, STORAGE_EMULATOR_HOST from the Secret if it has
    it] for a gs:// source with a Secret, else []."""
    if not uses_gcs_key(source):
        return []
    endpoint = {"secretKeyRef": {"name": source["credentialsSecret"], "key": GCS_ENDPOINT, "optional": True}}
    return [{"name": GCS_KEY_FILE, "value": "%s/%s" % (GCS_KEY_DIR, GCS_KEY_NAME)},
            {"name": GCS_ENDPOINT, "valueFrom": endpoint}]


def gcs_key_volumes(source):
    """The pull pod's volume of the Secret's one key GOOGLE_APPLICATION_CREDENTIALS (optional), or []."""
    if not uses_gcs_key(source):
        return []
    secret = {
        "secretName": source["credentialsSecret"],
        "optional": True,
        "defaultMode": GCS_KEY_MODE,
        "items": [{"key": GCS_KEY_FILE, "path": GCS_KEY_NAME}],
    }
    return [{"name": GCS_KEY_VOLUME, "secret": secret}]


def gcs_key_mounts(source):
    """The puller container's read-only mount of that volume, or []."""
    if not uses_gcs_key(source):
        return []
    return [{"name": GCS_KEY_VOLUME, "mountPath": GCS_KEY_DIR, "readOnly": True}]
