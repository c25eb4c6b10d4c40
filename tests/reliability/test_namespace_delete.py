"""A namespace deleted with models in it: it goes away (the finalizers do not hold it), and its
PersistentVolumeClaims go with it, the weights volume of a model with purgeWeightsOnDelete: false
included: a namespace deletion removes every claim in it, and nothing can keep one. The operator
says so in an Event; no new Event may be created in a namespace that is being deleted, so that Event
is about the Namespace (in `default`).
"""

from __future__ import annotations

import time

import pytest

from reliability_checks import assert_no_artifact_rotation_failure, log_offset
from reliability_events import EventLog
from reliability_paths import SCALE
from testbed_helpers import gone, wait_until

pytestmark = pytest.mark.cluster


def test_namespace_deleted_with_models(kube, namespace, serving_models, figures):
    since = log_offset()
    kept, purged = serving_models

    with EventLog(kube, "default") as events:
        started = time.monotonic()
        kube.core.delete_namespace(namespace)
        # The namespace controller finishes only once all its content is gone, every claim included.
        wait_until(f"namespace {namespace} to go", lambda: gone(lambda: kube.core.read_namespace(namespace)),
                   120 * SCALE, lambda: kube.describe(namespace))
        took = time.monotonic() - started
        about = lambda name: [e for e in events.about("Namespace", namespace, "Terminating")  # noqa: E731
                              if f"LLMModel {namespace}/{name}:" in e["message"]]
        wait_until("the Events about the namespace", lambda: all(about(n) for n in kept + purged), 10, events.describe)

    for name in kept:
        message = about(name)[0]["message"]
        assert f"the weights volume {name}-weights goes too although purgeWeightsOnDelete is false" in message, message
    for name in purged:
        message = about(name)[0]["message"]
        assert message.endswith(f"the weights volume {name}-weights goes too"), message
    assert_no_artifact_rotation_failure(since)
    figures.record("namespace deletion", f"namespace with {2 * SCALE} Serving models gone", took)
