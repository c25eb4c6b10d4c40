"""The LLMModels of a run: their manifests, one apply for many, and a watch that records when each
reached Serving and Ready, converged on a generation, and was gone."""

from __future__ import annotations

import json
import threading
import time

from .common import ADMIN_KUBECONFIG, FLEET_LABEL, GROUP, PLURAL, RUN_LABEL, VERSION, kubectl, log


class ModelWatcher(threading.Thread):
    def __init__(self, selector: str):
        super().__init__(daemon=True)
        from kubernetes import client, config

        self.api = client.CustomObjectsApi(config.new_client_from_config(str(ADMIN_KUBECONFIG)))
        self.selector = selector
        self.models: dict[str, dict] = {}
        self.changed = threading.Condition()
        self.stopped = threading.Event()

    def _update(self, obj: dict, now: float, deleted: bool = False) -> None:
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        status = obj.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        with self.changed:
            model = self.models.setdefault(key, {"phase": None, "serving_at": None, "ready_at": None, "gone_at": None,
                                                 "phases": [], "converged": {}})
            if deleted:
                model["gone_at"] = now
                self.changed.notify_all()
                return
            phase = status.get("phase")
            if phase != model["phase"]:
                model["phases"].append((round(now, 3), phase))
            model["phase"] = phase
            if phase == "Serving" and model["serving_at"] is None:
                model["serving_at"] = now
            if ready and model["ready_at"] is None:
                model["ready_at"] = now
            # When each generation was first reported Serving and Ready (a spec change converged).
            observed = status.get("observedGeneration")
            if ready and phase == "Serving" and observed is not None and observed >= obj["metadata"].get("generation", 0):
                model["converged"].setdefault(int(observed), now)
            self.changed.notify_all()

    def run(self) -> None:
        from kubernetes import watch

        while not self.stopped.is_set():
            try:
                listing = self.api.list_cluster_custom_object(GROUP, VERSION, PLURAL, label_selector=self.selector)
                now = time.monotonic()
                for item in listing["items"]:
                    self._update(item, now)
                # Deleted while no watch ran: gone by the time of this listing at the latest.
                listed = {f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in listing["items"]}
                with self.changed:
                    for key, model in self.models.items():
                        if key not in listed and model["gone_at"] is None:
                            model["gone_at"] = now
                    self.changed.notify_all()
                stream = watch.Watch()
                for event in stream.stream(self.api.list_cluster_custom_object, GROUP, VERSION, PLURAL, label_selector=self.selector,
                                           resource_version=listing["metadata"]["resourceVersion"], timeout_seconds=20):
                    if self.stopped.is_set():
                        stream.stop()
                        break
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._update(event["object"], time.monotonic())
                    elif event["type"] == "DELETED":
                        self._update(event["object"], time.monotonic(), deleted=True)
                    elif event["type"] == "ERROR":
                        break
            except Exception as error:  # noqa: BLE001 (re-list and watch again on any trouble)
                log(f"model watch restarts after {type(error).__name__}: {error}")
                self.stopped.wait(0.5)

    def wait_for(self, keys: list[str], field: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                if all(self.models.get(k, {}).get(field) is not None for k in keys):
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(min(left, 1.0))

    def converged_at(self, key: str, generation: int) -> float | None:
        """When the model first reported Serving and Ready with observedGeneration >= generation."""
        with self.changed:
            done = [t for g, t in (self.models.get(key) or {}).get("converged", {}).items() if g >= generation]
            return min(done) if done else None

    def times(self, keys: list[str], field: str) -> list[float | None]:
        with self.changed:
            return [self.models.get(k, {}).get(field) for k in keys]


def model_manifest(namespace: str, name: str, index: int, run_id: str, fleet: str, runtime: str = "") -> dict:
    """A model of this run; fleet (single, many) labels the set, so one delete can take a whole set.
    runtime (bench --runtime): a preset instead of the plain image (vllm: a PodMonitor, monitoring)."""
    serve = {"image": "vllm/vllm-openai:v0.6.3", "args": ["--model", "/model-weights", "--served-model-name", name]}
    if runtime:
        serve = {"runtime": runtime, "image": "vllm/vllm-openai:v0.6.3"}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "LLMModel",
        "metadata": {"name": name, "namespace": namespace, "labels": {RUN_LABEL: run_id, FLEET_LABEL: fleet}},
        "spec": {
            "source": {"huggingFaceRepo": f"bench/model-{index:03d}"},
            "serve": serve,
            "storageSize": "1Gi",
        },
    }


def apply_objects(objects: list[dict]) -> float:
    """One `kubectl apply` of all objects; returns how long it took."""
    started = time.monotonic()
    kubectl("apply", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return time.monotonic() - started
