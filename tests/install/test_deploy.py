"""`make deploy` / `make undeploy` against the cluster: objects, Pod Security, the operator's RBAC.

The tests of this module run in order: deploy (fixture), checks, undeploy (last test).
"""

import json
import time

import pytest
import yaml
from install_cluster import CRD_NAME, NAMESPACE, SERVICE_ACCOUNT, TEST_IMAGE, kubectl, make, run
from kubernetes import client
from kubernetes.client.rest import ApiException

DEPLOYMENT = "llm-operator-controller-manager"


def built_objects():
    """(kind, name, namespace) of every object `make deploy` applies, from the kustomize build. The
    install-test cluster has no Prometheus Operator, so `make deploy` leaves the ServiceMonitor and
    the alerts out (MONITORING=auto; tests/monitoring has them validated where the CRDs are)."""
    build = run("bin/kustomize", "build", "config/default").stdout
    return [
        (doc["kind"], doc["metadata"]["name"], doc["metadata"].get("namespace"))
        for doc in yaml.safe_load_all(build)
        if doc and not doc["apiVersion"].startswith("monitoring.coreos.com/")
    ]


def exists(kind, name, namespace):
    command = ["get", kind, name, "-o", "name", "--ignore-not-found"]
    if namespace:
        command += ["-n", namespace]
    return bool(kubectl(*command).stdout.strip())


@pytest.fixture(scope="module")
def deployed(api_client, operator_absent, crd_preexisted):
    """The operator deployed with `make deploy`; removed again at the end in any case."""
    make("deploy", f"IMG={TEST_IMAGE}")
    yield api_client
    make("undeploy", f"KEEP_CRDS={'true' if crd_preexisted else 'false'}")


def test_deploy_creates_every_object(deployed):
    objects = built_objects()
    kinds = {kind for kind, _, _ in objects}
    assert {
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Service",
        "Deployment",
    } <= kinds
    missing = [obj for obj in objects if not exists(*obj)]
    assert not missing, f"not created by make deploy: {missing}"
    for kind, name, namespace in [
        ("namespace", NAMESPACE, None),
        ("crd", CRD_NAME, None),
        ("serviceaccount", "llm-operator-controller-manager", NAMESPACE),
        ("clusterrole", "llm-operator-manager-role", None),
        ("clusterrolebinding", "llm-operator-manager-rolebinding", None),
        ("role", "llm-operator-leader-election-role", NAMESPACE),
        ("deployment", DEPLOYMENT, NAMESPACE),
    ]:
        assert exists(kind, name, namespace), (kind, name)


def test_namespace_enforces_restricted_pod_security(deployed):
    labels = client.CoreV1Api(deployed).read_namespace(NAMESPACE).metadata.labels
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_manager_deployment(deployed):
    deployment = client.AppsV1Api(deployed).read_namespaced_deployment(DEPLOYMENT, NAMESPACE)
    container = deployment.spec.template.spec.containers[0]
    assert container.image == TEST_IMAGE
    assert {"--leader-elect", "--health-probe-bind-address=:6789", "--metrics-bind-address=:8443"} <= set(
        container.args
    )
    assert deployment.spec.template.spec.service_account_name == "llm-operator-controller-manager"
    env = {item.name: item for item in container.env}
    assert env["ANSIBLE_GATHERING"].value == "explicit"
    assert env["LLMMODEL_PULLER_IMAGE"].value == "ghcr.io/llm-operator/llm-model-puller:0.1.0"
    assert env["WATCH_NAMESPACE"].value_from.field_ref.field_path == "metadata.annotations['olm.targetNamespaces']"
    assert container.liveness_probe.http_get.path == "/healthz"
    assert container.readiness_probe.http_get.path == "/readyz"
    assert container.resources.limits and container.resources.requests


