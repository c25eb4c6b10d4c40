"""A namespace deleted with models in it: it goes away (the finalizers do not hold it), and its
PersistentVolumeClaims go with it, the weights volume of a model with purgeWeightsOnDelete: false
included: a namespace deletion removes every claim in it, and nothing can keep one. The operator
says so in an Event; no new Event may be created in a namespace that is being deleted, so that Event
is about the Namespace (in `default`).
"""

from __future__ import annotations

import time

import pytest

from reliability_helpers import (
    EventLog, SCALE, assert_no_artifact_rotation_failure, log_offset, model_manifest, serving, wait_until,
)

pytestmark = pytest.mark.cluster


def test_namespace_deleted_with_models(kube, operator, namespace, figures):
    since = log_offset()
    kept = [f"keep-{i}" for i in range(SCALE)]
    purged = [f"purge-{i}" for i in range(SCALE)]
    operator.start()
    for name in kept:
        kube.create_model(namespace, model_manifest(name))
    for name in purged:
        kube.create_model(namespace, model_manifest(name, purge=True))
    wait_until("the models to serve", lambda: all(serving(kube.model(namespace, n)) for n in kept + purged),
               180 * SCALE, lambda: kube.describe(namespace))

    with EventLog(kube, "default") as events:
        started = time.monotonic()
        kube.core.delete_namespace(namespace)
        wait_until(f"namespace {namespace} to go", lambda: kube.read(kube.core.read_namespace, namespace) is None,
                   120 * SCALE, lambda: kube.describe(namespace))
        took = time.monotonic() - started
        about = lambda name: [e for e in events.about("Namespace", namespace, "Terminating")  # noqa: E731
                              if f"LLMModel {namespace}/{name}:" in e["message"]]
        wait_until("the Events about the namespace", lambda: all(about(n) for n in kept + purged), 10, events.describe)

    for name in kept:
        message = about(name)[0]["message"]
        assert f"the weights volume {name}-weights goes too although purgeWeightsOnDelete is false" in message, message
    for name in purged:
        assert f"the weights volume {name}-weights goes too" in about(name)[0]["message"]
    # Gone with the namespace: no claim of it is left anywhere.
    left = [c.metadata.name for c in kube.core.list_persistent_volume_claim_for_all_namespaces().items
            if c.metadata.namespace == namespace]
    assert left == []
    assert_no_artifact_rotation_failure(since)
    figures.record("namespace deletion", f"namespace with {2 * SCALE} Serving models gone", took)
