"""One writer of a server Deployment's replicas (issue 26), against a REAL API server (the cluster in
KUBECONFIG; `make unit-cluster-test`; without a reachable cluster these tests FAIL, never skip).

Once a scaler writes the replicas (the HPA, or the router: scale to zero, targetInFlightRequests), a
reconcile leaves them to it, even a count the scaler wrote after the reconcile read the Deployment.
Each reconcile here is the role's own rendering and apply.yml (tests/unit/render/apply.yml) from the
observations the test gives: the Deployment as read before the scaler's write, so that the write
falls between the read and the apply every time. This is the race the e2e scale-to-zero test met: a
reconcile that had read 0 put the model back to 0 over the router's wake, and the router woke it again.
The scaler's write is `kubectl scale --current-replicas`, a write of the scale subresource over the
count read, as the router's.
"""

from __future__ import annotations

import json

import pytest

from render_helpers import apply, case, model
from unit_helpers import kubectl, load_library_module

pytestmark = pytest.mark.cluster

llmmodel_apply = load_library_module("llmmodel_apply")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

ROUTER_WAKE = {"minReplicas": 0, "maxReplicas": 1}
IN_FLIGHT = {"minReplicas": 0, "maxReplicas": 4, "targetInFlightRequests": 8}
HPA = {"minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}


@pytest.fixture
def deployment(dynamic, namespace):
    """The server Deployment (named as the model, m) as the API server has it now."""
    return lambda: dynamic.resources.get(api_version="apps/v1", kind="Deployment").get(name="m", namespace=namespace).to_dict()


@pytest.fixture
def reconcile(tmp_path, kubeconfig, namespace):
    """Reconcile model m with spec.serve ``serve`` from ``read`` (the Deployment as the reconcile read
    it, {} for none): the role renders and applies. Returns {kind: action} of the apply."""
    runs = iter(range(100))

    def run(serve, read):
        private = tmp_path / str(next(runs))
        private.mkdir()
        result = apply({"m": case(model(namespace=namespace, runtime="vllm", **serve), deployment=read)}, private, kubeconfig)["m"]
        assert not result["conflicts"], result
        return {item["kind"]: item["action"] for item in result["objects"]}

    return run


@pytest.fixture
def scale(kubeconfig, namespace):
    """A scaler's write of m's scale subresource, from the count it read."""
    return lambda current, replicas: kubectl(kubeconfig, "scale", "deployment/m", "-n", namespace,
                                             "--current-replicas=%d" % current, "--replicas=%d" % replicas)


def unwritten(before, after):
    """Whether the Deployment's spec and the operator's record are as ``before`` (its status, which the
    Deployment controller writes, may have moved)."""
    return (after["metadata"]["generation"] == before["metadata"]["generation"]
            and after["metadata"]["annotations"] == before["metadata"]["annotations"])


@pytest.mark.parametrize("autoscaling, created, read, written", [
    pytest.param(ROUTER_WAKE, 1, 0, 1, id="router wakes a model at zero"),
    pytest.param(ROUTER_WAKE, 1, 1, 0, id="router scales an idle model to zero"),
    pytest.param(IN_FLIGHT, 1, 1, 3, id="router scales on requests in flight"),
    pytest.param(HPA, 2, 2, 4, id="HPA scales up"),
])
def test_a_scalers_write_between_the_read_and_the_apply_stands(reconcile, scale, deployment, autoscaling, created, read, written):
    serve = {"autoscaling": autoscaling}
    assert reconcile(serve, {})["Deployment"] == "created"
    assert deployment()["spec"]["replicas"] == created  # a new Deployment starts with the rendered count
    if read != created:
        scale(created, read)
    observed = deployment()
    scale(read, written)  # after the reconcile read the Deployment, before it applies
    after_write = deployment()

    action = reconcile(serve, observed)["Deployment"]

    live = deployment()
    assert live["spec"]["replicas"] == written
    assert action == "unchanged" and unwritten(after_write, live)  # nothing sent at all


def test_a_reconcile_of_an_unchanged_model_sends_nothing_whatever_the_scaler_set(reconcile, scale, deployment):
    serve = {"autoscaling": IN_FLIGHT}
    reconcile(serve, {})
    for current, replicas in ((1, 4), (4, 0)):
        scale(current, replicas)
        before = deployment()
        actions = reconcile(serve, before)
        assert set(actions.values()) <= {"unchanged", "not served"}, actions
        assert deployment()["spec"]["replicas"] == replicas
        assert unwritten(before, deployment())


def test_a_new_range_brings_the_live_count_into_it_once(reconcile, scale, deployment):
    reconcile({"autoscaling": HPA}, {})
    scale(2, 5)
    narrower = {"autoscaling": dict(HPA, maxReplicas=3)}
    assert reconcile(narrower, deployment())["Deployment"] == "patched"
    assert deployment()["spec"]["replicas"] == 3
    assert reconcile(narrower, deployment())["Deployment"] == "unchanged"
    # A router model whose minimum rises from zero: the idle count is brought to one.
    reconcile({"autoscaling": ROUTER_WAKE}, deployment())
    assert deployment()["spec"]["replicas"] == 1
    scale(1, 0)
    assert reconcile({"autoscaling": dict(ROUTER_WAKE, minReplicas=1)}, deployment())["Deployment"] == "patched"
    assert deployment()["spec"]["replicas"] == 1


def test_a_new_range_read_before_a_scalers_write_is_applied_over_the_live_count(reconcile, scale, deployment):
    """The bound is taken to the count live when the apply runs, not to the one the reconcile read."""
    reconcile({"autoscaling": HPA}, {})
    scale(2, 5)
    observed = deployment()
    scale(5, 4)
    assert reconcile({"autoscaling": dict(HPA, maxReplicas=4)}, observed)["Deployment"] == "unchanged"
    assert deployment()["spec"]["replicas"] == 4


def test_switching_between_fixed_and_autoscaled_replicas(reconcile, scale, deployment):
    reconcile({"replicas": 3}, {})
    assert deployment()["spec"]["replicas"] == 3
    # Autoscaling on: the count stays (the applied record held replicas 3: it is not removed either).
    reconcile({"autoscaling": dict(HPA, maxReplicas=4, minReplicas=1)}, deployment())
    assert deployment()["spec"]["replicas"] == 3
    scale(3, 4)
    # Fixed again: the spec's count is set, over the scaler's.
    assert reconcile({"replicas": 2}, deployment())["Deployment"] == "patched"
    assert deployment()["spec"]["replicas"] == 2


def test_a_bound_planned_from_a_stale_read_is_refused_and_planned_again(reconcile, scale, deployment, kubeconfig, namespace):
    """The apply reads through ansible-operator's cache, which may not have seen a scaler's last write:
    a count brought into the range from that read is written only over the object as read, so the API
    server refuses it (409) and the apply reads again, finds the scaler's count in the range and sends
    nothing. Here the first read returns the Deployment as it was before the scaler's write."""
    reconcile({"autoscaling": HPA}, {})
    scale(2, 5)
    stale = deployment()  # 5: above the range the user narrows to 2-3 below
    scale(5, 2)  # the scaler's write the cache has not seen
    after_write = deployment()
    connection = {"kubeconfig": kubeconfig, "context": None, "host": None, "api_key": None, "validate_certs": None}
    params = {"field_manager": "llm-operator", "owner": None, "adopt": {}, "kept_kinds": [], "when_served": [],
              "scaled": [{"kind": "Deployment", "name": "m", "minReplicas": 2, "maxReplicas": 3}]}
    applier = llmmodel_apply.Applier(llmmodel_apply.build_client(connection), params, check_mode=False)
    reads = []

    def read_through_a_late_cache(resource, name, ns):
        reads.append(name)
        return stale if len(reads) == 1 else llmmodel_apply.Applier.read(applier, resource, name, ns)

    applier.read = read_through_a_late_cache
    manifest = json.loads(after_write["metadata"]["annotations"][LAST_APPLIED])

    assert applier.apply(manifest) == ("unchanged", None)
    assert len(reads) == 2
    live = deployment()
    assert live["spec"]["replicas"] == 2 and unwritten(after_write, live)