def pod_from_template(api_client, name):
    deployment = client.AppsV1Api(api_client).read_namespaced_deployment(DEPLOYMENT, NAMESPACE)
    spec = api_client.sanitize_for_serialization(deployment.spec.template.spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_manager_pod_is_admitted_by_restricted_pod_security(deployed):
    core = client.CoreV1Api(deployed)
    core.create_namespaced_pod(NAMESPACE, pod_from_template(deployed, "pss-check"), dry_run="All")
    # The control: the same pod made privileged is refused, so the check above means something.
    privileged = pod_from_template(deployed, "pss-control")
    privileged["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod(NAMESPACE, privileged, dry_run="All")
    assert caught.value.status == 403
    assert 'violates PodSecurity "restricted' in json.loads(caught.value.body)["message"]


def test_replicaset_creates_the_manager_pod(deployed):
    core = client.CoreV1Api(deployed)
    deadline = time.monotonic() + 90
    pods = []
    while time.monotonic() < deadline and not pods:
        pods = core.list_namespaced_pod(NAMESPACE, label_selector="control-plane=controller-manager").items
        time.sleep(1)
    failures = [
        event.message for event in core.list_namespaced_event(NAMESPACE).items if event.reason == "FailedCreate"
    ]
    assert not failures, failures
    assert pods, "the ReplicaSet created no manager pod within 90s"


# (verb, resource, namespace or "" for cluster scope or "*" for all namespaces, subresource)
ALLOWED = [
    ("get", "llmmodels.inference.ai.example.com", "*", ""),
    ("list", "llmmodels.inference.ai.example.com", "*", ""),
    ("watch", "llmmodels.inference.ai.example.com", "*", ""),
    ("update", "llmmodels.inference.ai.example.com", "default", ""),
    ("patch", "llmmodels.inference.ai.example.com", "default", "status"),
    ("update", "llmmodels.inference.ai.example.com", "default", "finalizers"),
    ("create", "persistentvolumeclaims", "default", ""),
    ("delete", "persistentvolumeclaims", "default", ""),
    ("watch", "persistentvolumeclaims", "*", ""),
    ("create", "services", "default", ""),
    ("patch", "services", "default", ""),
    ("create", "deployments.apps", "default", ""),
    ("patch", "deployments.apps", "default", ""),
    ("create", "jobs.batch", "default", ""),
    ("delete", "jobs.batch", "default", ""),
    ("list", "pods", "*", ""),
    ("create", "events", "default", ""),
    ("list", "events", "default", ""),
    ("create", "roles.rbac.authorization.k8s.io", "default", ""),
    ("delete", "rolebindings.rbac.authorization.k8s.io", "default", ""),
    ("delete", "serviceaccounts", "default", ""),
    ("update", "leases.coordination.k8s.io", NAMESPACE, ""),
    ("create", "tokenreviews.authentication.k8s.io", "", ""),
    ("create", "subjectaccessreviews.authorization.k8s.io", "", ""),
]
DENIED = [
    ("*", "*", "", ""),
    ("*", "*", "default", ""),
    # The credentials Secret is never read: a missing one is told by the pull pod's kubelet.
    ("get", "secrets", "default", ""),
    ("get", "secrets", "kube-system", ""),
    ("list", "secrets", "*", ""),
    ("list", "secrets", "default", ""),
    ("watch", "secrets", "*", ""),
    ("watch", "pods", "*", ""),
    ("create", "secrets", "default", ""),
    ("update", "secrets", "default", ""),
    ("delete", "secrets", "default", ""),
    ("create", "pods", "default", ""),
    ("delete", "pods", "default", ""),
    ("create", "pods", "default", "exec"),
    ("get", "pods", "default", "log"),
    ("create", "configmaps", "default", ""),
    ("create", "daemonsets.apps", "default", ""),
    ("create", "statefulsets.apps", "default", ""),
    ("create", "cronjobs.batch", "default", ""),
    ("get", "nodes", "", ""),
    ("delete", "nodes", "", ""),
    ("patch", "nodes", "", ""),
    ("create", "namespaces", "", ""),
    ("delete", "namespaces", "", ""),
    ("create", "persistentvolumes", "", ""),
    ("create", "clusterroles.rbac.authorization.k8s.io", "", ""),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", "", ""),
    # The operator creates each model's <name>-puller Role and RoleBinding, so it may create
    # rolebindings; Kubernetes' escalation rules then hold it to the permissions it has itself, since
    # it has neither bind nor escalate, on namespaced roles or cluster roles.
    ("bind", "clusterroles.rbac.authorization.k8s.io", "", ""),
    ("escalate", "clusterroles.rbac.authorization.k8s.io", "", ""),
    ("bind", "roles.rbac.authorization.k8s.io", "default", ""),
    ("escalate", "roles.rbac.authorization.k8s.io", "default", ""),
    ("impersonate", "users", "", ""),
    ("update", "customresourcedefinitions.apiextensions.k8s.io", "", ""),
    ("delete", "llmmodels.inference.ai.example.com", "default", "finalizers"),
    # Models are the users': the operator never creates or deletes one, nor changes its status' readers.
    ("create", "llmmodels.inference.ai.example.com", "default", ""),
    ("delete", "llmmodels.inference.ai.example.com", "default", ""),
    ("update", "deployments.apps", "default", ""),
    ("update", "services", "default", ""),
    ("create", "leases.coordination.k8s.io", "default", ""),
    ("create", "leases.coordination.k8s.io", "kube-system", ""),
]


def can_i(verb, resource, namespace, subresource):
    command = ["auth", "can-i", verb, resource, f"--as={SERVICE_ACCOUNT}"]
    if namespace == "*":
        command.append("--all-namespaces")
    elif namespace:
        command += ["-n", namespace]
    if subresource:
        command.append(f"--subresource={subresource}")
    result = kubectl(*command, check=False)
    answer = result.stdout.strip()
    assert answer in ("yes", "no"), f"kubectl auth can-i said {result.stdout!r} {result.stderr!r}"
    return answer == "yes"


def case_id(case):
    verb, resource, namespace, subresource = case
    return f"{verb} {resource}{'/' + subresource if subresource else ''} in {namespace or 'cluster'}"


@pytest.mark.parametrize("case", ALLOWED, ids=[case_id(case) for case in ALLOWED])
def test_operator_may(deployed, case):
    assert can_i(*case), f"the operator's service account may not {case_id(case)}"


@pytest.mark.parametrize("case", DENIED, ids=[case_id(case) for case in DENIED])
def test_operator_may_not(deployed, case):
    assert not can_i(*case), f"the operator's service account may {case_id(case)}"


def test_user_roles_aggregate_into_edit_and_view(deployed):
    rbac = client.RbacAuthorizationV1Api(deployed)
    deadline = time.monotonic() + 30
    while True:
        edit = {resource for rule in rbac.read_cluster_role("edit").rules or [] for resource in rule.resources or []}
        view = {resource for rule in rbac.read_cluster_role("view").rules or [] for resource in rule.resources or []}
        if ("llmmodels" in edit and "llmmodels" in view) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert "llmmodels" in edit
    assert "llmmodels" in view


def test_undeploy_removes_everything(deployed, crd_preexisted):
    objects = built_objects()
    make("undeploy", f"KEEP_CRDS={'true' if crd_preexisted else 'false'}")
    left = [obj for obj in objects if obj[0] != "CustomResourceDefinition" and exists(*obj)]
    assert not left, f"left behind by make undeploy: {left}"
    # A CRD that other tests installed before this module stays (KEEP_CRDS=true); ours goes.
    assert exists("crd", CRD_NAME, None) == crd_preexisted
