# -*- coding: utf-8 -*-
"""What the documentation of the role's Kubernetes modules shares: the connection options
(module_utils/llmmodel_client.py CONNECTION_SPEC), what they need, how the role runs them.

ansible-playbook adds a role's doc_fragments/ when it loads the role; ansible-doc needs to be told:
ANSIBLE_DOC_FRAGMENT_PLUGINS=roles/llmmodel/doc_fragments ansible-doc -M roles/llmmodel/library llmmodel_apply
"""

from __future__ import annotations


class ModuleDocFragment:
    """A module takes it with ``extends_documentation_fragment: [llmmodel_kubernetes]``."""

    DOCUMENTATION = r"""
author:
  - llm-operator maintainers
requirements:
  - PyYAML (ansible-core's own); not the Kubernetes Python client (module_utils/llmmodel_kube.py says why)
notes:
  - The role runs the module through its action plugin of the same name, which calls the same code
    inside the C(ansible-playbook) process (no module process). Run as a plain module it behaves the same.
  - The kubeconfig may hold tokens, token files, client certificates and user names with passwords;
    C(exec) and C(auth-provider) plugins are refused with a message (ansible-operator's proxy needs none).
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
