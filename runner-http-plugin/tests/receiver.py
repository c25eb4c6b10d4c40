"""A stand-in for ansible-operator's event receiver, served on a unix socket.

It answers the way internal/ansible/runner/eventapi/eventapi.go (ansible-operator-plugins v1.42) does:
404 for another path, 405 for another method, 415 unless the content type is application/json,
400 unless the body is a JSON object whose ``created`` (when present) parses with the Go layout
``2006-01-02T15:04:05.999999999+00:00``, else 204. Every request is recorded, accepted or not.
"""

from __future__ import annotations

import json
import re
import socketserver
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler

# The only timestamp shape EventTime.UnmarshalJSON accepts: UTC written as +00:00, up to 9 fraction digits.
GO_EVENT_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?\+00:00$")


@dataclass
class Request:
    method: str
    path: str
    content_type: str
    body: bytes
    answer: int

    def json(self):
        return json.loads(self.body)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class EventReceiver:
    def __init__(self, socket_path: str, url_path: str = "/events/", force_status: int | None = None):
        self.socket_path = socket_path
        self.url_path = url_path
        self.force_status = force_status
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server = _Server(socket_path, self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    @property
    def accepted_documents(self) -> list[dict]:
        with self._lock:
            return [r.json() for r in self.requests if r.answer == 204]

    @property
    def events(self) -> list[dict]:
        """What ansible-operator keeps: accepted documents with a uuid."""
        return [d for d in self.accepted_documents if d.get("uuid")]

    @property
    def statuses(self) -> list[dict]:
        return [d for d in self.accepted_documents if not d.get("uuid")]

    def _judge(self, method: str, path: str, content_type: str, body: bytes) -> int:
        if self.force_status is not None:
            return self.force_status
        if path != self.url_path:
            return 404
        if method != "POST":
            return 405
        if content_type.split(";")[0] != "application/json":
            return 415
        try:
            document = json.loads(body)
        except ValueError:
            return 400
        if not isinstance(document, dict):
            return 400
        created = document.get("created")
        if created is not None and not (isinstance(created, str) and GO_EVENT_TIME.match(created)):
            return 400
        return 204

    def _handler_class(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                content_type = self.headers.get("Content-Type", "")
                answer = receiver._judge(self.command, self.path, content_type, body)
                with receiver._lock:
                    receiver.requests.append(Request(self.command, self.path, content_type, body, answer))
                self.send_response(answer)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_GET = do_PUT = _handle

            def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
                pass

        return Handler
