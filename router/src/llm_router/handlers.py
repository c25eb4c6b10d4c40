"""The HTTP handlers: the OpenAI routes on the public port, metrics and health on the admin port."""

import json

from .errors import RouterError

ROUTED = frozenset((b"/v1/chat/completions", b"/v1/completions", b"/v1/embeddings"))


class App:
    """The public port: routes by the body's `model`, lists models, answers errors itself."""

    def __init__(self, settings, table, balancer, keys, metrics, forwarder):
        self.settings = settings
        self.table = table
        self.balancer = balancer
        self.keys = keys
        self.metrics = metrics
        self.forwarder = forwarder
        self.tasks = set()

    def handle(self, request, client) -> None:
        model_name = ""
        try:
            path = request.path
            if path in ROUTED:
                if request.method != b"POST":
                    raise RouterError(405, "method_not_allowed", f"{path.decode()} takes POST.")
                allowed = self.keys.authorize(request.headers.get(b"authorization"))
                model, body = self.route(request.body, allowed)
                model_name = model.full_name
                if body is not None:
                    request.body = body
                task = client.loop.create_task(self.forwarder.forward(client, request, model))
                client.task = task
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
                return
            if path == b"/v1/models":
                if request.method != b"GET":
                    raise RouterError(405, "method_not_allowed", "/v1/models takes GET.")
                allowed = self.keys.authorize(request.headers.get(b"authorization"))
                client.respond(200, self.models(allowed))
                self.metrics.request_done("", 200)
                return
            if path in (b"/healthz", b"/readyz"):
                client.respond(200, b'{"status": "ok"}')
                return
            raise RouterError(
                404,
                "unknown_url",
                "Unknown URL: the router serves /v1/chat/completions, /v1/completions, /v1/embeddings and /v1/models.",
            )
        except RouterError as error:
            self.metrics.request_done(model_name, error.status)
            client.respond_error(error)

    def route(self, raw: bytes, allowed):
        """The model the body names, and the body to send (rewritten when the server knows the model by
        another name), or a RouterError."""
        try:
            body = parse_json(raw)
        except (ValueError, UnicodeDecodeError):
            raise RouterError(400, "invalid_json", "The request body is not valid JSON.") from None
        if not isinstance(body, dict):
            raise RouterError(400, "invalid_json", "The request body must be a JSON object.")
        requested = body.get("model")
        model = self.table.resolve(requested, allowed)
        if not model.serving and not model.holds:
            reason = f", reason {model.reason}" if model.reason else ""
            raise RouterError(
                503,
                "model_not_ready",
                f"Model {model.full_name} is not serving (phase {model.phase}{reason}); "
                f"retry in {self.settings.retry_after} s.",
                retry_after=self.settings.retry_after,
            )
        if requested != model.name:
            # the model's server knows it by its name (--served-model-name / --alias)
            body["model"] = model.name
            return model, json.dumps(body).encode()
        return model, None

    def models(self, allowed) -> bytes:
        visible = self.table.visible(allowed)
        counts = {}
        for model in visible:
            counts[model.name] = counts.get(model.name, 0) + 1
        data = [
            {
                "id": model.full_name,
                "object": "model",
                "created": model.created,
                "owned_by": model.namespace,
                "aliases": [model.name] if counts[model.name] == 1 else [],
                "status": {"phase": model.phase, "reason": model.reason},
            }
            for model in sorted(visible, key=lambda model: model.full_name)
        ]
        return json.dumps({"object": "list", "data": data}).encode()


def parse_json(raw: bytes):
    """json.loads(raw), without json's guess of the encoding (1-2 µs a request) when the body is what
    every client sends, a UTF-8 object: then it is decoded as json.loads decodes UTF-8."""
    if raw[:1] == b"{" and raw[1:2] != b"\x00":
        return json.loads(raw.decode("utf-8", "surrogatepass"))
    return json.loads(raw)


class AdminApp:
    """The admin port: Prometheus metrics, liveness, readiness (the table's first sync)."""

    def __init__(self, metrics, source):
        self.metrics = metrics
        self.source = source

    def handle(self, request, client) -> None:
        if request.path == b"/metrics":
            client.respond(200, self.metrics.render(), content_type=b"text/plain; version=0.0.4")
        elif request.path == b"/healthz":
            client.respond(200, b'{"status": "ok"}')
        elif request.path == b"/readyz":
            if self.source.synced.is_set():
                client.respond(200, b'{"status": "ok"}')
            else:
                client.respond(503, b'{"status": "routing table not synced yet"}')
        else:
            client.respond(404, b'{"status": "not found"}')
