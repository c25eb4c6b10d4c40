#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Write fields and conditions of an object's status subresource with one merge patch."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llmmodel_status
short_description: Set fields and conditions in the status subresource of a Kubernetes object
description:
  - Reads the object, merges the given O(status) fields and O(conditions) into its current status,
    and writes the result with one JSON merge patch (C(application/merge-patch+json)) of the
    C(/status) subresource. When nothing would change it does not write at all and reports
    C(changed=false), so a reconcile of an unchanged object stays at C(changed=0).
  - Conditions are merged by C(type). A given condition replaces the stored one of the same type;
    its C(lastTransitionTime) is kept unless its C(status) value changes, and its
    C(observedGeneration) is set to O(observed_generation). Conditions of other types, such as
    ansible-operator's C(Running), C(Successful) and C(Failure), are left as they are.
  - The patch carries the C(resourceVersion) that was read, so a status written by someone else in
    between is never overwritten with stale conditions; on a conflict the module reads again and
    retries a few times.
  - Written for the LLMModel role, where ansible-operator's C(operator_sdk.util.k8s_status) (Galaxy
    only) is not available. Works for any kind with a status subresource.
version_added: "0.1.0"
extends_documentation_fragment:
  - llmmodel_kubernetes
options:
  api_version:
    description: API version of the object, C(group/version) or C(v1) for the core group.
    type: str
    required: true
  kind:
    description: Kind of the object, for example C(LLMModel).
    type: str
    required: true
  name:
    description: Name of the object.
    type: str
    required: true
  namespace:
    description: Namespace of the object. Required for namespaced kinds, ignored for cluster-scoped ones.
    type: str
  status:
    description:
      - Status fields to set, merged into the current status with JSON merge-patch rules. Maps
        merge recursively, a C(null) value removes the field, anything else replaces it.
      - Must not contain C(conditions); use O(conditions).
    type: dict
    default: {}
  conditions:
    description:
      - Conditions to set, merged by type into the stored ones. Omit to leave conditions alone.
    type: list
    elements: dict
    suboptions:
      type:
        description: Condition type in CamelCase, for example C(Ready).
        type: str
        required: true
      status:
        description: Condition status.
        type: str
        required: true
        choices: ["True", "False", "Unknown"]
      reason:
        description: CamelCase reason of the last transition, for example C(PullSucceeded).
        type: str
        required: true
      message:
        description: Human-readable detail.
        type: str
        default: ""
  conditions_exclusive:
    description:
      - The given O(conditions) are all the object may have; a stored condition of another type is
        removed. For a kind whose conditions only the caller writes, so that one written by anyone
        else (a forged one) does not stand.
    type: bool
    default: false
  observed_generation:
    description:
      - The C(metadata.generation) the conditions describe. Defaults to the generation of the object
        as read by the module.
    type: int
  event:
    description:
      - A core/v1 Event about the object, created only when this run writes the status (not in
        check mode, not when nothing changed). The role passes one when the phase changes, so
        C(kubectl describe) tells the story without a second task.
    type: dict
    suboptions:
      type:
        description: Event type.
        type: str
        default: Normal
        choices: [Normal, Warning]
      reason:
        description: CamelCase reason, for example C(Serving).
        type: str
        required: true
      message:
        description: Human-readable detail.
        type: str
        required: true
      component:
        description: The reporting component.
        type: str
        default: llm-operator
      namespace_terminating_message:
        description:
          - The message when the object's namespace is being deleted. The API server then refuses
            every new object in it, Events included, so the Event goes to the Namespace instead (in
            the C(default) namespace, where the Events of cluster-scoped objects live), prefixed with
            the object's kind and name. Defaults to O(event.message).
        type: str
attributes:
  check_mode:
    support: full
    description: Reads the object and reports what would change without writing.
  diff_mode:
    support: full
    description: Returns the status before and after.
notes:
  - Under ansible-operator with C(manageStatus) true, the operator rewrites all conditions through a
    struct without C(observedGeneration) at the start and end of each reconcile, so a condition's
    C(observedGeneration) does not last beyond the run. A stored condition that only lacks
    C(observedGeneration) therefore counts as unchanged. Put the reconciled generation in the
    top-level C(status.observedGeneration) field, which ansible-operator keeps.
  - Through ansible-operator's proxy, reads come from its cache and may briefly lag; the
    C(resourceVersion) check and the retries make that safe.
