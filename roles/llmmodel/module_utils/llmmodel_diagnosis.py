# -*- coding: utf-8 -*-
"""Why a model's pods do not run, or cannot even be created: pure functions over the Pods, the Job,
the Deployment and the core/v1 Events as the API returns them.

The role reads the server pods (only while the server is not available), the pull pods (only while
a pull runs or has failed) and, only when something is stuck for long (``event_subjects``), the
events of the stuck objects, with in-process lookups, and calls these through the
``llmmodel_diagnosis`` filters. Each answer is ``{"reason": <CamelCase>, "message": <what happened
and what to do>}`` or None when nothing is wrong that a user could act on (a pod that is starting).

Reasons for the server (condition Ready), most telling first; the Deployment's own conditions count
after the pods' findings, except that PodCreationFailed wins when no pod of the current
configuration exists at all:

  reason                    seen in                                   what to do
  <the pods' findings>      OOMKilled ... Evicted: see               as the message says
                            module_utils/llmmodel_pod_diagnosis.py
  PodCreationFailed         the Deployment's ReplicaFailure condition PodSecurity: the namespace's level
                            (FailedCreate: the API server refused     and spec.serve.securityContext;
                            the pods); the API's words, shortened     quota: raise the ResourceQuota or lower
                                                                      spec.serve.resources; LimitRange: keep
                                                                      spec.serve.resources within it
  ProgressDeadlineExceeded  the Deployment's Progressing False,       read the pods' events and the
                            ProgressDeadlineExceeded                  server's log

For the pull (condition WeightsReady): the same pod findings prefixed with Pull (PullOOMKilled,
PullCrashLoopBackOff, PullImagePullFailed, PullContainerConfigError, PullVolumeMountFailed,
PullStartupTimeout, PullContainerCreatingTooLong, PullUnschedulable, PullEvicted), plus

  CredentialsNotFound       a pull pod waits in                       create the Secret with the key
                            CreateContainerConfigError because the    (the message says how); the
                            Secret of the HF_TOKEN, AWS key pair or   operator never reads Secrets
                            MODEL_URL secretKeyRef, or its key, is
                            missing; or a failed az:// pull found
                            none of the Secret's Azure keys
                            (module_utils/llmmodel_azure.py)
  PullPodCreationFailed     a running Job without pods whose newest   as PodCreationFailed, for the pull
                            FailedCreate event says why (events read) pod
  VolumeNotBound            a pull pod the scheduler holds because    the claim's storage (the role says
                            its Immediate claim is not bound (the     which class); a WaitForFirstConsumer
                            volume's problem, not the pod's)          claim waiting for the pod is no problem
  PullDeadlineExceeded      the Job ran longer than its deadline      more time for a big model
  PullFailed                the puller's own failure message (set     as the message says
                            by the role, not here)

A message quotes what the cluster said and never a secret value (module_utils/llmmodel_advice.py).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from ansible.module_utils.llmmodel_advice import api_words, refusal_advice, short
from ansible.module_utils.llmmodel_azure import credentials_problem as azure_credentials_problem
from ansible.module_utils.llmmodel_credentials import PLACEHOLDERS
from ansible.module_utils.llmmodel_events import events_of, field_selector, parse_time
from ansible.module_utils.llmmodel_pod_diagnosis import (
    CREATING_GRACE_SECONDS,
    RETRIED_REASONS,
    container_statuses,
    creating_since,
    diagnose_pod,
    diagnose_pods,
    newest_first,
)

# The scheduler's words for a pod whose Immediate-binding claim has no volume yet (volumebinding plugin).
_UNBOUND_IMMEDIATE = "unbound immediate PersistentVolumeClaims"
_SECRET_NOT_FOUND = re.compile(r'secret "(?P<name>[^"]+)" not found')
_SECRET_KEY_MISSING = re.compile(r"couldn't find key (?P<key>\S+) in Secret (?P<namespace>[^/\s]+)/(?P<name>\S+)")


def _current(pods, config_hash, hash_annotation):
    """The pods of the current configuration (all of them without a hash to compare)."""
    if not (config_hash and hash_annotation):
        return list(pods or [])
    return [p for p in pods or [] if ((p.get("metadata") or {}).get("annotations") or {}).get(hash_annotation) == config_hash]


def _condition(obj, *types, status="True"):
    """The first condition of ``obj`` of one of ``types`` with ``status``, or None."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") in types and condition.get("status") == status:
            return condition
    return None


