"""Storage topology: the class node-local binds a claim only once its first pod is scheduled
(WaitForFirstConsumer), on that pod's node, through the real scheduler, the real PV controller and the
test bed's provisioner (hack/volume_provisioner.py); later pods of the claim can run on that node only."""

import time

from testbed_helpers import condition, gone, pod_manifest, pvc_manifest, wait_until

CLASS = "node-local"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def pinned_pod(name, claim, node):
    pod = pod_manifest(name, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
                       mounts=[{"name": "data", "mountPath": "/data"}])
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return pod


def test_a_node_local_claim_binds_on_its_first_pod_s_node(kube, namespace):
    storage_class = kube.storage.read_storage_class(CLASS)
    assert storage_class.volume_binding_mode == "WaitForFirstConsumer", storage_class
    kube.core.create_namespaced_persistent_volume_claim(namespace, pvc_manifest("weights", CLASS, "3Gi"))

    def claim():
        return kube.core.read_namespaced_persistent_volume_claim("weights", namespace)

    # Without a consumer nothing is provisioned: the PV controller says it waits for one.
    wait_until("the PV controller's WaitForFirstConsumer event", lambda: "WaitForFirstConsumer" in kube.events(namespace), 20,
               lambda: kube.events(namespace))
    time.sleep(2)
    waiting = claim()
    assert waiting.status.phase == "Pending" and not waiting.spec.volume_name, waiting
    assert SELECTED_NODE not in (waiting.metadata.annotations or {}), waiting.metadata.annotations

    kube.core.create_namespaced_pod(namespace, pinned_pod("first", "weights", "kwok-cpu-2"))

    def describe():
        return f"claim {claim().status.phase} {claim().metadata.annotations}; pods {kube.pods_summary(namespace)}; events:\n  {kube.events(namespace)}"

    bound = wait_until("claim weights to be Bound", lambda: (c := claim()).status.phase == "Bound" and c, 30, describe)
    assert bound.metadata.annotations[SELECTED_NODE] == "kwok-cpu-2", bound.metadata.annotations
    pv = kube.core.read_persistent_volume(bound.spec.volume_name)
    assert pv.metadata.annotations["pv.kubernetes.io/provisioned-by"] == "testbed.llm-operator.io/node-local"
    assert pv.spec.storage_class_name == CLASS and pv.spec.capacity["storage"] == "3Gi"
    terms = pv.spec.node_affinity.required.node_selector_terms
    assert [(e.key, e.operator, e.values) for t in terms for e in t.match_expressions] == [
        ("kubernetes.io/hostname", "In", ["kwok-cpu-2"])], terms
    first = wait_until("pod first to be Running", lambda: (p := kube.core.read_namespaced_pod("first", namespace)).status.phase == "Running" and p,
                       30, describe)
    assert first.spec.node_name == "kwok-cpu-2"

    # The volume lives on kwok-cpu-2: a pod of the claim that must run elsewhere never does.
    kube.core.create_namespaced_pod(namespace, pinned_pod("elsewhere", "weights", "kwok-gpu-1"))

    def unschedulable():
        c = condition(kube.core.read_namespaced_pod("elsewhere", namespace), "PodScheduled")
        return c if c is not None and c.status == "False" and c.reason == "Unschedulable" else None

    refused = wait_until("pod elsewhere to be Unschedulable", unschedulable, 30, describe)
    assert "didn't match PersistentVolume's node affinity" in refused.message, refused.message

    # Reclaim policy Delete: the provisioner deletes the volume its claim released.
    for pod in ("first", "elsewhere"):
        kube.core.delete_namespaced_pod(pod, namespace)
    wait_until("the pods to be gone", lambda: not kube.pods(namespace), 30, describe)
    kube.core.delete_namespaced_persistent_volume_claim("weights", namespace)
    wait_until(f"volume {pv.metadata.name} to be deleted", lambda: gone(lambda: kube.core.read_persistent_volume(pv.metadata.name)), 45,
               lambda: kube.core.read_persistent_volume(pv.metadata.name).status)
