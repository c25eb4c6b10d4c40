# -*- coding: utf-8 -*-
"""Which keys of ``spec.source.credentialsSecret`` reach the pull container, and how.

The Secret's keys are the variables each source's own tools read, so one Secret serves the puller and
those tools alike: ``HF_TOKEN`` for the Hugging Face Hub (and a Hub ``/resolve/`` URL); for an s3://
source, and a gs:// one through the S3 interoperability API (HMAC keys), the variables of the AWS SDKs
and CLI (``aws s3 cp`` reads the same Secret); for an az:// one, Azure's (llmmodel_azure.py).

Each variable is a ``secretKeyRef`` (never a value the Job holds), not an ``envFrom`` of the whole
Secret: only the names the puller reads enter the pod (a Secret shared with other tools may hold
more), the Job says which keys it needs, and a required key that is missing stops the pod with the
kubelet's "couldn't find key K in Secret NS/NAME", which the diagnosis turns into CredentialsNotFound
with the command that fixes it (``envFrom`` would start the pod without the key, and the pull would
go unsigned into a 403). The key pair is required; a session token, the region and an endpoint are
``optional``. A gs:// source's Secret may hold the key pair (HMAC keys) or a service-account key file
(module_utils/llmmodel_gcs_key.py): there every key is optional, and the puller names what is missing.
"""

from __future__ import annotations

from ansible.module_utils.llmmodel_azure import AZURE_KEYS, uses_azure_keys
from ansible.module_utils.llmmodel_gcs_key import gcs_key_env

# The schemes whose credentials are the AWS SDKs' variables (gs://: HMAC keys, S3 interoperability).
AWS_SCHEMES = ("s3", "gs")
HF_TOKEN = "HF_TOKEN"
AWS_KEY_PAIR = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
AWS_OPTIONAL = ("AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")

# What a required key holds, for the advice of a missing Secret or key (never a value).
PLACEHOLDERS = {
    HF_TOKEN: "<your token>",
    "AWS_ACCESS_KEY_ID": "<access key id>",
    "AWS_SECRET_ACCESS_KEY": "<secret access key>",
}


def uses_aws_keys(source):
    """True when ``source`` (spec.source) is an s3:// or gs:// URL, read with the AWS SDKs' variables.
    A URL kept in a Secret (urlSecret) is not seen by the operator: it takes HF_TOKEN, as before."""
    url = str((source or {}).get("url") or "")
    scheme, sep, _rest = url.partition("://")
    return bool(sep) and scheme.lower() in AWS_SCHEMES


def credentials_keys(source):
    """[(key, optional)] of the credentials Secret that the pull container reads; [] without one."""
    source = source or {}
    if not source.get("credentialsSecret"):
        return []
    if uses_azure_keys(source):  # a choice of keys, each optional (module_utils/llmmodel_azure.py)
        return [(key, True) for key in AZURE_KEYS]
    if uses_aws_keys(source):
        either = str(source.get("url")).lower().startswith("gs://")  # HMAC keys, or a key file instead
        return [(key, either) for key in AWS_KEY_PAIR] + [(key, True) for key in AWS_OPTIONAL]
    return [(HF_TOKEN, False)]


def credentials_env(source):
    """The pull container's env entries for the credentials Secret: one secretKeyRef per key, and for
    gs:// the path of the mounted key file."""
    name = (source or {}).get("credentialsSecret")
    env = []
    for key, optional in credentials_keys(source):
        ref = {"name": name, "key": key}
        if optional:
            ref["optional"] = True
        env.append({"name": key, "valueFrom": {"secretKeyRef": ref}})
    return env + gcs_key_env(source)
