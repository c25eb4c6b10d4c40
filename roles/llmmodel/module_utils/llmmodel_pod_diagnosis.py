# -*- coding: utf-8 -*-
"""Why one pod, or the most telling of several, does not run: pure functions over Pods and core/v1
Events as the API returns them. The server's and the pull's diagnosis (module_utils/llmmodel_diagnosis.py)
build on these; each answer is ``{"reason": <CamelCase>, "message": <what happened and what to do>}``
or None when nothing is wrong that a user could act on (a pod that is starting).

Reasons, most telling first (the pull's carry the prefix Pull):

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
"""

from __future__ import annotations

from ansible.module_utils.llmmodel_advice import ADVICE, short
from ansible.module_utils.llmmodel_events import events_of, parse_time

IMAGE_PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
CONFIG_ERROR_REASONS = ("CreateContainerConfigError", "CreateContainerError")
# A container waits with one of these while the kubelet sets the pod up (volumes, sandbox, image).
CREATING_REASONS = ("ContainerCreating", "PodInitializing")
MOUNT_EVENT_REASONS = ("FailedMount", "FailedAttachVolume")
# How long a pod may create its containers before it counts as stuck (and its events are worth a read).
CREATING_GRACE_SECONDS = 120
# The kubelet's words when runAsNonRoot meets an image that runs as root or as a user name.
_RUNS_AS_ROOT = ("image will run as root", "image has non-numeric user")


def _name(pod):
    return (pod.get("metadata") or {}).get("name", "?")


def container_statuses(pod):
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
    return "%s: %s" % (text, short(detail, 400)) if detail else text


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
    detail = _termination_text(last) if last else short(waiting.get("message"), 400)
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
        % (image, cstatus.get("name"), waiting.get("reason"), short(waiting.get("message") or "no detail", 400)),
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
                "message": "pod %s cannot be scheduled: %s" % (_name(pod), short(condition.get("message") or "no node fits", 500)),
            }
    return None


def _evicted(pod):
    status = pod.get("status") or {}
    if status.get("reason") != "Evicted":
        return None
    return {"reason": "Evicted", "message": "pod %s was evicted: %s" % (_name(pod), short(status.get("message") or "no detail", 500))}


# --- pods that cannot start their containers ----------------------------------------------------

def _config_error(pod, cstatus, who):
    waiting = (cstatus.get("state") or {}).get("waiting") or {}
    if waiting.get("reason") not in CONFIG_ERROR_REASONS:
        return None
    detail = waiting.get("message") or "no detail"
    if any(words in detail for words in _RUNS_AS_ROOT):
        advice = ADVICE[who]["non_root"]
    elif "not found" in detail:
        advice = "create what it names, or remove the reference to it"
    else:
        advice = "the container's settings must change as it says"
    return {
        "reason": "ContainerConfigError",
        "message": "container %s of pod %s cannot be created (%s: %s); %s"
        % (cstatus.get("name"), _name(pod), waiting.get("reason"), short(detail, 400), advice),
    }


def creating_since(pod):
    """When a pod whose containers all still wait to be created (ContainerCreating, PodInitializing)
    began doing so: its PodScheduled transition, else its creation. None for any other pod."""
    status = pod.get("status") or {}
    statuses = container_statuses(pod)
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
        "message": "pod %s cannot mount its volumes (%s: %s); %s" % (_name(pod), event.get("reason"), short(text, 400), advice),
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
    waiting = [((c.get("state") or {}).get("waiting") or {}).get("message") for c in container_statuses(pod)]
    if pod_events:  # the newest event wins: an older warning may be over
        detail = "%s: %s" % (pod_events[0].get("reason"), short(pod_events[0].get("message"), 400))
    elif any(waiting):
        detail = short(next(m for m in waiting if m), 400)
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
    statuses = container_statuses(pod)
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
RETRIED_REASONS = ("OOMKilled", "CrashLoopBackOff", "StartupTimeout", "Evicted")


def newest_first(pods):
    return sorted(pods, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "", reverse=True)


def diagnose_pods(pods, now=None, events=None, grace_seconds=CREATING_GRACE_SECONDS, who="server"):
    """The most telling problem among pods, newest pod first at equal weight, or None."""
    found = [d for d in (diagnose_pod(p, now, events, grace_seconds, who) for p in newest_first(pods or [])) if d]
    if not found:
        return None
    return min(found, key=lambda d: _PRIORITY.index(d["reason"]) if d["reason"] in _PRIORITY else len(_PRIORITY))
