#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Delete or merge-patch named objects, tolerating missing ones, then optionally wait a little for some to go."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llmmodel_objects
short_description: Delete or patch Kubernetes objects by name, and wait briefly for others to go
description:
  - For each entry of O(objects), in order, reads the object and either deletes it (O(objects[].state=absent))
    or sends the JSON merge patch O(objects[].patch) (O(objects[].state=patched)).
  - Nothing is sent for an object that is already gone, already being deleted, or already holds every
    field of its patch; a missing object is never an error (404 is done). Safe to run again and again,
    as a finalizer must be.
  - With O(owner), an object that is not proven the owner's (its owner references or the owner's UID
    label; for the kinds of O(adopt), the operator's labels and an annotation) is left untouched,
    whatever its name, and reported in RV(foreign).
  - Then, with O(wait_gone), lists the objects it names (by label selector or name) until none is left
    or O(wait_gone.timeout) seconds have passed, and returns the names still there. It never waits longer;
    what to do about objects that remain (requeue) is the caller's decision.
version_added: "0.3.0"
extends_documentation_fragment:
  - llmmodel_kubernetes
options:
  objects:
    description: The objects to delete or patch, in order.
    type: list
    elements: dict
    default: []
    suboptions:
      api_version:
        description: The object's apiVersion.
        type: str
        required: true
      kind:
        description: The object's kind.
        type: str
        required: true
      name:
        description: The object's name.
        type: str
        required: true
      namespace:
        description: The object's namespace; defaults to O(namespace).
        type: str
      state:
        description: C(absent) deletes the object; C(patched) merge-patches it with O(objects[].patch).
        type: str
        choices: [absent, patched]
        default: absent
      patch:
        description: >-
          The JSON merge patch (RFC 7386) for C(patched). A field set to an empty list or null counts as
          already applied when the object lacks it.
        type: dict
  namespace:
    description: The namespace of entries that name none.
    type: str
  owner:
    description: The object the named ones must belong to (C(name) and C(uid)); turns on the ownership check.
    type: dict
  adopt:
    description: Kinds whose objects the operator's labels and this annotation also prove the owner's.
    type: dict
    default: {}
  when_served:
    description:
      - Kinds, each with C(apiVersion) and C(kind), that are optional in a cluster (another operator's,
        such as the Prometheus Operator's PodMonitor). An entry of such a kind is skipped with the
        action C(not served) when the API server does not serve it; any other unserved kind fails.
    type: list
    elements: dict
    default: []
  propagation_policy:
    description: How the garbage collector treats the dependents of deleted objects.
    type: str
    choices: [Background, Foreground, Orphan]
    default: Background
  wait_gone:
    description: Objects to wait for, after the deletes and patches, until none is left (or the timeout).
    type: dict
    suboptions:
      api_version:
        description: Their apiVersion.
        type: str
        required: true
      kind:
        description: Their kind.
        type: str
        required: true
      namespace:
        description: Their namespace; defaults to O(namespace).
        type: str
      label_selector:
        description: Which objects, by label.
        type: str
      name:
        description: Which object, by name.
        type: str
      timeout:
        description: Seconds to wait at most; 0 only looks once.
        type: float
        default: 0
attributes:
  check_mode:
    support: full
    description: Reads and plans, writes nothing, does not wait.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Stop the pull and scale the server to zero, then give its pods two seconds to go
  llmmodel_objects:
    namespace: models
    objects:
      - {api_version: batch/v1, kind: Job, name: mistral-pull, state: absent}
      - {api_version: apps/v1, kind: Deployment, name: mistral, state: patched, patch: {spec: {replicas: 0}}}
    wait_gone:
      api_version: v1
      kind: Pod
      label_selector: inference.ai.example.com/model=mistral
      timeout: 2
  register: stopped
"""

RETURN = r"""
objects:
  description: >-
    What was done to each object, in the order of O(objects): deleted, patched, unchanged, gone (was not
    there), deleting (its deletion had already begun), foreign (not the owner's: untouched) or not
    served (an optional kind the cluster does not serve).
  returned: always
  type: list
  elements: dict
  sample: [{kind: Job, name: mistral-pull, action: gone}, {kind: Deployment, name: mistral, action: patched}]
foreign:
  description: The objects left untouched because they are not the owner's, with a message saying what to do.
  returned: always
  type: list
  elements: dict
  sample: [{kind: Job, name: mistral-pull, message: "Job mistral-pull already exists and is not this LLMModel's ..."}]
remaining:
  description: Names of the objects of O(wait_gone) still there when the module returned (with a deletion begun or not).
  returned: always
  type: list
  elements: str
  sample: [mistral-5d8f7c9b4-x2x8q]
"""

import time

from ansible.module_utils.llmmodel_client import CONNECTION_SPEC, build_client, reported_api_errors
from ansible.module_utils.llmmodel_kube import MERGE_PATCH, NotFoundError, ResourceNotFoundError
from ansible.module_utils.llmmodel_manifests import contains
from ansible.module_utils.llmmodel_module import ModuleFailure, module_main
from ansible.module_utils.llmmodel_ownership import conflict, owned

POLL_SECONDS = 0.25

ARGUMENT_SPEC = {
    "objects": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {
            "api_version": {"type": "str", "required": True},
            "kind": {"type": "str", "required": True},
            "name": {"type": "str", "required": True},
            "namespace": {"type": "str"},
            "state": {"type": "str", "choices": ["absent", "patched"], "default": "absent"},
            "patch": {"type": "dict"},
        },
        "required_if": [["state", "patched", ["patch"]]],
    },
    "namespace": {"type": "str"},
    "owner": {"type": "dict"},
    "adopt": {"type": "dict", "default": {}},
    "when_served": {"type": "list", "elements": "dict", "default": []},
    "propagation_policy": {"type": "str", "choices": ["Background", "Foreground", "Orphan"], "default": "Background"},
    "wait_gone": {
        "type": "dict",
        "options": {
            "api_version": {"type": "str", "required": True},
            "kind": {"type": "str", "required": True},
            "namespace": {"type": "str"},
            "label_selector": {"type": "str"},
            "name": {"type": "str"},
            "timeout": {"type": "float", "default": 0},
        },
        "required_one_of": [["label_selector", "name"]],
    },
    **CONNECTION_SPEC,
}


def applied(live, patch):
    """Whether ``live`` already holds ``patch``: its fields equal, and null or [] where it lacks the field."""
    for key, value in patch.items():
        if value is None or value == []:
            if live.get(key) not in (None, []):
                return False
        elif isinstance(value, dict) and isinstance(live.get(key), dict):
            if not applied(live[key], value):
                return False
        elif key not in live or not contains(live[key], value):
            return False
    return True


def resource_of(kube, api_version, kind, optional=frozenset()):
    """The resource of a kind; None for an optional kind the API server does not serve."""
    try:
        return kube.resources.get(api_version=api_version, kind=kind, remembered=(api_version, kind) in optional)
    except ResourceNotFoundError as exc:  # its message alone, without reported_api_errors' "where:"
        if (api_version, kind) in optional:
            return None
        raise ModuleFailure(str(exc))


def change_one(kube, entry, params, check_mode, foreign):
    """Delete or patch one object; returns what was done. A foreign object is added to ``foreign``."""
    propagation_policy = params["propagation_policy"]
    optional = frozenset((kind.get("apiVersion"), kind.get("kind")) for kind in params["when_served"] or [])
    resource = resource_of(kube, entry["api_version"], entry["kind"], optional)
    if resource is None:
        return "not served"
    namespace = entry["namespace"] if resource.namespaced else None
    try:
        live = kube.get(resource, name=entry["name"], namespace=namespace)
    except NotFoundError:
        return "gone"
    if params["owner"] and not owned(live, params["owner"], (params["adopt"] or {}).get(entry["kind"])):
        foreign.append(conflict(entry["kind"], live, params["owner"]))
        return "foreign"
    if (live.get("metadata") or {}).get("deletionTimestamp"):
        return "deleting"
    if entry["state"] == "patched" and applied(live, entry["patch"]):
        return "unchanged"
    if check_mode:
        return "deleted" if entry["state"] == "absent" else "patched"
    try:
        if entry["state"] == "absent":
            # The API's own field names: a Job deleted without propagationPolicy orphans its pods.
            kube.delete(resource, name=entry["name"], namespace=namespace,
                           body={"propagationPolicy": propagation_policy})
            return "deleted"
        kube.patch(resource, body=entry["patch"], name=entry["name"], namespace=namespace, content_type=MERGE_PATCH)
        return "patched"
    except NotFoundError:
        return "gone"  # it went between the read and the write


def still_there(kube, wait):
    resource = resource_of(kube, wait["api_version"], wait["kind"])
    namespace = wait["namespace"] if resource.namespaced else None
    if wait["name"]:
        try:
            return [kube.get(resource, name=wait["name"], namespace=namespace)["metadata"]["name"]]
        except NotFoundError:
            return []
    listing = kube.get(resource, namespace=namespace, label_selector=wait["label_selector"])
    return [item["metadata"]["name"] for item in listing.get("items") or []]


def run(params, check_mode=False, diff=False, client=None):
    """Everything the module does, callable in-process. Returns the result or raises ModuleFailure."""
    objects, remaining, foreign = [], [], []
    where = ["starting"]
    with reported_api_errors(lambda: where[0], objects=objects):
        kube = client or build_client(params)
        for entry in params["objects"]:
            entry = dict(entry, namespace=entry["namespace"] or params["namespace"])
            where[0] = "%s %s" % (entry["kind"], entry["name"])
            objects.append({"kind": entry["kind"], "name": entry["name"],
                            "action": change_one(kube, entry, params, check_mode, foreign)})
        wait = params["wait_gone"]
        if wait:
            wait = dict(wait, namespace=wait["namespace"] or params["namespace"])
            where[0] = "waiting for %s %s to go" % (wait["kind"], wait["label_selector"] or wait["name"])
            deadline = time.monotonic() + (0 if check_mode else wait["timeout"])
            remaining = still_there(kube, wait)
            while remaining and time.monotonic() < deadline:
                time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
                remaining = still_there(kube, wait)
    changed = any(item["action"] in ("deleted", "patched") for item in objects)
    return {"changed": changed, "objects": objects, "remaining": remaining, "foreign": foreign}


def main():
    module_main(ARGUMENT_SPEC, run)


if __name__ == "__main__":
    main()
