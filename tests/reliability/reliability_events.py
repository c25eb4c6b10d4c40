"""Every Event created in a namespace while a scenario looks: a watch, so Events that the garbage
collector removes with their LLMModel are still seen."""

from __future__ import annotations

import threading
import time

from kubernetes import watch

from reliability_models import Kube


class EventLog:
    def __init__(self, kube: Kube, namespace: str):
        self.kube, self.namespace = kube, namespace
        self.events: list[dict] = []
        self.errors: list[str] = []
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._listed = threading.Event()

    def __enter__(self):
        self._thread.start()
        self._listed.wait(30)
        return self

    def __exit__(self, *_):
        self._watch.stop()

    def _run(self):
        version = self.kube.core.list_namespaced_event(self.namespace).metadata.resource_version
        self._listed.set()
        while True:
            try:
                for change in self._watch.stream(self.kube.core.list_namespaced_event, self.namespace, resource_version=version):
                    event = change["object"]
                    version = event.metadata.resource_version
                    self.events.append(self.kube.plain(event))
                return  # stopped
            except Exception as error:  # a broken watch: resume from the last version seen
                self.errors.append(repr(error))
                time.sleep(0.5)

    def describe(self) -> str:
        """What it saw and its last watch errors, for failure messages."""
        seen = [f"  {e['involvedObject'].get('kind')}/{e['involvedObject'].get('name')} {e.get('reason')}: {e.get('message')}"
                for e in self.events]
        return "\n".join(seen + [f"  watch error: {error}" for error in self.errors[-3:]]) or "  (no Event)"

    def about(self, kind: str, name: str, reason: str) -> list[dict]:
        return [e for e in self.events if e["involvedObject"].get("kind") == kind
                and e["involvedObject"].get("name") == name and e.get("reason") == reason]
