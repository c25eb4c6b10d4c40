"""Helpers of the chart tests: helm, renders, and the kustomize build they are compared with."""

from __future__ import annotations

import importlib.util
import os
import re

import yaml
from install_cluster import KUBECONFIG, REPO, run

HELM = os.environ.get("HELM") or str(REPO / "bin" / "helm")
# Helm 3, for the chart's compatibility tests (tests/install/test_chart_helm3.py).
HELM3 = os.environ.get("HELM3") or str(REPO / "bin" / "helm3")
KUSTOMIZE = str(REPO / "bin" / "kustomize")
CHART = REPO / "charts" / "llm-operator"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
# Labels the chart adds to what config/ has (Helm's conventions).
HELM_LABELS = {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

_spec = importlib.util.spec_from_file_location("chart_generator", REPO / "hack" / "chart.py")
generator = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generator)


def helm(*args, check=True, timeout=300, binary=HELM):
    return run(binary, "--kubeconfig", KUBECONFIG, *args, check=check, timeout=timeout)


def template(*args, release="llm-operator", namespace="llm-operator-system", check=True, binary=HELM):
    """`helm template` of the chart (CRDs included): the objects, or the failed process."""
    result = helm("template", release, str(CHART), "--namespace", namespace, "--include-crds", *args, check=check,
                  binary=binary)
    if not check and result.returncode != 0:
        return result
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def make_variable(name: str) -> str:
    """A default of mk/install.mk (VERSION, IMAGE_TAG_BASE)."""
    return re.search(rf"^{name} \?= (\S+)$", (REPO / "mk" / "install.mk").read_text(), re.M).group(1)


def default_image() -> str:
    return f"{make_variable('IMAGE_TAG_BASE')}:{make_variable('VERSION')}"


def kustomize_objects(image: str) -> list[dict]:
    """What `make deploy IMG=image` applies, and the objects of config/prometheus as config/default
    would add them: the reference the chart is compared with."""
    default = yaml.safe_load((REPO / "config" / "default" / "kustomization.yaml").read_text())
    objects = generator.kustomize_build(KUSTOMIZE, REPO / "config" / "default")
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    monitoring = generator.kustomize_build(KUSTOMIZE, REPO / "config" / "prometheus", default["namespace"], default["namePrefix"])
    objects += [o for o in monitoring if (o["kind"], o["metadata"]["name"]) not in names]
    for obj in objects:
        if obj["kind"] == "Deployment":
            for container in obj["spec"]["template"]["spec"]["containers"]:
                if container["image"] == "controller:latest":
                    container["image"] = image
    return objects


def key(obj) -> tuple:
    return obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace")


def manager_container(objects) -> dict:
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    return next(c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "manager")


def env_of(container) -> dict:
    return {item["name"]: item for item in container.get("env", [])}


def by_key(objects) -> dict:
    return {key(o): o for o in objects}


def release_namespace_manifest(name: str, extra: dict | None = None) -> dict:
    """The release namespace as docs/install.md creates it: restricted Pod Security enforced."""
    labels = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")}
    manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
    for field, value in (extra or {}).items():
        manifest["metadata"].setdefault(field, {}).update(value)
    return manifest


# (a --set of a wrong value, the path the error must name)
BAD_VALUES = [
    ("replicaCount=-1", "/replicaCount"),
    ("logLevel=verbose", "/logLevel"),
    ("watchNamespaces={team-a,Team_B}", "/watchNamespaces/1"),
    ("watchNamespaces={team-a,team-a}", "/watchNamespaces"),
    ("image.repository=", "/image/repository"),
    ("pullerImage=", "/pullerImage"),
    ("pullerResources.limits.cpu=lots", "/pullerResources/limits/cpu"),
    ("image.pullPolicy=Sometimes", "/image/pullPolicy"),
    ("maxConcurrentReconciles=0", "/maxConcurrentReconciles"),
    ("ansibleVerbosity=9", "/ansibleVerbosity"),
    ("runtimeImages.vlm=mirror/vllm:1", "'vlm'"),
    ("replicas=2", "'replicas'"),
    ("hfEndpoint=ftp://mirror", "/hfEndpoint"),
    ("fullnameOverride=Ops_Operator", "/fullnameOverride"),
]
