# -*- coding: utf-8 -*-
"""The words of the diagnosis (module_utils/llmmodel_diagnosis.py, llmmodel_pod_diagnosis.py): what the
cluster wrote, shortened, and what to do about the API server's refusal of a pod, by who is refused
(the server's spec, which the user controls, or the operator's pull pod).

A message quotes what the cluster said (shortened to 600 characters) and never a secret value: the
kubelet and the API server name a Secret, never its data.
"""

from __future__ import annotations

import re

MESSAGE_LIMIT = 600
_POD_SECURITY = re.compile(r'violates PodSecurity "(?P<level>[^"]+)"')


def short(text, limit=MESSAGE_LIMIT):
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# What to do, by who is refused and what refused it.
ADVICE = {
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


def refusal_advice(text, who, namespace):
    """What to do about the API server's refusal ``text`` of a pod."""
    advice = ADVICE[who]
    security = _POD_SECURITY.search(text)
    if security:
        return "namespace %s enforces the Pod Security level %s: %s" % (namespace or "?", security.group("level"), advice["pod_security"])
    if re.search(r"exceeded quota|failed quota|unknown for quota", text):
        return advice["quota"]
    if re.search(r"(maximum|minimum) \S+ usage per (Container|Pod)|limit to request ratio", text):
        return advice["limit_range"]
    return "the API server refused the pod (an admission policy or webhook): its words say why"


def api_words(message):
    """The API server's refusal without the pod name in front: 'pods "x-1" is forbidden: ...'."""
    text = " ".join(str(message or "").split())
    return re.sub(r'^pods "[^"]*" is forbidden: ', "", text)
