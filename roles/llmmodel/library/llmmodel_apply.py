#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Apply rendered manifests client-side, sending nothing for objects that are already as rendered."""

from __future__ import annotations

import time

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
  - A create the API server refuses because the namespace is being deleted ends the apply without
    an error (action C(refused)); the namespace takes the model with it.
  - With O(owner), an object that exists and is not proven the owner's (its owner references or
    the owner's UID label; for the kinds of O(adopt), the operator's labels and an annotation) is
    left untouched and reported in RV(conflicts); nothing after it in O(definitions) is applied,
    and O(absent) is not acted on. Every object applied carries the owner's UID label.
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
  removals:
    description:
      - O(absent) and O(removed_record) in one value, a dict with C(absent) (a list) and C(record) (a
        dict), as one template decides them (the role's C(templates/removals.yaml.j2), rendered once);
        its C(absent) objects come after those of O(absent), its C(record) is used when
        O(removed_record) is empty.
    type: dict
    default: {}
  removed_record:
    description:
      - An object (C(apiVersion), C(kind), C(name), C(namespace)) and an C(annotation). Once every object
        of O(absent) is gone (deleted by this run or found missing, none of another owner), the
        annotation is set to C(true) on that object with one merge patch, if it is the owner's and
        does not carry it yet; a later run that finds the record can leave those objects out of
        O(absent) and look for none of them.
      - Not written in check mode, after a conflict or when a removal fails (the next run removes and
        records again). A missing object is no error.
      - For the puller's identity, recorded on its pull Job (a new Job carries no record).
    type: dict
    default: {}
  when_served:
    description:
      - Kinds, each with C(apiVersion) and C(kind), that are optional in a cluster. A definition or an
        O(absent) object of such a kind is skipped when the API server does not serve the kind (its
        discovery, made once per run for a kind outside the built-in table, or remembered from an
        earlier run where C(LLMMODEL_DISCOVERY_CACHE) is set, says so), and reported with the action
        C(not served); any other kind the server does not serve fails the task.
      - An object of such a kind that the API server refuses as invalid (422, for an older CRD's schema or
        a validating webhook) is reported with the action C(rejected) and the server's C(message);
        the other definitions are applied as usual.
      - For a kind another operator brings, such as the Prometheus Operator's PodMonitor.
    type: list
    elements: dict
    default: []
  field_manager:
    description: The field manager the API server records for the writes.
    type: str
    default: llm-operator
  owner:
    description:
      - The object the applied ones belong to (C(name) and C(uid); under ansible-operator the
        watched LLMModel). Turns on the ownership check and the UID label.
    type: dict
  adopt:
    description:
      - Kinds an owner may take over from an earlier owner of the same name, each with the
        annotation that, beside the operator's labels, proves the object was made by the operator
        for that name (the kept weights volume).
    type: dict
    default: {}
  scaled:
    description:
      - Objects whose C(spec.replicas) a scaler writes (an HPA, the router), each with C(kind), C(name),
        C(minReplicas) and C(maxReplicas). The manifest's count is the one an object is created with;
        afterwards the count is the scaler's alone, neither set nor removed (whatever the applied record
        says), so a count the scaler wrote after the manifest was rendered stands. Only a live count
        outside C(minReplicas)-C(maxReplicas) is written, brought to the nearest bound, and only over
        the object as read (its C(resourceVersion)); when a scaler wrote in between, the object is read
        again and planned anew.
    type: list
    elements: dict
    default: []
  kept_kinds:
    description:
      - Kinds that must outlive the owner. The owner reference ansible-operator's proxy adds on
        create is removed right after the create, and whenever one is found later, so the garbage
        collector never deletes them with the owner, whatever the propagation policy.
    type: list
    elements: str
    default: []
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
  description: What was done to each object, in the order of O(definitions); a C(rejected) one has the API server's C(message).
  returned: always
  type: list
  elements: dict
  sample: [{kind: Service, name: my-model, action: unchanged}, {kind: PodMonitor, name: my-model, action: not served}]
