"""Download progress into the LLMModel's status, written by the puller itself.

The pull Job runs under its own ServiceAccount `<model>-puller`, whose Role allows `get` and `patch`
of `llmmodels/status` for that one model (resourceNames) and nothing else. A JSON merge patch of the
status subresource sets only `status.weights.progress`; the API server ignores anything but status
on that subresource. A status change does not trigger a reconcile of the operator, so 100 models
reporting every 10 s cost the operator nothing (docs/design.md, "Download progress").

Reports are throttled: one every PULLER_STATUS_SECONDS (10) or at every PULLER_STATUS_STEP_PERCENT
(5) of the total, whichever comes first, never two within a second, and a last one when the pull
ends. A report that fails is logged (once per kind of failure) and never fails the pull.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import requests

from .progress import Progress, human_bytes, log, register_secret

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
MERGE_PATCH = "application/merge-patch+json"
REQUEST_TIMEOUT = 5.0
MIN_GAP_SECONDS = 1.0


@dataclass(frozen=True)
class Target:
    """Where reports go: the object's API path and how to reach and authenticate to the API server."""

    object_path: str  # /apis/<group>/<version>/namespaces/<ns>/<plural>/<name>
    api_url: str
    token_file: Path
    ca_file: Path | None
    interval: float = 10.0
    step_percent: float = 5.0


def target_from_env(env: Mapping[str, str]) -> Target | None:
    """The report target, or None when PULLER_STATUS_OBJECT is not set (progress goes to the log only)."""
    path = env.get("PULLER_STATUS_OBJECT", "").strip()
    if not path:
        return None
    if not path.startswith("/apis/") or "/namespaces/" not in path or ".." in path:
        log.warning(
            "PULLER_STATUS_OBJECT must be an API path like /apis/<group>/<version>/namespaces/<ns>/<plural>/<name>;"
            " progress goes to the log only"
        )
        return None
    api_url = env.get("PULLER_KUBE_API_URL", "").strip()
    if not api_url:
        host, port = env.get("KUBERNETES_SERVICE_HOST", "").strip(), env.get("KUBERNETES_SERVICE_PORT", "").strip()
        if not host:
            log.warning(
                "no Kubernetes API server in the environment (KUBERNETES_SERVICE_HOST); progress goes to the log only"
            )
            return None
        api_url = f"https://[{host}]:{port or 443}" if ":" in host else f"https://{host}:{port or 443}"
    token_file = Path(env.get("PULLER_KUBE_TOKEN_FILE", "").strip() or SERVICE_ACCOUNT_DIR / "token")
    ca = env.get("PULLER_KUBE_CA_FILE", "").strip()
    ca_file = Path(ca) if ca else (SERVICE_ACCOUNT_DIR / "ca.crt")
    return Target(
        object_path=path.rstrip("/"),
        api_url=api_url.rstrip("/"),
        token_file=token_file,
        ca_file=ca_file if ca_file.exists() else None,
        interval=_positive(env, "PULLER_STATUS_SECONDS", 10.0),
        step_percent=_positive(env, "PULLER_STATUS_STEP_PERCENT", 5.0),
    )


def _positive(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = default
    return value if value > 0 else default


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def snapshot(done: int, total: int | None, rate: float, epoch: float) -> dict:
    """The status.weights.progress object for these figures."""
    report: dict = {"bytesDone": int(done), "bytesPerSecond": max(int(rate), 0), "updatedAt": rfc3339(epoch)}
    if total:
        percent = max(0, min(100, int(100 * done // total)))
        report.update(bytesTotal=int(total), percent=percent, summary=f"{percent}%")
        if rate > 0:
            report["etaSeconds"] = max(0, math.ceil((total - done) / rate))
    else:
        report["summary"] = human_bytes(done).replace(" ", "")
    return report


class StatusReporter:
    """Reads a Progress from a thread of its own and patches the target's status with it."""

    def __init__(
        self,
        target: Target,
        progress: Progress,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        tick: float = 1.0,
        session: requests.Session | None = None,
    ):
        self.target = target
        self.progress = progress
        self.clock, self.wall, self.tick = clock, wall, tick
        self.session = session or requests.Session()
        self.url = f"{target.api_url}{target.object_path}/status"
        self.sent = 0
        self._last_time: float | None = None
        self._last_fetched = 0
        self._last_percent = -1.0
        self._started = clock()
        self._warned: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="status-report", daemon=True)

    def start(self) -> StatusReporter:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread and send the final figures."""
        self._stop.set()
        self._thread.join(timeout=REQUEST_TIMEOUT * 2)
        self.report(self.clock())

    def _run(self) -> None:
        while not self._stop.wait(self.tick):
            now = self.clock()
            if self.due(now):
                self.report(now)

    def due(self, now: float) -> bool:
        since = now - (self._last_time if self._last_time is not None else self._started)
        if since < MIN_GAP_SECONDS:
            return False
        if since >= self.target.interval:
            return True
        percent = self.progress.percent
        if percent is None:
            return False
        # The first report as soon as the size is known; then at every step.
        return self._last_time is None or percent >= self._last_percent + self.target.step_percent

    def report(self, now: float) -> None:
        progress = self.progress
        elapsed = now - (self._last_time if self._last_time is not None else self._started)
        rate = (progress.fetched - self._last_fetched) / elapsed if elapsed > 0 else 0.0
        body = {"status": {"weights": {"progress": snapshot(progress.done, progress.total, rate, self.wall())}}}
        self._last_time, self._last_fetched = now, progress.fetched
        self._last_percent = progress.percent if progress.percent is not None else -1.0
        self.send(body)

    def send(self, body: dict) -> None:
        try:
            token = self.target.token_file.read_text().strip()
        except OSError as exc:
            self._warn("token", f"progress not reported: cannot read the ServiceAccount token ({exc.strerror})")
            return
        register_secret(token)  # a token is never logged, even inside an exception text
        try:
            answer = self.session.patch(
                self.url,
                data=json.dumps(body),
                headers={"Authorization": f"Bearer {token}", "Content-Type": MERGE_PATCH, "Accept": "application/json"},
                verify=str(self.target.ca_file) if self.target.ca_file else True,
                timeout=REQUEST_TIMEOUT,
            )
        except requests.RequestException as exc:
            self._warn(type(exc).__name__, f"progress not reported: {type(exc).__name__} talking to the API server")
            return
        if answer.status_code >= 300:
            reason = ""
            try:
                reason = str(answer.json().get("message", ""))[:300]
            except ValueError:
                pass
            self._warn(
                str(answer.status_code),
                f"progress not reported: HTTP {answer.status_code} for {self.target.object_path}/status"
                + (f": {reason}" if reason else ""),
            )
            return
        self.sent += 1

    def _warn(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            log.warning("%s (the pull goes on; said once)", message)


def start_reporter(env: Mapping[str, str] | None, progress: Progress) -> StatusReporter | None:
    target = target_from_env(os.environ if env is None else env)
    if target is None:
        return None
    log.info(
        "reporting progress to %s/status every %gs or %g%%", target.object_path, target.interval, target.step_percent
    )
    return StatusReporter(target, progress).start()
