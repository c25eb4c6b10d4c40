"""Bounded retries with exponential backoff."""

import time
from collections.abc import Callable
from typing import TypeVar

from .config import Settings
from .errors import NetworkError, TransientError
from .progress import log

T = TypeVar("T")


def backoff_delay(failures: int, settings: Settings) -> float:
    """Seconds to wait after the n-th consecutive failure (1-based): base, 2*base, 4*base, ... up to the cap."""
    return min(settings.backoff_seconds * 2 ** (failures - 1), settings.backoff_max_seconds)


def with_retries(
    attempt: Callable[[], T],
    settings: Settings,
    *,
    progress_marker: Callable[[], int],
    what: str,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run attempt() until it returns, retrying TransientError.

    The budget is PULLER_MAX_RETRIES consecutive attempts that made no progress (progress_marker() did
    not grow): a flaky link that keeps delivering bytes is not given up on, a dead one is, after
    roughly backoff * (2^retries - 1) seconds.
    """
    failures = 0
    while True:
        before = progress_marker()
        try:
            return attempt()
        except TransientError as exc:
            if progress_marker() > before:
                failures = 0
            failures += 1
            if failures > settings.max_retries:
                raise NetworkError(
                    f"{what}: gave up after {failures} attempts without progress; last error: {exc}"
                ) from exc
            delay = backoff_delay(failures, settings)
            log.warning("%s: %s; retry %d/%d in %.1fs", what, exc, failures, settings.max_retries, delay)
            sleep(delay)
