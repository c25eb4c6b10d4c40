"""The two functions ansible-runner calls on a plugin, and the settings they read."""

from __future__ import annotations

import http.client
import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping

from .transport import post_json

DEFAULT_TIMEOUT_SECONDS = 10.0
# Past this many failed POSTs in one run, further failures are counted, not printed.
MAX_REPORTED_FAILURES = 5

class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time of the record."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


# ansible-runner's CLI raises the root logger's level to 99 and gives it a NullHandler, which would
# swallow our warnings; this logger therefore prints to stderr on its own.
logger = logging.getLogger("llm_operator_runner_http")
if not logger.handlers:
    _handler = _StderrHandler()
    _handler.setFormatter(logging.Formatter("runner-http plugin: %(levelname)s: %(message)s"))
    logger.addHandler(_handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False

_failures = {"count": 0}


@dataclass(frozen=True)
class ReceiverSettings:
    """Where to POST, read from ``env/settings`` (``RUNNER_HTTP_URL``/``RUNNER_HTTP_PATH`` override).

    ``url`` is the path of a unix stream socket.
    """

    url: str | None
    path: str = "/"
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT_SECONDS

    @classmethod
    def from_runner_config(cls, runner_config: Any) -> "ReceiverSettings":
        settings: Mapping[str, Any] = getattr(runner_config, "settings", None) or {}
        url = os.environ.get("RUNNER_HTTP_URL") or settings.get("runner_http_url") or None
        path = os.environ.get("RUNNER_HTTP_PATH") or settings.get("runner_http_path") or "/"
        headers = settings.get("runner_http_headers") or {}
        timeout = settings.get("runner_http_timeout") or DEFAULT_TIMEOUT_SECONDS
        return cls(
            url=str(url) if url else None,
            path=str(path),
            headers={str(k): str(v) for k, v in dict(headers).items()},
            timeout=float(timeout),
        )


def _describe(document: Mapping[str, Any]) -> str:
    """Name a payload in a log line without printing its content."""
    if "event" in document:
        return f"event {document.get('event')!r} (counter {document.get('counter')}, uuid {document.get('uuid')})"
    return f"status {document.get('status')!r}"


def _report_failure(document: Mapping[str, Any], reason: str) -> None:
    _failures["count"] += 1
    count = _failures["count"]
    if count <= MAX_REPORTED_FAILURES:
        logger.warning("could not deliver %s: %s", _describe(document), reason)
    if count == MAX_REPORTED_FAILURES:
        logger.warning("further delivery failures of this run are not reported")


def _send(runner_config: Any, document: Mapping[str, Any]) -> None:
    try:
        receiver = ReceiverSettings.from_runner_config(runner_config)
    except (TypeError, ValueError) as exc:
        _report_failure(document, f"invalid runner_http_* settings: {exc}")
        return
    if receiver.url is None:
        return
    if "://" in receiver.url:
        _report_failure(document, f"runner_http_url must be a unix socket path, not a URL ({receiver.url})")
        return
    try:
        status, body = post_json(receiver.url, receiver.path, document, receiver.headers, receiver.timeout)
    except (OSError, http.client.HTTPException) as exc:
        _report_failure(document, f"{type(exc).__name__}: {exc} (receiver {receiver.url})")
        return
    if not 200 <= status < 300:
        answer = body[:200].decode("utf-8", "replace").strip()
        _report_failure(document, f"receiver answered HTTP {status}: {answer}")


def _send_safely(runner_config: Any, document: Mapping[str, Any]) -> None:
    # ansible-runner does not guard plugin calls: an exception here would abort the playbook run.
    try:
        _send(runner_config, document)
    except Exception as exc:  # noqa: BLE001 - delivery is best effort by design
        _report_failure(document, f"unexpected {type(exc).__name__}: {exc}")


def event_handler(runner_config: Any, data: Mapping[str, Any]) -> None:
    """Called by ansible-runner for every event; POSTs it unchanged."""
    _send_safely(runner_config, data)


def status_handler(runner_config: Any, data: Mapping[str, Any]) -> None:
    """Called by ansible-runner for every status change; POSTs it without the process environment."""
    if data.get("status") == "starting":
        _failures["count"] = 0
    _send_safely(runner_config, {key: value for key, value in data.items() if key != "env"})
