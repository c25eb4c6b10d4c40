#!/usr/bin/env python3
"""Remove every LLMModel when no operator runs to finalize them (`make release-models`).

An LLMModel carries the finalizer inference.ai.example.com/cleanup; only the operator removes it.
With the operator gone (uninstalled, scaled to zero, its namespace deleted), a deleted LLMModel
would wait forever. This does the finalizer's work by hand, for each LLMModel of every namespace:

1. with purgeWeightsOnDelete false, makes sure the LLMModel is not among its weights volume's
   ownerReferences (a volume of an older operator may hold one), so the garbage collector keeps it;
   with purgeWeightsOnDelete true, deletes the weights volume; in both cases only a volume that is
   the model's (the role's own ownership rule, roles/llmmodel/module_utils/llmmodel_ownership.py):
   a claim of that name that belongs to someone else is left alone;
2. removes the finalizer and deletes the LLMModel: the garbage collector then removes its
   Deployment, Service and pull Job.

Run it only while no operator runs: a running one would finalize the models itself.
Environment: KUBECTL (default bin/kubectl, else kubectl on PATH), KUBECONFIG.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FINALIZER = "inference.ai.example.com/cleanup"
RESOURCE = "llmmodels.inference.ai.example.com"
SOURCE_ANNOTATION = "inference.ai.example.com/weights-source"
_SPEC = importlib.util.spec_from_file_location(
    "llmmodel_ownership", ROOT / "roles" / "llmmodel" / "module_utils" / "llmmodel_ownership.py")
ownership = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ownership)


def kubectl_path() -> str:
    configured = os.environ.get("KUBECTL")
    if configured:
        return configured
    local = ROOT / "bin" / "kubectl"
    return str(local) if local.exists() else (shutil.which("kubectl") or "kubectl")


def kubectl(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([kubectl_path(), *args], capture_output=True, text=True, timeout=60, check=False)
    if check and result.returncode != 0:
        sys.exit(f"release-models: kubectl {' '.join(args)} failed: {(result.stderr or result.stdout).strip()}")
    return result


def weights_volume(model: dict) -> tuple[str, dict | None]:
    """The model's weights volume: (its name, the claim, or None when there is none that is the model's)."""
    meta = model["metadata"]
    claim = f"{meta['name']}-weights"
    found = kubectl("get", "pvc", claim, "-n", meta["namespace"], "-o", "json", check=False)
    if found.returncode != 0:
        return claim, None
    pvc = json.loads(found.stdout)
    return claim, pvc if ownership.owned(pvc, {"name": meta["name"], "uid": meta["uid"]}, SOURCE_ANNOTATION) else None


def keep_volume(model: dict) -> str:
    """Drop the model from its weights volume's owners; returns what happened to the volume."""
    meta = model["metadata"]
    claim, pvc = weights_volume(model)
    if pvc is None:
        return f"no weights volume {claim} of this model"
    owners = pvc["metadata"].get("ownerReferences") or []
    kept = [owner for owner in owners if owner.get("uid") != meta["uid"]]
    if len(kept) != len(owners):
        # The resourceVersion test makes the patch fail rather than overwrite a concurrent change.
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": pvc["metadata"]["resourceVersion"]},
            {"op": "replace", "path": "/metadata/ownerReferences", "value": kept},
        ]
        kubectl("patch", "pvc", claim, "-n", meta["namespace"], "--type", "json", "-p", json.dumps(patch))
    return f"weights volume {claim} kept"


def release(model: dict) -> str:
    meta = model["metadata"]
    where = ["-n", meta["namespace"]]
    purge = bool((model.get("spec") or {}).get("purgeWeightsOnDelete", False))
    if purge:
        # Deleted here, as the finalizer does: the volume has no owner for the garbage collector.
        claim, pvc = weights_volume(model)
        if pvc is None:
            outcome = f"no weights volume {claim} of this model"
        else:
            kubectl("delete", "pvc", claim, *where, "--ignore-not-found", "--wait=false")
            outcome = f"weights volume {claim} deleted"
    else:
        outcome = keep_volume(model)
    finalizers = meta.get("finalizers") or []
    if FINALIZER in finalizers:
        patch = [
            {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
            {"op": "replace", "path": "/metadata/finalizers", "value": [f for f in finalizers if f != FINALIZER]},
        ]
        kubectl("patch", RESOURCE, meta["name"], *where, "--type", "json", "-p", json.dumps(patch))
    kubectl("delete", RESOURCE, meta["name"], *where, "--ignore-not-found", "--wait=false")
    return outcome


def main() -> int:
    listed = kubectl("get", RESOURCE, "--all-namespaces", "-o", "json", check=False)
    if listed.returncode != 0:
        if "the server doesn't have a resource type" in listed.stderr:
            print("release-models: the LLMModel CRD is not installed; nothing to do")
            return 0
        sys.exit(f"release-models: cannot list LLMModels: {listed.stderr.strip()}")
    models = json.loads(listed.stdout)["items"]
    for model in models:
        meta = model["metadata"]
        print(f"release-models: {meta['namespace']}/{meta['name']}: {release(model)}")
    print(f"release-models: {len(models)} LLMModel(s) released")
    return 0


if __name__ == "__main__":
    sys.exit(main())
