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
  OOMKilled                 a container's last state OOMKilled        give it more memory
  CrashLoopBackOff          a container keeps exiting; the message    read its last termination message
                            carries its last termination message      and the server's log
  ImagePullFailed           ErrImagePull, ImagePullBackOff,           check the image name and the pull
                            InvalidImageName                          secret
  ContainerConfigError      CreateContainerConfigError or             the kubelet's words; for an image
                            CreateContainerError                      that runs as root under runAsNonRoot:
                                                                      set spec.serve.securityContext.runAsUser
                                                                      to its non-root user, or
                                                                      runAsNonRoot: false (not in a
                                                                      restricted namespace)
  VolumeMountFailed         the pod's newest event is FailedMount or  Multi-Attach: the ReadWriteOnce volume
                            FailedAttachVolume (events read)          is in use on another node; else check
                                                                      the PVC and its storage
  StartupTimeout            no startup probe success within the       raise the startup budget, or read
                            probe's budget                            the server's log
  ContainerCreatingTooLong  containers waiting in ContainerCreating / the newest event of the pod
                            PodInitializing longer than the grace     when read, else kubectl describe pod
                            period (120 s)
  Unschedulable             PodScheduled False: the scheduler's own   free or add what it lacks
                            message (e.g. Insufficient nvidia.com/gpu)
  Evicted                   the kubelet evicted the pod               give it what it ran out of
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
                            CreateContainerConfigError because the    HF_TOKEN (the message says how);
                            Secret of the HF_TOKEN secretKeyRef or    the operator never reads Secrets
                            its key HF_TOKEN is missing
  PullPodCreationFailed     a running Job without pods whose newest   as PodCreationFailed, for the pull
                            FailedCreate event says why (events read) pod
  PullDeadlineExceeded      the Job ran longer than its deadline      more time for a big model
  PullFailed                the puller's own failure message (set     as the message says
                            by the role, not here)

A message quotes what the cluster said (shortened to 600 characters) and never a secret value: the
kubelet and the API server name a Secret, never its data.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from ansible.module_utils.llmmodel_events import events_of, field_selector, parse_time

MESSAGE_LIMIT = 600
IMAGE_PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
CONFIG_ERROR_REASONS = ("CreateContainerConfigError", "CreateContainerError")
# A container waits with one of these while the kubelet sets the pod up (volumes, sandbox, image).
CREATING_REASONS = ("ContainerCreating", "PodInitializing")
MOUNT_EVENT_REASONS = ("FailedMount", "FailedAttachVolume")
# How long a pod may create its containers before it counts as stuck (and its events are worth a read).
CREATING_GRACE_SECONDS = 120
# Exit codes that mean "killed" when the kubelet gives no better reason (SIGKILL, SIGTERM).
KILLED_EXIT_CODES = (137, 143)
# The kubelet's words when runAsNonRoot meets an image that runs as root or as a user name.
_RUNS_AS_ROOT = ("image will run as root", "image has non-numeric user")
_SECRET_NOT_FOUND = re.compile(r'secret "(?P<name>[^"]+)" not found')
_SECRET_KEY_MISSING = re.compile(r"couldn't find key (?P<key>\S+) in Secret (?P<namespace>[^/\s]+)/(?P<name>\S+)")
_POD_SECURITY = re.compile(r'violates PodSecurity "(?P<level>[^"]+)"')


def _short(text, limit=MESSAGE_LIMIT):
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _name(pod):
    return (pod.get("metadata") or {}).get("name", "?")


def _statuses(pod):
    status = pod.get("status") or {}
    return list(status.get("initContainerStatuses") or []) + list(status.get("containerStatuses") or [])


def _container_spec(pod, name):
    spec = pod.get("spec") or {}
    for container in list(spec.get("initContainers") or []) + list(spec.get("containers") or []):
        if container.get("name") == name:
            return container
    return {}


def _memory_limit(pod, name):
    limit = ((_container_spec(pod, name).get("resources") or {}).get("limits") or {}).get("memory")
    return " (memory limit %s)" % limit if limit else ""


def _terminations(cstatus):
    """The container's current and previous terminated states, current first."""
    found = []
    for key in ("state", "lastState"):
        terminated = (cstatus.get(key) or {}).get("terminated")
        if terminated:
            found.append(terminated)
    return found


