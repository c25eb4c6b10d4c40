# -*- coding: utf-8 -*-
"""The connection options of the role's Kubernetes modules (module_utils/llmmodel_client.py CONNECTION_SPEC).

ansible-playbook adds a role's doc_fragments/ when it loads the role; ansible-doc needs to be told:
ANSIBLE_DOC_FRAGMENT_PLUGINS=roles/llmmodel/doc_fragments ansible-doc -M roles/llmmodel/library llmmodel_apply
"""

from __future__ import annotations


class ModuleDocFragment:
    """Modules add these options with ``extends_documentation_fragment: [llmmodel_connection]``."""

    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file.
      - Without it and without O(host), the module uses E(K8S_AUTH_KUBECONFIG), then E(KUBECONFIG)
        (both set by ansible-operator for every run, pointing at its local API proxy), then the
        in-cluster service account, then C(~/.kube/config).
    type: path
  context:
    description: Context of the kubeconfig to use. Defaults to E(K8S_AUTH_CONTEXT) or the current context.
    type: str
  host:
    description:
      - URL of the API server. Defaults to E(K8S_AUTH_HOST).
      - With O(host) and no O(kubeconfig), no kubeconfig is read; with both, O(host) overrides the
        kubeconfig's server.
    type: str
  api_key:
    description: Bearer token for the API server. Defaults to E(K8S_AUTH_API_KEY). Never logged.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. Defaults to E(K8S_AUTH_VERIFY_SSL), else
        whatever the kubeconfig says.
    type: bool
    aliases: [verify_ssl]
"""
