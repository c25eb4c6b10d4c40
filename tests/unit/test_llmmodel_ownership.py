"""module_utils/llmmodel_ownership.py: what proves an object the model's, without a cluster."""

from __future__ import annotations

from ansible.module_utils.llmmodel_ownership import UID_LABEL, conflict, owned, stamped, without_owner_reference

OWNER = {"name": "chat", "uid": "u-1"}
SOURCE = "inference.ai.example.com/weights-source"
OPERATOR_LABELS = {"app.kubernetes.io/managed-by": "llm-operator", "inference.ai.example.com/model": "chat"}


def obj(**metadata):
    return {"metadata": {"name": "chat", **metadata}}


def test_the_owners_reference_or_uid_label_proves_it():
    assert owned(obj(ownerReferences=[{"kind": "LLMModel", "name": "chat", "uid": "u-1"}]), OWNER)
    assert owned(obj(labels={UID_LABEL: "u-1"}), OWNER)  # what is left after an orphaning deletion


def test_a_name_alone_proves_nothing():
    assert not owned(obj(), OWNER)
    assert not owned(obj(labels={"team": "web"}), OWNER)
    assert not owned(obj(ownerReferences=[{"kind": "LLMModel", "name": "chat", "uid": "u-2"}]), OWNER)  # another model of that name
    assert not owned(obj(labels={UID_LABEL: "u-2"}), OWNER)
    assert not owned(obj(labels=OPERATOR_LABELS, annotations={SOURCE: "hf://a/b@main"}), OWNER)  # not an adoptable kind here
    assert not owned(obj(ownerReferences=[{"uid": "u-1"}]), {"name": "chat", "uid": ""})  # no uid, no proof


def test_a_kept_volume_is_adopted_by_the_operators_labels_and_the_source_annotation():
    kept = obj(labels={**OPERATOR_LABELS, UID_LABEL: "u-old"}, annotations={SOURCE: "hf://a/b@main"})
    assert owned(kept, OWNER, SOURCE)
    assert not owned(obj(labels=OPERATOR_LABELS), OWNER, SOURCE)  # no record of what it holds
    assert not owned(obj(labels={**OPERATOR_LABELS, "inference.ai.example.com/model": "other"}, annotations={SOURCE: ""}), OWNER, SOURCE)
    assert not owned(obj(labels={"inference.ai.example.com/model": "chat"}, annotations={SOURCE: ""}), OWNER, SOURCE)


def test_the_conflict_says_whose_it_is_and_what_to_do():
    by_manager = conflict("Service", obj(managedFields=[{"manager": "kubectl-client-side-apply"}]), OWNER)
    assert by_manager == {
        "kind": "Service",
        "name": "chat",
        "message": "Service chat already exists and is not this LLMModel's (created by kubectl-client-side-apply); the operator "
        "leaves it untouched. Delete or rename that Service, or give the LLMModel another name",
    }
    by_owner = conflict("Deployment", obj(ownerReferences=[{"kind": "Rollout", "name": "web"}]), OWNER)
    assert "(owned by Rollout web)" in by_owner["message"]


def test_stamping_and_releasing():
    manifest = {"kind": "Service", "metadata": {"name": "chat", "labels": {"a": "b"}}}
    assert stamped(manifest, OWNER)["metadata"]["labels"] == {"a": "b", UID_LABEL: "u-1"}
    assert manifest["metadata"]["labels"] == {"a": "b"}  # the rendered manifest is not changed in place
    refs = [{"uid": "u-1"}, {"uid": "x"}]
    assert without_owner_reference(obj(ownerReferences=refs), OWNER) == [{"uid": "x"}]
    assert without_owner_reference(obj(ownerReferences=[{"uid": "x"}]), OWNER) is None
