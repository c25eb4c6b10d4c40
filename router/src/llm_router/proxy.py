"""Forwarding one request to a replica and passing its response back piece by piece.

The retry rule: a request whose attempt failed before any response byte came back (connection
refused, reset or closed, or no connection within `connect_timeout`) is sent once more, to another
replica, if the model has one. Nothing reached the client then, so the retry is invisible to it.
Once the response head is written to the client, nothing is retried: a stream cut off later ends with
an error event (server-sent events) and the connection closed without the body's end, which every
HTTP client reports.
"""

import asyncio
import logging
import time

from .errors import REASONS, RouterError
from .upstream import connect

LOG = logging.getLogger("llm_router.proxy")

# Response headers that describe one hop, not the response: the router sets its own.
HOP_BY_HOP = frozenset(
    (
        b"connection",
        b"keep-alive",
        b"transfer-encoding",
        b"content-length",
        b"te",
        b"trailer",
        b"upgrade",
        b"proxy-connection",
        b"proxy-authenticate",
    )
)
# Request headers passed on to the server; everything else (Authorization, cookies) stays here.
FORWARDED = (b"content-type", b"accept", b"user-agent", b"x-request-id")
RETRYABLE = frozenset(("refused", "connect_timeout", "reset", "closed"))
# An answer's last read shorter than this is read together with the one before: a stream's usage
# chunk can arrive in the read before the one that carries `data: [DONE]`.
USAGE_WINDOW = 4096
STREAM_CUT = (
    b'data: {"error": {"message": "The model\'s server ended the stream before its end.", '
    b'"type": "server_error", "code": "upstream_closed"}}\n\n'
)


class Exchange:
    """One attempt: the upstream connection's callbacks write straight to the client connection."""

    __slots__ = (
        "client",
        "upstream",
        "future",
        "sent_at",
        "latency",
        "status",
        "chunked",
        "event_stream",
        "model",
        "metrics",
        "keep_alive",
        "head",
        "tail",
        "before",
    )

    def __init__(self, client, upstream, model_name, metrics):
        self.client = client
        self.upstream = upstream
        self.future = client.loop.create_future()
        self.sent_at = time.monotonic()
        self.status = 0
        self.chunked = False
        self.event_stream = False
        self.model = model_name
        self.metrics = metrics
        self.keep_alive = False
        self.head = None  # the response head, written with the first body piece read with it
        # The body pieces of the last two reads that brought any (references, not copies): where an
        # answer's `usage` is, read once at its end (metrics.usage). None until the first body byte.
        self.tail = None
        self.before = None

    def on_head(self, status: int, headers, upstream_keep_alive: bool) -> None:
        self.metrics.upstream_latency[self.model].observe(time.monotonic() - self.sent_at)
        self.status = status
        client = self.client
        if client.closed:
            return  # the client went; its task's cancellation closes this exchange
        request = client.current
        lines = [b"HTTP/1.1 %d %s\r\n" % (status, REASONS.get(status, b"OK"))]
        length = None
        for name, value in headers:
            lower = name.lower()
            if lower == b"content-length":
                length = value
            elif lower not in HOP_BY_HOP:
                lines.append(name + b": " + value + b"\r\n")
                if lower == b"content-type" and value.startswith(b"text/event-stream"):
                    self.event_stream = True
        if length is not None:
            lines.append(b"content-length: " + length + b"\r\n")
        elif request.http11:
            self.chunked = True
            lines.append(b"transfer-encoding: chunked\r\n")
        self.keep_alive = request.keep_alive and (length is not None or request.http11)
        if not self.keep_alive:
            lines.append(b"connection: close\r\n")
        lines.append(b"\r\n")
        self.head = b"".join(lines)

    def on_body(self, pieces, end: bool) -> None:
        """What one read from the server brought, written to the client at once, in one write."""
        if pieces:
            if self.tail is None:
                self.metrics.first_byte_latency[self.model].observe(time.monotonic() - self.sent_at)
            self.before = self.tail
            self.tail = pieces
        client = self.client
        if client.closed:
            return
        out = []
        if self.head is not None:
            out.append(self.head)
            self.head = None
            client.start_response(self.chunked)
        if self.chunked:
            if pieces:
                out.append(b"%x\r\n%s\r\n" % (sum(map(len, pieces)), b"".join(pieces)))
            if end:
                out.append(b"0\r\n\r\n")
        else:
            out.extend(pieces)
        if out:
            client.transport.write(b"".join(out) if len(out) > 1 else out[0])

    def on_end(self) -> None:
        metrics = self.metrics
        metrics.duration[self.model].observe(time.monotonic() - self.sent_at)
        if 200 <= self.status < 300 and self.tail is not None:
            tail = b"".join(self.tail)
            if len(tail) < USAGE_WINDOW and self.before is not None:
                tail = b"".join(self.before) + tail
            metrics.usage(self.model, tail)
        if not self.future.done():
            self.future.set_result(None)

    def on_fail(self, kind: str, got_bytes: bool) -> None:
        if not self.future.done():
            self.future.set_result((kind, got_bytes))

    def pause(self) -> None:
        if self.upstream.exchange is self:  # not a connection already back in the pool
            self.upstream.pause()

    def resume(self) -> None:
        if self.upstream.exchange is self:
            self.upstream.resume()


