# -*- coding: utf-8 -*-
"""What the role's Kubernetes modules share: connection options, the API client, error texts."""

from __future__ import annotations

import contextlib
import os

from ansible.module_utils.basic import env_fallback
from ansible.module_utils.llmmodel_module import ModuleFailure

try:
    import urllib3
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.dynamic.exceptions import DynamicApiError
except ImportError:  # the modules report the missing library themselves
    urllib3 = k8s_client = k8s_config = DynamicApiError = None

# The connection options of kubernetes.core's modules that a role under ansible-operator needs; by
# default the environment's kubeconfig (ansible-operator's proxy) is used.
CONNECTION_SPEC = {
    "kubeconfig": {"type": "path"},
    "context": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_CONTEXT"])},
    "host": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_HOST"])},
    "api_key": {"type": "str", "no_log": True, "fallback": (env_fallback, ["K8S_AUTH_API_KEY"])},
    "validate_certs": {"type": "bool", "aliases": ["verify_ssl"], "fallback": (env_fallback, ["K8S_AUTH_VERIFY_SSL"])},
}


def kubeconfig_path(params):
    """The kubeconfig to load: the option, else (unless host is given) the environment's."""
    if params["kubeconfig"]:
        return params["kubeconfig"]
    if params["host"]:
        return None
    return os.environ.get("K8S_AUTH_KUBECONFIG") or os.environ.get("KUBECONFIG") or None


def build_api_client(params):
    """An ApiClient from the kubeconfig, the service account or the explicit host and token."""
    configuration = k8s_client.Configuration()
    kubeconfig = kubeconfig_path(params)
    if kubeconfig or params["context"]:
        k8s_config.load_kube_config(
            config_file=kubeconfig, context=params["context"], client_configuration=configuration, persist_config=False
        )
    elif not params["host"]:
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except k8s_config.ConfigException:
            k8s_config.load_kube_config(client_configuration=configuration, persist_config=False)
    if params["host"]:
        configuration.host = params["host"]
    if params["api_key"]:
        # kubernetes < 30 reads the "authorization" key, later versions "BearerToken" first.
        bearer = "Bearer " + params["api_key"]
        configuration.api_key = {"authorization": bearer, "BearerToken": bearer}
        configuration.api_key_prefix = {}
        configuration.refresh_api_key_hook = None
    if params["validate_certs"] is not None:
        configuration.verify_ssl = params["validate_certs"]
    return k8s_client.ApiClient(configuration)


def api_error_message(exc):
    """The API server's own message of a failed request (its body never holds secret values)."""
    summary = getattr(exc, "summary", None)
    if callable(summary):
        return summary()
    return "%s %s" % (getattr(exc, "status", ""), getattr(exc, "reason", exc))


@contextlib.contextmanager
def reported_api_errors(where, **extra):
    """Turn the Kubernetes client's failures into ModuleFailure, each message starting with where()."""
    try:
        yield
    except DynamicApiError as exc:
        raise ModuleFailure("%s: API request failed: %s" % (where(), api_error_message(exc)), status_code=exc.status, **extra)
    except (ValueError, k8s_config.ConfigException) as exc:
        raise ModuleFailure("%s: %s" % (where(), exc), **extra)
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise ModuleFailure("%s: cannot reach the API server: %s" % (where(), exc), **extra)
