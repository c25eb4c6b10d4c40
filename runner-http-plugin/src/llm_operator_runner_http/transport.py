"""POST a JSON document over a unix stream socket with the standard library only."""

from __future__ import annotations

import http.client
import json
import socket


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTPConnection whose transport is a unix stream socket instead of TCP."""

    def __init__(self, socket_path: str, timeout: float):
        # The host only ends up in the Host header; the socket path is the address.
        super().__init__("localhost", timeout=timeout)
        self.socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def post_json(socket_path: str, path: str, document: object, headers: dict[str, str], timeout: float) -> tuple[int, bytes]:
    """POST ``document`` as JSON to ``path`` on the server at ``socket_path``; return status and body.

    Raises OSError or http.client.HTTPException when the receiver cannot be reached.
    """
    body = json.dumps(document, default=str).encode("utf-8")
    request_headers = dict(headers)
    request_headers["Content-Type"] = "application/json"
    conn = UnixHTTPConnection(socket_path, timeout)
    try:
        conn.request("POST", path, body=body, headers=request_headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()
