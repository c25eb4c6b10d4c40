#!/usr/bin/env python3
"""The kubelet's Secret check, for the pods kwok plays (the test bed; started by hack/cluster.py).

A real kubelet starts no container whose environment names a Secret (secretKeyRef) that does not
exist or lacks the key: the container waits with CreateContainerConfigError, and the kubelet tries
again until the Secret is there. kwok plays pods without looking at Secrets, so this process does the
check for it: every half second it reads the Pending pods of the kwok nodes that use a secretKeyRef
and writes its verdict into the annotation testbed.llm-operator.io/secrets, "ok" or
"missing:<the kubelet's message>". The stages of hack/cluster/stages.yaml start such a pod only once
the verdict is "ok", and show the kubelet's waiting state otherwise. Not a real kubelet: it checks
only env secretKeyRefs (not envFrom, volumes or image pull secrets).

Usage: secret_gate.py KUBECTL KUBECONFIG
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse

ANNOTATION = "testbed.llm-operator.io/secrets"
POLL_SECONDS = 0.5
# The kwok nodes are read again every this many polls (they do not change during a test run).
NODE_POLLS = 60


class Api:
    """Just enough of the API: GET and merge PATCH with the kubeconfig's client certificate."""

    def __init__(self, kubectl: str, kubeconfig: str):
        config = json.loads(subprocess.run([kubectl, "--kubeconfig", kubeconfig, "config", "view", "--raw", "-o", "json"],
                                           capture_output=True, text=True, check=True).stdout)
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        self.url = urllib.parse.urlsplit(cluster["server"])
        self.context = ssl.create_default_context(cafile=self._file(cluster, "certificate-authority"))
        self.context.load_cert_chain(self._file(user, "client-certificate"), self._file(user, "client-key"))

    @staticmethod
    def _file(section: dict, key: str) -> str:
        if section.get(key):
            return section[key]
        handle, path = tempfile.mkstemp(prefix="secret-gate-")
        with os.fdopen(handle, "wb") as out:
            out.write(base64.b64decode(section[key + "-data"]))
        return path

    def request(self, method: str, path: str, body: dict | None = None) -> dict | None:
        connection = http.client.HTTPSConnection(self.url.hostname, self.url.port, context=self.context, timeout=10)
        try:
            headers = {"Content-Type": "application/merge-patch+json"} if body is not None else {}
            connection.request(method, path, json.dumps(body) if body is not None else None, headers)
            response = connection.getresponse()
            data = response.read()
            return json.loads(data) if response.status == 200 else None
        finally:
            connection.close()


def secret_refs(pod: dict) -> list[tuple[str, str]]:
    """(secret name, key) of every required env secretKeyRef of the pod's containers."""
    refs = []
    spec = pod.get("spec") or {}
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        for env in container.get("env") or []:
            ref = (env.get("valueFrom") or {}).get("secretKeyRef")
            if ref and not ref.get("optional"):
                refs.append((ref["name"], ref["key"]))
    return refs


def verdict(api: Api, namespace: str, refs: list[tuple[str, str]]) -> str:
    """The kubelet's verdict on the pod's Secret references, with its own wording."""
    for name, key in refs:
        secret = api.request("GET", f"/api/v1/namespaces/{namespace}/secrets/{name}")
        if secret is None:
            return f'missing:secret "{name}" not found'
        if key not in (secret.get("data") or {}):
            return f"missing:couldn't find key {key} in Secret {namespace}/{name}"
    return "ok"


def sweep(api: Api, kwok_nodes: set[str]) -> None:
    pods = api.request("GET", "/api/v1/pods?fieldSelector=status.phase%3DPending") or {}
    for pod in pods.get("items") or []:
        meta = pod["metadata"]
        refs = secret_refs(pod)
        if not refs or meta.get("deletionTimestamp") or (pod.get("spec") or {}).get("nodeName") not in kwok_nodes:
            continue
        found = verdict(api, meta["namespace"], refs)
        if (meta.get("annotations") or {}).get(ANNOTATION) != found:
            api.request("PATCH", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                        {"metadata": {"annotations": {ANNOTATION: found}}})


def kwok_node_names(api: Api) -> set[str]:
    nodes = api.request("GET", "/api/v1/nodes") or {}
    return {n["metadata"]["name"] for n in nodes.get("items") or []
            if (n["metadata"].get("annotations") or {}).get("kwok.x-k8s.io/node") == "fake"}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    api = Api(*argv)
    nodes: set[str] = set()
    polls = 0
    while True:
        try:
            if not nodes or polls % NODE_POLLS == 0:
                nodes = kwok_node_names(api) or nodes
            polls += 1
            sweep(api, nodes)
        except (OSError, http.client.HTTPException, ValueError):
            pass  # the control plane is restarting (tests/reliability stops it): try again
        time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
