"""llmmodel_status against a REAL API server (the cluster in KUBECONFIG).

Run with `make unit-cluster-test` (pytest -m cluster). Without a reachable cluster these tests FAIL:
a suite that skips itself into green proves nothing. The tests create their own CRD (a kind with a
status subresource, in a random API group) and namespace, and delete both at the end.
"""

from __future__ import annotations

import datetime
import re
import time
import uuid

import pytest
from kubernetes.dynamic.exceptions import NotFoundError

from unit_helpers import load_library_module, task_results

pytestmark = pytest.mark.cluster

llmmodel_status = load_library_module("llmmodel_status")

GROUP = "t%s.llmtest.example.com" % uuid.uuid4().hex[:8]
API_VERSION = GROUP + "/v1"
KIND = "StatusProbe"
PLURAL = "statusprobes"
MERGE_PATCH = "application/merge-patch+json"
OLD = "2020-01-01T00:00:00Z"

CONDITION_SCHEMA = {
    "type": "object",
    "required": ["type", "status"],
    "properties": {
        "type": {"type": "string"},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "reason": {"type": "string"},
        "message": {"type": "string"},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "observedGeneration": {"type": "integer", "format": "int64"},
        "ansibleResult": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "%s.%s" % (PLURAL, GROUP)},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"kind": KIND, "plural": PLURAL, "singular": "statusprobe", "listKind": KIND + "List"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                                "properties": {
                                    "conditions": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["type"],
                                        "items": CONDITION_SCHEMA,
                                    }
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="session")
def namespace(dynamic):
    crds = dynamic.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    namespaces = dynamic.resources.get(api_version="v1", kind="Namespace")
    name = "llmstatus-%s" % uuid.uuid4().hex[:8]
    crds.create(body=CRD)
    namespaces.create(body={"metadata": {"name": name}})
    try:
        for event in crds.watch(field_selector="metadata.name=" + CRD["metadata"]["name"], timeout=60):
            conditions = (event["raw_object"].get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
        dynamic.resources.invalidate_cache()
        yield name
    finally:
        for resource, resource_name in ((namespaces, name), (crds, CRD["metadata"]["name"])):
            try:
                resource.delete(name=resource_name)
            except NotFoundError:
                pass


@pytest.fixture(scope="session")
def probes(dynamic, namespace):
    return dynamic.resources.get(api_version=API_VERSION, kind=KIND)


@pytest.fixture
def probe(probes, namespace):
    """A fresh StatusProbe; returns its name."""
    name = "probe-%s" % uuid.uuid4().hex[:8]
    probes.create(namespace=namespace, body={"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": {"size": 1}})
    return name


@pytest.fixture
def read(probes, namespace):
    def get(name):
        return probes.get(name=name, namespace=namespace).to_dict()

    return get


@pytest.fixture
def patch_status(probes, namespace):
    """Write status directly, as another writer (ansible-operator) would."""

    def patch(name, status):
        probes.subresources["status"].patch(body={"status": status}, name=name, namespace=namespace, content_type=MERGE_PATCH)

    return patch


@pytest.fixture
def set_status(run_module, kubeconfig, namespace):
    """Run llmmodel_status in-process against the probe ``name``."""

    def run(name, **args):
        base = {"api_version": API_VERSION, "kind": KIND, "name": name, "namespace": namespace, "kubeconfig": kubeconfig}
        return run_module(llmmodel_status, dict(base, **args))

    return run


def cond(ctype, status, reason="Because", message=""):
    return {"type": ctype, "status": status, "reason": reason, "message": message}


def operator_condition(ctype, status="True"):
    """A condition the way ansible-operator writes it (no observedGeneration)."""
    return {"type": ctype, "status": status, "reason": "Successful", "message": "Awaiting next reconciliation",
            "lastTransitionTime": OLD, "ansibleResult": {"ok": 5, "changed": 0, "skipped": 2, "failures": 0, "completion": OLD}}


def recent(timestamp):
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", timestamp), timestamp
    moment = datetime.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    return abs((datetime.datetime.now(datetime.timezone.utc) - moment).total_seconds()) < 120


PULLING = {"phase": "Pulling", "weights": {"source": "hf://org/model@main", "ready": False}}
OWN = [cond("WeightsReady", "False", "Pulling", "pulling"), cond("Ready", "False", "WaitingForWeights")]


def test_first_write_sets_fields_and_conditions(set_status, read, probe):
    result = set_status(probe, status=PULLING, conditions=OWN)

    assert result["changed"] is True
    stored = read(probe)["status"]
    assert result["status"] == stored
    assert stored["phase"] == "Pulling" and stored["weights"] == PULLING["weights"]
    assert [c["type"] for c in stored["conditions"]] == ["WeightsReady", "Ready"]
    for condition in stored["conditions"]:
        assert condition["observedGeneration"] == 1
        assert recent(condition["lastTransitionTime"])
    assert stored["conditions"][0]["message"] == "pulling"


def test_repeating_the_same_status_does_not_write(set_status, read, probe):
    set_status(probe, status=PULLING, conditions=OWN)
    before = read(probe)["metadata"]["resourceVersion"]

    result = set_status(probe, status=PULLING, conditions=OWN)

    assert result["changed"] is False
    assert read(probe)["metadata"]["resourceVersion"] == before
    assert result["status"] == read(probe)["status"]


def test_conditions_of_other_types_are_left_alone(set_status, read, patch_status, probe):
    foreign = [operator_condition("Running"), operator_condition("Successful")]
    patch_status(probe, {"conditions": foreign})

    set_status(probe, conditions=[cond("Ready", "True", "ServerAvailable")])

    stored = read(probe)["status"]["conditions"]
    assert stored[:2] == foreign
    assert [c["type"] for c in stored] == ["Running", "Successful", "Ready"]


def test_transition_time_moves_only_when_the_status_value_changes(set_status, read, patch_status, probe):
    patch_status(probe, {"conditions": [dict(cond("Ready", "False", "Pulling"), lastTransitionTime=OLD)]})

    set_status(probe, conditions=[cond("Ready", "False", "Starting", "server starting")])
    kept = read(probe)["status"]["conditions"][0]
    assert (kept["reason"], kept["message"], kept["lastTransitionTime"]) == ("Starting", "server starting", OLD)

    set_status(probe, conditions=[cond("Ready", "True", "ServerAvailable")])
    moved = read(probe)["status"]["conditions"][0]
    assert moved["status"] == "True" and moved["lastTransitionTime"] != OLD and recent(moved["lastTransitionTime"])


def test_a_spec_change_updates_observed_generation(set_status, read, probes, namespace, probe):
    set_status(probe, conditions=OWN)
    probes.patch(body={"spec": {"size": 2}}, name=probe, namespace=namespace, content_type=MERGE_PATCH)
    assert read(probe)["metadata"]["generation"] == 2

    result = set_status(probe, conditions=OWN)

    assert result["changed"] is True
    assert [c["observedGeneration"] for c in read(probe)["status"]["conditions"]] == [2, 2]


def test_observed_generation_stripped_by_ansible_operator_does_not_cause_a_write(set_status, read, patch_status, probe):
    set_status(probe, status=PULLING, conditions=OWN)
    stripped = [{k: v for k, v in c.items() if k != "observedGeneration"} for c in read(probe)["status"]["conditions"]]
    patch_status(probe, {"conditions": stripped})
    before = read(probe)["metadata"]["resourceVersion"]

    result = set_status(probe, status=PULLING, conditions=OWN)

    assert result["changed"] is False
    assert read(probe)["metadata"]["resourceVersion"] == before


def test_check_mode_reports_without_writing(set_status, read, probe):
    before = read(probe)

    result = set_status(probe, status=PULLING, conditions=OWN, _ansible_check_mode=True, _ansible_diff=True)

    assert result["changed"] is True
    assert result["status"]["phase"] == "Pulling"
    assert result["diff"] == {"before": {}, "after": result["status"]}
    after = read(probe)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "status" not in after or not after["status"]


def test_null_removes_a_field_and_nested_maps_merge(set_status, read, probe):
    set_status(probe, status=dict(PULLING, inferenceURL="http://x.ns.svc.cluster.local:8000"))

    set_status(probe, status={"inferenceURL": None, "weights": {"ready": True}})

    stored = read(probe)["status"]
    assert "inferenceURL" not in stored
    assert stored["weights"] == {"source": "hf://org/model@main", "ready": True}


def test_a_concurrent_status_write_is_not_overwritten(set_status, read, patch_status, probe, monkeypatch):
    """The patch carries the read resourceVersion: a write in between makes it conflict, then retry."""
    original = llmmodel_status.read_and_plan
    calls = []

    def read_then_someone_else_writes(*args, **kwargs):
        planned = original(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            patch_status(probe, {"conditions": [operator_condition("Running")]})
        return planned

    monkeypatch.setattr(llmmodel_status, "read_and_plan", read_then_someone_else_writes)

    result = set_status(probe, conditions=[cond("Ready", "True", "ServerAvailable")])

    assert len(calls) == 2
    assert result["changed"] is True
    assert [c["type"] for c in read(probe)["status"]["conditions"]] == ["Running", "Ready"]


def test_an_event_is_recorded_only_when_the_status_is_written(set_status, dynamic, namespace, probe, read):
    event = {"type": "Normal", "reason": "Pulling", "message": "pulling hf://org/model@main"}

    first = set_status(probe, status=PULLING, conditions=OWN, event=event)
    second = set_status(probe, status=PULLING, conditions=OWN, event=event)

    assert first["changed"] is True and second["changed"] is False
    assert "event" not in second
    events = dynamic.resources.get(api_version="v1", kind="Event")
    about = [e.to_dict() for e in events.get(namespace=namespace).items if e.involvedObject.name == probe]
    assert [e["metadata"]["name"] for e in about] == [first["event"]]
    recorded = about[0]
    assert (recorded["type"], recorded["reason"], recorded["message"]) == ("Normal", "Pulling", event["message"])
    assert recorded["involvedObject"]["uid"] == read(probe)["metadata"]["uid"]
    assert recorded["involvedObject"]["kind"] == KIND
    assert recorded["reportingComponent"] == "llm-operator"


def test_in_a_namespace_being_deleted_the_event_goes_to_the_namespace(run_module, kubeconfig, dynamic, probes):
    """The API server refuses new Events in a terminating namespace; the Event is then recorded
    about the Namespace, in default, with the message meant for that case."""
    namespaces = dynamic.resources.get(api_version="v1", kind="Namespace")
    events = dynamic.resources.get(api_version="v1", kind="Event")
    doomed, name, hold = "llmstatus-doomed-%s" % uuid.uuid4().hex[:8], "held", "llmtest.example.com/hold"
    namespaces.create(body={"metadata": {"name": doomed}})
    # A finalizer of the test's own keeps the probe, and so the namespace, terminating.
    held = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name, "finalizers": [hold]}, "spec": {"size": 1}}
    probes.create(namespace=doomed, body=held)
    recorded = None
    try:
        namespaces.delete(name=doomed)
        deadline = time.monotonic() + 10
        while namespaces.get(name=doomed).status.phase != "Terminating" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert namespaces.get(name=doomed).status.phase == "Terminating"
        event = {"type": "Normal", "reason": "Terminating", "message": "keeping the weights volume",
                 "namespace_terminating_message": "the weights volume goes with the namespace"}
        args = {"api_version": API_VERSION, "kind": KIND, "name": name, "namespace": doomed, "kubeconfig": kubeconfig}
        result = run_module(llmmodel_status, dict(args, status={"phase": "Terminating"}, event=event))
        recorded = events.get(name=result["event"], namespace="default").to_dict()
        assert (recorded["involvedObject"]["kind"], recorded["involvedObject"]["name"]) == ("Namespace", doomed)
        assert recorded["message"] == "%s %s/%s: the weights volume goes with the namespace" % (KIND, doomed, name)
        assert recorded["reason"] == "Terminating"
    finally:
        probes.patch(name=name, namespace=doomed, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH)
        if recorded:
            events.delete(name=recorded["metadata"]["name"], namespace="default")


