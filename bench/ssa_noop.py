#!/usr/bin/env python3
"""What a no-op reconcile would cost with server-side apply instead of the role's client-side apply.

    .venv/bin/python bench/ssa_noop.py [--rounds 100]     (the local cluster in .cluster/kubeconfig)

In a namespace of its own it creates a model's three steady children as the role renders them (a
Deployment, a Service, a PersistentVolumeClaim), then times ROUNDS no-op "reconciles" of them both
ways, straight against the API server:

- client-side (what llmmodel_apply does): one GET per object, nothing sent when the object is as
  last applied (under ansible-operator the GETs are even answered by its proxy's cache);
- server-side apply: one PATCH (application/apply-patch+yaml, the operator's field manager, no force)
  per object, which the API server answers by re-running admission and the merge and writing nothing.

It prints wall time per reconcile and the kube-apiserver's CPU seconds for each way (from
/proc/<pid>/stat of the local API server), and checks that SSA wrote nothing (same resourceVersions).
docs/design.md ("Server-side apply, weighed") and bench/RESULTS.md quote its figures.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import time
import uuid

from kubernetes import client, config

ROOT = pathlib.Path(__file__).resolve().parent.parent
KUBECONFIG = os.environ.get("KUBECONFIG", str(ROOT / ".cluster" / "kubeconfig"))


def children(namespace: str) -> list[dict]:
    labels = {"app.kubernetes.io/instance": "m", "app.kubernetes.io/component": "server"}
    pod = {"containers": [{"name": "server", "image": "registry.invalid/server:1", "ports": [{"name": "http", "containerPort": 8080}],
                           "resources": {"requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}}]}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m", "namespace": namespace, "labels": labels},
         "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "m", "namespace": namespace, "labels": labels},
         "spec": {"selector": labels, "ports": [{"name": "http", "port": 8080, "targetPort": "http"}]}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "m-weights", "namespace": namespace},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
    ]


def path(obj: dict) -> str:
    group_version = obj["apiVersion"]
    prefix = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    plural = {"Deployment": "deployments", "Service": "services", "PersistentVolumeClaim": "persistentvolumeclaims"}[obj["kind"]]
    return f"{prefix}/namespaces/{obj['metadata']['namespace']}/{plural}/{obj['metadata']['name']}"


def apiserver_cpu() -> float:
    """CPU seconds (user + system) of the local kube-apiserver process."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if cmdline and cmdline[0].endswith(b"kube-apiserver"):
                fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            continue
    raise SystemExit("ssa_noop: no kube-apiserver process on this machine (`make cluster-up` first)")


def call(api: client.ApiClient, method: str, url: str, body=None, content_type=None, query=None):
    headers = {"Content-Type": content_type} if content_type else {}
    return api.call_api(url, method, query_params=query or [], header_params=headers, body=body,
                        response_type="object", auth_settings=["BearerToken"], _return_http_data_only=True)


def timed(rounds: int, one_reconcile) -> tuple[float, float]:
    cpu, started = apiserver_cpu(), time.perf_counter()
    for _ in range(rounds):
        one_reconcile()
    return (time.perf_counter() - started) / rounds, apiserver_cpu() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    rounds = parser.parse_args().rounds
    api = config.new_client_from_config(config_file=KUBECONFIG)
    core = client.CoreV1Api(api)
    namespace = f"ssa-noop-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": namespace}})
    try:
        objects = children(namespace)
        apply_query = [("fieldManager", "llm-operator"), ("force", "false")]
        for obj in objects:
            call(api, "PATCH", path(obj), obj, "application/apply-patch+yaml", apply_query)
        # The claim binds (the provisioner writes it) before the measure: only the applies may write after.
        deadline = time.monotonic() + 60
        while call(api, "GET", path(objects[2])).get("status", {}).get("phase") != "Bound" and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(2)
        before = [call(api, "GET", path(o))["metadata"]["resourceVersion"] for o in objects]
        client_side = timed(rounds, lambda: [call(api, "GET", path(o)) for o in objects])
        server_side = timed(rounds, lambda: [call(api, "PATCH", path(o), o, "application/apply-patch+yaml", apply_query)
                                             for o in objects])
        after = [call(api, "GET", path(o))["metadata"]["resourceVersion"] for o in objects]
        print(f"ssa_noop: {rounds} no-op reconciles of {len(objects)} children (Deployment, Service, PVC)")
        print(f"  client-side apply (GET each, send nothing): {client_side[0] * 1000:.1f} ms per reconcile, "
              f"kube-apiserver {client_side[1]:.2f} CPU-s in all")
        print(f"  server-side apply (PATCH each, no force):   {server_side[0] * 1000:.1f} ms per reconcile, "
              f"kube-apiserver {server_side[1]:.2f} CPU-s in all")
        print(f"  SSA wrote nothing: {before == after} (resourceVersions {before} -> {after})")
    finally:
        core.delete_namespace(namespace)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