def upstream_request(request, model, endpoint) -> bytes:
    body = request.body
    lines = [
        b"%s %s%s HTTP/1.1\r\nhost: %s:%d\r\ncontent-length: %d\r\n"
        % (
            request.method,
            request.path,
            b"?" + request.query if request.query else b"",
            endpoint.host.encode(),
            endpoint.port,
            len(body),
        )
    ]
    headers = request.headers
    for name in FORWARDED:
        value = headers.get(name)
        if value is not None:
            lines.append(name + b": " + value + b"\r\n")
    lines.append(b"\r\n")
    lines.append(body)
    return b"".join(lines)


class Forwarder:
    def __init__(self, settings, balancer, metrics):
        self.settings = settings
        self.balancer = balancer
        self.metrics = metrics

    async def forward(self, client, request, model) -> None:
        """Answers the client's request from one of the model's replicas; records its outcome."""
        name = model.full_name
        metrics = self.metrics
        metrics.in_flight[name] += 1
        code = 499  # the client went away before an answer (nginx's code for it)
        try:
            code = await self._attempts(client, request, model)
        except RouterError as error:
            code = error.status
            if not client.head_sent:
                client.respond_error(error)
        except Exception:  # a bug must cost one request, answered, not a hung connection
            LOG.exception("request to model %s failed", name)
            code = 500
            if client.head_sent:
                client.abort()
            else:
                client.respond_error(RouterError(500, "internal_error", "The router failed on this request."))
        finally:
            metrics.in_flight[name] -= 1
            metrics.request_done(name, code)

    async def _attempts(self, client, request, model) -> int:
        tried = None
        while True:
            endpoint = await self.balancer.acquire(model, exclude=tried)
            try:
                outcome, exchange = await self._attempt(client, request, model, endpoint)
            finally:
                self.balancer.release(model, endpoint)
            if outcome is None:
                client.finish(exchange.keep_alive)
                return exchange.status
            kind, got_bytes = outcome
            self.metrics.upstream_errors[(model.full_name, kind)] += 1
            if client.head_sent:
                # cut mid-response: the client must see it failed
                if exchange.event_stream and exchange.chunked and not client.closed:
                    client.transport.write(b"%x\r\n%s\r\n" % (len(STREAM_CUT), STREAM_CUT))
                client.abort()
                return 504 if kind == "timeout" else 502
            if (
                kind in RETRYABLE
                and not got_bytes
                and tried is None
                and any(other is not endpoint for other in model.endpoints)
            ):
                self.metrics.retries[model.full_name] += 1
                tried = endpoint
                continue
            raise failure(kind, got_bytes, model, self.settings)

    async def _attempt(self, client, request, model, endpoint):
        upstream = endpoint.pool.get() if endpoint.pool is not None else None
        if upstream is None:
            try:
                upstream = await connect(endpoint, self.settings)
            except TimeoutError:
                return ("connect_timeout", False), None
            except OSError:
                return ("refused", False), None
        exchange = Exchange(client, upstream, model.full_name, self.metrics)
        client.exchange = exchange
        upstream.send(exchange, upstream_request(request, model, endpoint))
        try:
            return await exchange.future, exchange
        except asyncio.CancelledError:
            upstream.exchange = None
            upstream.close()  # the client went: the server sees its connection close and stops
            raise


def failure(kind: str, got_bytes: bool, model, settings) -> RouterError:
    name = model.full_name
    if kind == "timeout":
        return RouterError(
            504,
            "upstream_timeout",
            f"The server of model {name} did not answer within {settings.response_timeout:g} s.",
        )
    if kind == "connect_timeout":
        return RouterError(
            504,
            "upstream_connect_timeout",
            f"No connection to a server of model {name} within {settings.connect_timeout:g} s.",
        )
    what = {
        "refused": "refused the connection",
        "reset": "reset the connection before answering",
        "closed": "closed the connection before answering",
        "invalid_response": "sent a response that is not valid HTTP",
    }.get(kind, "failed")
    return RouterError(502, "upstream_error", f"The server of model {name} {what}.")
