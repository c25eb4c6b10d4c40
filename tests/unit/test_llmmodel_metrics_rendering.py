"""What the role renders for the server's Prometheus metrics (docs/monitoring.md): the flag a preset
turns them on with, the PodMonitor that scrapes them, spec.serve.metrics opting out or naming the
path, and what status.server says. The role's real tasks and templates, run by ansible-playbook
(render_helpers.py)."""

from __future__ import annotations

from render_helpers import GIB, case, model, render, server_container

import pytest

LLAMA = {"pulled": {"gguf": "tiny.gguf", "size": GIB}}
NOT_SERVED = {"objects": [{"kind": "PodMonitor", "name": "m", "action": "not served"}]}

CASES = {
    "vllm": case(model(runtime="vllm")),
    "llamacpp": case(model(runtime="llamacpp", args=["--ctx-size", "2048"]), **LLAMA),
    "llamacpp opted out": case(model(runtime="llamacpp", metrics={"enabled": False}), **LLAMA),
    "llamacpp other path": case(model(runtime="llamacpp", metrics={"path": "/prom"}), **LLAMA),
    "ollama": case(model(runtime="ollama", modelFile="chat.gguf")),
    "custom": case(model(image="registry.example/server:1")),
    "custom with a path": case(model(image="registry.example/server:1", metrics={"path": "/stats"})),
    "no PodMonitor kind": {**case(model(runtime="vllm")), "applied": NOT_SERVED},
    "weights not ready": case(model(runtime="vllm"), weights_ready=False, job_state="running"),
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return render(CASES, tmp_path_factory.mktemp("render-metrics"))


def server_status(result):
    return result["state"]["status"]["server"]


def test_vllm_is_scraped_by_a_pod_monitor_that_selects_its_server_pods(rendered):
    result = rendered["vllm"]
    monitor = result["objects"]["PodMonitor"]
    deployment = result["objects"]["Deployment"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["name"] == "m" and monitor["metadata"]["namespace"] == "ns"
    # One selector finds every model's: the labels every child of the operator carries.
    assert monitor["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "llm-operator"
    assert monitor["metadata"]["labels"]["inference.ai.example.com/model"] == "m"
    # It selects exactly the server's pods, and scrapes the container port the server listens on.
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector == deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["port"] in [port["name"] for port in server_container(result)["ports"]]
    assert {"sourceLabels": ["__meta_kubernetes_pod_label_inference_ai_example_com_model"], "targetLabel": "model",
            "action": "replace"} in endpoint["relabelings"]
    assert server_status(result)["metricsPath"] == "/metrics"
    assert server_status(result)["metricsReason"].endswith("; PodMonitor m scrapes it")
    # The Deployment records that a PodMonitor is wanted, so that it is removed once it is not.
    assert deployment["metadata"]["annotations"]["inference.ai.example.com/pod-monitor"] == "true"


def test_llamacpp_turns_its_metrics_on_before_the_users_args(rendered):
    args = server_container(rendered["llamacpp"])["args"]
    assert args.index("--metrics") < args.index("--ctx-size")
    assert rendered["llamacpp"]["objects"]["PodMonitor"]["spec"]["podMetricsEndpoints"][0]["path"] == "/metrics"


def test_opting_out_drops_the_flag_and_the_pod_monitor(rendered):
    result = rendered["llamacpp opted out"]
    assert "--metrics" not in server_container(result)["args"]
    assert "PodMonitor" not in result["objects"]
    assert server_status(result)["metricsPath"] is None
    assert "spec.serve.metrics.enabled is false" in server_status(result)["metricsReason"]
    assert "inference.ai.example.com/pod-monitor" not in result["objects"]["Deployment"]["metadata"]["annotations"]
    assert result["server"]["metrics"]["scrape"] is False


def test_metrics_settings_do_not_roll_the_pods(rendered):
    # The configuration hash leaves spec.serve.metrics out: a new path changes only the PodMonitor
    # (turning the flag off or on changes the pod template itself).
    assert rendered["llamacpp other path"]["hash"] == rendered["llamacpp opted out"]["hash"]
    assert rendered["llamacpp other path"]["objects"]["PodMonitor"]["spec"]["podMetricsEndpoints"][0]["path"] == "/prom"


def test_ollama_has_no_metrics_and_says_so(rendered):
    result = rendered["ollama"]
    assert "PodMonitor" not in result["objects"]
    assert server_status(result)["metricsPath"] is None
    assert server_status(result)["metricsReason"].startswith("Ollama serves no Prometheus metrics")


def test_custom_is_scraped_only_where_the_path_is_named(rendered):
    assert "PodMonitor" not in rendered["custom"]["objects"]
    assert "spec.serve.metrics.path" in server_status(rendered["custom"])["metricsReason"]
    assert server_container(rendered["custom"]).get("args") is None
    monitor = rendered["custom with a path"]["objects"]["PodMonitor"]
    assert monitor["spec"]["podMetricsEndpoints"][0]["path"] == "/stats"


def test_a_cluster_without_the_kind_is_told_in_the_status(rendered):
    reason = server_status(rendered["no PodMonitor kind"])["metricsReason"]
    assert reason.endswith("; the cluster serves no PodMonitor kind (monitoring.coreos.com/v1, the Prometheus Operator): "
                           "scrape it yourself")


def test_nothing_is_scraped_before_the_server_exists(rendered):
    assert set(rendered["weights not ready"]["objects"]) == {"PersistentVolumeClaim"}
