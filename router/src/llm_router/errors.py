"""Errors in the OpenAI shape: {"error": {"message", "type", "code"}}.

A message says what happened and what to do; it never carries a pod address, a credential or a
client-chosen string longer than a name.
"""

import json

REASONS = {
    400: b"Bad Request",
    401: b"Unauthorized",
    404: b"Not Found",
    405: b"Method Not Allowed",
    408: b"Request Timeout",
    413: b"Content Too Large",
    429: b"Too Many Requests",
    431: b"Request Header Fields Too Large",
    500: b"Internal Server Error",
    502: b"Bad Gateway",
    503: b"Service Unavailable",
    504: b"Gateway Timeout",
}

TYPES = {
    401: "authentication_error",
    429: "rate_limit_error",
}


class RouterError(Exception):
    """An answer the router gives itself instead of the model's server."""

    def __init__(self, status: int, code: str, message: str, retry_after: int | None = None, close: bool = False):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after
        self.close = close

    def body(self) -> bytes:
        kind = TYPES.get(self.status, "invalid_request_error" if self.status < 500 else "server_error")
        return json.dumps({"error": {"message": self.message, "type": kind, "code": self.code}}).encode()


def shown(name: object, limit: int = 128) -> str:
    """A client-supplied name as it may appear in a message: a string, printable, bounded."""
    text = name if isinstance(name, str) else json.dumps(name)[:limit]
    text = "".join(c if c.isprintable() else "?" for c in text[:limit])
    return text + ("..." if len(name if isinstance(name, str) else text) > limit else "")
