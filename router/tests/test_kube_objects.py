"""What the cluster source makes of LLMModels and EndpointSlices (the watch itself: tests_cluster/)."""

from llm_router.kube import KubeSource, model_state, ready_addresses
from llm_router.table import RoutingTable


def model(namespace, name, phase=None, reason=None):
    status = {}
    if phase:
        status["phase"] = phase
    if reason:
        status["conditions"] = [
            {"type": "WeightsReady", "status": "True", "reason": "Pulled"},
            {"type": "Ready", "status": "False", "reason": reason},
        ]
    return {
        "metadata": {"namespace": namespace, "name": name, "creationTimestamp": "2026-12-05T10:00:00Z"},
        "status": status,
    }


def endpoint_slice(namespace, name, model_name, endpoints, port_name="http"):
    return {
        "metadata": {"namespace": namespace, "name": name, "labels": {"inference.ai.example.com/model": model_name}},
        "ports": [{"name": "metrics", "port": 9090}, {"name": port_name, "port": 8080}],
        "endpoints": endpoints,
    }


def test_phase_and_the_ready_conditions_reason():
    assert model_state(model("a", "m", "Pulling", "WeightsNotReady")) == ("Pulling", "WeightsNotReady")
    assert model_state(model("a", "m")) == ("Pending", "")


def test_only_ready_endpoints_not_terminating_on_the_http_port():
    slice_ = endpoint_slice(
        "a",
        "m-x",
        "m",
        [
            {"addresses": ["10.0.0.1"], "conditions": {"ready": True}},
            {"addresses": ["10.0.0.2"], "conditions": {"ready": False}},
            {"addresses": ["10.0.0.3"], "conditions": {"ready": True, "terminating": True}},
            {"addresses": ["10.0.0.4"], "conditions": {}},  # unknown is ready, as the API says
        ],
    )
    assert ready_addresses(slice_) == [("10.0.0.1", 8080), ("10.0.0.4", 8080)]
    assert ready_addresses({"ports": [], "endpoints": [{"addresses": ["10.0.0.1"]}]}) == []


def test_apply_joins_slices_to_models_and_drops_what_is_gone():
    source = KubeSource(api=None)
    table = RoutingTable()
    source.models = {("a", "m"): model("a", "m", "Serving", "Available"), ("b", "m"): model("b", "m", "Pulling")}
    source.slices = {
        ("a", "m-1"): endpoint_slice("a", "m-1", "m", [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}]),
        ("a", "m-2"): endpoint_slice("a", "m-2", "m", [{"addresses": ["10.0.0.2"], "conditions": {"ready": True}}]),
        ("b", "m-1"): endpoint_slice("b", "m-1", "m", [{"addresses": ["10.0.1.1"], "conditions": {"ready": False}}]),
    }
    source.apply(table)
    assert [e.key for e in table.models["a/m"].endpoints] == [("10.0.0.1", 8080), ("10.0.0.2", 8080)]
    assert table.models["a/m"].phase == "Serving" and table.models["a/m"].created > 0
    assert table.models["b/m"].endpoints == [] and table.models["b/m"].phase == "Pulling"
    del source.models[("b", "m")]
    del source.slices[("a", "m-2")]
    source.apply(table)
    assert sorted(table.models) == ["a/m"]
    assert [e.key for e in table.models["a/m"].endpoints] == [("10.0.0.1", 8080)]


def test_a_model_annotated_router_false_is_not_served_and_leaves_the_table_when_it_opts_out():
    source = KubeSource(api=None)
    table = RoutingTable()
    kept, leaving = model("a", "kept", "Serving"), model("a", "leaving", "Serving")
    source.models = {("a", "kept"): kept, ("a", "leaving"): leaving}
    source.slices = {("a", "l-1"): endpoint_slice("a", "l-1", "leaving", [{"addresses": ["10.0.0.9"]}])}
    source.apply(table)
    assert sorted(table.models) == ["a/kept", "a/leaving"]
    leaving["metadata"]["annotations"] = {"inference.ai.example.com/router": "false"}
    kept["metadata"]["annotations"] = {"inference.ai.example.com/router": "true"}
    source.apply(table)
    assert sorted(table.models) == ["a/kept"], "opted out: gone from the table, so from /v1/models and routing"
