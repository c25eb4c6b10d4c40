"""Garbage collection by the real kube-controller-manager: owners take their dependents with them."""

from testbed_helpers import condition, deployment_manifest, gone, wait_until


def test_deleting_owners_deletes_dependents(kube, namespace):
    # Two owner chains, deleted together and watched together: Deployment -> ReplicaSet -> pods, and
    # ConfigMap -> ConfigMap (an ownerReference set by hand).
    kube.apps.create_namespaced_deployment(namespace, deployment_manifest("web", 2))
    owner = kube.core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}, "data": {"role": "owner"}})
    kube.core.create_namespaced_config_map(
        namespace,
        {
            "metadata": {
                "name": "dependent",
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}],
            },
            "data": {"role": "dependent"},
        },
    )

    def available():
        d = kube.apps.read_namespaced_deployment_status("web", namespace)
        c = condition(d, "Available")
        return c is not None and c.status == "True" and d.status.ready_replicas == 2

    wait_until("Deployment web to be Available", available, 30, describe=lambda: kube.pods_summary(namespace))
    replica_sets = [rs.metadata.name for rs in kube.apps.list_namespaced_replica_set(namespace, label_selector="app=web").items]
    pods = [p.metadata.name for p in kube.pods(namespace, "app=web")]
    assert len(replica_sets) == 1 and len(pods) == 2, (replica_sets, pods)

    kube.apps.delete_namespaced_deployment("web", namespace)  # default propagation: background
    kube.core.delete_namespaced_config_map("owner", namespace)

    def leftovers():
        left = [f"replicaset/{n}" for n in replica_sets if not gone(lambda n=n: kube.apps.read_namespaced_replica_set(n, namespace))]
        left += [f"pod/{n}" for n in pods if not gone(lambda n=n: kube.core.read_namespaced_pod(n, namespace))]
        if not gone(lambda: kube.core.read_namespaced_config_map("dependent", namespace)):
            left.append("configmap/dependent")
        return left

    wait_until(
        "the garbage collector to delete the ReplicaSet, the pods and ConfigMap dependent",
        lambda: not leftovers(), 30, describe=lambda: f"still there: {leftovers()}",
    )