def _restarts(cstatus):
    count = cstatus.get("restartCount") or 0
    return ", restarted %d time%s" % (count, "" if count == 1 else "s") if count else ""


def _termination_text(terminated):
    """'exit code 1: <the container's termination message>' or the kubelet's reason."""
    text = "exit code %s" % terminated.get("exitCode", "?")
    detail = terminated.get("message") or terminated.get("reason")
    return "%s: %s" % (text, _short(detail, 400)) if detail else text


def _oom_killed(pod, cstatus):
    for terminated in _terminations(cstatus):
        if terminated.get("reason") == "OOMKilled":
            return {
                "reason": "OOMKilled",
                "message": "container %s of pod %s ran out of memory and was killed%s%s; give it more memory"
                % (cstatus.get("name"), _name(pod), _memory_limit(pod, cstatus.get("name")), _restarts(cstatus)),
            }
    return None


def _crash_loop(pod, cstatus):
    waiting = (cstatus.get("state") or {}).get("waiting") or {}
    crashing = waiting.get("reason") == "CrashLoopBackOff"
    # Between two back-offs the container runs again for a moment: still the same loop while it is
    # not ready and has a previous failed run.
    last = (cstatus.get("lastState") or {}).get("terminated") or {}
    if not crashing and not (cstatus.get("restartCount") and not cstatus.get("ready") and last.get("exitCode")):
        return None
    detail = _termination_text(last) if last else _short(waiting.get("message"), 400)
    return {
        "reason": "CrashLoopBackOff",
        "message": "container %s of pod %s keeps crashing%s; last run ended with %s"
        % (cstatus.get("name"), _name(pod), _restarts(cstatus), detail or "no message"),
    }


def _image_pull(pod, cstatus):
    waiting = (cstatus.get("state") or {}).get("waiting") or {}
    if waiting.get("reason") not in IMAGE_PULL_REASONS:
        return None
    image = cstatus.get("image") or _container_spec(pod, cstatus.get("name")).get("image") or "?"
    return {
        "reason": "ImagePullFailed",
        "message": "image %s of container %s cannot be pulled (%s: %s); check the image name and the pull secret"
        % (image, cstatus.get("name"), waiting.get("reason"), _short(waiting.get("message") or "no detail", 400)),
    }


def startup_budget_seconds(container):
    """How long the startup probe lets a container start: initialDelay + period x failureThreshold."""
    probe = container.get("startupProbe") or {}
    if not probe:
        return None
    return (probe.get("initialDelaySeconds") or 0) + (probe.get("periodSeconds") or 10) * (probe.get("failureThreshold") or 3)


def _startup_timed_out(pod, cstatus, last):
    """True when a run of a never-started container lasted the whole startup budget."""
    budget = startup_budget_seconds(_container_spec(pod, cstatus.get("name")))
    if budget is None or cstatus.get("started"):
        return False
    began, ended = parse_time(last.get("startedAt")), parse_time(last.get("finishedAt"))
    return bool(began and ended and (ended - began).total_seconds() >= budget)


def _startup_timeout(pod, cstatus, now):
    budget = startup_budget_seconds(_container_spec(pod, cstatus.get("name")))
    if budget is None or cstatus.get("started") or cstatus.get("ready"):
        return None
    last = (cstatus.get("lastState") or {}).get("terminated") or {}
    running = ((cstatus.get("state") or {}).get("running") or {}).get("startedAt")
    began = parse_time(running)
    overdue = began is not None and now is not None and (now - began).total_seconds() > budget + 30
    if not (_startup_timed_out(pod, cstatus, last) or overdue):
        return None
    return {
        "reason": "StartupTimeout",
        "message": "container %s of pod %s did not pass its startup probe within %ds%s; the model loads longer than "
        "the startup budget allows: raise it, or check the server's log" % (cstatus.get("name"), _name(pod), budget, _restarts(cstatus)),
    }


def _unschedulable(pod):
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False" and condition.get("reason") == "Unschedulable":
            return {
                "reason": "Unschedulable",
                "message": "pod %s cannot be scheduled: %s" % (_name(pod), _short(condition.get("message") or "no node fits", 500)),
            }
    return None


