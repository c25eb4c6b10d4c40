#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Move a server Deployment of the previous release's selector to the model's UID selector, serving throughout."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llmmodel_selector_migration
short_description: Move the server of an LLMModel to the selector of the model's UID without a gap
description:
  - A Deployment's C(spec.selector) cannot change. The previous releases selected the server pods by
    C(app.kubernetes.io/instance) and C(app.kubernetes.io/component), which another release of the same
    name may carry; the current selector is the model's UID label (docs/design.md, "Selectors").
  - One step per run, never waiting. While the live Deployment O(name) (proven the owner's) selects
    anything else than O(selector), its ReplicaSets get the model as a second, non-controller owner
    (the proof of ownership that outlives the Deployment, and the garbage collector's link to the model),
    their pods get the UID label (so the Service, PodDisruptionBudget, PodMonitor and affinities of the
    new selector keep selecting them), and the Deployment is deleted with propagationPolicy Orphan, so
    its ReplicaSets and pods keep serving.
  - Once the old Deployment is gone the caller applies the new one. When the new Deployment has all its
    replicas available, the pods of the retired ReplicaSets (owned by the model, controlled by nothing)
    lose the UID label, so the Service stops sending them requests while they still answer those in
    flight; the ReplicaSets are deleted on a later run (the caller looks again soon while any is left);
    while a pod of the new Deployment cannot be scheduled (no room for a second generation, a GPU
    taken, the scheduler reporting an insufficient resource), one retired replica is scaled away per run
    to make room, as the Deployment's own strategy would.
  - With O(finalizing), the retired ReplicaSets are deleted at once.
  - Objects not proven the owner's are never changed (module_utils/llmmodel_ownership.py).
version_added: "0.9.0"
extends_documentation_fragment:
  - llmmodel_kubernetes
options:
  name:
    description: The server Deployment's name.
    type: str
    required: true
  namespace:
    description: The model's namespace.
    type: str
    required: true
  owner:
    description: The LLMModel (C(name) and C(uid)).
    type: dict
    required: true
  selector:
    description: The matchLabels the current release gives the Deployment (the model's UID label among them).
    type: dict
    required: true
  model_selector:
    description: >-
      Label selector of every server ReplicaSet and pod the model may have had, of any release (the
      operator's model-name label and the server component); ownership is checked on each.
    type: str
    required: true
  finalizing:
    description: The model is being deleted; retired ReplicaSets are deleted at once.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Reads and plans, writes nothing.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Move the server to the selector of the model's UID
  llmmodel_selector_migration:
    name: mistral
    namespace: models
    owner: {name: mistral, uid: 6f1c0a52-4d1e-4c2b-9a57-0c1f3e2d8b11}
    selector: {app.kubernetes.io/component: server, inference.ai.example.com/model-uid: 6f1c0a52-4d1e-4c2b-9a57-0c1f3e2d8b11}
    model_selector: inference.ai.example.com/model=mistral,app.kubernetes.io/component=server
  register: migration
"""

RETURN = r"""
retiring:
  description: The old Deployment is still there (being deleted), so the new one must not be applied yet.
  returned: always
  type: bool
retired:
  description: The ReplicaSets of the old Deployment still kept serving, by name.
  returned: always
  type: list
  elements: str
available:
  description: Available replicas of the retired ReplicaSets (their pods are selected by the Service).
  returned: always
  type: int
actions:
  description: What was done, one line each.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.llmmodel_client import CONNECTION_SPEC, build_client, reported_api_errors
from ansible.module_utils.llmmodel_kube import MERGE_PATCH, ConflictError, NotFoundError
from ansible.module_utils.llmmodel_module import module_main
from ansible.module_utils.llmmodel_ownership import UID_LABEL, owned

# Written on the model's PodDisruptionBudget when a retired ReplicaSet goes (its name): a change of the
# budget makes the disruption controller count its pods again.
RECOUNT_ANNOTATION = "inference.ai.example.com/retired-replicaset"

MODEL_API_VERSION = "inference.ai.example.com/v1alpha1"

ARGUMENT_SPEC = {
    "name": {"type": "str", "required": True},
    "namespace": {"type": "str", "required": True},
    "owner": {"type": "dict", "required": True},
    "selector": {"type": "dict", "required": True},
    "model_selector": {"type": "str", "required": True},
    "finalizing": {"type": "bool", "default": False},
    **CONNECTION_SPEC,
}


def _meta(obj):
    return (obj or {}).get("metadata") or {}


def controller_uid(obj):
    """The UID of the object's controller, or None."""
    return next((ref.get("uid") for ref in _meta(obj).get("ownerReferences") or [] if ref.get("controller")), None)


def selects_with(deployment, selector):
    """Whether the Deployment's selector is exactly ``selector`` (matchLabels, no expressions)."""
    current = (deployment.get("spec") or {}).get("selector") or {}
    return current.get("matchLabels") == selector and not current.get("matchExpressions")


def model_reference(owner):
    """A non-controller owner reference to the model: proof of ownership, and the garbage collector's link."""
    return {"apiVersion": MODEL_API_VERSION, "kind": "LLMModel", "name": owner["name"], "uid": owner["uid"],
            "controller": False, "blockOwnerDeletion": False}


def retired_sets(replica_sets, owner):
    """The model's ReplicaSets that no Deployment controls any more (orphaned by the migration)."""
    return [rs for rs in replica_sets if controller_uid(rs) is None and owned(rs, owner)
            and any(ref.get("uid") == owner["uid"] for ref in _meta(rs).get("ownerReferences") or [])]


def unlabelled_pods(pods, set_uids, owner):
    """The pods of those ReplicaSets that lack the model's UID label."""
    return [pod for pod in pods if controller_uid(pod) in set_uids and not _meta(pod).get("deletionTimestamp")
            and (_meta(pod).get("labels") or {}).get(UID_LABEL) != owner["uid"]]


def selected_pods(pods, set_uids, owner):
    """The pods of those ReplicaSets that the model's Service selects (they carry its UID label)."""
    return [pod for pod in pods if controller_uid(pod) in set_uids and not _meta(pod).get("deletionTimestamp")
            and (_meta(pod).get("labels") or {}).get(UID_LABEL) == owner["uid"]]


def complete(deployment):
    """Whether the Deployment has rolled out and every replica is available."""
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    replicas = spec.get("replicas", 1)
    return (status.get("observedGeneration", 0) >= _meta(deployment).get("generation", 1)
            and status.get("updatedReplicas", 0) >= replicas and status.get("availableReplicas", 0) >= replicas)


def unschedulable(pods, set_uids):
    """Whether a pod of those ReplicaSets (the new Deployment's) waits for room on a node: the
    scheduler found too little of a resource (``Insufficient nvidia.com/gpu``), which an old pod may
    free. A pod that fits no node for another reason (a selector, a taint) would not be helped."""
    return any(controller_uid(pod) in set_uids and any(
        cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("reason") == "Unschedulable"
        and "Insufficient" in (cond.get("message") or "")
        for cond in (pod.get("status") or {}).get("conditions") or []) for pod in pods)


class Migration:
    """One run's reads and writes; ``actions`` says what was done."""

    def __init__(self, kube, params, check_mode):
        self.kube, self.params, self.check_mode = kube, params, check_mode
        self.owner, self.namespace = params["owner"], params["namespace"]
        self.deployments = kube.resources.get(api_version="apps/v1", kind="Deployment")
        self.replica_sets = kube.resources.get(api_version="apps/v1", kind="ReplicaSet")
        self.pods = kube.resources.get(api_version="v1", kind="Pod")
        self.budgets = kube.resources.get(api_version="policy/v1", kind="PodDisruptionBudget")
        self.actions = []

    def list(self, resource):
        return self.kube.get(resource, namespace=self.namespace, label_selector=self.params["model_selector"]).get("items") or []

    def write(self, action, call, *args, **kwargs):
        """Send one write; False when the object went or changed since it was read (the next run reads it again)."""
        self.actions.append(action)
        if self.check_mode:
            return True
        try:
            call(*args, **kwargs)
        except (NotFoundError, ConflictError):
            self.actions[-1] += " (skipped: changed meanwhile)"
            return False
        return True

    def patch(self, resource, obj, body, action, precondition=True):
        """Merge-patch ``obj``; with ``precondition``, only the version that was read."""
        if precondition:
            body = dict(body, metadata=dict(body.get("metadata") or {}, resourceVersion=_meta(obj).get("resourceVersion")))
        return self.write(action, self.kube.patch, resource, body=body, name=_meta(obj)["name"], namespace=self.namespace,
                   content_type=MERGE_PATCH)

    def delete(self, resource, obj, policy, action):
        self.write(action, self.kube.delete, resource, name=_meta(obj)["name"], namespace=self.namespace,
                   body={"propagationPolicy": policy, "preconditions": {"uid": _meta(obj)["uid"]}})

    def recount(self, retired_name):
        """Have the disruption controller count the model's PodDisruptionBudget again: it re-counts a
        budget on a change of the budget or of a pod it selects now, so the retired pods, which left
        its selector with the UID label, would stay counted in its status. One annotation, once per
        retired ReplicaSet; a budget that is not the model's, or none, is left alone."""
        try:
            budget = self.kube.get(self.budgets, name=self.params["name"], namespace=self.namespace)
        except NotFoundError:
            return
        if owned(budget, self.owner):
            self.patch(self.budgets, budget, {"metadata": {"annotations": {RECOUNT_ANNOTATION: retired_name}}},
                       "had PodDisruptionBudget %s counted again" % _meta(budget)["name"], precondition=False)

    def label(self, pods, set_uids):
        for pod in unlabelled_pods(pods, set_uids, self.owner):
            # One label merged in, whatever the kubelet wrote meanwhile: no version precondition.
            self.patch(self.pods, pod, {"metadata": {"labels": {UID_LABEL: self.owner["uid"]}}},
                       "labelled pod %s with the model's UID" % _meta(pod)["name"], precondition=False)

    def retire(self, deployment, sets, pods):
        """Hand the old Deployment's ReplicaSets to the model, label their pods, orphan them; returns them."""
        controlled = [rs for rs in sets if controller_uid(rs) == _meta(deployment)["uid"]]
        handed_over = True
        for rs in controlled:
            refs = _meta(rs).get("ownerReferences") or []
            if not any(ref.get("uid") == self.owner["uid"] for ref in refs):
                handed_over &= self.patch(self.replica_sets, rs, {"metadata": {"ownerReferences": refs + [model_reference(self.owner)]}},
                                          "made the model an owner of ReplicaSet %s" % _meta(rs)["name"])
        self.label(pods, {_meta(rs)["uid"] for rs in controlled + retired_sets(sets, self.owner)})
        # Orphaned, a ReplicaSet the model does not own would be no one's: never before all are handed over.
        if handed_over and not _meta(deployment).get("deletionTimestamp"):
            self.delete(self.deployments, deployment, "Orphan",
                        "deleted Deployment %s of the previous selector, orphaning its ReplicaSets" % _meta(deployment)["name"])
        return controlled

    def settle(self, deployment, sets, retired, pods):
        """Keep the retired pods selected until the new Deployment serves, then remove them."""
        uids = {_meta(rs)["uid"] for rs in retired}
        if self.params["finalizing"]:
            for rs in retired:
                self.delete(self.replica_sets, rs, "Background", "deleted retired ReplicaSet %s" % _meta(rs)["name"])
            return []
        if deployment and complete(deployment):
            # Out of the Service first, deleted on a later run: a pod deleted while kube-proxy still
            # routes to it (it learns of the deletion a moment late) drops the requests sent to it.
            kept = []
            for rs in retired:
                selected = selected_pods(pods, {_meta(rs)["uid"]}, self.owner)
                if selected:
                    for pod in selected:
                        self.patch(self.pods, pod, {"metadata": {"labels": {UID_LABEL: None}}},
                                   "took retired pod %s out of the model's Service" % _meta(pod)["name"], precondition=False)
                    kept.append(rs)
                else:
                    self.delete(self.replica_sets, rs, "Background", "deleted retired ReplicaSet %s" % _meta(rs)["name"])
                    self.recount(_meta(rs)["name"])
            return kept
        self.label(pods, uids)
        current = {_meta(rs)["uid"] for rs in sets if deployment and controller_uid(rs) == _meta(deployment)["uid"]}
        if retired and unschedulable(pods, current):
            largest = max(retired, key=lambda rs: (rs.get("spec") or {}).get("replicas", 0))
            replicas = (largest.get("spec") or {}).get("replicas", 0)
            if replicas > 0:
                self.patch(self.replica_sets, largest, {"spec": {"replicas": replicas - 1}},
                           "scaled retired ReplicaSet %s to %d to make room for the new pods" % (_meta(largest)["name"], replicas - 1))
        return retired

    def run(self):
        try:
            deployment = self.kube.get(self.deployments, name=self.params["name"], namespace=self.namespace)
        except NotFoundError:
            deployment = {}
        if deployment and not owned(deployment, self.owner):
            deployment = {}  # another owner's: reported as a conflict by the role, never touched here
        sets, pods = self.list(self.replica_sets), self.list(self.pods)
        old = bool(deployment) and not selects_with(deployment, self.params["selector"])
        retiring = old and not self.params["finalizing"]
        retired = retired_sets(sets, self.owner)
        if retiring:
            # Their pods serve on: counted with those already retired.
            retired += [rs for rs in self.retire(deployment, sets, pods) if rs not in retired]
        else:
            retired = self.settle({} if old else deployment, sets, retired, pods)
        return {
            "changed": any("skipped" not in action for action in self.actions),
            "retiring": retiring,
            "retired": [_meta(rs)["name"] for rs in retired],
            "available": sum((rs.get("status") or {}).get("availableReplicas", 0) for rs in retired),
            "actions": self.actions,
        }


def run(params, check_mode=False, diff=False, client=None):
    """Everything the module does, callable in-process. Returns the result or raises ModuleFailure."""
    with reported_api_errors(lambda: "Deployment %s" % params["name"]):
        return Migration(client or build_client(params), params, check_mode).run()


def main():
    module_main(ARGUMENT_SPEC, run)


if __name__ == "__main__":
    main()