def _deployment_problems(deployment):
    """(PodCreationFailed or None, ProgressDeadlineExceeded or None) from the Deployment's conditions."""
    deployment = deployment or {}
    meta = deployment.get("metadata") or {}
    failure = _condition(deployment, "ReplicaFailure")
    created = None
    if failure:
        words = api_words(failure.get("message") or failure.get("reason"))
        created = {
            "reason": "PodCreationFailed",
            "message": "Deployment %s cannot create its pods (%s: %s); %s"
            % (meta.get("name", "?"), failure.get("reason") or "FailedCreate", short(words, 400),
               refusal_advice(words, "server", meta.get("namespace"))),
        }
    stalled = _condition(deployment, "Progressing", status="False")
    deadline = None
    if stalled and stalled.get("reason") == "ProgressDeadlineExceeded":
        seconds = (deployment.get("spec") or {}).get("progressDeadlineSeconds")
        deadline = {
            "reason": "ProgressDeadlineExceeded",
            "message": "Deployment %s made no progress%s: %s; its pods do not become ready: read their events "
            "(kubectl describe pods -l %s) and the server's log"
            % (meta.get("name", "?"), " within %ss" % seconds if seconds else "", short(stalled.get("message"), 300).rstrip("."),
               _selector_text(deployment)),
        }
    return created, deadline


def _selector_text(deployment):
    labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join("%s=%s" % item for item in sorted(labels.items())) or "<the server's labels>"


def diagnose_server(pods, config_hash=None, hash_annotation=None, now=None, deployment=None, events=None,
                    grace_seconds=CREATING_GRACE_SECONDS):
    """The server's problem. With config_hash, only pods of the current configuration count (an old
    pod on its way out does not say anything about the new one). ``deployment``: the Deployment as
    read (its ReplicaFailure and Progressing conditions); ``events``: core/v1 Events, when read."""
    current = _current(pods, config_hash, hash_annotation)
    created, deadline = _deployment_problems(deployment)
    if created and not current:
        return created
    return diagnose_pods(current, _now(now), events, grace_seconds) or created or deadline


def event_subjects(pods, job=None, config_hash=None, hash_annotation=None, now=None, grace_seconds=CREATING_GRACE_SECONDS):
    """The objects whose events would explain what is stuck, so that events are read only then:
    pods (of the current configuration) creating their containers for longer than the grace period,
    and a Job that runs without any pod. Each is {kind, name, uid, fieldSelector}."""
    now = _now(now)
    subjects = []
    for pod in _current(pods, config_hash, hash_annotation):
        meta = pod.get("metadata") or {}
        since = creating_since(pod)
        if meta.get("deletionTimestamp") or since is None or (now - since).total_seconds() <= grace_seconds:
            continue
        subjects.append(_subject("Pod", meta))
    job = job or {}
    if job and not pods and _job_running(job):
        subjects.append(_subject("Job", job.get("metadata") or {}))
    return subjects


def _subject(kind, meta):
    return {"kind": kind, "name": meta.get("name"), "uid": meta.get("uid"), "fieldSelector": field_selector(kind, meta.get("name"))}


def _job_running(job):
    return not _condition(job, "Failed", "FailureTarget", "Complete", "SuccessCriteriaMet")


# The Secrets a pull reads by secretKeyRef, by variable: what the value is, for the advice. Optional
# references (a session token, a region) never stop the pod, so they are no cause.
_PULL_SECRETS = dict(PLACEHOLDERS, MODEL_URL="<the URL of the weights file>")


def _pull_secret_refs(job, pods):
    """[(Secret name, key, what the value is)] of the pull's required secretKeyRefs (HF_TOKEN, the AWS
    key pair, MODEL_URL), from the Job or its pods."""
    specs = [((job.get("spec") or {}).get("template") or {}).get("spec") or {}] + [p.get("spec") or {} for p in pods]
    refs = []
    for spec in specs:
        for container in list(spec.get("initContainers") or []) + list(spec.get("containers") or []):
            for env in container.get("env") or []:
                ref = (env.get("valueFrom") or {}).get("secretKeyRef") or {}
                if env.get("name") in _PULL_SECRETS and ref.get("name") and not ref.get("optional"):
                    found = (ref["name"], ref.get("key") or env["name"], _PULL_SECRETS[env["name"]])
                    if found not in refs:
                        refs.append(found)
    return refs


def _create_command(namespace, name, refs):
    """kubectl's command that creates Secret ``name`` with every key the pull reads from it."""
    literals = " ".join("--from-literal=%s=%s" % (key, value) for secret, key, value in refs if secret == name)
    return "kubectl -n %s create secret generic %s %s" % (namespace, name, literals)


