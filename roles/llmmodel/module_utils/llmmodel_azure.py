# -*- coding: utf-8 -*-
"""Azure Blob Storage sources (``az://<container>/<blob>``, ``https://<account>.blob.core.windows.net/...``):
which keys of ``spec.source.credentialsSecret`` reach the pull, and what a pull that found none means.

The keys are the variables Azure's CLI and SDKs read (``az storage blob download`` reads the same
Secret): an account with its key or a SAS token, or a connection string. That is a choice between
keys, which no ``secretKeyRef`` can require: each is ``optional``, so the pod starts whatever the
Secret holds, and a Secret that is missing or holds none of them is told by the puller ("set
AZURE_STORAGE_ACCOUNT with ...", exit 2), which ``credentials_problem`` turns into CredentialsNotFound
with the command that creates the Secret, as a missing key is told for the other sources.
"""

from __future__ import annotations

import re

from ansible.module_utils.llmmodel_pod_diagnosis import container_statuses, newest_first

AZURE_KEYS = ("AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING")
_BLOB_URL = re.compile(r"^https://[a-z0-9]{3,24}\.blob\.core\.(windows\.net|chinacloudapi\.cn|usgovcloudapi\.net)/",
                       re.IGNORECASE)
# The puller's words when the environment gives no Azure credentials (azure_source.py, azure_errors.py).
_NONE_FOUND = "AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or AZURE_STORAGE_CONNECTION_STRING"


def uses_azure_keys(source):
    """True when ``source`` (spec.source) is an az:// URL or an account's blob https URL."""
    url = str((source or {}).get("url") or "")
    return url.lower().startswith("az://") or bool(_BLOB_URL.match(url))


def _azure_refs(job):
    """{Secret name} of the Job's Azure secretKeyRefs."""
    spec = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
    names = set()
    for container in spec.get("containers") or []:
        for env in container.get("env") or []:
            ref = (env.get("valueFrom") or {}).get("secretKeyRef") or {}
            if env.get("name") in AZURE_KEYS and ref.get("name"):
                names.add(ref["name"])
    return names


def _last_word(pods):
    """The newest pull pod's termination message, or ''."""
    for pod in newest_first(pods)[:1]:
        for cstatus in container_statuses(pod):
            terminated = (cstatus.get("state") or {}).get("terminated") or {}
            if terminated.get("message"):
                return terminated["message"]
    return ""


def credentials_problem(job, pods):
    """CredentialsNotFound when the pull read its credentials Secret's Azure keys and found none (the
    newest pull pod's termination message says so)."""
    names = _azure_refs(job or {})
    if len(names) != 1 or _NONE_FOUND not in _last_word(pods or []):
        return None
    name = names.pop()
    namespace = ((job or {}).get("metadata") or {}).get("namespace") or "?"
    create = "kubectl -n %s create secret generic %s" % (namespace, name)
    return {
        "reason": "CredentialsNotFound",
        "message": "Secret %s in namespace %s is missing or holds no Azure Storage credentials (%s); create it: "
        "%s --from-literal=AZURE_STORAGE_ACCOUNT=<account> --from-literal=AZURE_STORAGE_KEY=<account key> (or "
        "AZURE_STORAGE_SAS_TOKEN=<SAS token> in place of the key, or AZURE_STORAGE_CONNECTION_STRING=<connection "
        "string> alone), then pull again" % (name, namespace, _NONE_FOUND, create),
    }
