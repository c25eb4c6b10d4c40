"""The Helm chart against the local cluster: every values file applied with a server-side dry run;
install, upgrade to a watch list and uninstall (kwok plays the manager's pod, so no reconcile runs
here: tests/e2e runs the chart's operator on the real node); a second operator refused unless the
two watch disjoint namespaces.

The tests of this module run in order; the module's fixture uninstalls whatever is left.
"""

from __future__ import annotations

import json
import pathlib

import pytest
import yaml
from chart_helpers import CHART, CI_VALUES, helm, release_namespace_manifest, template
from install_cluster import CRD_NAME, kubectl, run
from kubernetes import client
from kubernetes.client.rest import ApiException

FIRST, SECOND = "llm-chart-a", "llm-chart-b"  # release namespaces
TEAMS = ["team-a", "team-b", "team-c"]  # namespaces the watch lists name
# The one release of the root module the module proxy serves here (../shared/OBSERVABILITY.md).
PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.85.0"


def service_account(namespace, release="llm-operator"):
    return f"system:serviceaccount:{namespace}:{release}-controller-manager"


def install(release, namespace, *args, check=True):
    return helm("install", release, str(CHART), "--namespace", namespace, "--wait", "--timeout", "3m", *args, check=check)


def exists(kind, name, namespace=None):
    command = ["get", kind, name, "-o", "name", "--ignore-not-found"] + (["-n", namespace] if namespace else [])
    return bool(kubectl(*command).stdout.strip())


@pytest.fixture(scope="module")
def cluster(api_client, crd_preexisted):
    """The release and team namespaces; at the end every release of this module uninstalled, the
    namespaces deleted, and the CRD removed if these tests brought it."""
    core = client.CoreV1Api(api_client)
    for name in (FIRST, SECOND, *TEAMS):
        core.create_namespace(release_namespace_manifest(name))
    yield api_client
    for namespace in (FIRST, SECOND):
        for release in json.loads(helm("list", "-n", namespace, "-o", "json").stdout):
            helm("uninstall", release["name"], "-n", namespace, "--wait", check=False)
    for name in (FIRST, SECOND, *TEAMS):
        core.delete_namespace(name)
    if not crd_preexisted:
        kubectl("delete", "crd", CRD_NAME, "--ignore-not-found")


@pytest.fixture
def monitoring_crds(tmp_path):
    """The Prometheus Operator's CRDs of the kinds config/prometheus holds, from its Go module,
    installed for the test and removed after it unless they were there before."""
    kinds = {o["kind"] for o in template("--set", "monitoring.enabled=true") if o["apiVersion"].startswith("monitoring.coreos.com/")}
    module = json.loads(run("go", "mod", "download", "-json", PROMETHEUS_OPERATOR, env={"GOFLAGS": "-mod=mod"}).stdout)
    directory = pathlib.Path(module["Dir"]) / "example" / "prometheus-operator-crd"
    added = []
    for kind in sorted(kinds):
        name = f"{kind.lower()}s.monitoring.coreos.com"
        if not exists("crd", name):
            kubectl("apply", "--server-side", "-f", str(directory / f"monitoring.coreos.com_{kind.lower()}s.yaml"))
            added.append(name)
    for name in added:
        kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{name}")
    yield
    for name in added:
        kubectl("delete", "crd", name, "--ignore-not-found")


@pytest.mark.parametrize("values", [None, *CI_VALUES], ids=lambda v: v.name if v else "default values")
def test_every_values_file_renders_objects_the_api_server_accepts(cluster, request, values, tmp_path):
    if values and yaml.safe_load(values.read_text()).get("monitoring", {}).get("enabled"):
        request.getfixturevalue("monitoring_crds")
    objects = template(*(["-f", str(values)] if values else []), namespace=FIRST)
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(yaml.safe_dump_all(objects))
    result = kubectl("apply", "--server-side", "--dry-run=server", "--field-manager=chart-test", "-f", str(manifest), check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    applied = [line for line in result.stdout.splitlines() if "(server dry run)" in line]
    assert len(applied) == len(objects), result.stdout


def test_a_wrong_value_fails_helm_install_naming_it(cluster):
    result = install("llm-operator", FIRST, "--set", "logLevel=verbose", check=False)
    assert result.returncode != 0 and "/logLevel" in result.stderr, result.stderr
    assert json.loads(helm("list", "-n", FIRST, "-o", "json").stdout) == []


def allowed(api_client, user, verb, group, resource, namespace=None):
    """Whether the API server's RBAC lets `user` do it (a SubjectAccessReview)."""
    resource, _, subresource = resource.partition("/")
    attributes = client.V1ResourceAttributes(verb=verb, group=group, resource=resource, subresource=subresource or None,
                                             namespace=namespace)
    review = client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
        user=user, groups=["system:serviceaccounts", f"system:serviceaccounts:{user.split(':')[2]}", "system:authenticated"],
        resource_attributes=attributes))
    return client.AuthorizationV1Api(api_client).create_subject_access_review(review).status.allowed


def manager_permissions():
    """(verb, group, resource) of every rule of the chart's manager role."""
    role = next(o for o in template() if o["kind"] == "ClusterRole" and o["metadata"]["name"].endswith("-manager-role"))
    return [(verb, group, resource) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]]


