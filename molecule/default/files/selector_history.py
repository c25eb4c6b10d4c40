#!/usr/bin/env python3
"""The previous release's server objects, and a watch of the models' endpoints while they move on.

    selector_history.py previous-release KUBECONFIG NAMESPACE MODEL...
    selector_history.py state KUBECONFIG NAMESPACE MODEL...
    selector_history.py watch KUBECONFIG NAMESPACE STOP_FILE TIMEOUT MODEL...

previous-release puts each model's server back as the release before the UID selectors rendered it:
the Deployment, Service and PodDisruptionBudget the operator applied (their last-applied manifests),
with the selector `app.kubernetes.io/instance: MODEL, app.kubernetes.io/component: server` and pods
without the UID label, and the last-applied record of that release. Everything else of those
manifests is the operator's own rendering. A Deployment's selector cannot change, so the current one
is deleted (its pods with it) and the previous one created with the owner references the operator's
proxy gave it.

state prints JSON {model: ...}: the model's UID and Ready reason, its Deployment's selector, replicas
and available replicas, the scale selector (what an HPA counts) and the pods it selects, the
ReplicaSets of the model no Deployment controls (and those labelled like the model's it does not own), the Service's selector and ready endpoints, and the
PodDisruptionBudget's selector and counts.

watch polls, every 0.2 s until STOP_FILE exists (or TIMEOUT seconds), the EndpointSlices of each
model's Service, and prints JSON {model: {samples, gaps, served}}: a gap is a poll in which no ready
endpoint was a pod of the model (labelled inference.ai.example.com/model=MODEL by the operator, of
either release); served lists the sets of pod names that answered, in the order seen.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time

from kubernetes import client, config

UID_LABEL = "inference.ai.example.com/model-uid"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def previous_selector(model):
    return {"app.kubernetes.io/instance": model, "app.kubernetes.io/component": "server"}


def previous_deployment(manifest, model):
    """The Deployment as the previous release rendered it, from the current rendering."""
    old = copy.deepcopy(manifest)
    old["spec"]["selector"] = {"matchLabels": previous_selector(model)}
    old["spec"]["template"]["metadata"]["labels"].pop(UID_LABEL)
    affinity = (old["spec"]["template"]["spec"].get("affinity") or {}).get("podAffinity") or {}
    for term in affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
        term["labelSelector"] = {"matchLabels": previous_selector(model)}
    return old


def recorded(manifest):
    """The manifest with its last-applied record, as the operator's apply writes it."""
    body = copy.deepcopy(manifest)
    body["metadata"].setdefault("annotations", {})[LAST_APPLIED] = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    return body


def last_applied(obj):
    return json.loads(obj.metadata.annotations[LAST_APPLIED])


def budgets_of(api, namespace, model):
    """The model's PodDisruptionBudget as JSON, in a list (the client's model refuses one whose status is not filled in yet)."""
    response = client.PolicyV1Api(api).list_namespaced_pod_disruption_budget(
        namespace, field_selector="metadata.name=" + model, _preload_content=False)
    return json.loads(response.data)["items"]


def previous_release(api, namespace, model):
    apps, core, policy = client.AppsV1Api(api), client.CoreV1Api(api), client.PolicyV1Api(api)
    live = apps.read_namespaced_deployment(model, namespace)
    old = previous_deployment(last_applied(live), model)
    old["metadata"]["ownerReferences"] = api.sanitize_for_serialization(live.metadata.owner_references)
    apps.delete_namespaced_deployment(model, namespace, propagation_policy="Foreground")
    deadline = time.monotonic() + 120
    while apps.list_namespaced_deployment(namespace, field_selector="metadata.name=" + model).items:
        if time.monotonic() > deadline:
            sys.exit("Deployment %s/%s did not go" % (namespace, model))
        time.sleep(0.5)
    apps.create_namespaced_deployment(namespace, recorded(old))
    service = last_applied(core.read_namespaced_service(model, namespace))
    service["spec"]["selector"] = previous_selector(model)
    core.patch_namespaced_service(model, namespace, {
        "metadata": {"annotations": recorded(service)["metadata"]["annotations"]},
        "spec": {"selector": dict(previous_selector(model), **{UID_LABEL: None})}})
    budgets = budgets_of(api, namespace, model)
    if budgets:
        budget = json.loads(budgets[0]["metadata"]["annotations"][LAST_APPLIED])
        budget["spec"]["selector"] = {"matchLabels": previous_selector(model)}
        policy.patch_namespaced_pod_disruption_budget(model, namespace, {
            "metadata": {"annotations": recorded(budget)["metadata"]["annotations"]},
            "spec": {"selector": {"matchLabels": dict(previous_selector(model), **{UID_LABEL: None})}}})


