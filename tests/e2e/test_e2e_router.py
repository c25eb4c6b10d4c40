"""The one endpoint on the real node: the router the chart installs (Service llm-operator-router, port
8000, its pods on the real node) lists two real models and streams a chat answer from one of them in
more than one piece; a model annotated out of the router leaves /v1/models.

CI time: both models pull the same GGUF from the local server and start llama.cpp side by side (about
a minute on the 2-core machine); the router's checks themselves take seconds."""

from __future__ import annotations

import http.client
import json

from kubernetes import client

from e2e_helpers import MODEL_FILE, OPERATOR_NAMESPACE, llmmodel, wait_until
from test_e2e_lifecycle import Models, namespace  # noqa: F401  (the real-node namespace fixture)

ROUTER = "llm-operator-router"
ROUTER_PORT = 8000
NAMES = ("smollm-a", "smollm-b")


def router_ip(api) -> str:
    return client.CoreV1Api(api).read_namespaced_service(ROUTER, OPERATOR_NAMESPACE).spec.cluster_ip


def model_ids(ip: str) -> set[str]:
    connection = http.client.HTTPConnection(ip, ROUTER_PORT, timeout=30)
    connection.request("GET", "/v1/models")
    response = connection.getresponse()
    assert response.status == 200, response.read()
    return {entry["id"] for entry in json.loads(response.read())["data"]}


def streamed_chat(ip: str, model: str) -> tuple[list[bytes], str]:
    """The raw pieces a streamed chat arrives in, through the router's Service VIP, and the text."""
    connection = http.client.HTTPConnection(ip, ROUTER_PORT, timeout=120)
    body = json.dumps({"model": model, "stream": True, "max_tokens": 16, "temperature": 0,
                       "messages": [{"role": "user", "content": "Name three colours."}]})
    connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    assert response.status == 200, response.read()
    assert response.getheader("Content-Type", "").startswith("text/event-stream")
    pieces = []
    while piece := response.read1(65536):
        pieces.append(piece)
    connection.close()
    text = ""
    for event in b"".join(pieces).decode().split("\n\n"):
        if event.startswith("data: {"):
            text += json.loads(event[6:])["choices"][0]["delta"].get("content") or ""
    return pieces, text


def test_two_models_answer_through_the_router_service(api, namespace, model_server, model_sha256):  # noqa: F811
    models = Models(api, namespace)
    source = {"url": f"{model_server.url}/models/{MODEL_FILE.name}", "sha256": model_sha256}
    for name in NAMES:
        models.create(llmmodel(name, source, None, purge=True))
    for name in NAMES:
        models.wait_serving(name)
    ip = router_ip(api)
    expected = {f"{namespace}/{name}" for name in NAMES}
    # The router sees a model's endpoints from its EndpointSlice a moment after the model is Serving.
    wait_until("the router to list both models", lambda: expected <= model_ids(ip), 60)
    pieces, text = streamed_chat(ip, NAMES[1])
    print(f"\n{NAMES[1]} through the router, in {len(pieces)} pieces: {text!r}")
    assert len(pieces) > 1, "the stream arrived in one piece: buffered somewhere"
    assert text.strip(), "no content in the stream"
    assert b"data: [DONE]" in pieces[-1]

    models.custom.patch_namespaced_custom_object(
        "inference.ai.example.com", "v1alpha1", namespace, "llmmodels", NAMES[0],
        {"metadata": {"annotations": {"inference.ai.example.com/router": "false"}}})
    wait_until(f"{NAMES[0]} to leave /v1/models once it opts out",
               lambda: f"{namespace}/{NAMES[0]}" not in model_ids(ip), 30)
    assert f"{namespace}/{NAMES[1]}" in model_ids(ip)
