# -*- coding: utf-8 -*-
"""What the role's Kubernetes modules and its read lookup share: connection options, the client,
error texts. The client is the role's own (module_utils/llmmodel_kube.py), not the Kubernetes
Python client: see there why.
"""

from __future__ import annotations

import contextlib
import json
import os

from ansible.module_utils.basic import env_fallback
from ansible.module_utils.llmmodel_kube import ApiError, KubeClient, ResourceNotFoundError, ResourceNotUniqueError
from ansible.module_utils.llmmodel_kubeconfig import empty_settings, from_kubeconfig, in_cluster
from ansible.module_utils.llmmodel_module import ModuleFailure

# The connection options of kubernetes.core's modules that a role under ansible-operator needs; by
# default the environment's kubeconfig (ansible-operator's proxy) is used.
CONNECTION_SPEC = {
    "kubeconfig": {"type": "path"},
    "context": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_CONTEXT"])},
    "host": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_HOST"])},
    "api_key": {"type": "str", "no_log": True, "fallback": (env_fallback, ["K8S_AUTH_API_KEY"])},
    "validate_certs": {"type": "bool", "aliases": ["verify_ssl"], "fallback": (env_fallback, ["K8S_AUTH_VERIFY_SSL"])},
}
DEFAULT_KUBECONFIG = os.path.join("~", ".kube", "config")


def kubeconfig_path(params):
    """The kubeconfig to load: the option, else (unless host is given) the environment's."""
    if params["kubeconfig"]:
        return params["kubeconfig"]
    if params["host"]:
        return None
    return os.environ.get("K8S_AUTH_KUBECONFIG") or os.environ.get("KUBECONFIG") or None


def connection_settings(params):
    """The kubeconfig's settings, else the pod's service account, else ~/.kube/config; then the
    explicit host, token and certificate check over them."""
    kubeconfig = kubeconfig_path(params)
    if kubeconfig or params["context"]:
        settings = from_kubeconfig(kubeconfig or os.path.expanduser(DEFAULT_KUBECONFIG), params["context"])
    elif params["host"]:
        settings = empty_settings(params["host"])
    else:
        settings = in_cluster() or from_kubeconfig(os.path.expanduser(DEFAULT_KUBECONFIG))
    if params["host"]:
        settings["server"] = params["host"]
    if params["api_key"]:
        settings["token"] = params["api_key"]
    if params["validate_certs"] is not None:
        settings["verify"] = params["validate_certs"]
    return settings


def build_client(params):
    """A client of the API server the connection options name."""
    return KubeClient(connection_settings(params))


def namespace_terminating(exc):
    """Whether the API server refused a create because the namespace is being deleted (its
    NamespaceLifecycle admission names the cause NamespaceTerminating)."""
    try:
        status = json.loads(exc.body)
    except (TypeError, ValueError, AttributeError):
        return False
    causes = ((status or {}).get("details") or {}).get("causes") or []
    return any(cause.get("reason") == "NamespaceTerminating" for cause in causes)


def api_error_message(exc):
    """The API server's own message of a failed request (its body never holds secret values)."""
    summary = getattr(exc, "summary", None)
    if callable(summary):
        return summary()
    return "%s %s" % (getattr(exc, "status", ""), getattr(exc, "reason", exc))


@contextlib.contextmanager
def reported_api_errors(where, **extra):
    """Turn the client's failures into ModuleFailure, each message starting with where()."""
    try:
        yield
    except ApiError as exc:
        raise ModuleFailure("%s: API request failed: %s" % (where(), api_error_message(exc)), status_code=exc.status, **extra)
    except (ValueError, ResourceNotFoundError, ResourceNotUniqueError) as exc:
        raise ModuleFailure("%s: %s" % (where(), exc), **extra)
    except OSError as exc:  # the client's UnreachableError names the server and the request
        raise ModuleFailure("%s: cannot reach the API server: %s" % (where(), exc), **extra)
