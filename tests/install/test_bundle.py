"""The committed OLM bundle: valid for OperatorHub, complete, and exactly what `make bundle` makes."""

import filecmp
import json
import shutil

import pytest
import yaml
from install_cluster import OPERATOR_SDK, REPO, run

BUNDLE = REPO / "bundle"
CSV = BUNDLE / "manifests" / "llm-operator.clusterserviceversion.yaml"


@pytest.fixture(scope="module")
def csv():
    return yaml.safe_load(CSV.read_text())


def test_bundle_validates_with_the_operatorframework_suite():
    result = run(
        OPERATOR_SDK, "bundle", "validate", "./bundle", "--select-optional", "suite=operatorframework", check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "All validation tests have completed successfully" in output
    assert "WARN" not in output, output


def test_bundle_is_reproducible_and_up_to_date(tmp_path):
    """`make bundle` in a copy of the sources gives the committed bundle, byte for byte."""
    for name in ("PROJECT", "config", "hack/check_crd.py", "mk/install.mk"):
        source, target = REPO / name, tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy2(source, target)
    (tmp_path / "Makefile").write_text("include mk/install.mk\n")
    tools = {"KUSTOMIZE": REPO / "bin" / "kustomize", "OPERATOR_SDK": OPERATOR_SDK, "VENV": REPO / ".venv"}
    for _ in range(2):  # twice: the second run must not change the first one's output either
        result = run(
            "make",
            "-C",
            str(tmp_path),
            "--no-print-directory",
            "bundle",
            *(f"{key}={value}" for key, value in tools.items()),
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "bundle.Dockerfile").read_text() == (REPO / "bundle.Dockerfile").read_text()
    comparison = filecmp.dircmp(tmp_path / "bundle", BUNDLE)
    differences = []

    def collect(cmp, prefix=""):
        differences.extend(f"{prefix}{name}" for name in cmp.left_only + cmp.right_only + cmp.diff_files)
        for name, sub in cmp.subdirs.items():
            collect(sub, f"{prefix}{name}/")

    collect(comparison)
    assert not differences, f"bundle/ is out of date (run make bundle and commit): {differences}"
    generated_config = tmp_path / "config"
    regenerated = filecmp.dircmp(generated_config / "manifests", REPO / "config" / "manifests")
    assert not regenerated.diff_files, "make bundle rewrote config/manifests: commit its output"


def test_csv_installs_the_operator(csv):
    deployments = csv["spec"]["install"]["spec"]["deployments"]
    assert [d["name"] for d in deployments] == ["llm-operator-controller-manager"]
    container = deployments[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "ghcr.io/llm-operator/llm-operator:0.1.0"
    assert csv["spec"]["version"] == "0.1.0"
    assert csv["metadata"]["name"] == "llm-operator.v0.1.0"
    assert "createdAt" not in csv["metadata"]["annotations"]
    cluster_permissions = csv["spec"]["install"]["spec"]["clusterPermissions"]
    assert {p["serviceAccountName"] for p in cluster_permissions} == {"llm-operator-controller-manager"}
    resources = {resource for p in cluster_permissions for rule in p["rules"] for resource in rule.get("resources", [])}
    assert {
        "llmmodels",
        "llmmodels/status",
        "llmmodels/finalizers",
        "jobs",
        "deployments",
        "persistentvolumeclaims",
        "services",
        "pods",
        "events",
    } <= resources
    assert "secrets" not in resources
    namespaced = {
        resource
        for p in csv["spec"]["install"]["spec"]["permissions"]
        for rule in p["rules"]
        for resource in rule.get("resources", [])
    }
    assert "leases" in namespaced


def test_csv_describes_the_api(csv):
    owned = csv["spec"]["customresourcedefinitions"]["owned"]
    assert [crd["name"] for crd in owned] == ["llmmodels.inference.ai.example.com"]
    spec_paths = {d["path"] for d in owned[0]["specDescriptors"]}
    assert {
        "source.huggingFaceRepo",
        "source.url",
        "serve.image",
        "serve.port",
        "storageSize",
        "storageClass",
        "purgeWeightsOnDelete",
    } <= spec_paths
    status_paths = {d["path"] for d in owned[0]["statusDescriptors"]}
    assert {"phase", "model", "inferenceURL", "conditions", "weights.ready"} <= status_paths
    examples = json.loads(csv["metadata"]["annotations"]["alm-examples"])
    assert sorted(example["metadata"]["name"] for example in examples) == ["mistral-7b", "qwen-small", "tinyllama"]
    modes = {mode["type"]: mode["supported"] for mode in csv["spec"]["installModes"]}
    assert modes == {"OwnNamespace": True, "SingleNamespace": True, "MultiNamespace": True, "AllNamespaces": True}
    assert csv["spec"]["minKubeVersion"] == "1.29.0"
    assert csv["spec"]["icon"][0]["mediatype"] == "image/svg+xml"


def test_bundle_carries_the_crd_of_config():
    bundled = yaml.safe_load((BUNDLE / "manifests" / "inference.ai.example.com_llmmodels.yaml").read_text())
    source = yaml.safe_load((REPO / "config" / "crd" / "bases" / "inference.ai.example.com_llmmodels.yaml").read_text())
    assert bundled["spec"] == source["spec"]
