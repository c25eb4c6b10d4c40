#!/usr/bin/env python3
"""Real directories behind the test bed's PersistentVolumes, while the real node runs.

The test bed's volume stage (hack/cluster/stages.yaml) binds every PVC of its Immediate classes at
once to a hostPath PV under VOLUME_DIR; hack/volume_provisioner.py makes one there on the node of a
node-local claim's first pod (WaitForFirstConsumer). For a pod on the real node that path is a real directory, but the kubelet would
create it root-owned 0755, and the pull Job runs as a non-root user (fsGroup does not apply to
hostPath). This watcher, started by hack/node.py, gives each PV its directory before a pod uses it,
writable for the pod's user, and removes it when the PV is deleted (reclaim policy Delete: the bytes
go with the volume, as with a real provisioner). A PV kept (its claim kept) keeps its bytes.

    node_volumes.py KUBECTL KUBECONFIG VOLUME_DIR
"""

from __future__ import annotations

import pathlib
import shutil
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import kube_watch  # noqa: E402


def under(root: pathlib.Path, path: str | None) -> pathlib.Path | None:
    if not path:
        return None
    candidate = pathlib.Path(path)
    if candidate.parent != root or not candidate.name.startswith("pvc-"):
        return None
    return candidate


def ensure(directory: pathlib.Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    # Any pod user may write a fresh volume (the puller runs as 10001, the server reads it).
    if directory.stat().st_mode & 0o777 != 0o777:
        directory.chmod(0o777)


def watch(kubectl: str, kubeconfig: str, root: pathlib.Path) -> None:
    for event in kube_watch.events(kubectl, kubeconfig, "persistentvolumes"):
        handle(event, root)


def handle(event: dict, root: pathlib.Path) -> None:
    volume = event.get("object", {})
    spec = volume.get("spec", {})
    directory = under(root, spec.get("hostPath", {}).get("path"))
    if directory is None:
        return
    if event.get("type") == "DELETED":
        if spec.get("persistentVolumeReclaimPolicy", "Delete") == "Delete":
            shutil.rmtree(directory, ignore_errors=True)
            print(f"removed {directory}", flush=True)
        return
    if not directory.exists():
        print(f"created {directory}", flush=True)
    ensure(directory)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    kubectl, kubeconfig, root = argv[0], argv[1], pathlib.Path(argv[2])
    root.mkdir(parents=True, exist_ok=True)
    while True:
        # A watch ends now and then (API server timeout): start it again.
        watch(kubectl, kubeconfig, root)
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