def ready_endpoints(api, namespace, model):
    """Names of the pods that are ready endpoints of the model's Service now."""
    # Read as JSON: the client's model refuses a slice without endpoints (its `endpoints` is required).
    response = client.DiscoveryV1Api(api).list_namespaced_endpoint_slice(
        namespace, label_selector="kubernetes.io/service-name=" + model, _preload_content=False)
    slices = json.loads(response.data)["items"]
    return sorted({endpoint["targetRef"]["name"] for piece in slices for endpoint in piece.get("endpoints") or []
                   if endpoint.get("targetRef") and (endpoint.get("conditions") or {}).get("ready")})


def served_by(api, namespace, model):
    """Names of the model's pods that are ready endpoints of its Service now."""
    ready = set(ready_endpoints(api, namespace, model))
    pods = client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector="inference.ai.example.com/model=" + model).items
    return sorted(ready & {pod.metadata.name for pod in pods})


def state(api, namespace, model):
    """Where the model's server stands: its selectors, what they select, the ReplicaSets left over."""
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    found = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "inference.ai.example.com", "v1alpha1", namespace, "llmmodels", model)
    ready = [c for c in (found.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"]
    deployments = apps.list_namespaced_deployment(namespace, field_selector="metadata.name=" + model).items
    deployment = deployments[0] if deployments else None
    # The selector of the Deployment's scale subresource: the pods an HPA counts.
    scale_selector = apps.read_namespaced_deployment_scale(model, namespace).status.selector if deployment else None
    sets = apps.list_namespaced_replica_set(namespace, label_selector="inference.ai.example.com/model=" + model).items
    budgets = budgets_of(api, namespace, model)
    return {
        "uid": found["metadata"]["uid"],
        "ready": ready[0]["reason"] if ready else None,
        "deployment_selector": deployment.spec.selector.match_labels if deployment else None,
        "replicas": deployment.spec.replicas if deployment else None,
        "available": (deployment.status.available_replicas or 0) if deployment else 0,
        "retired": [rs.metadata.name for rs in sets if not rs.metadata.deletion_timestamp
                    and not any(ref.controller for ref in rs.metadata.owner_references or [])
                    and any(ref.uid == found["metadata"]["uid"] for ref in rs.metadata.owner_references or [])],
        # ReplicaSets labelled like the model's that the model does not own (another team's copy).
        "unowned_sets": sorted((rs.metadata.name, rs.spec.replicas) for rs in sets if not rs.metadata.deletion_timestamp
                               and not rs.metadata.owner_references),
        "service_selector": core.read_namespaced_service(model, namespace).spec.selector,
        "endpoints": ready_endpoints(api, namespace, model),
        "scale_selector": scale_selector,
        "by_scale_selector": sorted(pod.metadata.name for pod in core.list_namespaced_pod(namespace, label_selector=scale_selector).items
                                    if not pod.metadata.deletion_timestamp) if scale_selector else [],
        "budget": {"selector": budgets[0]["spec"]["selector"]["matchLabels"],
                   "expected": (budgets[0].get("status") or {}).get("expectedPods"),
                   "healthy": (budgets[0].get("status") or {}).get("currentHealthy")} if budgets else None,
    }


def watch(api, namespace, stop_file, timeout, models):
    seen = {model: {"samples": 0, "gaps": 0, "served": []} for model in models}
    deadline = time.monotonic() + timeout
    while not os.path.exists(stop_file) and time.monotonic() < deadline:
        for model in models:
            served = served_by(api, namespace, model)
            seen[model]["samples"] += 1
            seen[model]["gaps"] += 0 if served else 1
            if not seen[model]["served"] or seen[model]["served"][-1] != served:
                seen[model]["served"].append(served)
        time.sleep(0.2)
    print(json.dumps(seen))


def main(argv):
    command, kubeconfig, namespace = argv[1:4]
    api = config.new_client_from_config(config_file=kubeconfig)
    if command == "previous-release":
        for model in argv[4:]:
            previous_release(api, namespace, model)
    elif command == "state":
        print(json.dumps({model: state(api, namespace, model) for model in argv[4:]}))
    elif command == "watch":
        watch(api, namespace, argv[4], float(argv[5]), argv[6:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
