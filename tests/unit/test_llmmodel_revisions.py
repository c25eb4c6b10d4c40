"""module_utils/llmmodel_revisions.py and the kept-volume check of llmmodel_ownership.py, without a
cluster: what the volume holds, what a pull keeps, what the server mounts, what may be adopted."""

from __future__ import annotations

import json

import unit_helpers  # noqa: F401  (puts the role's module_utils under ansible.module_utils)

from ansible.module_utils.llmmodel_ownership import UID_LABEL, kept_mismatch
from ansible.module_utils.llmmodel_revisions import held, plan, revision_id, sub_path, volume_spec

KEYS = {
    "revisions": "inference.ai.example.com/weights-revisions",
    "source": "inference.ai.example.com/weights-source",
    "file": "inference.ai.example.com/weights-file",
    "bytes": "inference.ai.example.com/weights-bytes",
    "revision": "inference.ai.example.com/weights-revision",
    "keep": "inference.ai.example.com/weights-keep",
}
A, B, C, D = ("hf://acme/m@v%d" % n for n in range(1, 5))
OWNER = {"name": "chat", "uid": "u-new"}


def record(source, **extra):
    return {"source": source, "root": False, "revision": "", "gguf": "", "size": 0, "pulledAt": "", **extra,
            "rid": revision_id(source)}


def pvc(*records, **annotations):
    found = {KEYS["revisions"]: json.dumps(list(records))} if records else {}
    return {"metadata": {"name": "chat-weights", "annotations": {**found, **annotations}}}


def deployment(source=None):
    annotations = {KEYS["revision"]: revision_id(source)} if source else {}
    return {"metadata": {"name": "chat", "annotations": annotations}}


def job(source, keep, **status):
    annotations = {KEYS["source"]: source, KEYS["revision"]: revision_id(source), KEYS["keep"]: ",".join(keep)}
    return {"metadata": {"annotations": annotations}, "status": status}


def test_a_revision_is_named_by_its_source_and_lives_under_revisions():
    assert revision_id(A) == revision_id(A) != revision_id(B)
    assert len(revision_id(A)) == 12 and int(revision_id(A), 16) >= 0
    assert sub_path(record(A)) == "revisions/" + revision_id(A)
    assert sub_path(record(A, root=True)) == ""


def test_a_volume_of_the_previous_release_holds_one_revision_at_its_root():
    old = pvc(**{KEYS["source"]: A, KEYS["file"]: "m.gguf", KEYS["bytes"]: "1024"})
    assert held(old, KEYS) == [record(A, root=True, gguf="m.gguf", size=1024)]
    assert held(pvc(**{KEYS["source"]: ""}), KEYS) == []  # a pull was under way: nothing complete


def test_a_record_cannot_name_a_path_of_its_own():
    forged = {"rid": "../../etc", "source": A, "root": "yes"}
    assert held(pvc(forged), KEYS) == [record(A)]
    assert held(pvc(**{KEYS["revisions"]: "not json"}), KEYS) == []
    assert held(pvc({"source": ""}, "text", record(A), record(A)), KEYS) == [record(A)]


def test_a_new_source_is_pulled_beside_the_served_one_which_is_kept():
    now = plan(pvc(record(A), record(B)), C, KEYS, history=1, deployment=deployment(A))
    assert now["desired"] == {} and now["served"] == revision_id(A)
    assert now["keep"] == [revision_id(A)]  # B goes: one revision beside the served one, the new one
    assert now["held"] == [record(A)]  # what the volume holds once the pull starts


def test_the_history_keeps_the_most_recently_served_revisions():
    volume = pvc(record(B), record(A), record(C))
    now = plan(volume, D, KEYS, history=2, deployment=deployment(A))
    assert now["keep"] == [revision_id(A), revision_id(B)]
    assert plan(volume, D, KEYS, history=0, deployment=deployment(A))["keep"] == [revision_id(A)]
    # Nothing served (a model created again over its kept volume): the newest ones stay.
    assert plan(volume, D, KEYS, history=1)["keep"] == [revision_id(B)]


def test_the_served_revision_of_the_previous_release_is_kept_by_the_name_root():
    old = pvc(**{KEYS["source"]: A})
    now = plan(old, B, KEYS, deployment=deployment())  # its Deployment has no revision annotation
    assert now["served"] == revision_id(A)
    assert now["keep"] == ["root"]