def test_install_runs_the_manager_under_restricted_pod_security_with_cluster_wide_rules(cluster):
    install("llm-operator", FIRST)
    apps, core = client.AppsV1Api(cluster), client.CoreV1Api(cluster)
    deployment = apps.read_namespaced_deployment("llm-operator-controller-manager", FIRST)
    assert deployment.status.available_replicas == 1
    pods = core.list_namespaced_pod(FIRST, label_selector="app.kubernetes.io/instance=llm-operator,control-plane").items
    assert len(pods) == 1, "the ReplicaSet's pod was not admitted in a namespace enforcing restricted"
    routers = core.list_namespaced_pod(FIRST, label_selector="app.kubernetes.io/instance=llm-operator,"
                                                              "app.kubernetes.io/component=router").items
    assert len(routers) == 2, "the router's pods were not admitted in a namespace enforcing restricted"
    assert exists("crd", CRD_NAME)
    user = service_account(FIRST)
    for verb, group, resource in manager_permissions():
        assert allowed(cluster, user, verb, group, resource, "team-c"), (verb, group, resource)
    assert allowed(cluster, user, "list", "inference.ai.example.com", "llmmodels")  # every namespace


def test_a_second_operator_on_the_same_namespaces_is_refused(cluster):
    result = install("other", SECOND, check=False)
    assert result.returncode != 0
    assert f"llm-operator already runs in namespace {FIRST}" in result.stderr, result.stderr
    assert "every namespace" in result.stderr and "disjoint" in result.stderr, result.stderr
    assert json.loads(helm("list", "-n", SECOND, "-o", "json").stdout) == []
    assert not client.AppsV1Api(cluster).list_namespaced_deployment(SECOND).items


def test_upgrade_to_a_watch_list_narrows_the_rules_to_those_namespaces(cluster):
    helm("upgrade", "llm-operator", str(CHART), "-n", FIRST, "--reuse-values", "--set", "watchNamespaces={team-a}",
         "--wait", "--timeout", "3m")
    assert not exists("clusterrole", "llm-operator-manager-role")
    assert exists("role", "llm-operator-manager-role", "team-a")
    deployment = client.AppsV1Api(cluster).read_namespaced_deployment("llm-operator-controller-manager", FIRST)
    env = {e.name: e.value for e in deployment.spec.template.spec.containers[0].env}
    assert env["WATCH_NAMESPACE"] == "team-a"
    user = service_account(FIRST)
    for verb, group, resource in manager_permissions():
        assert allowed(cluster, user, verb, group, resource, "team-a"), (verb, group, resource)
        assert not allowed(cluster, user, verb, group, resource, "team-c"), (verb, group, resource)
    assert not allowed(cluster, user, "list", "inference.ai.example.com", "llmmodels")
    # Leader election stays in the operator's own namespace.
    assert allowed(cluster, user, "update", "coordination.k8s.io", "leases", FIRST)


def test_a_second_operator_on_other_namespaces_runs_beside_it(cluster):
    install("shard-b", SECOND, "--set", "watchNamespaces={team-b}")
    user = service_account(SECOND, "shard-b-llm-operator")
    assert allowed(cluster, user, "patch", "inference.ai.example.com", "llmmodels/status", "team-b")
    assert not allowed(cluster, user, "patch", "inference.ai.example.com", "llmmodels/status", "team-a")
    deployment = client.AppsV1Api(cluster).read_namespaced_deployment("shard-b-llm-operator-controller-manager", SECOND)
    assert "--leader-election-id=shard-b-llm-operator" in deployment.spec.template.spec.containers[0].args


def test_an_overlapping_list_or_a_taken_release_name_is_refused(cluster):
    overlap = install("shard-c", SECOND, "--set", "watchNamespaces={team-c,team-a}", check=False)
    assert overlap.returncode != 0 and "watches the namespaces team-a;" in overlap.stderr, overlap.stderr
    # Disjoint lists, but the cluster-wide names of "llm-operator" belong to the release in FIRST.
    taken = install("llm-operator", SECOND, "--set", "watchNamespaces={team-c}", check=False)
    assert taken.returncode != 0, taken.stdout
    assert f'release "llm-operator" in namespace "{FIRST}"' in taken.stderr and "fullnameOverride" in taken.stderr, taken.stderr


def test_uninstall_removes_the_operator_and_keeps_the_crd_and_the_models(cluster):
    rendered = template("--set", "watchNamespaces={team-a}", namespace=FIRST)
    model = {"apiVersion": "inference.ai.example.com/v1alpha1", "kind": "LLMModel", "metadata": {"name": "kept"},
             "spec": {"source": {"huggingFaceRepo": "acme/tiny"}, "serve": {"runtime": "llamacpp"}}}
    custom = client.CustomObjectsApi(cluster)
    custom.create_namespaced_custom_object("inference.ai.example.com", "v1alpha1", "team-a", "llmmodels", model)
    for release, namespace in (("llm-operator", FIRST), ("shard-b", SECOND)):
        helm("uninstall", release, "-n", namespace, "--wait", "--timeout", "2m")
    left = [(o["kind"], o["metadata"]["name"]) for o in rendered if o["kind"] != "CustomResourceDefinition"
            and exists(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))]
    assert not left, f"left behind by helm uninstall: {left}"
    assert exists("crd", CRD_NAME), "helm uninstall must not remove the CRD (and with it every LLMModel)"
    try:
        custom.get_namespaced_custom_object("inference.ai.example.com", "v1alpha1", "team-a", "llmmodels", "kept")
    except ApiException as error:
        pytest.fail(f"the LLMModel went with the chart: {error.status}")
    custom.delete_namespaced_custom_object("inference.ai.example.com", "v1alpha1", "team-a", "llmmodels", "kept")