"""

EXAMPLES = r"""
- name: Report that the weights are being pulled
  llmmodel_status:
    api_version: inference.ai.example.com/v1alpha1
    kind: LLMModel
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    status:
      phase: Pulling
      observedGeneration: "{{ _inference_ai_example_com_llmmodel.metadata.generation }}"
      weights:
        source: hf://org/model@main
        ready: false
    conditions:
      - type: WeightsReady
        status: "False"
        reason: Pulling
        message: The pull Job is downloading the weights.
      - type: Ready
        status: "False"
        reason: WaitingForWeights
        message: The server starts once the weights are ready.

- name: Remove the inference URL while terminating
  llmmodel_status:
    api_version: inference.ai.example.com/v1alpha1
    kind: LLMModel
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    status:
      phase: Terminating
      inferenceURL: null
"""

RETURN = r"""
status:
  description: The status of the object after the module ran (in check mode, what it would be).
  returned: success
  type: dict
  sample:
    phase: Serving
    conditions:
      - type: Ready
        status: "True"
        reason: ServerAvailable
        message: ""
        lastTransitionTime: "2026-01-01T12:00:00Z"
        observedGeneration: 3
event:
  description: The name of the Event created, when O(event) was given and the status was written.
  returned: when an Event was created
  type: str
  sample: my-model.18a7c2f1e0b3d4a5
diff:
  description: The status before and after, when run with C(--diff).
  returned: when diff mode is on
  type: dict
