"""The quantity table (api_quantities.py) against the real API server: every rendered value is sent in
a server-side dry run (nothing is stored) and what comes back is what the table says, and what
module_utils/llmmodel_manifests.py takes for no change."""

from __future__ import annotations

import pytest
import unit_helpers  # noqa: F401  (puts the role's module_utils on ansible.module_utils' path)
from ansible.module_utils import llmmodel_manifests as manifests  # noqa: E402
from api_quantities import PLAIN, RESOURCE_LIST

pytestmark = pytest.mark.cluster


def returned_limits(dynamic, namespace, values):
    """The container limits the API server keeps for ``values`` (one resource name per value)."""
    limits = {"example.com/q%d" % i: value for i, value in enumerate(values)}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "quantities"},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/none:1", "resources": {"limits": limits}}]},
    }
    pods = dynamic.resources.get(api_version="v1", kind="Pod")
    created = pods.create(body=pod, namespace=namespace, dry_run="All").to_dict()
    return created["spec"]["containers"][0]["resources"]["limits"], limits


def test_the_resource_list_table_is_what_the_api_server_returns(dynamic, namespace):
    # Extended resources must be whole numbers: cpu and memory take any value, one pod per pair.
    pods = dynamic.resources.get(api_version="v1", kind="Pod")
    wrong = []
    for rendered, expected in RESOURCE_LIST:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "quantities"},
            "spec": {"containers": [{"name": "c", "image": "registry.invalid/none:1",
                                     "resources": {"limits": {"cpu": rendered, "memory": rendered}}}]},
        }
        created = pods.create(body=body, namespace=namespace, dry_run="All").to_dict()
        returned = created["spec"]["containers"][0]["resources"]["limits"]
        if returned != {"cpu": expected, "memory": expected} or not manifests.contains(created["spec"], body["spec"], ("spec",)):
            wrong.append((rendered, expected, returned))
    assert not wrong, wrong


def test_whole_extended_resources_like_gpus_come_back_as_the_table_says(dynamic, namespace):
    whole = [(rendered, expected) for rendered, expected in RESOURCE_LIST if expected.isdigit()]
    returned, sent = returned_limits(dynamic, namespace, [rendered for rendered, _ in whole])
    assert [returned[name] for name in sent] == [expected for _, expected in whole]


def test_the_metric_target_table_is_what_the_api_server_returns(dynamic, namespace):
    hpas = dynamic.resources.get(api_version="autoscaling/v2", kind="HorizontalPodAutoscaler")
    for rendered, expected in PLAIN:
        body = {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "quantities"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "m"},
                "maxReplicas": 2,
                "metrics": [{"type": "Pods", "pods": {"metric": {"name": "queue"},
                                                      "target": {"type": "AverageValue", "averageValue": rendered}}}],
            },
        }
        created = hpas.create(body=body, namespace=namespace, dry_run="All").to_dict()
        assert created["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == expected, rendered
        assert manifests.contains(created["spec"], body["spec"], ("spec",)), rendered
