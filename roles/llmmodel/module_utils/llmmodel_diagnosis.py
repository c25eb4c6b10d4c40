# -*- coding: utf-8 -*-
"""Why a model's pods do not run: pure functions over Pod and Job objects as the API returns them.

The role reads the server pods (only while the server is not available) and the pull pods (only
while a pull runs or has failed) with in-process lookups, and calls these through the
``llmmodel_diagnosis`` filter. Each answer is ``{"reason": <CamelCase>, "message": <what to do>}``
or None when nothing is wrong that a user could act on (a pod that is just starting).

Reasons, most telling first, for the server (the Ready condition):
  OOMKilled          a container was killed for running out of memory
  CrashLoopBackOff   a container keeps exiting; the message carries its last termination message
  ImagePullFailed    ErrImagePull, ImagePullBackOff or InvalidImageName
  StartupTimeout     the server did not pass its startup probe within the probe's budget
  Unschedulable      the scheduler's own message (for example Insufficient nvidia.com/gpu)
and for the pull (the WeightsReady condition) the same, prefixed with Pull, plus
  PullEvicted, PullDeadlineExceeded, and PullFailed (the puller's own message).
"""

from __future__ import annotations

from datetime import datetime, timezone

MESSAGE_LIMIT = 600
IMAGE_PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
# Exit codes that mean "killed" when the kubelet gives no better reason (SIGKILL, SIGTERM).
KILLED_EXIT_CODES = (137, 143)


def _short(text, limit=MESSAGE_LIMIT):
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _parse_time(text):
    if not text:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except (TypeError, ValueError):
        return None


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
    began, ended = _parse_time(last.get("startedAt")), _parse_time(last.get("finishedAt"))
    return bool(began and ended and (ended - began).total_seconds() >= budget)


def _startup_timeout(pod, cstatus, now):
    budget = startup_budget_seconds(_container_spec(pod, cstatus.get("name")))
    if budget is None or cstatus.get("started") or cstatus.get("ready"):
        return None
    last = (cstatus.get("lastState") or {}).get("terminated") or {}
    running = ((cstatus.get("state") or {}).get("running") or {}).get("startedAt")
    began = _parse_time(running)
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


def diagnose_pod(pod, now=None):
    """The most telling problem of one pod, or None."""
    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return None
    statuses = _statuses(pod)
    # A startup probe that ran out kills the container, which then crash-loops too: say why.
    checks = (_oom_killed, lambda p, c: _startup_timeout(p, c, now), _crash_loop, _image_pull)
    for check in checks:
        for cstatus in statuses:
            found = check(pod, cstatus)
            if found:
                return found
    return _evicted(pod) or _unschedulable(pod)


# Order in which problems of several pods are told: the one a user most needs to act on first.
_PRIORITY = ("OOMKilled", "CrashLoopBackOff", "ImagePullFailed", "StartupTimeout", "Unschedulable", "Evicted")


def _newest_first(pods):
    return sorted(pods, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "", reverse=True)


def diagnose_pods(pods, now=None):
    """The most telling problem among pods, newest pod first at equal weight, or None."""
    found = [d for d in (diagnose_pod(p, now) for p in _newest_first(pods or [])) if d]
    if not found:
        return None
    return min(found, key=lambda d: _PRIORITY.index(d["reason"]) if d["reason"] in _PRIORITY else len(_PRIORITY))


def diagnose_server(pods, config_hash=None, hash_annotation=None, now=None):
    """The server's problem. With config_hash, only pods of the current configuration count (an old
    pod on its way out does not say anything about the new one)."""
    if config_hash and hash_annotation:
        pods = [p for p in pods or [] if ((p.get("metadata") or {}).get("annotations") or {}).get(hash_annotation) == config_hash]
    return diagnose_pods(pods, _now(now))


def _job_condition(job, *types):
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in types and condition.get("status") == "True":
            return condition
    return None


def diagnose_pull(job, pods, now=None):
    """The pull's problem: a failed Job's cause, or what keeps a running one from progressing.

    A failed Job with a plain puller failure (the puller's own exit code and message) returns None:
    the role reports the puller's message as PullFailed itself.
    """
    job = job or {}
    failed = _job_condition(job, "Failed", "FailureTarget")
    if failed and failed.get("reason") == "DeadlineExceeded":
        deadline = (job.get("spec") or {}).get("activeDeadlineSeconds")
        return {
            "reason": "PullDeadlineExceeded",
            "message": "the pull Job %s ran longer than its deadline%s and was stopped; a bigger model or a slower "
            "source needs more time" % ((job.get("metadata") or {}).get("name", "?"), " of %ss" % deadline if deadline else ""),
        }
    newest = _newest_first(pods or [])
    if failed:
        # The last pod decides: earlier ones may have failed for another reason and been retried.
        found = diagnose_pod(newest[0], _now(now)) if newest else None
    else:
        found = diagnose_pods(newest, _now(now))
    if not found:
        return None
    retrying = "" if failed else "; the Job retries"
    return {"reason": "Pull" + found["reason"], "message": found["message"] + retrying}


def _now(now):
    if isinstance(now, str):
        return _parse_time(now)
    return now or datetime.now(timezone.utc)