"""

import time

from ansible.module_utils.llmmodel_client import CONNECTION_SPEC, api_error_message, build_client, namespace_terminating, reported_api_errors
from ansible.module_utils.llmmodel_conditions import now_rfc3339, plan_status, validate_conditions
from ansible.module_utils.llmmodel_kube import MERGE_PATCH, ConflictError, ForbiddenError, NotFoundError
from ansible.module_utils.llmmodel_module import ModuleFailure, module_main

CONFLICT_RETRIES = 5

ARGUMENT_SPEC = {
    "api_version": {"type": "str", "required": True},
    "kind": {"type": "str", "required": True},
    "name": {"type": "str", "required": True},
    "namespace": {"type": "str"},
    "status": {"type": "dict", "default": {}},
    "conditions": {
        "type": "list",
        "elements": "dict",
        "options": {
            "type": {"type": "str", "required": True},
            "status": {"type": "str", "required": True, "choices": ["True", "False", "Unknown"]},
            "reason": {"type": "str", "required": True},
            "message": {"type": "str", "default": ""},
        },
    },
    "conditions_exclusive": {"type": "bool", "default": False},
    "observed_generation": {"type": "int"},
    "event": {
        "type": "dict",
        "options": {
            "type": {"type": "str", "default": "Normal", "choices": ["Normal", "Warning"]},
            "reason": {"type": "str", "required": True},
            "message": {"type": "str", "required": True},
            "component": {"type": "str", "default": "llm-operator"},
            "namespace_terminating_message": {"type": "str"},
        },
    },
    **CONNECTION_SPEC,
}


def input_problems(params):
    """Problems with the arguments that argument_spec cannot express; empty when all is well."""
    problems = []
    if "conditions" in (params["status"] or {}):
        problems.append("set conditions with the conditions option, not inside status")
    if params["conditions"] is not None:
        problems.extend(validate_conditions(params["conditions"]))
    if params["observed_generation"] is not None and params["observed_generation"] < 0:
        problems.append("observed_generation must not be negative")
    return problems


def find_status_subresource(kube, api_version, kind):
    """The resource and its status subresource; raises ResourceNotFoundError, ResourceNotUniqueError
    or ValueError with the reason (reported_api_errors reports each)."""
    resource = kube.resources.get(api_version=api_version, kind=kind)
    status = resource.subresources.get("status")
    if status is None:
        raise ValueError("%s %s has no status subresource" % (api_version, kind))
    return resource, status


def read_and_plan(params, check_mode, diff, kube, resource, namespace):
    """Read the object; return (obj, result, patch), patch None when nothing would change."""
    obj = kube.get(resource, name=params["name"], namespace=namespace)
    current = obj.get("status") or {}
    generation = params["observed_generation"]
    if generation is None:
        generation = (obj.get("metadata") or {}).get("generation")
    proposed, patch = plan_status(current, params["status"], params["conditions"], generation, now_rfc3339(),
                                  exclusive=params["conditions_exclusive"])
    result = {"changed": patch is not None, "status": proposed}
    if diff:
        result["diff"] = {"before": current, "after": proposed}
    return obj, result, patch


def write_status(params, check_mode, diff, kube, resource, status_resource, namespace):
    """Read, plan, and (unless there is nothing to do or check mode is on) patch. Returns (obj, result)."""
    attempt = 0
    while True:
        obj, result, patch = read_and_plan(params, check_mode, diff, kube, resource, namespace)
        if patch is None or check_mode:
            return obj, result
        # The read resourceVersion makes the API server refuse the patch if the status moved since.
        patch["metadata"] = {"resourceVersion": obj["metadata"]["resourceVersion"]}
        try:
            written = kube.patch(status_resource, body=patch, name=params["name"], namespace=namespace, content_type=MERGE_PATCH)
        except ConflictError:
            if attempt == CONFLICT_RETRIES:
                raise
            time.sleep(0.2 * 2**attempt)
            attempt += 1
            continue
        result["status"] = written.get("status") or {}
        if "diff" in result:
            result["diff"]["after"] = result["status"]
        return written, result


def object_reference(api_version, kind, name, namespace=None, uid=None, resource_version=None):
    return {"apiVersion": api_version, "kind": kind, "name": name, "namespace": namespace, "uid": uid,
            "resourceVersion": resource_version}


def create_event(kube, involved, namespace, event, message):
    stamp = now_rfc3339()
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": involved["name"] + ".", "namespace": namespace},
        "involvedObject": {key: value for key, value in involved.items() if value is not None},
        "type": event["type"],
        "reason": event["reason"],
        "message": message,
        "source": {"component": event["component"]},
        "reportingComponent": event["component"],
        "reportingInstance": event["component"],
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
    events = kube.resources.get(api_version="v1", kind="Event")
    return kube.create(events, body=body, namespace=namespace)["metadata"]["name"]


def record_event(kube, obj, event):
    """Create a core/v1 Event about ``obj``. Through ansible-operator's proxy the create also gets
    the owner reference, so the Event goes with the object. In a namespace that is being deleted
    the Event is about the Namespace instead (see the option's description)."""
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    involved = object_reference(obj["apiVersion"], obj["kind"], meta["name"], namespace, meta["uid"], meta.get("resourceVersion"))
    try:
        return create_event(kube, involved, namespace or "default", event, event["message"])
    except ForbiddenError as exc:
        if not namespace or not namespace_terminating(exc):
            raise
    message = "%s %s/%s: %s" % (obj["kind"], namespace, meta["name"], event.get("namespace_terminating_message") or event["message"])
    return create_event(kube, object_reference("v1", "Namespace", namespace), "default", event, message)


def run(params, check_mode=False, diff=False, client=None):
    """Everything the module does, callable in-process (the action plugin of the same name runs it
    inside ansible-playbook, without a module process). Returns the result or raises ModuleFailure."""
    problems = input_problems(params)
    if problems:
        raise ModuleFailure("invalid arguments: " + "; ".join(problems), problems=problems)

    where = "%s %s %s" % (params["api_version"], params["kind"], params["name"])
    with reported_api_errors(lambda: where):
        try:
            kube = client or build_client(params)
            resource, status_resource = find_status_subresource(kube, params["api_version"], params["kind"])
            namespace = params["namespace"] if resource.namespaced else None
            if resource.namespaced and not namespace:
                raise ModuleFailure("namespace is required for namespaced kind %s" % params["kind"])
            obj, result = write_status(params, check_mode, diff, kube, resource, status_resource, namespace)
            if params.get("event") and result["changed"] and not check_mode:
                result["event"] = record_event(kube, obj, params["event"])
        except NotFoundError:
            raise ModuleFailure("%s not found in namespace %s" % (where, params["namespace"]))
        except ConflictError as exc:
            raise ModuleFailure("%s: status kept changing, gave up after %d retries: %s" % (where, CONFLICT_RETRIES, api_error_message(exc)))
    return result


def main():
    module_main(ARGUMENT_SPEC, run)


if __name__ == "__main__":
    main()
