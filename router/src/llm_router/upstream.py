"""The server side: pooled keep-alive HTTP/1.1 connections to the models' replicas.

A connection carries one exchange at a time and hands what it parses straight to it from the
parser's callbacks (no queue, no copy): the response head, each batch of body pieces as it arrives,
the end, or the failure, with whether any response byte had arrived. Idle connections go back to
their replica's pool (newest first) and are closed after `pool_idle_timeout`, before the servers'
own keep-alive would close them under a new request.
"""

import asyncio
import time

import httptools


class Pool:
    __slots__ = ("idle", "closed", "limit")

    def __init__(self, limit: int):
        self.idle = []
        self.closed = False
        self.limit = limit

    def get(self):
        idle = self.idle
        while idle:
            connection = idle.pop()
            if connection.usable:
                return connection
        return None

    def put(self, connection) -> None:
        if self.closed or len(self.idle) >= self.limit:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        self.idle.append(connection)

    def expire(self, before: float) -> None:
        stale = [connection for connection in self.idle if connection.idle_since < before]
        if stale:
            self.idle = [connection for connection in self.idle if connection.idle_since >= before]
            for connection in stale:
                connection.close()

    def close(self) -> None:
        self.closed = True
        for connection in self.idle:
            connection.close()
        self.idle = []


class UpstreamConnection(asyncio.Protocol):
    def __init__(self, pool: Pool, settings):
        self.pool = pool
        self.settings = settings
        self.transport = None
        self.exchange = None
        self.parser = None
        self.usable = False
        self.deadline = 0.0
        self.idle_since = 0.0
        self.got_bytes = False
        self.head_done = False
        self.done = False
        self.keep_alive = False
        self.status = 0
        self.headers = []
        self.pieces = []

    def connection_made(self, transport):
        self.transport = transport
        self.usable = True

    def send(self, exchange, data: bytes) -> None:
        self.exchange = exchange
        self.parser = httptools.HttpResponseParser(self)
        self.got_bytes = self.head_done = self.done = False
        self.headers = []
        self.deadline = time.monotonic() + self.settings.response_timeout
        self.transport.write(data)

    def data_received(self, data):
        exchange = self.exchange
        if exchange is None:
            self.close()  # bytes nobody asked for: the connection cannot be trusted again
            return
        self.got_bytes = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self._fail("invalid_response")
            return
        if self.pieces or self.head_done:
            # one write to the client per read from the server: head, pieces and end together
            pieces, self.pieces = self.pieces, []
            exchange.on_body(pieces, self.done)
        if self.done:
            keep = self.keep_alive
            self.exchange = None
            self.deadline = 0.0
            exchange.on_end()
            if keep and self.usable:
                self.pool.put(self)
            else:
                self.close()
        else:
            self.deadline = time.monotonic() + (
                self.settings.idle_stream_timeout if self.head_done else self.settings.response_timeout
            )

    def eof_received(self):
        return False

    def connection_lost(self, exc):
        self.usable = False
        if self.exchange is not None:
            self._fail("reset" if exc is not None else "closed")

    # --- httptools callbacks -----------------------------------------------------------------
    def on_header(self, name, value):
        self.headers.append((name, value))

    def on_headers_complete(self):
        self.head_done = True
        self.exchange.on_head(self.parser.get_status_code(), self.headers, self.parser.should_keep_alive())

    def on_body(self, body):
        self.pieces.append(body)

    def on_message_complete(self):
        self.done = True
        self.keep_alive = self.parser.should_keep_alive()  # only valid inside the parser's callbacks

    # --- control --------------------------------------------------------------------------------
    def _fail(self, kind: str) -> None:
        exchange, self.exchange = self.exchange, None
        self.close()
        if exchange is not None:
            exchange.on_fail(kind, self.got_bytes)

    def expire(self, now: float) -> None:
        if self.exchange is not None and self.deadline and now >= self.deadline:
            self._fail("timeout")

    def close(self) -> None:
        self.usable = False
        if self.transport is not None:
            self.transport.abort()  # at once: a server generating for a gone client stops now

    def pause(self) -> None:
        if self.transport is not None:
            self.transport.pause_reading()

    def resume(self) -> None:
        if self.transport is not None:
            self.transport.resume_reading()


async def connect(endpoint, settings):
    """A new connection to the endpoint; OSError or TimeoutError when it cannot be had."""
    if endpoint.pool is None:
        endpoint.pool = Pool(settings.pool_max_idle)
    pool = endpoint.pool
    loop = asyncio.get_running_loop()
    _, connection = await asyncio.wait_for(
        loop.create_connection(lambda: UpstreamConnection(pool, settings), endpoint.host, endpoint.port),
        settings.connect_timeout,
    )
    return connection