def _credentials_problem(job, pods):
    """CredentialsNotFound when a pull pod cannot start because a Secret it reads (the credentials
    Secret, the Secret of the URL) or one of its keys is missing."""
    refs = _pull_secret_refs(job, pods)
    if not refs:
        return None
    namespace = (job.get("metadata") or {}).get("namespace") or next(
        ((p.get("metadata") or {}).get("namespace") for p in pods if (p.get("metadata") or {}).get("namespace")), "?")
    for pod in newest_first(pods):
        for cstatus in container_statuses(pod):
            waiting = (cstatus.get("state") or {}).get("waiting") or {}
            text = waiting.get("message") or ""
            if waiting.get("reason") != "CreateContainerConfigError":
                continue
            missing = _SECRET_NOT_FOUND.search(text)
            no_key = _SECRET_KEY_MISSING.search(text)
            for name, key, value in refs:
                if missing and missing.group("name") == name:
                    return {"reason": "CredentialsNotFound",
                            "message": "Secret %s not found in namespace %s; create it: %s"
                            % (name, namespace, _create_command(namespace, name, refs))}
                if no_key and no_key.group("name") == name and no_key.group("key") == key:
                    create = _create_command(namespace, name, [(name, key, value)])
                    return {"reason": "CredentialsNotFound",
                            "message": "Secret %s has no key %s; put the value under that key: %s --dry-run=client -o yaml "
                            "| kubectl apply -f -" % (name, key, create)}
    return None


def _pod_creation_failed(job, events):
    """PullPodCreationFailed from the newest FailedCreate event of a Job that has no pod."""
    meta = job.get("metadata") or {}
    job_events = events_of(events, "Job", meta.get("name"), meta.get("uid"))
    failed = [e for e in job_events if e.get("reason") == "FailedCreate"]
    if not failed or job_events[0] is not failed[0]:
        return None  # none, or a newer event (a pod created after all) tells otherwise
    words = api_words(_created_words(failed[0].get("message")))
    return {
        "reason": "PullPodCreationFailed",
        "message": "the pull Job %s cannot create its pod (FailedCreate: %s); %s"
        % (meta.get("name", "?"), short(words, 400), refusal_advice(words, "pull", meta.get("namespace"))),
    }


def _created_words(message):
    """The Job controller's 'Error creating: pods "x" is forbidden: ...' without its first words."""
    return re.sub(r"^Error creating: ", "", " ".join(str(message or "").split()))


def _waits_for_immediate_claim(pod):
    """The scheduler holds the pod only because a claim of Immediate binding is not bound yet."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return _UNBOUND_IMMEDIATE in (condition.get("message") or "")
    return False


def diagnose_pull(job, pods, now=None, events=None, grace_seconds=CREATING_GRACE_SECONDS):
    """The pull's problem: a failed Job's cause, or what keeps a running one from progressing.

    A failed Job with a plain puller failure (the puller's own exit code and message) returns None:
    the role reports the puller's message as PullFailed itself. ``events``: core/v1 Events, when read.
    """
    job = job or {}
    pods = list(pods or [])
    failed = _condition(job, "Failed", "FailureTarget")
    if failed and failed.get("reason") == "DeadlineExceeded":
        deadline = (job.get("spec") or {}).get("activeDeadlineSeconds")
        return {
            "reason": "PullDeadlineExceeded",
            "message": "the pull Job %s ran longer than its deadline%s and was stopped; a bigger model or a slower "
            "source needs more time" % ((job.get("metadata") or {}).get("name", "?"), " of %ss" % deadline if deadline else ""),
        }
    credentials = _credentials_problem(job, pods) or (azure_credentials_problem(job, pods) if failed else None)
    if credentials:
        return credentials
    if not pods and not failed and job:
        return _pod_creation_failed(job, events)
    newest = newest_first(pods)
    if failed:
        # The last pod decides: earlier ones may have failed for another reason and been retried.
        found = diagnose_pod(newest[0], _now(now), events, grace_seconds, "pull") if newest else None
    else:
        found = diagnose_pods(newest, _now(now), events, grace_seconds, "pull")
    if not found:
        return None
    if found["reason"] == "Unschedulable" and _waits_for_immediate_claim(newest[0]):
        return {"reason": "VolumeNotBound", "message": "the pull pod waits for its volume to be bound: " + found["message"]}
    retrying = "; the Job retries" if not failed and found["reason"] in RETRIED_REASONS else ""
    return {"reason": "Pull" + found["reason"], "message": found["message"] + retrying}


def _now(now):
    if isinstance(now, str):
        return parse_time(now)
    return now or datetime.now(timezone.utc)
