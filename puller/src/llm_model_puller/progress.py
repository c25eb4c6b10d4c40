"""Log lines without secrets, and periodic progress reports."""

import logging
import re
import sys
import time
from collections.abc import Callable, Iterable

LOGGER_NAME = "llm_model_puller"
log = logging.getLogger(LOGGER_NAME)


# A URL's query and user info, wherever a URL stands in a text: "https://u:p@host/x?sig=..." and the
# "url: /x?sig=..." of urllib3's errors. Links the puller never saw (a redirect to a signed CDN link)
# are covered too, which a list of known secrets cannot do.
_USER_INFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#'\"<>]*@")
_QUERY = re.compile(r"(?P<url>(?:\b[A-Za-z][A-Za-z0-9+.-]*://|/)[^\s?#'\"<>]*)\?[^\s'\"<>]+")


def scrub_urls(text: str) -> str:
    """text with the user info and the query of every URL in it removed (the query marked <redacted>)."""
    return _QUERY.sub(r"\g<url>?<redacted>", _USER_INFO.sub(r"\g<scheme>", text))


class RedactingFormatter(logging.Formatter):
    """Formats as usual, then replaces every secret (tracebacks included) with *** and removes the
    user info and query of every URL."""

    def __init__(self, secrets: Iterable[str]):
        super().__init__("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%dT%H:%M:%S%z")
        self.secrets = tuple(s for s in secrets if s)

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record), self.secrets)


# Secrets learnt after start-up: redact() hides them too, so the termination message does as the log.
_LEARNT: list[str] = []


def register_secret(secret: str) -> None:
    """A secret learnt after start-up (the ServiceAccount token, credentials from STS or a metadata
    endpoint): redact it from every line and every redact() from now on."""
    if not secret:
        return
    if secret not in _LEARNT:
        _LEARNT.append(secret)
    for handler in logging.getLogger().handlers:
        formatter = handler.formatter
        if isinstance(formatter, RedactingFormatter) and secret not in formatter.secrets:
            formatter.secrets = (*formatter.secrets, secret)


def redact(text: str, secrets: Iterable[str]) -> str:
    """text without the secrets (longest first: a secret may contain a shorter one) and without the
    user info and query of any URL."""
    for secret in sorted({s for s in (*secrets, *_LEARNT) if s}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return scrub_urls(text)


def setup_logging(secrets: Iterable[str]) -> None:
    """One stdout handler on the root logger; every library's records go through the redaction."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(RedactingFormatter(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    for noisy in ("urllib3", "httpx", "httpx2", "httpcore", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


class Progress:
    """Counts bytes and logs every `interval` seconds or every `step_percent` of the total."""

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        interval: float = 5.0,
        step_percent: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        emit: Callable[[str], None] = log.info,
    ):
        self.label = label
        self.total = total
        self.interval = interval
        self.step_percent = step_percent
        self.clock = clock
        self.emit = emit
        self.done = 0
        self.resumed = 0  # bytes already on disk when this run started
        self.fetched = 0  # bytes received by this run
        self.started = clock()
        self._last_time = self.started
        self._last_fetched = 0
        self._last_percent = 0.0

    def begin(self, done: int, total: int | None) -> None:
        """Start counting: done bytes are already on disk (resume), total may be unknown."""
        self.done = self.resumed = done
        self.total = total
        self._step_from_here()

    def rebase(self, done: int, total: int | None) -> None:
        """The bytes on disk changed under the counter (a restart from zero); fetched bytes stay counted."""
        self.done, self.total = done, total
        self._step_from_here()

    def _step_from_here(self) -> None:
        percent = self.percent or 0.0
        self._last_percent = percent - percent % self.step_percent

    @property
    def percent(self) -> float | None:
        return 100.0 * self.done / self.total if self.total else None

    def add(self, n: int) -> None:
        self.fetched += n
        self.done += n
        self._maybe_report()

    def set_done(self, done: int) -> None:
        """For polling: the bytes on disk now."""
        self.fetched += max(done - self.done, 0)
        self.done = done
        self._maybe_report()

    def _maybe_report(self) -> None:
        now = self.clock()
        percent = self.percent
        due = now - self._last_time >= self.interval
        stepped = percent is not None and percent >= self._last_percent + self.step_percent
        if due or stepped:
            self._report(now)

    def _report(self, now: float) -> None:
        rate = (self.fetched - self._last_fetched) / max(now - self._last_time, 1e-6)
        if self.total:
            amount = f"{human_bytes(self.done)} / {human_bytes(self.total)} ({self.percent:.1f}%)"
        else:
            amount = f"{human_bytes(self.done)} / unknown total"
        self.emit(f"progress {self.label}: {amount} at {human_bytes(rate)}/s")
        self._last_time, self._last_fetched = now, self.fetched
        self._step_from_here()

    def summary(self) -> str:
        elapsed = max(self.clock() - self.started, 1e-6)
        resumed = f", {human_bytes(self.resumed)} were already there" if self.resumed else ""
        return (
            f"{human_bytes(self.done)} in {elapsed:.1f}s: fetched {human_bytes(self.fetched)} "
            f"at {human_bytes(self.fetched / elapsed)}/s{resumed}"
        )