def _evicted(pod):
    status = pod.get("status") or {}
    if status.get("reason") != "Evicted":
        return None
    return {"reason": "Evicted", "message": "pod %s was evicted: %s" % (_name(pod), _short(status.get("message") or "no detail", 500))}


# --- what to do, by who is refused (the server's spec or the operator's pull pod) -----------------

_ADVICE = {
    "server": {
        "non_root": "set spec.serve.securityContext.runAsUser to the image's non-root user (a number), or "
        "runAsNonRoot: false for an image that needs root (not allowed where the namespace enforces the "
        "restricted Pod Security level)",
        "pod_security": "make the server meet it with spec.serve.securityContext (an image that runs as a "
        "non-root user), or have the namespace's owner lower its level (label pod-security.kubernetes.io/enforce)",
        "quota": "raise the namespace's ResourceQuota, or lower spec.serve.resources (or the replicas)",
        "limit_range": "keep spec.serve.resources within the namespace's LimitRange (kubectl describe limitrange)",
    },
    "pull": {
        "non_root": "the puller image must run as a numeric non-root user: check the operator's puller image",
        "pod_security": "the pull pod is hardened for the restricted level; have the namespace's owner check "
        "its level (label pod-security.kubernetes.io/enforce) or the operator's pull settings",
        "quota": "raise the namespace's ResourceQuota: it must also fit the pull pod's resources",
        "limit_range": "the pull pod's resources (an operator setting) must fit the namespace's LimitRange",
    },
}


def _refusal_advice(text, who, namespace):
    """What to do about the API server's refusal ``text`` of a pod."""
    advice = _ADVICE[who]
    security = _POD_SECURITY.search(text)
    if security:
        return "namespace %s enforces the Pod Security level %s: %s" % (namespace or "?", security.group("level"), advice["pod_security"])
    if re.search(r"exceeded quota|failed quota|unknown for quota", text):
        return advice["quota"]
    if re.search(r"(maximum|minimum) \S+ usage per (Container|Pod)|limit to request ratio", text):
        return advice["limit_range"]
    return "the API server refused the pod (an admission policy or webhook): its words say why"


def _api_words(message):
    """The API server's refusal without the pod name in front: 'pods "x-1" is forbidden: ...'."""
    text = " ".join(str(message or "").split())
    return re.sub(r'^pods "[^"]*" is forbidden: ', "", text)


# --- pods that cannot start their containers ----------------------------------------------------

def _config_error(pod, cstatus, who):
    waiting = (cstatus.get("state") or {}).get("waiting") or {}
    if waiting.get("reason") not in CONFIG_ERROR_REASONS:
        return None
    detail = waiting.get("message") or "no detail"
    if any(words in detail for words in _RUNS_AS_ROOT):
        advice = _ADVICE[who]["non_root"]
    elif "not found" in detail:
        advice = "create what it names, or remove the reference to it"
    else:
        advice = "the container's settings must change as it says"
    return {
        "reason": "ContainerConfigError",
        "message": "container %s of pod %s cannot be created (%s: %s); %s"
        % (cstatus.get("name"), _name(pod), waiting.get("reason"), _short(detail, 400), advice),
    }


def creating_since(pod):
    """When a pod whose containers all still wait to be created (ContainerCreating, PodInitializing)
    began doing so: its PodScheduled transition, else its creation. None for any other pod."""
    status = pod.get("status") or {}
    statuses = _statuses(pod)
    if status.get("phase") not in (None, "Pending") or not statuses:
        return None
    if not all(((c.get("state") or {}).get("waiting") or {}).get("reason") in CREATING_REASONS for c in statuses):
        return None
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "True":
            since = parse_time(condition.get("lastTransitionTime"))
            if since:
                return since
    return parse_time((pod.get("metadata") or {}).get("creationTimestamp"))


def _claims(pod):
    volumes = (pod.get("spec") or {}).get("volumes") or []
    return [v["persistentVolumeClaim"]["claimName"] for v in volumes if (v.get("persistentVolumeClaim") or {}).get("claimName")]


