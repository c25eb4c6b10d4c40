"""llmmodel_apply against a REAL API server (the cluster in KUBECONFIG); `make unit-cluster-test`.

Without a reachable cluster these tests FAIL (the kubeconfig fixture), never skip. Each test works in
a namespace of its own, deleted at the end.
"""

from __future__ import annotations

import copy
import json

import pytest

from unit_helpers import load_library_module

from ansible.module_utils.llmmodel_client import CONNECTION_SPEC, build_client  # noqa: E402  (unit_helpers puts it there)

pytestmark = pytest.mark.cluster

llmmodel_apply = load_library_module("llmmodel_apply")
ARGUMENTS_DEFAULTS = {key: spec.get("default") for key, spec in llmmodel_apply.ARGUMENT_SPEC.items() if key not in CONNECTION_SPEC}
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@pytest.fixture
def manifests(namespace):
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": namespace, "labels": {"app": "m", "tier": "x"}},
        "data": {"port": "8000", "mode": "chat"},
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "m", "namespace": namespace, "labels": {"app": "m"}},
        "spec": {"type": "ClusterIP", "selector": {"app": "m"}, "ports": [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]},
    }
    return config_map, service


@pytest.fixture
def apply(run_module, kubeconfig):
    def run(definitions, check_mode=False, absent=None, **ownership):
        args = {"definitions": definitions, "kubeconfig": kubeconfig, "_ansible_check_mode": check_mode, **ownership}
        if absent is not None:
            args["absent"] = absent
        return run_module(llmmodel_apply, args)

    return run


@pytest.fixture
def owner(dynamic, namespace):
    """A real object to own things (a ConfigMap stands in for the LLMModel): {name, uid, reference}."""
    created = dynamic.resources.get(api_version="v1", kind="ConfigMap").create(
        body={"metadata": {"name": "the-model"}}, namespace=namespace).to_dict()
    uid = created["metadata"]["uid"]
    return {"name": "m", "uid": uid, "reference": {"apiVersion": "v1", "kind": "ConfigMap", "name": "the-model", "uid": uid}}


def ownership_args(owner, **extra):
    return {"owner": {"name": owner["name"], "uid": owner["uid"]}, **extra}


def actions(result):
    return [(o["kind"], o["action"]) for o in result["objects"]]


def test_missing_objects_are_created_with_their_record(apply, read, manifests):
    result = apply(list(manifests))
    assert result["changed"] is True
    assert actions(result) == [("ConfigMap", "created"), ("Service", "created")]
    live = read("ConfigMap", "settings")
    assert live["data"] == {"port": "8000", "mode": "chat"}
    assert json.loads(live["metadata"]["annotations"][LAST_APPLIED]) == manifests[0]
    assert any(f["manager"] == "llm-operator" for f in live["metadata"]["managedFields"])


def test_a_second_apply_sends_nothing(apply, read, manifests):
    apply(list(manifests))
    before = [read("ConfigMap", "settings")["metadata"]["resourceVersion"], read("Service", "m")["metadata"]["resourceVersion"]]
    result = apply(list(manifests))
    assert result["changed"] is False
    assert actions(result) == [("ConfigMap", "unchanged"), ("Service", "unchanged")]
    assert [read("ConfigMap", "settings")["metadata"]["resourceVersion"], read("Service", "m")["metadata"]["resourceVersion"]] == before


def test_absent_objects_are_deleted_and_missing_ones_are_no_change(apply, read, namespace, manifests):
    config_map, service = manifests
    apply([config_map, service])
    gone = {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "namespace": namespace}
    never = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "name": "m", "namespace": namespace}
    result = apply([service], absent=[gone, never])
    assert result["changed"] is True
    assert result["removed"] == [{"kind": "ConfigMap", "name": "settings"}]
    assert read("ConfigMap", "settings") is None
    again = apply([service], absent=[gone, never])
    assert again["changed"] is False and again["removed"] == []


def test_a_changed_manifest_is_patched_and_a_dropped_field_removed(apply, read, manifests):
    config_map, service = manifests
    apply([config_map, service])
    changed = copy.deepcopy(config_map)
    changed["data"] = {"port": "9000"}
    del changed["metadata"]["labels"]["tier"]
    result = apply([changed, service])
    assert actions(result) == [("ConfigMap", "patched"), ("Service", "unchanged")]
    live = read("ConfigMap", "settings")
    assert live["data"] == {"port": "9000"}
    assert live["metadata"]["labels"] == {"app": "m"}
    assert json.loads(live["metadata"]["annotations"][LAST_APPLIED]) == changed


