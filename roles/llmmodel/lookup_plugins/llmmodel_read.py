# -*- coding: utf-8 -*-
"""llmmodel_read: the role's reads of Kubernetes objects, with the role's own client.

It takes the place of the kubernetes.core.k8s lookup in the role's tasks: same arguments for what
the role reads, same answers (the object in a list, [] when it does not exist, the items of a
label-selected list), without importing the Kubernetes Python client (module_utils/llmmodel_kube.py
says why).
"""

from __future__ import annotations

import os

import ansible.module_utils
from ansible.errors import AnsibleError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.lookup import LookupBase

_ROLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if os.path.join(_ROLE, "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(os.path.join(_ROLE, "module_utils"))

# pylint: disable=wrong-import-position
from ansible.module_utils.llmmodel_client import CONNECTION_SPEC, build_client, reported_api_errors  # noqa: E402
from ansible.module_utils.llmmodel_kube import NotFoundError  # noqa: E402
from ansible.module_utils.llmmodel_module import ModuleFailure  # noqa: E402

DOCUMENTATION = r"""
---
name: llmmodel_read
short_description: Read Kubernetes objects by name or label selector, with the role's own client
description:
  - Returns the named object in a list, an empty list when it does not exist, or the objects of the
    namespace that match O(label_selector).
  - Connects as the role's modules do (their O(kubeconfig), O(context), O(host), O(api_key),
    O(validate_certs) options and environment variables); under ansible-operator, through its proxy.
options:
  api_version: {description: apiVersion of the objects, type: str, default: v1}
  kind: {description: Kind of the objects, type: str, required: true}
  namespace: {description: Namespace of the objects, type: str}
  resource_name: {description: Name of the object to read, type: str}
  label_selector: {description: Label selector of the objects to list, type: str}
  field_selector:
    description: >-
      Field selector of the objects to list, or a list of them: one request each, the objects of
      all of them in order (the role reads the events of a few named objects this way).
    type: raw
  kubeconfig: {description: Path to a kubeconfig file, type: path}
  context: {description: Context of the kubeconfig, type: str}
  host: {description: URL of the API server, type: str}
  api_key: {description: Bearer token (never logged), type: str}
  validate_certs: {description: Whether to verify the server's certificate, type: bool}
"""

EXAMPLES = r"""
- name: Read a Job, and the pods of another
  ansible.builtin.set_fact:
    job: "{{ query('llmmodel_read', api_version='batch/v1', kind='Job', namespace='ns', resource_name='pull') }}"
    pods: "{{ query('llmmodel_read', kind='Pod', namespace='ns', label_selector='batch.kubernetes.io/job-name=pull') }}"
"""

RETURN = r"""
_list:
  description: The objects read, as the API server returns them.
  type: list
  elements: dict
"""

READ_OPTIONS = ("api_version", "kind", "namespace", "resource_name", "label_selector", "field_selector")

# One client per connection in a task's worker: the reads of one set_fact share its connection.
_CLIENTS = {}


def connection_params(options):
    """The connection options as the modules get them: given, else from the environment variable
    their argument spec falls back to."""
    params = {}
    for name, spec in CONNECTION_SPEC.items():
        value = options.get(name)
        if value is None:
            value = next((os.environ[v] for v in spec.get("fallback", (None, ()))[1] if os.environ.get(v)), None)
        params[name] = value
    if params["validate_certs"] is not None:
        params["validate_certs"] = boolean(params["validate_certs"])
    if params["kubeconfig"]:
        params["kubeconfig"] = os.path.expanduser(params["kubeconfig"])
    return params


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        unknown = sorted(set(kwargs) - set(READ_OPTIONS) - set(CONNECTION_SPEC))
        if terms or unknown:
            raise AnsibleError("llmmodel_read takes only the options %s; got %s"
                               % (", ".join(READ_OPTIONS), ", ".join(unknown) or "positional terms"))
        if not kwargs.get("kind"):
            raise AnsibleError("llmmodel_read: kind is required")
        api_version, kind = kwargs.get("api_version") or "v1", kwargs["kind"]
        params = connection_params(kwargs)
        key = tuple(sorted((name, str(value)) for name, value in params.items()))
        what = " ".join(["llmmodel_read: reading", kind] + [kwargs[k] for k in ("resource_name", "label_selector") if kwargs.get(k)])
        try:
            with reported_api_errors(lambda: what):
                if key not in _CLIENTS:
                    _CLIENTS[key] = build_client(params)
                client = _CLIENTS[key]
                resource = client.resources.get(api_version=api_version, kind=kind)
                namespace = kwargs.get("namespace") if resource.namespaced else None
                if kwargs.get("resource_name"):
                    try:
                        return [client.get(resource, name=kwargs["resource_name"], namespace=namespace)]
                    except NotFoundError:
                        return []
                selectors = kwargs.get("field_selector")
                if isinstance(selectors, (list, tuple)):
                    return [item for selector in selectors
                            for item in client.get(resource, namespace=namespace, label_selector=kwargs.get("label_selector"),
                                                   field_selector=selector).get("items") or []]
                return client.get(resource, namespace=namespace, label_selector=kwargs.get("label_selector"),
                                  field_selector=selectors).get("items") or []
        except ModuleFailure as exc:
            raise AnsibleError(exc.msg)
