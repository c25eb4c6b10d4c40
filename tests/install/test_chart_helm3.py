"""The chart with Helm 3, which gets security fixes until February 2027 and still installs much of
what platform teams run. The chart is tested with Helm 4 (test_chart_static, test_chart_cluster,
the e2e suite); here Helm 3 must lint it, render the same objects, refuse the same wrong values
naming them, and install a release that Helm 4 then upgrades and uninstalls (a team moving from
Helm 3 to Helm 4 keeps its release, the CRD and its models).

The cluster tests of this module run in order; the module's fixture removes whatever is left.
"""

from __future__ import annotations

import json

import pytest
from chart_helpers import BAD_VALUES, CHART, CI_VALUES, HELM3, helm, release_namespace_manifest, template
from install_cluster import CRD_NAME, kubectl
from kubernetes import client
from kubernetes.client.rest import ApiException

NAMESPACE, OTHER = "llm-chart-helm3", "llm-chart-helm3-b"  # release namespaces
TEAM = "team-helm3"  # where a model waits through the upgrade and the uninstall
RELEASE = "llm-operator"
DEPLOYMENT = f"{RELEASE}-controller-manager"
VALUES = [None, *CI_VALUES]


def values_args(values):
    return ["-f", str(values)] if values else []


@pytest.mark.parametrize("values", VALUES, ids=lambda v: v.name if v else "default values")
def test_helm3_lints_the_chart_strictly(values):
    result = helm("lint", "--strict", str(CHART), *values_args(values), check=False, binary=HELM3)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout


@pytest.mark.parametrize("values", VALUES, ids=lambda v: v.name if v else "default values")
def test_helm3_renders_the_objects_helm4_renders(values):
    with_helm3 = template(*values_args(values), binary=HELM3)
    assert with_helm3, "Helm 3 rendered nothing"
    assert with_helm3 == template(*values_args(values))


@pytest.mark.parametrize("setting,path", BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_helm3_refuses_wrong_values_naming_them(setting, path):
    result = template("--set", setting, check=False, binary=HELM3)
    assert result.returncode != 0, f"{setting} was accepted by Helm 3"
    assert path in result.stderr, result.stderr


@pytest.fixture(scope="module")
def cluster(api_client, crd_preexisted):
    """The release namespaces and the team's; at the end any release left uninstalled, the namespaces
    deleted, and the CRD removed if these tests brought it."""
    core = client.CoreV1Api(api_client)
    for name in (NAMESPACE, OTHER, TEAM):
        core.create_namespace(release_namespace_manifest(name))
    yield api_client
    for namespace in (NAMESPACE, OTHER):
        for release in json.loads(helm("list", "-n", namespace, "-o", "json").stdout):
            helm("uninstall", release["name"], "-n", namespace, "--wait", check=False)
    for name in (NAMESPACE, OTHER, TEAM):
        core.delete_namespace(name)
    if not crd_preexisted:
        kubectl("delete", "crd", CRD_NAME, "--ignore-not-found")


def manager_env(api_client) -> dict:
    deployment = client.AppsV1Api(api_client).read_namespaced_deployment(DEPLOYMENT, NAMESPACE)
    return {e.name: e.value for e in deployment.spec.template.spec.containers[0].env}


def test_helm3_installs_the_operator_under_restricted_pod_security(cluster):
    helm("install", RELEASE, str(CHART), "-n", NAMESPACE, "--wait", "--timeout", "3m", binary=HELM3)
    deployment = client.AppsV1Api(cluster).read_namespaced_deployment(DEPLOYMENT, NAMESPACE)
    assert deployment.status.available_replicas == 1
    assert kubectl("get", "crd", CRD_NAME, "-o", "name").stdout.strip()
    release = json.loads(helm("status", RELEASE, "-n", NAMESPACE, "-o", "json", binary=HELM3).stdout)
    assert release["info"]["status"] == "deployed" and release["version"] == 1, release["info"]


def test_helm3_runs_the_chart_s_guard_against_a_second_operator(cluster):
    result = helm("install", "other", str(CHART), "-n", OTHER, "--wait", "--timeout", "3m", check=False, binary=HELM3)
    assert result.returncode != 0
    assert f"llm-operator already runs in namespace {NAMESPACE}" in result.stderr, result.stderr
    assert json.loads(helm("list", "-n", OTHER, "-o", "json").stdout) == []


def test_helm4_upgrades_the_release_helm3_installed(cluster):
    custom = client.CustomObjectsApi(cluster)
    model = {"apiVersion": "inference.ai.example.com/v1alpha1", "kind": "LLMModel", "metadata": {"name": "kept"},
             "spec": {"source": {"huggingFaceRepo": "acme/tiny"}, "serve": {"runtime": "llamacpp"}}}
    custom.create_namespaced_custom_object("inference.ai.example.com", "v1alpha1", TEAM, "llmmodels", model)
    helm("upgrade", RELEASE, str(CHART), "-n", NAMESPACE, "--reuse-values", "--set", "maxConcurrentReconciles=3",
         "--wait", "--timeout", "3m")
    release = json.loads(helm("status", RELEASE, "-n", NAMESPACE, "-o", "json").stdout)
    assert release["info"]["status"] == "deployed" and release["version"] == 2, release["info"]
    assert manager_env(cluster)["MAX_CONCURRENT_RECONCILES_LLMMODEL_INFERENCE_AI_EXAMPLE_COM"] == "3"
    history = json.loads(helm("history", RELEASE, "-n", NAMESPACE, "-o", "json", binary=HELM3).stdout)
    assert [entry["revision"] for entry in history] == [1, 2], "Helm 3 no longer reads the release Helm 4 wrote"


def test_helm4_uninstalls_it_keeping_the_crd_and_the_models(cluster):
    helm("uninstall", RELEASE, "-n", NAMESPACE, "--wait", "--timeout", "2m")
    assert not client.AppsV1Api(cluster).list_namespaced_deployment(NAMESPACE).items
    assert kubectl("get", "crd", CRD_NAME, "-o", "name").stdout.strip(), "helm uninstall removed the CRD"
    custom = client.CustomObjectsApi(cluster)
    try:
        custom.get_namespaced_custom_object("inference.ai.example.com", "v1alpha1", TEAM, "llmmodels", "kept")
    except ApiException as error:
        pytest.fail(f"the LLMModel went with the release: {error.status}")
    custom.delete_namespaced_custom_object("inference.ai.example.com", "v1alpha1", TEAM, "llmmodels", "kept")