def test_an_edit_by_someone_else_is_put_back_and_their_additions_kept(apply, read, dynamic, namespace, manifests):
    config_map, _ = manifests
    apply([config_map])
    config_maps = dynamic.resources.get(api_version="v1", kind="ConfigMap")
    config_maps.patch(name="settings", namespace=namespace, content_type="application/merge-patch+json",
                      body={"metadata": {"labels": {"team": "ops"}}, "data": {"mode": "edited", "extra": "theirs"}})
    result = apply([config_map])
    assert actions(result) == [("ConfigMap", "patched")]
    live = read("ConfigMap", "settings")
    assert live["data"] == {"port": "8000", "mode": "chat", "extra": "theirs"}
    assert live["metadata"]["labels"] == {"app": "m", "tier": "x", "team": "ops"}


def test_check_mode_plans_without_writing(apply, read, manifests):
    config_map, service = manifests
    result = apply([config_map], check_mode=True)
    assert result["changed"] is True and actions(result) == [("ConfigMap", "created")]
    assert read("ConfigMap", "settings") is None


def test_a_rejected_object_fails_with_the_api_servers_reason(apply, manifests):
    _, service = manifests
    bad = copy.deepcopy(service)
    bad["spec"]["ports"][0]["port"] = 70000
    result = apply([bad])
    assert result["failed"] is True
    assert result["msg"].startswith("Service m: API request failed:")
    assert "70000" in result["msg"] or "port" in result["msg"]


def test_a_definition_without_a_name_fails_before_any_request(apply, manifests):
    config_map, _ = manifests
    nameless = copy.deepcopy(config_map)
    del nameless["metadata"]["name"]
    result = apply([nameless])
    assert result["failed"] is True and "metadata.name" in result["msg"]


def test_real_runs_through_the_action_plugin_report_changed_then_not(run_role_twice, manifests, read):
    """Through ansible-runner as ansible-operator runs it: the in-process action plugin, not a module process."""
    config_map, _ = manifests
    tasks = "- name: Apply\n  llmmodel_apply:\n    definitions:\n      - %s\n" % json.dumps(config_map)

    changed, second_events = run_role_twice(tasks, "llmmodel_apply")

    assert changed == [[True], [False]]
    assert second_events[-1]["event_data"]["changed"] == {}
    assert read("ConfigMap", "settings")["data"] == config_map["data"]


