"""The client side: an HTTP/1.1 server as an asyncio Protocol on httptools' parser (llhttp).

It enforces the limits a public port needs before any handler runs: request line and headers in
`max_header_bytes` and `max_headers` (431), a body within `max_body_bytes` (413, decided from
Content-Length before the body is read when it is declared), headers within `header_timeout` and the
body within `body_timeout` of their first byte (slowloris: the connection is closed), an idle
keep-alive connection closed after `keepalive_timeout`. Deadlines are checked by one sweep a
half-second for all connections, not one timer per request.
"""

import asyncio
import time

import httptools

from .errors import REASONS, RouterError

IDLE, HEADERS, BODY = 0, 1, 2
MAX_PIPELINED = 4
LINGER = 2.0  # seconds an erring connection still reads (and drops) what the client sends


class Request:
    __slots__ = ("method", "path", "query", "headers", "body", "keep_alive", "http11")

    def __init__(self, method, path, query, headers, body, keep_alive, http11):
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive
        self.http11 = http11


class ClientConnection(asyncio.Protocol):
    """One client connection. `app.handle(request, self)` answers each request in turn."""

    def __init__(self, app, settings, connections: set):
        self.app = app
        self.settings = settings
        self.connections = connections
        self.transport = None
        self.loop = None  # read once per connection: asyncio.get_running_loop() costs a getpid() on 3.11
        self.parser = httptools.HttpRequestParser(self)
        self.reading = IDLE
        self.deadline = 0.0
        self.closed = False
        self.failure = None  # a RouterError raised inside a parser callback
        self.lingering = False
        self.current = None  # the request being answered
        self.task = None  # its handler's task, cancelled if the client goes
        self.exchange = None  # its upstream exchange (flow control)
        self.pipelined = []
        self.head_sent = False
        self.chunked = False
        self._reset()

    def _reset(self):
        self.url = b""
        self.headers = {}
        self.header_bytes = 0
        self.header_count = 0
        self.body = []
        self.body_bytes = 0

    # --- asyncio.Protocol --------------------------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        self.loop = asyncio.get_running_loop()
        self.connections.add(self)
        self.deadline = time.monotonic() + self.settings.keepalive_timeout
        if len(self.connections) > self.settings.max_connections:
            self.respond_error(
                RouterError(
                    503, "too_many_connections", "The router is at its connection limit.", retry_after=1, close=True
                )
            )

    def connection_lost(self, exc):
        self.closed = True
        self.connections.discard(self)
        if self.task is not None:
            self.task.cancel()  # the client went: its upstream request is cancelled with it

    def pause_writing(self):
        if self.exchange is not None:
            self.exchange.pause()

    def resume_writing(self):
        if self.exchange is not None:
            self.exchange.resume()

    def data_received(self, data):
        if self.lingering:
            return
        if self.reading == IDLE:
            self.reading = HEADERS
            self.deadline = time.monotonic() + self.settings.header_timeout
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.respond_error(RouterError(400, "upgrade_refused", "Protocol upgrades are not served.", close=True))
        except httptools.HttpParserError:
            failure = self.failure or RouterError(400, "invalid_http", "The request is not valid HTTP/1.1.")
            failure.close = True
            self.respond_error(failure)

    # --- httptools callbacks -----------------------------------------------------------------
    def on_message_begin(self):
        self._reset()
        if self.reading == IDLE:
            self.reading = HEADERS
            self.deadline = time.monotonic() + self.settings.header_timeout

    def on_url(self, url):
        self.url += url
        self._count_header_bytes(len(url))

    def on_header(self, name, value):
        self.header_count += 1
        self._count_header_bytes(len(name) + len(value) + 4)
        if self.header_count > self.settings.max_headers:
            self._fail(431, "too_many_headers", f"A request may carry at most {self.settings.max_headers} headers.")
        self.headers[name.lower()] = value

    def _count_header_bytes(self, size):
        self.header_bytes += size
        if self.header_bytes > self.settings.max_header_bytes:
            self._fail(
                431,
                "headers_too_large",
                f"The request line and headers may take at most {self.settings.max_header_bytes} bytes.",
            )

    def on_headers_complete(self):
        self.reading = BODY
        self.deadline = time.monotonic() + self.settings.body_timeout
        declared = self.headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.settings.max_body_bytes:
            self._too_large()

    def on_body(self, body):
        self.body_bytes += len(body)
        if self.body_bytes > self.settings.max_body_bytes:
            self._too_large()
        self.body.append(body)

    def on_message_complete(self):
        self.reading = IDLE
        url = httptools.parse_url(self.url)
        request = Request(
            self.parser.get_method(),
            url.path,
            url.query,
            self.headers,
            b"".join(self.body),
            self.parser.should_keep_alive(),
            self.parser.get_http_version() == "1.1",
        )
        self._reset()
        if self.current is not None:
            if len(self.pipelined) >= MAX_PIPELINED:
                self._fail(400, "too_many_pipelined", "Too many pipelined requests.")
            self.pipelined.append(request)
            return
        self._start(request)

    def _fail(self, status, code, message):
        self.failure = RouterError(status, code, message, close=True)
        raise self.failure

    def _too_large(self):
        self._fail(413, "request_too_large", f"The request body may be at most {self.settings.max_body_bytes} bytes.")

    # --- answering -----------------------------------------------------------------------------
    def _start(self, request):
        self.current = request
        self.head_sent = False
        self.deadline = 0.0 if self.reading == IDLE else self.deadline
        self.app.handle(request, self)

    def respond(
        self,
        status: int,
        body: bytes,
        content_type: bytes = b"application/json",
        extra: bytes = b"",
        close: bool = False,
    ) -> None:
        """A whole response at once; the request is then done."""
        if self.closed:
            return
        request = self.current
        close = close or request is None or not request.keep_alive
        head = b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n%s%s\r\n" % (
            status,
            REASONS.get(status, b"OK"),
            content_type,
            len(body),
            extra,
            b"connection: close\r\n" if close else b"",
        )
        self.transport.write(head + body)
        self.head_sent = True
        self.finish(not close)

    def respond_error(self, error: RouterError) -> None:
        extra = b"retry-after: %d\r\n" % error.retry_after if error.retry_after is not None else b""
        self.respond(error.status, error.body(), extra=extra, close=error.close)

    def start_response(self, chunked: bool) -> None:
        """The response head is being written: from now on the request cannot be answered otherwise."""
        self.head_sent = True
        self.chunked = chunked

    def finish(self, keep_alive: bool) -> None:
        """The current response is complete: close, or take the next request."""
        self.current = None
        self.task = None
        self.exchange = None
        self.head_sent = False
        if not keep_alive or self.closed:
            self.close()
            return
        if self.pipelined:
            self._start(self.pipelined.pop(0))
        elif self.reading == IDLE:
            self.deadline = time.monotonic() + self.settings.keepalive_timeout

    def close(self) -> None:
        """Closes after what was written. A client still sending (a body refused with 413) would see
        its send fail and maybe never read the answer, so the connection first half-closes and keeps
        reading, dropping it, for up to LINGER seconds (nginx's lingering close)."""
        if self.closed or self.lingering:
            return
        if self.reading != IDLE and self.transport.can_write_eof():
            self.lingering = True
            self.deadline = time.monotonic() + LINGER
            self.transport.write_eof()
            return
        self.closed = True
        self.transport.close()

    def abort(self) -> None:
        """Ends the connection at once, so the client sees the response is incomplete."""
        self.closed = True
        self.transport.abort()

    def expire(self, now: float) -> None:
        """Called by the sweep: enforces the header, body and keep-alive deadlines."""
        if self.closed or not self.deadline or now < self.deadline:
            return
        if self.lingering:
            self.abort()
            return
        if self.reading == IDLE:
            if self.current is None:
                self.close()  # idle keep-alive
            return
        if self.current is None and not self.head_sent:
            self.respond_error(RouterError(408, "request_timeout", "The request was not received in time.", close=True))
        else:
            self.abort()