def test_a_missing_object_fails(set_status):
    result = set_status("does-not-exist", status={"phase": "Pending"})
    assert result["failed"] is True
    assert "not found" in result["msg"]


def test_a_kind_without_status_subresource_fails(set_status, namespace):
    result = set_status("anything", api_version="v1", kind="ConfigMap", status={"phase": "Pending"})
    assert result["failed"] is True
    assert "has no status subresource" in result["msg"]


def test_an_unknown_kind_fails(set_status):
    result = set_status("anything", kind="NoSuchKind", status={"phase": "Pending"})
    assert result["failed"] is True
    assert "does not serve kind NoSuchKind" in result["msg"]


ROLE_TASKS = """\
- name: Write the status
  llmmodel_status:
    api_version: {api_version}
    kind: {kind}
    name: {name}
    namespace: {namespace}
    status:
      phase: Serving
      observedGeneration: 1
    conditions:
      - type: Ready
        status: "True"
        reason: ServerAvailable
        message: The server is available.
"""


def test_a_second_real_run_reports_no_change(run_probe_role, kubeconfig, read, namespace, probe):
    """Through ansible-runner, with the kubeconfig in K8S_AUTH_KUBECONFIG as ansible-operator sets it."""
    tasks = ROLE_TASKS.format(api_version=API_VERSION, kind=KIND, name=probe, namespace=namespace)
    env = {"K8S_AUTH_KUBECONFIG": kubeconfig, "KUBECONFIG": kubeconfig}

    first, first_events = run_probe_role(tasks, env=env)
    second, second_events = run_probe_role(tasks, env=env)

    assert first.returncode == 0 and second.returncode == 0, first.stdout + second.stdout
    assert [res["changed"] for _, res in task_results(first_events, "llmmodel_status")] == [True]
    assert [res["changed"] for _, res in task_results(second_events, "llmmodel_status")] == [False]
    assert second_events[-1]["event"] == "playbook_on_stats"
    assert second_events[-1]["event_data"]["changed"] == {}
    assert read(probe)["status"]["phase"] == "Serving"