FOREIGN_SERVICE = {"type": "NodePort", "selector": {"team": "web"}, "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}


def test_an_object_of_another_owner_is_left_untouched_and_reported(apply, read, dynamic, namespace, manifests, owner):
    config_map, service = manifests
    services = dynamic.resources.get(api_version="v1", kind="Service")
    services.create(body={"metadata": {"name": "m", "labels": {"team": "web"}}, "spec": FOREIGN_SERVICE}, namespace=namespace)
    before = read("Service", "m")

    result = apply([service, config_map], **ownership_args(owner))

    assert actions(result) == [("Service", "conflict")]  # nothing after it is applied either
    [found] = result["conflicts"]
    assert (found["kind"], found["name"]) == ("Service", "m")
    assert found["message"].startswith("Service m already exists and is not this LLMModel's")
    assert result["changed"] is False
    after = read("Service", "m")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["spec"]["type"] == "NodePort" and after["metadata"]["labels"] == {"team": "web"}
    assert read("ConfigMap", "settings") is None


def test_absent_objects_of_another_owner_are_not_deleted(apply, read, namespace, manifests, owner, dynamic):
    config_map, _ = manifests
    dynamic.resources.get(api_version="v1", kind="ConfigMap").create(body={"metadata": {"name": "theirs"}}, namespace=namespace)
    theirs = {"apiVersion": "v1", "kind": "ConfigMap", "name": "theirs", "namespace": namespace}
    result = apply([config_map], absent=[theirs], **ownership_args(owner))
    assert result["removed"] == [] and [c["name"] for c in result["conflicts"]] == ["theirs"]
    assert read("ConfigMap", "theirs") is not None


def test_owned_objects_carry_the_owners_uid_label_and_are_applied(apply, read, manifests, owner):
    config_map, service = manifests
    first = apply([config_map, service], **ownership_args(owner))
    assert actions(first) == [("ConfigMap", "created"), ("Service", "created")] and first["conflicts"] == []
    assert read("Service", "m")["metadata"]["labels"]["inference.ai.example.com/model-uid"] == owner["uid"]
    # The label is the proof on the next run (no proxy here adds an owner reference).
    changed = copy.deepcopy(config_map)
    changed["data"] = {"port": "9000"}
    again = apply([changed, service], **ownership_args(owner))
    assert actions(again) == [("ConfigMap", "patched"), ("Service", "unchanged")]


def test_a_kept_kind_loses_the_owners_reference_and_keeps_others(apply, read, dynamic, namespace, manifests, owner):
    config_map, _ = manifests
    other = dynamic.resources.get(api_version="v1", kind="ConfigMap").create(body={"metadata": {"name": "other"}}, namespace=namespace).to_dict()
    other_ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": other["metadata"]["uid"]}
    # As ansible-operator's proxy would have left it: created by the operator, owned by the model.
    created = copy.deepcopy(config_map)
    created["metadata"]["ownerReferences"] = [owner["reference"], other_ref]
    dynamic.resources.get(api_version="v1", kind="ConfigMap").create(body=created, namespace=namespace)

    result = apply([config_map], **ownership_args(owner, kept_kinds=["ConfigMap"]))

    assert actions(result) == [("ConfigMap", "patched")]
    refs = read("ConfigMap", "settings")["metadata"]["ownerReferences"]
    assert [ref["uid"] for ref in refs] == [other["metadata"]["uid"]]
    again = apply([config_map], **ownership_args(owner, kept_kinds=["ConfigMap"]))
    assert actions(again) == [("ConfigMap", "unchanged")]


def test_a_kept_volume_of_an_earlier_model_is_adopted(apply, read, dynamic, namespace, manifests, owner):
    config_map, _ = manifests
    source = "inference.ai.example.com/weights-source"
    kept = copy.deepcopy(config_map)
    kept["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "llm-operator", "inference.ai.example.com/model": "m",
                                  "inference.ai.example.com/model-uid": "an-earlier-model"}
    kept["metadata"]["annotations"] = {source: "hf://acme/tiny@main"}
    dynamic.resources.get(api_version="v1", kind="ConfigMap").create(body=kept, namespace=namespace)

    refused = apply([config_map], **ownership_args(owner))
    assert actions(refused) == [("ConfigMap", "conflict")]  # not adoptable for this kind
    adopted = apply([config_map], **ownership_args(owner, adopt={"ConfigMap": source}))
    assert actions(adopted) == [("ConfigMap", "patched")]
    assert read("ConfigMap", "settings")["metadata"]["labels"]["inference.ai.example.com/model-uid"] == owner["uid"]


# --- the record of a removal (removed_record: the puller's identity, recorded on its finished Job) ---

RECORD_ANNOTATION = "inference.ai.example.com/puller-identity-removed"


@pytest.fixture
def identity(apply, dynamic, namespace, owner):
    """The puller's identity as the role applies it (owned by ``owner``), and a stand-in for its
    finished Job (a ConfigMap: any kind the owner owns carries the record). Returns (absent, record)."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "m-puller", "namespace": namespace}}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "m-puller", "namespace": namespace},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["the-model"], "verbs": ["get"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "m-puller", "namespace": namespace},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "m-puller"},
               "subjects": [{"kind": "ServiceAccount", "name": "m-puller", "namespace": namespace}]}
    job = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m-pull", "namespace": namespace}, "data": {"done": "yes"}}
    assert apply([account, role, binding, job], **ownership_args(owner))["conflicts"] == []
    absent = [{"apiVersion": m["apiVersion"], "kind": m["kind"], "name": "m-puller", "namespace": namespace} for m in (binding, role, account)]
    return absent, {"apiVersion": "v1", "kind": "ConfigMap", "name": "m-pull", "namespace": namespace, "annotation": RECORD_ANNOTATION}


@pytest.fixture
def apply_counted(kubeconfig, owner):
    """llmmodel_apply's run in-process on a real client of the API server that notes every request it
    sends ((method, path) in ``sent``)."""
    sent = []

    def run(definitions, absent, removed_record, check_mode=False, removals=None):
        params = {key: None for key in CONNECTION_SPEC}
        params.update(ARGUMENTS_DEFAULTS, kubeconfig=kubeconfig, definitions=definitions, absent=absent,
                      removed_record=removed_record, removals=removals or {}, **ownership_args(owner))
        client = build_client(params)
        request = client.request

        def noted(method, path, *args, **kwargs):
            sent.append((method, path))
            return request(method, path, *args, **kwargs)

        client.request = noted
        try:
            return llmmodel_apply.run(params, check_mode=check_mode, client=client)
        finally:
            client.close()

    run.sent = sent
    return run


def test_the_removal_is_recorded_once_every_absent_object_is_gone(apply_counted, identity, read, namespace):
    absent, record = identity
    first = apply_counted([], absent, record)
    assert [item["kind"] for item in first["removed"]] == ["RoleBinding", "Role", "ServiceAccount"]
    assert first["recorded"] is True and first["changed"] is True
    assert read("ServiceAccount", "m-puller") is None
    assert read("ConfigMap", "m-pull")["metadata"]["annotations"][RECORD_ANNOTATION] == "true"
    writes = [(method, path) for method, path in apply_counted.sent if method != "GET"]
    assert [method for method, _ in writes] == ["DELETE", "DELETE", "DELETE", "PATCH"]
    assert writes[-1][1] == "/api/v1/namespaces/%s/configmaps/m-pull" % namespace

    # A run that still names them (its cache had not seen the record yet) writes nothing.
    del apply_counted.sent[:]
    again = apply_counted([], absent, record)
    assert again["removed"] == [] and again["recorded"] is False and again["changed"] is False
    assert [method for method, _ in apply_counted.sent if method != "GET"] == []

    # What the role passes once the record is there: nothing about the identity, so no request at all.
    del apply_counted.sent[:]
    quiet = apply_counted([], [], {})
    assert quiet["changed"] is False and apply_counted.sent == []


def test_a_removal_that_is_not_done_leaves_no_record_and_is_done_next_time(apply_counted, identity, read, dynamic, namespace):
    absent, record = identity
    # Another owner's RoleBinding under the name: not deleted, so the identity is not gone.
    bindings = dynamic.resources.get(api_version="rbac.authorization.k8s.io/v1", kind="RoleBinding")
    bindings.delete(name="m-puller", namespace=namespace)
    bindings.create(namespace=namespace, body={
        "metadata": {"name": "m-puller"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "m-puller"},
        "subjects": [{"kind": "ServiceAccount", "name": "m-puller", "namespace": namespace}]})

    refused = apply_counted([], absent, record)
    assert [c["kind"] for c in refused["conflicts"]] == ["RoleBinding"] and refused["recorded"] is False
    assert [item["kind"] for item in refused["removed"]] == ["Role", "ServiceAccount"]  # the model's own go
    assert RECORD_ANNOTATION not in (read("ConfigMap", "m-pull")["metadata"].get("annotations") or {})

    # The conflict resolved (its owner removed it): a run in check mode records nothing, the next run does.
    bindings.delete(name="m-puller", namespace=namespace)
    checked = apply_counted([], absent, record, check_mode=True)
    assert checked["recorded"] is False
    assert RECORD_ANNOTATION not in (read("ConfigMap", "m-pull")["metadata"].get("annotations") or {})
    done = apply_counted([], absent, record)
    assert done["removed"] == [] and done["recorded"] is True and done["changed"] is True
    assert read("ConfigMap", "m-pull")["metadata"]["annotations"][RECORD_ANNOTATION] == "true"


def test_a_record_on_an_object_that_is_gone_is_no_error(apply_counted, identity, read, namespace, dynamic):
    absent, record = identity
    dynamic.resources.get(api_version="v1", kind="ConfigMap").delete(name="m-pull", namespace=namespace)
    # As the role passes them: both in one value (removals), as templates/removals.yaml.j2 renders it.
    result = apply_counted([], [], {}, removals={"absent": absent, "record": record})
    assert len(result["removed"]) == 3 and result["recorded"] is False and "failed" not in result
    assert read("ConfigMap", "m-pull") is None
