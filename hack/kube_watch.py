"""The events of `kubectl get <resource> --watch` as dicts, for the test bed's small controllers
(hack/node_volumes.py, hack/volume_provisioner.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator


def events(kubectl: str, kubeconfig: str, *resource: str) -> Iterator[dict]:
    """Each watch event ({"type": ADDED|MODIFIED|DELETED, "object": ...}) of the resource, the objects
    that exist first (ADDED), until the watch ends (an API server time-out: the caller starts again)."""
    command = [kubectl, "--kubeconfig", kubeconfig, "get", *resource, "--watch", "--output-watch-events", "-o", "json"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    decoder = json.JSONDecoder()
    buffer = ""
    assert process.stdout is not None
    try:
        for line in process.stdout:
            buffer += line
            while buffer.strip():
                try:
                    event, end = decoder.raw_decode(buffer.lstrip())
                except json.JSONDecodeError:
                    break
                buffer = buffer.lstrip()[end:]
                yield event
    finally:
        process.kill()
        process.wait()
