"""What the role renders for the revisions of the weights (docs/design.md, "Revisions"): the pull Job
fills its own revision and keeps the served one, the server mounts the revision of its source, a
volume of the previous release keeps serving from its root, an existing volume is never asked to
change. Every case runs the role's own tasks (revisions.yml, server.yml) and templates
(render_helpers.py)."""

from __future__ import annotations

import json

import pytest
from render_helpers import GIB, case, model, render, server_container, source_id

from ansible.module_utils.llmmodel_revisions import revision_id  # noqa: E402  (render_helpers puts it there)

REVISIONS = "inference.ai.example.com/weights-revisions"
REVISION = "inference.ai.example.com/weights-revision"
OTHER, OLDER = "hf://acme/tiny-chat@v1", "hf://acme/tiny-chat@v0"
SOURCE = source_id(model())


def record(source, **extra):
    return {"rid": revision_id(source), "source": source, "root": False, "revision": "", "gguf": "", "size": 0,
            "pulledAt": "", **extra}


def served_by(source):
    return {"metadata": {"name": "m", "annotations": {REVISION: revision_id(source)}}, "spec": {"replicas": 1},
            "status": {"replicas": 1, "availableReplicas": 1}}


def held(*records):
    return {REVISIONS: json.dumps(list(records))}


CASES = {
    "new source": case(model(runtime="vllm"), weights_ready=False,
                       pvc_annotations=held(record(OTHER, gguf="old.gguf"), record(OLDER)), deployment=served_by(OTHER)),
    "back to a held source": case(model(runtime="llamacpp"),
                                  pvc_annotations=held(record(OTHER), record(SOURCE, gguf="kept.gguf", size=2 * GIB)),
                                  deployment=served_by(OTHER)),
    "just pulled": case(model(runtime="llamacpp"), pulled={"gguf": "new.gguf", "size": GIB},
                        pvc_annotations=held(record(OTHER)), deployment=served_by(OTHER)),
    "previous release's volume": case(model(runtime="llamacpp"),
                                      pvc_annotations={"inference.ai.example.com/weights-file": "root.gguf"},
                                      deployment={"metadata": {"name": "m", "annotations": {}}, "spec": {"replicas": 1}}),
    "previous release's volume, new source": case(model(runtime="vllm"), weights_ready=False,
                                                  pvc_annotations={"inference.ai.example.com/weights-source": OTHER},
                                                  deployment={"metadata": {"name": "m"}, "spec": {"replicas": 1}}),
}
KEPT_SPEC = {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "resources": {"requests": {"storage": "100Gi"}}}
CASES["kept 100Gi fast volume"] = case(model(runtime="vllm"))
CASES["kept 100Gi fast volume"]["pvc"]["spec"] = KEPT_SPEC
CASES["kept 100Gi fast volume"]["pvc"]["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(
    {"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "20Gi"}}}})


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return render(CASES, tmp_path_factory.mktemp("render"))


def env_of(job):
    return {item["name"]: item.get("value") for item in job["spec"]["template"]["spec"]["containers"][0]["env"]}


def weights_mount(result):
    return next(m for m in server_container(result)["volumeMounts"] if m["name"] == "weights")


def recorded(result):
    return json.loads(result["objects"]["PersistentVolumeClaim"]["metadata"]["annotations"][REVISIONS])


def test_a_new_source_is_pulled_into_its_own_revision_keeping_the_served_one(rendered):
    result = rendered["new source"]
    job = result["objects"]["Job"]
    env = env_of(job)
    assert env["MODEL_DEST"] == "/model-weights/revisions/" + revision_id(SOURCE)
    assert env["WEIGHTS_ROOT"] == "/model-weights"
    assert env["KEEP_REVISIONS"] == revision_id(OTHER)  # the served one; the older one goes (history 1)
    assert job["metadata"]["annotations"][REVISION] == revision_id(SOURCE)
    # The server is left as it is (not rendered) and the volume no longer lists what the pull removes.
    assert "Deployment" not in result["objects"]
    assert [r["source"] for r in recorded(result)] == [OTHER]
    assert result["state"]["status"]["weights"]["revisions"] == [
        {"source": OTHER, "path": "revisions/" + revision_id(OTHER), "served": True}]


def test_going_back_to_a_held_source_serves_it_without_a_pull(rendered):
    result = rendered["back to a held source"]
    assert "Job" not in result["objects"]
    assert weights_mount(result) == {"name": "weights", "mountPath": "/model-weights", "readOnly": True,
                                     "subPath": "revisions/" + revision_id(SOURCE)}
    assert result["objects"]["Deployment"]["metadata"]["annotations"][REVISION] == revision_id(SOURCE)
    assert "--model" in server_container(result)["args"] and "/model-weights/kept.gguf" in server_container(result)["args"]
    assert [r["source"] for r in recorded(result)] == [SOURCE, OTHER]  # served first, nothing removed
    revisions = result["state"]["status"]["weights"]["revisions"]
    assert [(r["source"], r["served"]) for r in revisions] == [(SOURCE, True), (OTHER, False)]
    assert result["state"]["status"]["weights"]["size"] == 2 * GIB


def test_a_complete_pull_is_recorded_first_and_served(rendered):
    result = rendered["just pulled"]
    first = recorded(result)[0]
    assert (first["source"], first["gguf"], first["size"], first["pulledAt"]) == (SOURCE, "new.gguf", GIB, "2026-01-01T00:05:00Z")
    assert weights_mount(result)["subPath"] == "revisions/" + revision_id(SOURCE)
    assert "/model-weights/new.gguf" in server_container(result)["args"]


def test_a_volume_of_the_previous_release_serves_from_its_root_unchanged(rendered):
    result = rendered["previous release's volume"]
    assert "subPath" not in weights_mount(result)
    assert REVISION not in result["objects"]["Deployment"]["metadata"]["annotations"]
    assert recorded(result) == [record(SOURCE, root=True, gguf="root.gguf")]
    assert result["state"]["status"]["weights"]["revisions"] == [{"source": SOURCE, "path": ".", "served": True}]


def test_the_previous_releases_served_root_is_kept_while_a_new_source_is_pulled(rendered):
    env = env_of(rendered["previous release's volume, new source"]["objects"]["Job"])
    assert env["KEEP_REVISIONS"] == "root"


def test_an_existing_volume_is_applied_as_it_is(rendered):
    assert rendered["kept 100Gi fast volume"]["objects"]["PersistentVolumeClaim"]["spec"] == KEPT_SPEC
    assert rendered["new source"]["objects"]["PersistentVolumeClaim"]["spec"] == {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}
