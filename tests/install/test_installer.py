"""`make build-installer`: dist/install.yaml installs the operator with one server-side apply."""

import pytest
import yaml
from install_cluster import CRD_NAME, NAMESPACE, REPO, TEST_IMAGE, kubectl, make
from kubernetes import client

INSTALLER = REPO / "dist" / "install.yaml"


@pytest.fixture(scope="module")
def installer():
    # The install-test cluster has no Prometheus Operator: without its CRDs the ServiceMonitor and the
    # alerts cannot apply, so this installer leaves them out (the last test checks the default build).
    make("build-installer", f"IMG={TEST_IMAGE}", "MONITORING=false")
    return [doc for doc in yaml.safe_load_all(INSTALLER.read_text()) if doc]


def test_installer_holds_the_whole_operator(installer):
    kinds = [doc["kind"] for doc in installer]
    assert kinds.count("CustomResourceDefinition") == 1
    assert "Namespace" in kinds and "Deployment" in kinds and "ClusterRole" in kinds
    deployment = next(doc for doc in installer if doc["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == TEST_IMAGE
    namespaces = {doc["metadata"].get("namespace") for doc in installer} - {None}
    assert namespaces == {NAMESPACE}


def test_installer_applies_and_deletes_cleanly(api_client, operator_absent, crd_preexisted, installer, tmp_path):
    kubectl("apply", "--server-side", "-f", str(INSTALLER))
    try:
        kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{CRD_NAME}")
        deployment = client.AppsV1Api(api_client).read_namespaced_deployment(
            "llm-operator-controller-manager", NAMESPACE
        )
        assert deployment.spec.template.spec.containers[0].image == TEST_IMAGE
        # Applying again changes no spec (status updates by the controllers are fine).
        before = deployment.metadata.generation
        kubectl("apply", "--server-side", "-f", str(INSTALLER))
        after = (
            client.AppsV1Api(api_client)
            .read_namespaced_deployment("llm-operator-controller-manager", NAMESPACE)
            .metadata.generation
        )
        assert before == after
    finally:
        # A CRD that was there before (other tests use it) stays.
        keep = [doc for doc in installer if not (crd_preexisted and doc["kind"] == "CustomResourceDefinition")]
        to_delete = tmp_path / "delete.yaml"
        to_delete.write_text(yaml.safe_dump_all(keep))
        kubectl("delete", "--ignore-not-found", "--wait=true", "-f", str(to_delete))
    for doc in installer:
        if doc["kind"] == "CustomResourceDefinition" and crd_preexisted:
            continue
        command = ["get", doc["kind"], doc["metadata"]["name"], "--ignore-not-found", "-o", "name"]
        if doc["metadata"].get("namespace"):
            command += ["-n", doc["metadata"]["namespace"]]
        assert not kubectl(*command).stdout.strip(), f"left behind: {doc['kind']} {doc['metadata']['name']}"


def test_the_default_installer_brings_the_monitoring_objects():
    # The release manifest carries the manager's ServiceMonitor, the router's PodMonitor and the
    # alerts (docs/monitoring.md);
    # tests/monitoring has the API server validate them against the Prometheus Operator's CRDs.
    make("build-installer", f"IMG={TEST_IMAGE}")
    docs = [doc for doc in yaml.safe_load_all(INSTALLER.read_text()) if doc]
    monitoring = sorted((doc["kind"], doc["metadata"]["name"]) for doc in docs if doc["apiVersion"].startswith("monitoring.coreos.com/"))
    assert monitoring == [("PodMonitor", "llm-operator-router-metrics-monitor"), ("PrometheusRule", "llm-operator-alerts"),
                          ("ServiceMonitor", "llm-operator-controller-manager-metrics-monitor")]
    assert {doc["metadata"]["namespace"] for doc in docs if doc["apiVersion"].startswith("monitoring.coreos.com/")} == {NAMESPACE}
