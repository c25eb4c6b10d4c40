"""Authorization (RBAC) and admission (Pod Security) are really on, as in a production cluster."""

import json

import pytest
from kubernetes import client
from kubernetes import config as kube_config
from kubernetes.client.rest import ApiException

from testbed_helpers import KUBECONFIG, pod_manifest, wait_until


def message(error: ApiException) -> str:
    """The message of the Status an API error carries."""
    return json.loads(error.body).get("message", "")


def as_user(user):
    """A client of the test cluster that impersonates ``user`` on every request (the image's
    kubernetes 33.x client takes no per-call headers)."""
    api = kube_config.new_client_from_config(config_file=KUBECONFIG)
    api.set_default_header("Impersonate-User", user)
    return api


def can_list_pods(kube, namespace, user=None):
    """SelfSubjectAccessReview for `list pods`, as the admin or impersonating ``user``."""
    authz = client.AuthorizationV1Api(as_user(user)) if user else kube.authz
    review = authz.create_self_subject_access_review(
        {"spec": {"resourceAttributes": {"namespace": namespace, "verb": "list", "resource": "pods"}}},
    )
    return review.status.allowed


def test_rbac_denies_a_service_account_without_permissions(kube, namespace):
    kube.core.create_namespaced_service_account(namespace, {"metadata": {"name": "nobody"}})
    user = f"system:serviceaccount:{namespace}:nobody"
    impersonated = client.CoreV1Api(as_user(user))

    assert can_list_pods(kube, namespace), "the admin of the kubeconfig may not list pods"
    assert not can_list_pods(kube, namespace, user), f"{user} may list pods without any RoleBinding"
    can_i = kube.kubectl("auth", "can-i", "list", "pods", "-n", namespace, f"--as={user}", check=False)
    assert (can_i.returncode, can_i.stdout.strip()) == (1, "no"), f"kubectl auth can-i: {can_i.returncode} {can_i.stdout}{can_i.stderr}"
    with pytest.raises(ApiException) as denied:
        impersonated.list_namespaced_pod(namespace)
    assert denied.value.status == 403, denied.value
    assert f'User "{user}" cannot list resource "pods"' in message(denied.value), denied.value.body

    # The same request succeeds once a Role grants it: the denial came from RBAC, not impersonation.
    kube.rbac.create_namespaced_role(
        namespace,
        {"metadata": {"name": "pod-reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]},
    )
    kube.rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "nobody-reads-pods"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "nobody", "namespace": namespace}],
        },
    )
    wait_until(f"{user} to be allowed to list pods after the RoleBinding", lambda: can_list_pods(kube, namespace, user), 15)
    impersonated.list_namespaced_pod(namespace)


def test_pod_security_admission_enforces_restricted(kube, namespace):
    kube.core.patch_namespace(
        namespace,
        {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}},
    )
    privileged = pod_manifest("privileged", security={"privileged": True})
    with pytest.raises(ApiException) as rejected:
        kube.core.create_namespaced_pod(namespace, privileged)
    assert rejected.value.status == 403, rejected.value
    assert 'violates PodSecurity "restricted:latest"' in message(rejected.value), rejected.value.body

    # A pod that meets the restricted profile is admitted (and runs on a kwok node).
    compliant = pod_manifest(
        "compliant",
        pod_security={"runAsNonRoot": True, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
        security={"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    )
    kube.core.create_namespaced_pod(namespace, compliant)
    wait_until(
        "the compliant pod to be Running",
        lambda: kube.core.read_namespaced_pod("compliant", namespace).status.phase == "Running", 30,
        describe=lambda: kube.core.read_namespaced_pod("compliant", namespace).status,
    )