def _volume_mount_failed(pod, pod_events):
    """VolumeMountFailed when the pod's newest event is a mount or attach failure; the attach failure
    (Multi-Attach) is quoted when there is one, as it is the cause of the mount's time-out."""
    if not pod_events or pod_events[0].get("reason") not in MOUNT_EVENT_REASONS:
        return None
    attach = [e for e in pod_events if e.get("reason") == "FailedAttachVolume"]
    event = attach[0] if attach else pod_events[0]
    text = event.get("message") or ""
    claims = _claims(pod)
    if "Multi-Attach" in text:
        advice = ("the ReadWriteOnce volume is attached to another node, where another pod uses it: that pod has to "
                  "stop first, or use storage that is ReadWriteMany (spec.storageAccessMode)")
    else:
        advice = "check the volume%s and its storage (kubectl describe pvc%s)" % (
            " " + ", ".join(claims) if claims else "", " " + " ".join(claims) if claims else "")
    return {
        "reason": "VolumeMountFailed",
        "message": "pod %s cannot mount its volumes (%s: %s); %s" % (_name(pod), event.get("reason"), _short(text, 400), advice),
    }


def _creating_too_long(pod, now, events, grace_seconds):
    since = creating_since(pod)
    if since is None:
        return None
    meta = pod.get("metadata") or {}
    pod_events = events_of(events, "Pod", meta.get("name"), meta.get("uid"))
    mount = _volume_mount_failed(pod, pod_events)
    if mount:
        return mount
    waited = int((now - since).total_seconds()) if now else 0
    if waited <= grace_seconds:
        return None
    waiting = [((c.get("state") or {}).get("waiting") or {}).get("message") for c in _statuses(pod)]
    if pod_events:  # the newest event wins: an older warning may be over
        detail = "%s: %s" % (pod_events[0].get("reason"), _short(pod_events[0].get("message"), 400))
    elif any(waiting):
        detail = _short(next(m for m in waiting if m), 400)
    else:
        detail = "kubectl describe pod %s shows its events" % _name(pod)
    return {
        "reason": "ContainerCreatingTooLong",
        "message": "pod %s has been creating its containers for %ds: %s" % (_name(pod), waited, detail),
    }


def diagnose_pod(pod, now=None, events=None, grace_seconds=CREATING_GRACE_SECONDS, who="server"):
    """The most telling problem of one pod, or None. ``events``: core/v1 Events (any objects'; those
    of this pod count), ``who``: "server" or "pull" (what the advice speaks of)."""
    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return None
    statuses = _statuses(pod)
    # A startup probe that ran out kills the container, which then crash-loops too: say why.
    checks = (
        _oom_killed,
        lambda p, c: _startup_timeout(p, c, now),
        _crash_loop,
        _image_pull,
        lambda p, c: _config_error(p, c, who),
    )
    for check in checks:
        for cstatus in statuses:
            found = check(pod, cstatus)
            if found:
                return found
    return _evicted(pod) or _unschedulable(pod) or _creating_too_long(pod, now, events, grace_seconds)


# Order in which problems of several pods are told: the one a user most needs to act on first.
_PRIORITY = (
    "OOMKilled", "CrashLoopBackOff", "ImagePullFailed", "ContainerConfigError", "VolumeMountFailed", "StartupTimeout",
    "ContainerCreatingTooLong", "Unschedulable", "Evicted",
)


# Findings of a pod that ended, which a running Job replaces with a new pod.
_RETRIED = ("OOMKilled", "CrashLoopBackOff", "StartupTimeout", "Evicted")


def _newest_first(pods):
    return sorted(pods, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "", reverse=True)