conflicts:
  description: The objects that exist and are not the owner's, with a message saying what to do.
  returned: always
  type: list
  elements: dict
  sample: [{kind: Service, name: chat, message: "Service chat already exists and is not this LLMModel's ..."}]
recorded:
  description: Whether the annotation of O(removed_record) was written by this run.
  returned: always
  type: bool
  sample: true
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

from ansible.module_utils.llmmodel_client import CONNECTION_SPEC, build_client, namespace_terminating, reported_api_errors
from ansible.module_utils.llmmodel_discovery import forget
from ansible.module_utils.llmmodel_kube import (MERGE_PATCH, ApiError, ConflictError, ForbiddenError, NotFoundError,
                                                ResourceNotFoundError)
from ansible.module_utils.llmmodel_manifests import left_to_scaler, plan, three_way_patch, with_record
from ansible.module_utils.llmmodel_module import ModuleFailure, module_main
from ansible.module_utils.llmmodel_ownership import conflict, owned, stamped, without_owner_reference

DONE = {"create": "created", "patch": "patched", "unchanged": "unchanged", "conflict": "conflict", "refused": "refused",
        "not served": "not served", "rejected": "rejected"}
# An optional kind's object the API server refuses as invalid (an older CRD's schema, a webhook) is
# reported with the server's message; the model's own objects do not depend on it.
INVALID = 422
# A write of a scaled object's count made over a scaler's newer write (409) is planned again from a new
# read, this many times in all; the proxy's cache catches up with the scaler's write in between.
SCALED_ATTEMPTS = 3
SCALED_RETRY_SECONDS = 0.5

