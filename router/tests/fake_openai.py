"""A small OpenAI-compatible server for the router's tests and benchmark (asyncio + httptools).

What it answers is steered by a `fake` object in the request body (the router passes bodies on):
  {"fake": {"chunks": 5, "interval": 0.01, "delay": 0.2, "cut_after": 2, "hang": true, "size": 20}}
delay: seconds before the response head; chunks/interval: a server-sent event stream (with "stream":
true); a stream asked with `stream_options.include_usage` ends with a usage chunk (and carries
`"usage": null` in the others, as vLLM writes them); done_after: seconds between the last chunk and
`[DONE]`; cut_after: the connection is dropped after that many chunks; hang: no answer at all.
Each event carries the monotonic time it was sent (`t`), so a client on this machine can measure the
delay a proxy adds to each chunk. Counters say what happened: requests, in flight, streams cut off by
the client (`cancelled`).
"""

import asyncio
import json
import time

import httptools

DONE = b"data: [DONE]\n\n"


class FakeStats:
    def __init__(self, name: str):
        self.name = name
        self.requests = []  # (path, headers, body) of each request
        self.active = 0
        self.max_active = 0
        self.cancelled = 0
        self.completed = 0
        self.connections = set()
        self.accepted = 0


class FakeConnection(asyncio.Protocol):
    def __init__(self, stats: FakeStats, record: bool):
        self.stats = stats
        self.record = record
        self.parser = httptools.HttpRequestParser(self)
        self.transport = None
        self.task = None
        self.url = b""
        self.headers = {}
        self.body = []

    def connection_made(self, transport):
        self.transport = transport
        self.stats.connections.add(self)
        self.stats.accepted += 1

    def data_received(self, data):
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()

    def connection_lost(self, exc):
        self.stats.connections.discard(self)
        if self.task is not None and not self.task.done():
            self.stats.cancelled += 1
            self.task.cancel()

    def on_message_begin(self):
        self.url, self.headers, self.body = b"", {}, []

    def on_url(self, url):
        self.url += url

    def on_header(self, name, value):
        self.headers[name.lower()] = value

    def on_body(self, body):
        self.body.append(body)

    def on_message_complete(self):
        raw = b"".join(self.body)
        path = httptools.parse_url(self.url).path
        if self.record:
            self.stats.requests.append((path, dict(self.headers), raw))
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        fake = body.get("fake") or {}
        if not fake and not body.get("stream"):
            self._write_json(path, body)  # the fast path: answered from the callback
            self.stats.completed += 1
            return
        self.task = asyncio.ensure_future(self._answer(path, body, fake))

    def _write_json(self, path, body):
        if path == b"/v1/embeddings":
            answer = {
                "object": "list",
                "data": [{"object": "embedding", "index": 0, "embedding": [0.0] * 8}],
                "model": body.get("model"),
                "replica": self.stats.name,
                "usage": {"prompt_tokens": 3, "total_tokens": 3},
            }
        else:
            answer = {
                "id": "cmpl-1",
                "object": "chat.completion",
                "model": body.get("model"),
                "replica": self.stats.name,
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "Paris."}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
            }
        data = json.dumps(answer).encode()
        self.transport.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-replica: %s\r\n"
            b"content-length: %d\r\n\r\n%s" % (self.stats.name.encode(), len(data), data)
        )

    async def _answer(self, path, body, fake):
        stats = self.stats
        stats.active += 1
        stats.max_active = max(stats.max_active, stats.active)
        try:
            if fake.get("hang"):
                await asyncio.sleep(3600)
            if fake.get("delay"):
                await asyncio.sleep(fake["delay"])
            if not body.get("stream"):
                self._write_json(path, body)
            else:
                await self._stream(body, fake)
            stats.completed += 1
        finally:
            stats.active -= 1
            self.task = None

    async def _stream(self, body, fake):
        write = self.transport.write
        write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-replica: %s\r\n"
            b"transfer-encoding: chunked\r\n\r\n" % self.stats.name.encode()
        )
        interval = fake.get("interval", 0)
        pad = "x" * fake.get("size", 0)
        usage = (body.get("stream_options") or {}).get("include_usage")
        count = fake.get("chunks", 5)
        for index in range(count):
            if index == fake.get("cut_after"):
                self.transport.abort()
                return
            if interval:
                await asyncio.sleep(interval)
            event = {
                "object": "chat.completion.chunk",
                "model": body.get("model"),
                "i": index,
                "t": time.monotonic(),
                "choices": [{"index": 0, "delta": {"content": pad or "tok"}}],
            }
            if usage:
                event["usage"] = None
            data = b"data: " + json.dumps(event).encode() + b"\n\n"
            write(b"%x\r\n%s\r\n" % (len(data), data))
        if usage:
            event = {
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": {
                    "prompt_tokens": 5,
                    "completion_tokens": count,
                    "total_tokens": 5 + count,
                    "prompt_tokens_details": {"cached_tokens": 0},
                },
            }
            data = b"data: " + json.dumps(event).encode() + b"\n\n"
            write(b"%x\r\n%s\r\n" % (len(data), data))
        if fake.get("done_after"):
            await asyncio.sleep(fake["done_after"])
        write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(DONE), DONE))


async def start_fake(name: str = "fake", host: str = "127.0.0.1", port: int = 0, record: bool = True):
    """A running fake server: (asyncio server, its port, its FakeStats)."""
    stats = FakeStats(name)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: FakeConnection(stats, record), host, port, backlog=4096)
    return server, server.sockets[0].getsockname()[1], stats


def main() -> None:
    """`python fake_openai.py PORT`: a fake on 127.0.0.1 for the benchmark, until killed."""
    import sys

    import uvloop

    async def run():
        await start_fake("bench", port=int(sys.argv[1]), record=False)
        await asyncio.Event().wait()

    uvloop.run(run())


if __name__ == "__main__":
    main()