def diagnose_pods(pods, now=None, events=None, grace_seconds=CREATING_GRACE_SECONDS, who="server"):
    """The most telling problem among pods, newest pod first at equal weight, or None."""
    found = [d for d in (diagnose_pod(p, now, events, grace_seconds, who) for p in _newest_first(pods or [])) if d]
    if not found:
        return None
    return min(found, key=lambda d: _PRIORITY.index(d["reason"]) if d["reason"] in _PRIORITY else len(_PRIORITY))


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
        words = _api_words(failure.get("message") or failure.get("reason"))
        created = {
            "reason": "PodCreationFailed",
            "message": "Deployment %s cannot create its pods (%s: %s); %s"
            % (meta.get("name", "?"), failure.get("reason") or "FailedCreate", _short(words, 400),
               _refusal_advice(words, "server", meta.get("namespace"))),
        }
    stalled = _condition(deployment, "Progressing", status="False")
    deadline = None
    if stalled and stalled.get("reason") == "ProgressDeadlineExceeded":
        seconds = (deployment.get("spec") or {}).get("progressDeadlineSeconds")
        deadline = {
            "reason": "ProgressDeadlineExceeded",
            "message": "Deployment %s made no progress%s: %s; its pods do not become ready: read their events "
            "(kubectl describe pods -l %s) and the server's log"
            % (meta.get("name", "?"), " within %ss" % seconds if seconds else "", _short(stalled.get("message"), 300).rstrip("."),
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


def _credentials_secret(job, pods):
    """(Secret name, key) of the HF_TOKEN secretKeyRef of the pull, from the Job or its pods."""
    specs = [((job.get("spec") or {}).get("template") or {}).get("spec") or {}] + [p.get("spec") or {} for p in pods]
    for spec in specs:
        for container in list(spec.get("initContainers") or []) + list(spec.get("containers") or []):
            for env in container.get("env") or []:
                ref = (env.get("valueFrom") or {}).get("secretKeyRef") or {}
                if env.get("name") == "HF_TOKEN" and ref.get("name"):
                    return ref["name"], ref.get("key") or "HF_TOKEN"
    return None, None


def _credentials_problem(job, pods):
    """CredentialsNotFound when a pull pod cannot start because the credentials Secret or its key is missing."""
    name, key = _credentials_secret(job, pods)
    if not name:
        return None
    namespace = (job.get("metadata") or {}).get("namespace") or next(
        ((p.get("metadata") or {}).get("namespace") for p in pods if (p.get("metadata") or {}).get("namespace")), "?")
    create = "kubectl -n %s create secret generic %s --from-literal=%s=<your token>" % (namespace, name, key)
    for pod in _newest_first(pods):
        for cstatus in _statuses(pod):
            waiting = (cstatus.get("state") or {}).get("waiting") or {}
            text = waiting.get("message") or ""
            if waiting.get("reason") != "CreateContainerConfigError":
                continue
            missing = _SECRET_NOT_FOUND.search(text)
            if missing and missing.group("name") == name:
                return {"reason": "CredentialsNotFound",
                        "message": "Secret %s not found in namespace %s; create it: %s" % (name, namespace, create)}
            no_key = _SECRET_KEY_MISSING.search(text)
            if no_key and no_key.group("name") == name and no_key.group("key") == key:
                return {"reason": "CredentialsNotFound",
                        "message": "Secret %s has no key %s; put the token under that key: %s --dry-run=client -o yaml "
                        "| kubectl apply -f -" % (name, key, create)}
    return None


def _pod_creation_failed(job, events):
    """PullPodCreationFailed from the newest FailedCreate event of a Job that has no pod."""
    meta = job.get("metadata") or {}
    job_events = events_of(events, "Job", meta.get("name"), meta.get("uid"))
    failed = [e for e in job_events if e.get("reason") == "FailedCreate"]
    if not failed or job_events[0] is not failed[0]:
        return None  # none, or a newer event (a pod created after all) tells otherwise
    words = _api_words(_created_words(failed[0].get("message")))
    return {
        "reason": "PullPodCreationFailed",
        "message": "the pull Job %s cannot create its pod (FailedCreate: %s); %s"
        % (meta.get("name", "?"), _short(words, 400), _refusal_advice(words, "pull", meta.get("namespace"))),
    }


def _created_words(message):
    """The Job controller's 'Error creating: pods "x" is forbidden: ...' without its first words."""
    return re.sub(r"^Error creating: ", "", " ".join(str(message or "").split()))


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
    credentials = _credentials_problem(job, pods)
    if credentials:
        return credentials
    if not pods and not failed and job:
        return _pod_creation_failed(job, events)
    newest = _newest_first(pods)
    if failed:
        # The last pod decides: earlier ones may have failed for another reason and been retried.
        found = diagnose_pod(newest[0], _now(now), events, grace_seconds, "pull") if newest else None
    else:
        found = diagnose_pods(newest, _now(now), events, grace_seconds, "pull")
    if not found:
        return None
    retrying = "; the Job retries" if not failed and found["reason"] in _RETRIED else ""
    return {"reason": "Pull" + found["reason"], "message": found["message"] + retrying}


def _now(now):
    if isinstance(now, str):
        return parse_time(now)
    return now or datetime.now(timezone.utc)