ARGUMENT_SPEC = {
    "definitions": {"type": "list", "elements": "dict", "required": True},
    "absent": {"type": "list", "elements": "dict", "default": []},
    "removed_record": {"type": "dict", "default": {}},
    "removals": {"type": "dict", "default": {}},
    "when_served": {"type": "list", "elements": "dict", "default": []},
    "field_manager": {"type": "str", "default": "llm-operator"},
    "owner": {"type": "dict"},
    "adopt": {"type": "dict", "default": {}},
    "scaled": {"type": "list", "elements": "dict", "default": []},
    "kept_kinds": {"type": "list", "elements": "str", "default": []},
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


class Applier:
    """Applies manifests for one owner (or none), checking ownership before every write."""

    def __init__(self, kube, params, check_mode):
        self.kube = kube
        self.field_manager = params["field_manager"]
        self.owner = params["owner"] or None
        self.adopt = params["adopt"] or {}
        self.kept = set(params["kept_kinds"] or [])
        self.scaled = {(item["kind"], item["name"]): (int(item["minReplicas"]), int(item["maxReplicas"]))
                       for item in params["scaled"] or []}
        self.optional = frozenset((kind.get("apiVersion"), kind.get("kind")) for kind in params["when_served"] or [])
        self.check_mode = check_mode

    def resource(self, api_version, kind):
        """The resource of a kind, or None for an optional kind the API server does not serve."""
        optional = (api_version, kind) in self.optional
        try:
            return self.kube.resources.get(api_version=api_version, kind=kind, remembered=optional)
        except ResourceNotFoundError as exc:  # its message alone, without reported_api_errors' "where:"
            if (api_version, kind) in self.optional:
                return None
            raise ModuleFailure(str(exc))

    def read(self, resource, name, namespace):
        try:
            return self.kube.get(resource, name=name, namespace=namespace)
        except NotFoundError:
            return None

    def foreign(self, kind, live):
        """The conflict record when ``live`` exists and is not the owner's, else None."""
        if live is None or self.owner is None or owned(live, self.owner, self.adopt.get(kind)):
            return None
        return conflict(kind, live, self.owner)

    def apply(self, manifest):
        """Plan and (unless check mode) send one manifest. Returns (action, body or patch or conflict)."""
        api_version, kind, name, namespace = identity(manifest)
        resource = self.resource(api_version, kind)
        if resource is None:
            return "not served", None
        if not resource.namespaced:
            namespace = None
        elif not namespace:
            raise ModuleFailure("%s %s: metadata.namespace is required" % (kind, name))
        manifest = stamped(manifest, self.owner)
        attempt = 0
        while True:
            attempt += 1
            live = self.read(resource, name, namespace)
            found = self.foreign(kind, live)
            if found:
                return "conflict", found
            action, body = self.plan(kind, manifest, live)
            if self.check_mode or action == "unchanged":
                return action, body
            try:
                return self.send(resource, kind, manifest, action, body, namespace)
            except ConflictError:
                # A scaled count written over a scaler's newer write: read the object again.
                if attempt == SCALED_ATTEMPTS or "resourceVersion" not in (body.get("metadata") or {}):
                    raise
                time.sleep(SCALED_RETRY_SECONDS * attempt)
            except ApiError as exc:
                if (api_version, kind) in self.optional and exc.status == INVALID:
                    return "rejected", {"message": exc.summary()}
                raise

    def plan(self, kind, manifest, live):
        """(action, body) for ``manifest`` over ``live`` (module_utils/llmmodel_manifests.py), releasing a
        kept object found owned (created before, or a create below was cut short)."""
        bounds = self.scaled.get((kind, manifest["metadata"]["name"]))
        action, body = plan(manifest, live, bounds)
        release = without_owner_reference(live, self.owner) if kind in self.kept and live else None
        if release is not None:
            action, body = "patch", dict(body or {}, metadata=dict((body or {}).get("metadata") or {}, ownerReferences=release))
        return action, body

    def send(self, resource, kind, manifest, action, body, namespace):
        """Create or patch (the plan of ``apply``), recovering from a stale cache. Returns (action, body)."""
        api_version, name = manifest["apiVersion"], manifest["metadata"]["name"]
        try:
            if action == "create":
                try:
                    self.create(resource, kind, body, namespace)
                except ForbiddenError as exc:
                    # The namespace is being deleted and takes the model with it: nothing new belongs there.
                    if namespace_terminating(exc):
                        return "refused", None
                    raise
            else:
                self.patch(resource, body, name, namespace)
        except ConflictError:
            # The read came from a cache that had not seen the object yet: read it from the API server
            # (the proxy passes a cache miss through) and enforce all of it, if it is the owner's.
            if action != "create":
                raise
            live = self.read(resource, name, namespace) or {}
            found = self.foreign(kind, live)
            if found:
                return "conflict", found
            bounds = self.scaled.get((kind, name))
            action, body = "patch", three_way_patch(None, with_record(left_to_scaler(manifest, live, bounds) if bounds and live else manifest), live)
            self.patch(resource, body, name, namespace)
        except NotFoundError:
            if action != "patch":
                if (api_version, kind) in self.optional:  # remembered as served; its CRD has gone since
                    forget(self.kube.base_url, api_version)
                    return "not served", None
                raise
            action, body = "create", with_record(manifest)
            self.create(resource, kind, body, namespace)
        return action, body

    def create(self, resource, kind, body, namespace):
        """POST ``body``, then release a kept object from the owner reference the proxy added."""
        created = self.kube.create(resource, body=body, namespace=namespace, field_manager=self.field_manager)
        self.release(resource, kind, created, namespace)

    def patch(self, resource, body, name, namespace):
        self.kube.patch(resource, body=body, name=name, namespace=namespace, content_type=MERGE_PATCH,
                        field_manager=self.field_manager)

    def release(self, resource, kind, created, namespace):
        """Drop the owner reference the proxy added to a kept object at once: it is owned only
        between these two requests, while it is new and holds nothing yet."""
        refs = without_owner_reference(created, self.owner) if kind in self.kept else None
        if refs is not None:
            meta = created["metadata"]
            self.patch(resource, {"metadata": {"ownerReferences": refs, "resourceVersion": meta["resourceVersion"]}},
                       meta["name"], namespace)

    def locate(self, reference):
        """(kind, resource, name, namespace) of a reference of ``absent`` or ``removed_record``; the
        resource is None for an optional kind the API server does not serve."""
        metadata = reference.get("metadata") or {}
        manifest = {
            "apiVersion": reference.get("apiVersion"),
            "kind": reference.get("kind"),
            "metadata": {"name": reference.get("name") or metadata.get("name"),
                         "namespace": reference.get("namespace") or metadata.get("namespace")},
        }
        api_version, kind, name, namespace = identity(manifest)
        resource = self.resource(api_version, kind)
        return kind, resource, name, namespace if resource is not None and resource.namespaced else None

    def remove(self, reference):
        """Delete one object of ``absent`` if it exists and is the owner's. Returns (existed, conflict)."""
        kind, resource, name, namespace = self.locate(reference)
        if resource is None:
            return False, None
        live = self.read(resource, name, namespace)
        if live is None:
            return False, None
        found = self.foreign(kind, live)
        if found:
            return False, found
        if not self.check_mode:
            try:
                self.kube.delete(resource, name=name, namespace=namespace, body={"propagationPolicy": "Background"})
            except NotFoundError:
                return False, None
        return True, None

    def record(self, reference):
        """Set the annotation of ``removed_record`` on its object, if it is the owner's and lacks it.
        Returns whether it was written."""
        kind, resource, name, namespace = self.locate(reference)
        annotation = reference.get("annotation")
        if not annotation:
            raise ModuleFailure("removed_record: an annotation is required")
        live = None if resource is None else self.read(resource, name, namespace)
        if (live is None or self.foreign(kind, live) or self.check_mode
                or ((live.get("metadata") or {}).get("annotations") or {}).get(annotation) == "true"):
            return False
        try:
            self.patch(resource, {"metadata": {"annotations": {annotation: "true"}}}, name, namespace)
        except NotFoundError:
            return False
        return True


def run(params, check_mode=False, diff=False, client=None):
    """Everything the module does, callable in-process. Returns the result or raises ModuleFailure."""
    objects, patches, removed, conflicts = [], {}, [], []
    recorded = False
    removals = params.get("removals") or {}
    absent = list(params["absent"] or []) + list(removals.get("absent") or [])
    removed_record = params.get("removed_record") or removals.get("record") or {}
    where = ["applying"]
    with reported_api_errors(lambda: where[0], objects=objects):
        applier = Applier(client or build_client(params), params, check_mode)
        for manifest in params["definitions"]:
            where[0] = "%s %s" % (manifest.get("kind"), (manifest.get("metadata") or {}).get("name"))
            action, body = applier.apply(manifest)
            objects.append({"kind": manifest["kind"], "name": manifest["metadata"]["name"], "action": DONE[action]})
            if action == "rejected":
                objects[-1]["message"] = body["message"]
                continue
            if action == "conflict":
                conflicts.append(body)
                break  # what follows depends on this object (the Job on the volume, the Deployment behind the Service)
            if action == "refused":
                break  # its namespace is being deleted: no other object can be created there either
            if body is not None:
                patches["%s/%s" % (manifest["kind"], manifest["metadata"]["name"])] = body
        # After a conflict nothing is removed either: the model does not move until it is resolved.
        for reference in [] if conflicts else absent:
            where[0] = "removing %s %s" % (reference.get("kind"), reference.get("name") or (reference.get("metadata") or {}).get("name"))
            existed, found = applier.remove(reference)
            if found:
                conflicts.append(found)
            elif existed:
                removed.append({"kind": reference["kind"], "name": reference.get("name") or reference["metadata"]["name"]})
        # Every object of absent is gone now (a failed removal raised): say so where the next run reads it.
        if removed_record and not conflicts:
            where[0] = "recording the removal on %s %s" % (removed_record.get("kind"), removed_record.get("name"))
            recorded = applier.record(removed_record)
    changed = recorded or bool(removed) or any(item["action"] in ("created", "patched") for item in objects)
    result = {"changed": changed, "objects": objects, "removed": removed, "recorded": recorded, "conflicts": conflicts}
    if diff:
        result["diff"] = {"before": {}, "after": patches}
    return result


def main():
    module_main(ARGUMENT_SPEC, run)


if __name__ == "__main__":
    main()
