"""Helpers of the test-bed tests (tests/testbed): polling, manifests for kwok, readers for messages."""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import subprocess
import time
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

REPO = pathlib.Path(__file__).resolve().parents[2]
KUBECONFIG = os.environ.get("KUBECONFIG") or str(REPO / ".cluster" / "kubeconfig")
KUBECTL = os.environ.get("KUBECTL") or str(REPO / "bin" / "kubectl")
NAMESPACE_LABEL = "llm-operator-test"

# What the test bed's kwok stages react to (hack/cluster/stages.yaml).
OUTCOME_LABEL = "testbed.llm-operator.io/outcome"
DURATION_ANNOTATION = "testbed.llm-operator.io/job-duration"
EXIT_CODE_ANNOTATION = "testbed.llm-operator.io/exit-code"
MESSAGE_ANNOTATION = "testbed.llm-operator.io/message"


def wait_until(what, probe, timeout, describe=None, interval=0.2):
    """Poll ``probe()`` until it returns something truthy and return that; fail after ``timeout`` s.

    On a timeout the test fails with ``what`` and, when given, ``describe()`` (the state seen last).
    """
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() >= deadline:
            state = ""
            if describe is not None:
                try:
                    state = f"\nlast seen: {describe()}"
                except Exception as error:  # the description must not hide the timeout
                    state = f"\n(could not describe the state: {error})"
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}{state}", pytrace=False)
        time.sleep(interval)


def gone(read):
    """True when ``read()`` answers 404."""
    try:
        read()
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return False


@contextlib.contextmanager
def fresh_namespace(kube, test_name, prefix, suite):
    """A fresh namespace named after the test, labelled NAMESPACE_LABEL=suite, whose default ServiceAccount
    exists (so pods can be created); deleted on leaving, a 404 included (a test may delete it itself)."""
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower().removeprefix("test_")).strip("-")[:40].strip("-")
    name = f"{prefix}-{slug}-{uuid.uuid4().hex[:6]}"
    kube.core.create_namespace({"metadata": {"name": name, "labels": {NAMESPACE_LABEL: suite}}})
    try:
        # The ServiceAccount admission plugin rejects pods until the namespace's "default" account exists.
        wait_until(f"the default ServiceAccount of namespace {name}",
                   lambda: not gone(lambda: kube.core.read_namespaced_service_account("default", name)), 30)
        yield name
    finally:
        try:
            kube.core.delete_namespace(name)
        except ApiException as error:
            if error.status != 404:
                raise


class Kube:
    """The API groups the tests use, and a few readers that help failure messages."""

    def __init__(self, api: client.ApiClient):
        self.api = api
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.batch = client.BatchV1Api(api)
        self.rbac = client.RbacAuthorizationV1Api(api)
        self.authz = client.AuthorizationV1Api(api)
        self.coordination = client.CoordinationV1Api(api)
        self.storage = client.StorageV1Api(api)

    def kubectl(self, *args, check=True):
        result = subprocess.run([KUBECTL, "--kubeconfig", KUBECONFIG, *args], capture_output=True, text=True, timeout=60)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
        return result

    def events(self, namespace: str) -> str:
        """The namespace's events, oldest first, one line each (for failure messages)."""
        items = self.core.list_namespaced_event(namespace).items
        items.sort(key=lambda e: str(e.last_timestamp or e.event_time or e.metadata.creation_timestamp))
        return "\n  ".join(
            f"{e.involved_object.kind}/{e.involved_object.name}: {e.reason}: {e.message}" for e in items
        ) or "(no events)"

    def pods(self, namespace: str, selector: str | None = None):
        return self.core.list_namespaced_pod(namespace, label_selector=selector).items

    def pods_summary(self, namespace: str, selector: str | None = None) -> str:
        return ", ".join(f"{p.metadata.name}={p.status.phase}@{p.spec.node_name}" for p in self.pods(namespace, selector)) or "(no pods)"


def job_manifest(name, *, backoff_limit=0, pod_labels=None, pod_annotations=None, env=None, job_labels=None):
    """A Job whose one pod kwok plays (no container runs; the image is never pulled)."""
    container = {"name": "main", "image": "registry.invalid/testbed/job:1", "command": ["true"]}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": dict(job_labels or {})},
        "spec": {
            "backoffLimit": backoff_limit,
            "template": {
                "metadata": {"labels": dict(pod_labels or {}), "annotations": dict(pod_annotations or {})},
                "spec": {"restartPolicy": "Never", "containers": [container]},
            },
        },
    }


def pod_manifest(name, *, labels=None, resources=None, volumes=None, mounts=None, security=None, pod_security=None, grace=1):
    """A one-container pod for kwok (the image is never pulled).

    ``grace`` is its terminationGracePeriodSeconds (None: the API default, 30). A short one lets the
    namespace controller finish the namespace soon after the test: it waits about half the longest
    grace period of the pods left before it looks again.
    """
    container = {"name": "main", "image": "registry.invalid/testbed/app:1"}
    if resources:
        container["resources"] = resources
    if mounts:
        container["volumeMounts"] = mounts
    if security:
        container["securityContext"] = security
    spec = {"containers": [container]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if volumes:
        spec["volumes"] = volumes
    if pod_security:
        spec["securityContext"] = pod_security
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": dict(labels or {})}, "spec": spec}


def pvc_manifest(name, storage_class=None, size="1Gi"):
    """A ReadWriteOnce claim (``storage_class`` None: the cluster's default class)."""
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


def deployment_manifest(name, replicas, grace=1):
    """A Deployment of ``replicas`` kwok pods (``grace`` as for pod_manifest)."""
    labels = {"app": name}
    pod_spec = {"containers": [{"name": "main", "image": "registry.invalid/testbed/app:1"}]}
    if grace is not None:
        pod_spec["terminationGracePeriodSeconds"] = grace
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": pod_spec,
            },
        },
    }


def condition(obj, type_):
    """The status condition of ``type_`` of a typed object, or None."""
    for c in (obj.status.conditions or []) if obj.status else []:
        if c.type == type_:
            return c
    return None
