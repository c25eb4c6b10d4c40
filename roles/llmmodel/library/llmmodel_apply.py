#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Apply rendered manifests client-side, sending nothing for objects that are already as rendered."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llmmodel_apply
short_description: Apply Kubernetes manifests client-side, like kubectl apply
description:
  - For each manifest in O(definitions), reads the live object and creates it when it is missing,
    leaves it alone when it is exactly as last applied and unchanged since, and otherwise sends one
    JSON merge patch computed from three things, the manifest applied last (recorded in the
    C(kubectl.kubernetes.io/last-applied-configuration) annotation, as C(kubectl apply) and
    M(kubernetes.core.k8s) with C(apply=true) record it), the manifest now, and the live object.
    Fields the manifest sets are enforced, fields it no longer sets are removed, fields it never
    set (defaults, other controllers' fields, owner references) are left alone. Lists are replaced
    whole.
  - Objects are created with POST, so under ansible-operator its proxy adds the owner reference
    and the dependent watch, as it does for M(kubernetes.core.k8s).
version_added: "0.2.0"
extends_documentation_fragment:
  - llmmodel_kubernetes
options:
  definitions:
    description: The manifests, each with C(apiVersion), C(kind), C(metadata.name) and, for namespaced kinds, C(metadata.namespace).
    type: list
    elements: dict
    required: true
  absent:
    description:
      - Objects to remove when they exist, each with C(apiVersion), C(kind), C(metadata.name) or
        C(name), and C(namespace) or C(metadata.namespace) for namespaced kinds. A missing one is
        not an error. Deleted in the background (the garbage collector removes what they own).
    type: list
    elements: dict
    default: []
  when_served:
    description:
      - Kinds, each with C(apiVersion) and C(kind), that are optional in a cluster. A definition or an
        O(absent) object of such a kind is skipped when the API server does not serve the kind (its
        discovery, made once per run for a kind outside the built-in table, says so), and reported
        with the action C(not served); any other kind the server does not serve fails the task.
      - For a kind another operator brings, such as the Prometheus Operator's PodMonitor.
    type: list
    elements: dict
    default: []
  field_manager:
    description: The field manager the API server records for the writes.
    type: str
    default: llm-operator
attributes:
  check_mode:
    support: full
    description: Reads and plans, writes nothing.
  diff_mode:
    support: full
    description: Returns the patch sent for each object.
"""

EXAMPLES = r"""
- name: Apply the Service and the Deployment
  llmmodel_apply:
    definitions:
      - "{{ lookup('ansible.builtin.template', 'service.yaml.j2') | from_yaml }}"
      - "{{ lookup('ansible.builtin.template', 'deployment.yaml.j2') | from_yaml }}"
"""

RETURN = r"""
objects:
  description: What was done to each object, in the order of O(definitions).
  returned: always
  type: list
  elements: dict
  sample: [{kind: Service, name: my-model, action: unchanged}, {kind: PodMonitor, name: my-model, action: not served}]
removed:
  description: The objects of O(absent) that existed and were deleted.
  returned: always
  type: list
  elements: dict
  sample: [{kind: HorizontalPodAutoscaler, name: my-model}]
diff:
  description: The merge patch (or the created body) of each object that changed, when run with C(--diff).
  returned: when diff mode is on
  type: dict
"""

from ansible.module_utils.llmmodel_client import CONNECTION_SPEC, build_client, reported_api_errors
from ansible.module_utils.llmmodel_kube import MERGE_PATCH, ConflictError, NotFoundError, ResourceNotFoundError
from ansible.module_utils.llmmodel_manifests import plan, three_way_patch, with_record
from ansible.module_utils.llmmodel_module import ModuleFailure, module_main

DONE = {"create": "created", "patch": "patched", "unchanged": "unchanged", "not served": "not served"}

ARGUMENT_SPEC = {
    "definitions": {"type": "list", "elements": "dict", "required": True},
    "absent": {"type": "list", "elements": "dict", "default": []},
    "when_served": {"type": "list", "elements": "dict", "default": []},
    "field_manager": {"type": "str", "default": "llm-operator"},
    **CONNECTION_SPEC,
}


def identity(manifest):
    """(apiVersion, kind, name, namespace) of a manifest, or raise ModuleFailure."""
    metadata = manifest.get("metadata") or {}
    missing = [field for field, value in (("apiVersion", manifest.get("apiVersion")), ("kind", manifest.get("kind")),
                                           ("metadata.name", metadata.get("name"))) if not value]
    if missing:
        raise ModuleFailure("a definition lacks %s" % ", ".join(missing))
    return manifest["apiVersion"], manifest["kind"], metadata["name"], metadata.get("namespace")


def served(kube, api_version, kind, optional):
    """The resource of a kind, or None for an optional kind the API server does not serve."""
    try:
        return kube.resources.get(api_version=api_version, kind=kind)
    except ResourceNotFoundError as exc:  # its message alone, without reported_api_errors' "where:"
        if (api_version, kind) in optional:
            return None
        raise ModuleFailure(str(exc))


def apply_one(kube, manifest, field_manager, check_mode, optional=frozenset()):
    """Plan and (unless check mode) send one manifest. Returns (action, body or patch)."""
    api_version, kind, name, namespace = identity(manifest)
    resource = served(kube, api_version, kind, optional)
    if resource is None:
        return "not served", None
    if not resource.namespaced:
        namespace = None
    elif not namespace:
        raise ModuleFailure("%s %s: metadata.namespace is required" % (kind, name))
    try:
        live = kube.get(resource, name=name, namespace=namespace)
    except NotFoundError:
        live = None
    action, body = plan(manifest, live)
    if check_mode or action == "unchanged":
        return action, body
    try:
        if action == "create":
            kube.create(resource, body=body, namespace=namespace, field_manager=field_manager)
        else:
            kube.patch(resource, body=body, name=name, namespace=namespace, content_type=MERGE_PATCH, field_manager=field_manager)
    except ConflictError:
        # The read came from a cache that had not seen the object yet: it exists, so enforce all of it.
        if action != "create":
            raise
        action, body = "patch", three_way_patch(None, with_record(manifest), {})
        kube.patch(resource, body=body, name=name, namespace=namespace, content_type=MERGE_PATCH, field_manager=field_manager)
    except NotFoundError:
        if action != "patch":
            raise
        action, body = "create", with_record(manifest)
        kube.create(resource, body=body, namespace=namespace, field_manager=field_manager)
    return action, body


def remove_one(kube, reference, check_mode, optional=frozenset()):
    """Delete one object of ``absent`` if it exists. Returns whether it existed."""
    metadata = reference.get("metadata") or {}
    manifest = {
        "apiVersion": reference.get("apiVersion"),
        "kind": reference.get("kind"),
        "metadata": {"name": reference.get("name") or metadata.get("name"),
                     "namespace": reference.get("namespace") or metadata.get("namespace")},
    }
    api_version, kind, name, namespace = identity(manifest)
    resource = served(kube, api_version, kind, optional)
    if resource is None:
        return False
    namespace = namespace if resource.namespaced else None
    try:
        kube.get(resource, name=name, namespace=namespace)
        if not check_mode:
            kube.delete(resource, name=name, namespace=namespace, body={"propagationPolicy": "Background"})
    except NotFoundError:
        return False
    return True


def run(params, check_mode=False, diff=False, client=None):
    """Everything the module does, callable in-process. Returns the result or raises ModuleFailure."""
    objects, patches, removed = [], {}, []
    optional = frozenset((kind.get("apiVersion"), kind.get("kind")) for kind in params.get("when_served") or [])
    where = ["applying"]
    with reported_api_errors(lambda: where[0], objects=objects):
        kube = client or build_client(params)
        for manifest in params["definitions"]:
            where[0] = "%s %s" % (manifest.get("kind"), (manifest.get("metadata") or {}).get("name"))
            action, body = apply_one(kube, manifest, params["field_manager"], check_mode, optional)
            objects.append({"kind": manifest["kind"], "name": manifest["metadata"]["name"], "action": DONE[action]})
            if body is not None:
                patches["%s/%s" % (manifest["kind"], manifest["metadata"]["name"])] = body
        for reference in params["absent"] or []:
            where[0] = "removing %s %s" % (reference.get("kind"), reference.get("name") or (reference.get("metadata") or {}).get("name"))
            if remove_one(kube, reference, check_mode, optional):
                removed.append({"kind": reference["kind"], "name": reference.get("name") or reference["metadata"]["name"]})
    result = {"changed": bool(removed) or any(item["action"] in ("created", "patched") for item in objects), "objects": objects, "removed": removed}
    if diff:
        result["diff"] = {"before": {}, "after": patches}
    return result


def main():
    module_main(ARGUMENT_SPEC, run)


if __name__ == "__main__":
    main()
