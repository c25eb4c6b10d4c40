"""The checks that hold after any fault: every model converged or gone, nothing duplicated, no pull
run twice for one source, kept volumes kept and purged ones gone; and no run failed in
ansible-runner's artifact rotation (test_artifact_rotation.py)."""

from __future__ import annotations

from reliability_models import MODEL_LABEL, Kube, serving
from reliability_paths import OPERATOR_LOG


def log_offset() -> int:
    """Where the operator's log ends now: a scenario checks only what comes after."""
    return OPERATOR_LOG.stat().st_size if OPERATOR_LOG.exists() else 0


def assert_no_artifact_rotation_failure(since: int) -> None:
    text = OPERATOR_LOG.read_bytes()[since:].decode(errors="replace") if OPERATOR_LOG.exists() else ""
    assert "Cannot call rmtree on a symbolic link" not in text, "a run failed in ansible-runner's artifact rotation"


def assert_world(kube: Kube, namespace: str, serve: set[str], gone: set[str], sources: dict[str, int],
                 kept: dict[str, str], purged: set[str]) -> None:
    """The state every fault must end in.

    serve    models that must be Serving and Ready for their current spec
    gone     models that must not exist any more, nor any of their children
    sources  model -> the number of distinct sources it was given: exactly one pull Job ran per
             source, each with one pod
    kept     model -> uid of the weights volume that must have outlived the model, unowned
    purged   models whose weights volume must be gone
    """
    models = kube.models(namespace)
    for name in serve:
        assert serving(models.get(name)), f"{name} does not serve:\n{kube.describe(namespace)}"
        assert models[name]["status"]["weights"]["ready"] is True
    assert not gone & models.keys(), f"deleted models still exist:\n{kube.describe(namespace)}"
    # Nothing duplicated: one server Deployment with one ReplicaSet (no spurious rollout) and one
    # pod per serving model, one Service, one volume of the model (its UID label; never an owner
    # reference, which would let a deletion take it); nothing left of the others.
    assert kube.names(kube.apps.list_namespaced_deployment, namespace) == sorted(serve)
    assert kube.names(kube.core.list_namespaced_service, namespace) == sorted(serve)
    for name in serve:
        sets = kube.apps.list_namespaced_replica_set(namespace, label_selector=f"{MODEL_LABEL}={name}").items
        assert len(sets) == 1, f"{name}: {len(sets)} ReplicaSets, the server was rolled for nothing"
        assert len(kube.server_pods(namespace, name)) == 1, f"{name}: not exactly one server pod"
        volume = kube.pvc(namespace, name)["metadata"]
        assert not volume.get("ownerReferences"), f"{name}: the weights volume has owners {volume['ownerReferences']}"
        holder = (volume.get("labels") or {}).get("inference.ai.example.com/model-uid")
        assert holder == models[name]["metadata"]["uid"], f"{name}: weights volume labelled for {holder}"
    jobs = set(kube.names(kube.batch.list_namespaced_job, namespace))
    assert not jobs & {f"{n}-pull" for n in gone}, f"pull Jobs of deleted models remain: {sorted(jobs)}"
    # No pull ran twice for the same source.
    runs = kube.pull_runs(namespace)
    for name, count in sources.items():
        per_job = runs.get(f"{name}-pull", {})
        assert len(per_job) == count, f"{name}: {len(per_job)} pull Jobs ran for {count} source(s): {per_job}"
        assert all(pods == 1 for pods in per_job.values()), f"{name}: a pull Job ran more than one pod: {per_job}"
    assert_kept(kube, namespace, kept)
    for name in purged:
        assert kube.pvc(namespace, name) is None, f"{name}: the purged weights volume is still there"


def assert_kept(kube: Kube, namespace: str, kept: dict[str, str]) -> None:
    """Each kept weights volume is the same claim as before (uid) and owned by nothing any more."""
    for name, uid in kept.items():
        pvc = kube.pvc(namespace, name)
        assert pvc is not None, f"{name}: the kept weights volume was lost"
        assert pvc["metadata"]["uid"] == uid, f"{name}: the weights volume was replaced"
        assert not pvc["metadata"].get("ownerReferences"), f"{name}: the kept volume is still owned"
