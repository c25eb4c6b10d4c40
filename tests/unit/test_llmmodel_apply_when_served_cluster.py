"""llmmodel_apply's `when_served` against a REAL API server (`make unit-cluster-test`): a kind another
operator brings (the Prometheus Operator's PodMonitor) is skipped where the cluster does not serve it,
applied like any other where it does, and any other unserved kind still fails the task. Where
LLMMODEL_DISCOVERY_CACHE is set (the operator's pod), the answer is remembered across runs for
LLMMODEL_DISCOVERY_TTL seconds, and forgotten once the API server contradicts it."""

from __future__ import annotations

import json
import os
import time

import pytest

from unit_helpers import load_library_module

pytestmark = pytest.mark.cluster

llmmodel_apply = load_library_module("llmmodel_apply")
UNSERVED = {"apiVersion": "monitoring.invalid/v1", "kind": "Widget"}


@pytest.fixture
def apply(run_module, kubeconfig):
    def run(definitions, absent=(), when_served=(UNSERVED,)):
        return run_module(llmmodel_apply, {"definitions": list(definitions), "absent": list(absent),
                                           "when_served": list(when_served), "kubeconfig": kubeconfig})
    return run


def widget(namespace):
    return {**UNSERVED, "metadata": {"name": "m", "namespace": namespace}, "spec": {"port": "http"}}


def config_map(namespace):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m", "namespace": namespace}, "data": {"a": "1"}}


def test_an_optional_kind_the_cluster_does_not_serve_is_skipped(apply, read, namespace):
    result = apply([config_map(namespace), widget(namespace)], absent=[{**UNSERVED, "name": "m", "namespace": namespace}])
    assert result.get("failed") is not True, result
    assert [(o["kind"], o["action"]) for o in result["objects"]] == [("ConfigMap", "created"), ("Widget", "not served")]
    assert result["removed"] == []
    assert read("ConfigMap", "m")["data"] == {"a": "1"}
    again = apply([config_map(namespace), widget(namespace)])
    assert again["changed"] is False, "a skipped object is no change"


def test_an_unserved_kind_that_is_not_optional_fails(apply, namespace):
    result = apply([widget(namespace)], when_served=())
    assert result["failed"] is True
    assert "does not serve kind Widget in monitoring.invalid/v1" in result["msg"]


def test_an_optional_kind_the_cluster_serves_is_applied_and_removed(apply, read, namespace):
    optional_config_map = {"apiVersion": "v1", "kind": "ConfigMap"}
    assert apply([config_map(namespace)], when_served=[optional_config_map])["objects"][0]["action"] == "created"
    removed = apply([], absent=[{**optional_config_map, "name": "m", "namespace": namespace}], when_served=[optional_config_map])
    assert removed["removed"] == [{"kind": "ConfigMap", "name": "m"}] and read("ConfigMap", "m") is None


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMMODEL_DISCOVERY_CACHE", str(tmp_path / "discovery"))
    monkeypatch.setenv("LLMMODEL_DISCOVERY_TTL", "300")
    return tmp_path / "discovery"


def the_file(cache):
    (path,) = cache.glob("*.json")
    return path


def test_the_answer_for_an_optional_kind_is_remembered_for_the_next_runs(apply, namespace, cache):
    assert apply([widget(namespace)])["objects"][0]["action"] == "not served"
    remembered = the_file(cache)
    assert json.loads(remembered.read_text()) == []  # not served: no resource in the group-version
    # The next run takes the answer from the file: one the API server would not give (the kind
    # served) is believed; the create then finds no such resource, and the answer is dropped.
    remembered.write_text(json.dumps([{"name": "widgets", "kind": "Widget", "namespaced": True}]))
    result = apply([widget(namespace)])
    assert result.get("failed") is not True, result
    assert result["objects"][0]["action"] == "not served"
    assert not remembered.exists(), "an answer the API server contradicted is forgotten"


def test_an_answer_older_than_its_time_is_asked_again(apply, namespace, cache):
    apply([widget(namespace)])
    remembered = the_file(cache)
    remembered.write_text(json.dumps([{"name": "widgets", "kind": "Widget", "namespaced": True}]))
    stale = time.time() - 301
    os.utime(remembered, (stale, stale))
    assert apply([widget(namespace)])["objects"][0]["action"] == "not served"
    assert json.loads(remembered.read_text()) == [], "asked the API server again and kept its answer"


def test_without_the_variable_nothing_is_kept(apply, namespace, tmp_path, monkeypatch):
    monkeypatch.delenv("LLMMODEL_DISCOVERY_CACHE", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert apply([widget(namespace)])["objects"][0]["action"] == "not served"
    assert list(tmp_path.rglob("*.json")) == []


def test_an_optional_object_the_api_server_refuses_is_reported_and_the_others_applied(apply, read, namespace):
    # As an InferencePool without endpointPickerRef under a v1.0-v1.5 CRD: the kind is served, the
    # object invalid (a ConfigMap key with a space stands in for it: 422 from the real API server).
    optional_config_map = {"apiVersion": "v1", "kind": "ConfigMap"}
    invalid = {**config_map(namespace), "metadata": {"name": "bad", "namespace": namespace}, "data": {"a key": "1"}}
    result = apply([invalid, config_map(namespace)], when_served=[optional_config_map])
    assert result.get("failed") is not True, result
    rejected, created = result["objects"]
    assert (rejected["action"], created["action"]) == ("rejected", "created")
    assert "a key" in rejected["message"] and "valid" in rejected["message"], rejected
    assert read("ConfigMap", "bad") is None and read("ConfigMap", "m")["data"] == {"a": "1"}
