#!/usr/bin/env python3
"""The test bed's dynamic provisioner of node-local volumes, for WaitForFirstConsumer storage.

The StorageClass node-local (hack/cluster/objects.yaml: volumeBindingMode WaitForFirstConsumer,
provisioner testbed.llm-operator.io/node-local) behaves as the default classes of the major clouds
and rancher's local-path do, with the real kube-scheduler and kube-controller-manager doing their
part of the external-provisioner protocol:

1. a new claim stays Pending (the PV controller's event WaitForFirstConsumer) until a pod that
   mounts it is scheduled;
2. the scheduler picks that pod's node and writes it on the claim (annotation
   volume.kubernetes.io/selected-node); the PV controller names the class's provisioner on it
   (volume.kubernetes.io/storage-provisioner) and waits for it;
3. this process creates a PersistentVolume for the claim: a hostPath under VOLUME_DIR whose node
   affinity requires that node (kubernetes.io/hostname), as local-path's volumes do; the PV
   controller binds the claim to it and the scheduler binds the pod. Every later pod of the claim
   can run on that node only (elsewhere the scheduler says "didn't match PersistentVolume's node affinity");
4. a volume released by its claim (reclaim policy Delete) is deleted.

On the real node the directory is real (hack/node_volumes.py makes it writable for the pods' users
and removes it with the volume); on a kwok node it is bookkeeping. rancher's local-path-provisioner
is not used: it makes each directory with a helper pod of its own image (busybox) on the chosen node
and waits for that pod to succeed; kwok's nodes run no container (a plain pod stays Running), and
the real node can pull no image. Started by hack/cluster.py; `cluster.py down` stops it.

    volume_provisioner.py KUBECTL KUBECONFIG VOLUME_DIR
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import kube_watch  # noqa: E402

PROVISIONER = "testbed.llm-operator.io/node-local"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
# The PV controller writes the provisioner under both names (the beta one for older provisioners).
PROVISIONER_ANNOTATIONS = ("volume.kubernetes.io/storage-provisioner", "volume.beta.kubernetes.io/storage-provisioner")
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
HOSTNAME = "kubernetes.io/hostname"


def kubectl(context: tuple[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    command, kubeconfig = context
    return subprocess.run([command, "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True, text=True, check=False)


def wanted(claim: dict) -> str | None:
    """The node to provision the claim's volume on, or None when it is not this provisioner's to do (yet)."""
    meta = claim.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if meta.get("deletionTimestamp") or (claim.get("spec") or {}).get("volumeName"):
        return None
    if not any(annotations.get(key) == PROVISIONER for key in PROVISIONER_ANNOTATIONS):
        return None
    # Only the scheduler places a node-local volume: without a selected node, the claim waits for its first pod.
    return annotations.get(SELECTED_NODE) or None


def volume(claim: dict, hostname: str, root: pathlib.Path) -> dict:
    """The PersistentVolume of the claim on the node whose kubernetes.io/hostname label is ``hostname``."""
    meta, spec = claim["metadata"], claim.get("spec") or {}
    name = "pvc-" + meta["uid"]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {PROVISIONED_BY: PROVISIONER}},
        "spec": {
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": spec.get("storageClassName"),
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": meta["name"],
                         "namespace": meta["namespace"], "uid": meta["uid"]},
            "hostPath": {"path": str(root / name), "type": "DirectoryOrCreate"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [hostname]}]}]}},
        },
    }


def released(pv: dict) -> bool:
    """A volume of this provisioner whose claim is gone and whose reclaim policy deletes it."""
    meta, spec = pv.get("metadata") or {}, pv.get("spec") or {}
    return ((meta.get("annotations") or {}).get(PROVISIONED_BY) == PROVISIONER and not meta.get("deletionTimestamp")
            and (pv.get("status") or {}).get("phase") == "Released" and spec.get("persistentVolumeReclaimPolicy") == "Delete")


def provision(context: tuple[str, str], claim: dict, node: str, root: pathlib.Path) -> None:
    label = kubectl(context, "get", "node", node, "-o", "jsonpath={.metadata.labels.kubernetes\\.io/hostname}").stdout.strip()
    pv = volume(claim, label or node, root)
    done = kubectl(context, "create", "-f", "-", stdin=json.dumps(pv))
    if done.returncode == 0:
        print(f"provisioned {pv['metadata']['name']} on {node} for {claim['metadata']['namespace']}/{claim['metadata']['name']}", flush=True)
    elif "AlreadyExists" not in done.stderr:
        print(f"could not create {pv['metadata']['name']}: {done.stderr.strip()}", flush=True)


def claims(context: tuple[str, str], root: pathlib.Path) -> None:
    while True:
        for event in kube_watch.events(*context, "persistentvolumeclaims", "--all-namespaces"):
            node = wanted(event.get("object") or {}) if event.get("type") != "DELETED" else None
            if node:
                provision(context, event["object"], node, root)
        time.sleep(1)  # a watch ends now and then (API server time-out): start it again


def volumes(context: tuple[str, str]) -> None:
    while True:
        for event in kube_watch.events(*context, "persistentvolumes"):
            pv = event.get("object") or {}
            if event.get("type") != "DELETED" and released(pv):
                kubectl(context, "delete", "persistentvolume", pv["metadata"]["name"], "--wait=false", "--ignore-not-found")
                print(f"deleted {pv['metadata']['name']} (released)", flush=True)
        time.sleep(1)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    context, root = (argv[0], argv[1]), pathlib.Path(argv[2])
    threading.Thread(target=volumes, args=(context,), daemon=True, name="volumes").start()
    claims(context, root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
