"""Volumes: kwok's volume stages play a provisioner for the classes "standard" (default) and "local-path"."""

from testbed_helpers import condition, gone, pod_manifest, pvc_manifest, wait_until


def test_claims_bind_and_a_pod_mounting_one_runs(kube, namespace):
    classes = {c.metadata.name: c for c in kube.storage.list_storage_class().items}
    assert {"standard", "local-path"} <= set(classes), f"storage classes: {sorted(classes)}"
    defaults = [n for n, c in classes.items() if (c.metadata.annotations or {}).get("storageclass.kubernetes.io/is-default-class") == "true"]
    assert defaults == ["standard"], f"default storage classes: {defaults}"

    local = kube.core.create_namespaced_persistent_volume_claim(namespace, pvc_manifest("local", "local-path", "2Gi"))
    plain = kube.core.create_namespaced_persistent_volume_claim(namespace, pvc_manifest("plain"))
    assert local.spec.storage_class_name == "local-path"
    # The DefaultStorageClass admission plugin fills the class in when the claim is created.
    assert plain.spec.storage_class_name == "standard", f"a claim without a class got {plain.spec.storage_class_name!r}"
    kube.core.create_namespaced_pod(
        namespace,
        pod_manifest(
            "consumer",
            volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "plain"}}],
            mounts=[{"name": "data", "mountPath": "/data"}],
        ),
    )

    def claims():
        return {c.metadata.name: c for c in kube.core.list_namespaced_persistent_volume_claim(namespace).items}

    def describe():
        return f"claims {[(n, c.status.phase, c.spec.volume_name) for n, c in claims().items()]}; events:\n  {kube.events(namespace)}"

    bound = wait_until("claims local and plain to be Bound", lambda: (c := claims()) and all(x.status.phase == "Bound" for x in c.values()) and c, 30, describe)
    volumes = {}
    for name, storage_class, size in (("local", "local-path", "2Gi"), ("plain", "standard", "1Gi")):
        claim = bound[name]
        assert claim.spec.volume_name, f"claim {name} is Bound without a volume"
        assert claim.status.capacity.get("storage") == size, claim.status
        pv = kube.core.read_persistent_volume(claim.spec.volume_name)
        volumes[name] = pv.metadata.name
        assert pv.spec.storage_class_name == storage_class, pv.spec
        assert (pv.spec.claim_ref.namespace, pv.spec.claim_ref.name, pv.spec.claim_ref.uid) == (namespace, name, claim.metadata.uid)
        assert wait_until(f"volume {pv.metadata.name} to be Bound", lambda pv=pv: kube.core.read_persistent_volume(pv.metadata.name).status.phase == "Bound", 15)

    pod = wait_until(
        "pod consumer (mounting claim plain) to be Running",
        lambda: (p := kube.core.read_namespaced_pod("consumer", namespace)).status.phase == "Running" and p,
        30, describe=lambda: f"{kube.core.read_namespaced_pod('consumer', namespace).status}; events:\n  {kube.events(namespace)}",
    )
    assert pod.spec.node_name, "pod consumer is Running without a node"
    assert condition(pod, "PodScheduled").status == "True"

    # Reclaim policy Delete: once the claims are gone, so are their volumes (no PV outlives a test).
    kube.core.delete_namespaced_pod("consumer", namespace)
    for name in ("local", "plain"):
        kube.core.delete_namespaced_persistent_volume_claim(name, namespace)
    wait_until(
        "the volumes of the deleted claims to be deleted",
        lambda: all(gone(lambda v=v: kube.core.read_persistent_volume(v)) for v in volumes.values()),
        45,
        describe=lambda: [(v, kube.core.read_persistent_volume(v).status.phase) for v in volumes.values() if not gone(lambda v=v: kube.core.read_persistent_volume(v))],
    )
