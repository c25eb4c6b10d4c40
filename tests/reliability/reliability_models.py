"""LLMModels in the reliability scenarios: their manifest, the readers of them and their children
(an extension of the test bed's Kube), and what "Serving", "Failed" and "converged" mean."""

from __future__ import annotations

from kubernetes import client

import reliability_paths  # noqa: F401  (puts tests/testbed on sys.path)
from testbed_helpers import Kube as TestbedKube
from testbed_helpers import wait_until

GROUP, VERSION, PLURAL = "inference.ai.example.com", "v1alpha1", "llmmodels"
MODEL_LABEL = "inference.ai.example.com/model"
GOOD_REPO = "acme/tiny-chat"
# The test bed fails a pull whose source holds "kwok-fail" with the puller's 404 (hack/cluster/stages.yaml).
FAILING_REPO = "acme/kwok-fail"


def model_manifest(name: str, repo: str = GOOD_REPO, purge: bool = False) -> dict:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "LLMModel",
        "metadata": {"name": name},
        "spec": {
            "source": {"huggingFaceRepo": repo, "revision": "v1.0"},
            "serve": {"image": "ghcr.io/ggml-org/llama.cpp:server", "port": 8080, "args": ["--model", "/model-weights"]},
            "storageSize": "1Gi",
            "purgeWeightsOnDelete": purge,
        },
    }


class Kube(TestbedKube):
    """The test bed's API groups, plain dicts for objects, and the models' own readers."""

    def __init__(self, api: client.ApiClient):
        super().__init__(api)
        self.custom = client.CustomObjectsApi(api)

    def plain(self, obj) -> dict:
        return self.api.sanitize_for_serialization(obj)

    def read(self, reader, *args) -> dict | None:
        """The object as a dict, or None when the API server answers 404."""
        try:
            return self.plain(reader(*args))
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise

    # LLMModels
    def create_model(self, namespace: str, manifest: dict) -> dict:
        return self.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, manifest)

    def model(self, namespace: str, name: str) -> dict | None:
        return self.read(self.custom.get_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL, name)

    def models(self, namespace: str) -> dict[str, dict]:
        items = self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]
        return {m["metadata"]["name"]: m for m in items}

    def set_source(self, namespace: str, name: str, repo: str) -> None:
        body = {"spec": {"source": {"huggingFaceRepo": repo}}}
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name, body)

    def delete_model(self, namespace: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)

    # Children
    def pvc(self, namespace: str, name: str) -> dict | None:
        return self.read(self.core.read_namespaced_persistent_volume_claim, f"{name}-weights", namespace)

    def names(self, lister, namespace: str) -> list[str]:
        return sorted(item.metadata.name for item in lister(namespace).items)

    def server_pods(self, namespace: str, name: str) -> list[dict]:
        pods = self.pods(namespace, f"{MODEL_LABEL}={name}")
        return [self.plain(p) for p in pods if any(o.kind == "ReplicaSet" for o in p.metadata.owner_references or [])]

    def pull_runs(self, namespace: str) -> dict[str, dict[str, int]]:
        """Pull Job name -> {Job uid: pods it created}, from the Job controller's SuccessfulCreate
        Events. Events outlive the Jobs (a replaced or garbage-collected Job leaves its Events), so
        this counts every pull that ever ran in the namespace, whoever deleted the Job since."""
        runs: dict[str, dict[str, int]] = {}
        for event in self.core.list_namespaced_event(namespace).items:
            involved = event.involved_object
            if involved.kind == "Job" and event.reason == "SuccessfulCreate":
                per_job = runs.setdefault(involved.name, {})
                per_job[involved.uid] = per_job.get(involved.uid, 0) + (event.count or 1)
        return runs

    def describe(self, namespace: str) -> str:
        """The models' phases and messages, for failure messages."""
        lines = []
        for name, model in sorted(self.models(namespace).items()):
            status = model.get("status") or {}
            deleting = " (deleting)" if model["metadata"].get("deletionTimestamp") else ""
            lines.append(f"  {name}{deleting}: gen {model['metadata'].get('generation')} observed "
                         f"{status.get('observedGeneration')} {status.get('phase')}: {status.get('message')}")
        return "\n".join(lines) or "  (no LLMModel)"


def condition(model: dict, kind: str) -> dict:
    return next((c for c in (model.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def current(model: dict | None) -> bool:
    """Whether the status describes the model's current spec."""
    return bool(model) and (model.get("status") or {}).get("observedGeneration") == model["metadata"].get("generation")


def serving(model: dict | None) -> bool:
    return current(model) and model["status"].get("phase") == "Serving" and condition(model, "Ready").get("status") == "True"


def failed(model: dict | None) -> bool:
    return current(model) and model["status"].get("phase") == "Failed"


def converged(kube: Kube, namespace: str, serve: set[str], gone: set[str]) -> bool:
    models = kube.models(namespace)
    return all(serving(models.get(n)) for n in serve) and not gone & models.keys()


def create_models(kube: Kube, namespace: str, kept: list[str], purged: list[str], repo: str = GOOD_REPO) -> None:
    """Models that keep their weights on deletion (kept) and models that purge them (purged)."""
    for name in kept:
        kube.create_model(namespace, model_manifest(name, repo=repo))
    for name in purged:
        kube.create_model(namespace, model_manifest(name, repo=repo, purge=True))


def wait_serving(kube: Kube, namespace: str, names: list[str], timeout: float) -> None:
    wait_until(f"{', '.join(names)} to serve", lambda: all(serving(kube.model(namespace, n)) for n in names), timeout,
               lambda: kube.describe(namespace))