def test_a_running_or_failed_pull_has_removed_what_it_did_not_keep():
    volume = pvc(record(A), record(B))
    for state in ("running", "failed"):
        now = plan(volume, C, KEYS, deployment=deployment(A), job=job(C, [revision_id(A)]), job_state=state)
        assert now["held"] == [record(A)] and now["desired"] == {}


def test_a_complete_pull_comes_first_with_what_the_puller_recorded():
    pulled = {"revision": "c0ffee", "gguf": "m.gguf", "size": 7}
    done = job(C, [revision_id(A)], completionTime="2026-12-05T12:00:00Z")
    now = plan(pvc(record(A), record(B)), C, KEYS, deployment=deployment(A), job=done, job_state="complete", pulled=pulled,
               completed_at="2026-12-05T12:00:00Z")
    new = record(C, revision="c0ffee", gguf="m.gguf", size=7, pulledAt="2026-12-05T12:00:00Z")
    assert now["held"] == [new, record(A)] and now["desired"] == new
    # The next reconcile no longer reads the pull pods: the record stays as it was written.
    later = plan(pvc(*now["held"]), C, KEYS, deployment=deployment(A), job=done, job_state="complete",
                 pulled={"revision": ""}, completed_at="2026-12-05T12:00:00Z")
    assert later["held"] == now["held"]


def test_going_back_to_a_held_source_serves_it_first_without_a_pull():
    now = plan(pvc(record(B), record(A)), A, KEYS, deployment=deployment(B))
    assert now["desired"] == record(A)
    assert now["held"] == [record(A), record(B)]  # nothing removed: no pull


def test_an_existing_volume_is_never_asked_to_change_but_to_grow():
    spec = {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "resources": {"requests": {"storage": "100Gi"}}}
    applied = json.dumps({"spec": {"storageClassName": "fast", "accessModes": ["ReadWriteMany"]}})
    kept = {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied}}, "spec": spec}
    assert volume_spec(kept, "ReadWriteOnce", "", "50Gi") == spec
    assert volume_spec(kept, "ReadWriteMany", "slow", "100Gi")["storageClassName"] == "fast"
    assert volume_spec(kept, "ReadWriteOnce", "", "200Gi")["resources"] == {"requests": {"storage": "200Gi"}}
    # A class no apply sent (the cluster's default, or a claim made by hand) is not sent either.
    assert "storageClassName" not in volume_spec({"spec": spec}, "ReadWriteOnce", "", "50Gi")
    assert volume_spec({}, "ReadWriteOnce", "", "50Gi") == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "50Gi"}}}
    assert volume_spec({}, "ReadWriteOnce", "fast", "5Gi")["storageClassName"] == "fast"


def kept_volume(*records):
    labels = {"app.kubernetes.io/managed-by": "llm-operator", "inference.ai.example.com/model": "chat", UID_LABEL: "u-old"}
    volume = pvc(*records, **{KEYS["source"]: ""})
    volume["metadata"]["labels"] = labels
    return volume


def test_a_kept_volume_of_another_source_is_not_adopted():
    volume = kept_volume(record(A), record(B))
    found = kept_mismatch(volume, OWNER, KEYS["source"], C, held(volume, KEYS))
    assert found["reason"] == "KeptWeightsMismatch" and found["kind"] == "PersistentVolumeClaim"
    assert A in found["message"] and B in found["message"] and "delete the PersistentVolumeClaim" in found["message"]
    assert "Set spec.source back" in found["message"]


def test_a_kept_volume_holding_the_source_or_nothing_complete_is_adopted():
    for volume in (kept_volume(record(A), record(B)), kept_volume()):
        assert kept_mismatch(volume, OWNER, KEYS["source"], B, held(volume, KEYS)) is None


def test_the_models_own_volume_is_never_a_mismatch():
    volume = kept_volume(record(A))
    volume["metadata"]["labels"][UID_LABEL] = OWNER["uid"]  # adopted already: a source change is a pull
    assert kept_mismatch(volume, OWNER, KEYS["source"], C, held(volume, KEYS)) is None
    assert kept_mismatch({}, OWNER, KEYS["source"], C, []) is None


def test_what_the_server_mounts_is_kept_even_without_a_record():
    # The volume's annotation was lost or edited: the Deployment still says what it mounts.
    assert plan(pvc(**{KEYS["source"]: ""}), B, KEYS, deployment=deployment(A))["keep"] == [revision_id(A)]
    assert plan(pvc(**{KEYS["source"]: ""}), B, KEYS, deployment=deployment())["keep"] == ["root"]
    assert plan(pvc(), B, KEYS)["keep"] == []  # no server: nothing is served
