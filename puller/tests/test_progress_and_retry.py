import errno
import logging
import sys

import pytest

from llm_model_puller.config import Settings
from llm_model_puller.errors import NetworkError, TransientError, find_disk_full
from llm_model_puller.progress import Progress, RedactingFormatter, human_bytes
from llm_model_puller.retry import backoff_delay, with_retries

MiB = 1 << 20


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_reports_every_step_and_every_interval():
    clock, lines = Clock(), []
    progress = Progress("m.gguf", interval=5, step_percent=25, clock=clock, emit=lines.append)
    progress.begin(0, 100 * MiB)

    progress.add(10 * MiB)  # 10%: neither a step nor due
    clock.now += 1
    progress.add(20 * MiB)  # 30%: a step
    clock.now += 6
    progress.add(1 * MiB)  # 31%: no step, but 6 s passed
    progress.add(1 * MiB)

    assert lines == [
        "progress m.gguf: 30.0 MiB / 100.0 MiB (30.0%) at 30.0 MiB/s",
        "progress m.gguf: 31.0 MiB / 100.0 MiB (31.0%) at 170.7 KiB/s",
    ]


def test_progress_without_total_and_summary_with_resume():
    clock, lines = Clock(), []
    progress = Progress("m.gguf", interval=1, clock=clock, emit=lines.append)
    progress.begin(4 * MiB, None)
    clock.now += 2
    progress.add(6 * MiB)
    assert lines == ["progress m.gguf: 10.0 MiB / unknown total at 3.0 MiB/s"]
    assert progress.summary() == "10.0 MiB in 2.0s: fetched 6.0 MiB at 3.0 MiB/s, 4.0 MiB were already there"


def test_human_bytes():
    assert [human_bytes(n) for n in (0, 1023, 1024, 1536 * MiB, 3 << 40)] == [
        "0 B",
        "1023 B",
        "1.0 KiB",
        "1.5 GiB",
        "3.0 TiB",
    ]


def test_redacting_formatter_hides_secrets_in_messages_and_tracebacks():
    formatter = RedactingFormatter(["s3cr3t", ""])
    try:
        raise RuntimeError("bad token s3cr3t")
    except RuntimeError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "header Bearer %s", ("s3cr3t",), sys.exc_info())
    text = formatter.format(record)
    assert "s3cr3t" not in text
    assert "Bearer ***" in text and "bad token ***" in text


def test_backoff_is_exponential_and_capped():
    settings = Settings(backoff_seconds=2, backoff_max_seconds=10)
    assert [backoff_delay(n, settings) for n in range(1, 6)] == [2, 4, 8, 10, 10]


def test_retries_give_up_after_the_budget():
    sleeps, calls = [], []

    def attempt():
        calls.append(1)
        raise TransientError("HTTP 503")

    with pytest.raises(NetworkError, match="gave up after 3 attempts without progress; last error: HTTP 503"):
        with_retries(
            attempt,
            Settings(max_retries=2, backoff_seconds=1),
            progress_marker=lambda: 0,
            what="x",
            sleep=sleeps.append,
        )
    assert len(calls) == 3 and sleeps == [1, 2]


def test_progress_resets_the_retry_budget():
    done = [0]
    sleeps = []

    def attempt():
        if done[0] < 5:
            done[0] += 1  # every attempt delivers some bytes, then breaks
            raise TransientError("connection reset")
        return "ok"

    settings = Settings(max_retries=1, backoff_seconds=1)
    assert with_retries(attempt, settings, progress_marker=lambda: done[0], what="x", sleep=sleeps.append) == "ok"
    assert sleeps == [1] * 5


def test_find_disk_full_looks_through_the_exception_chain():
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert find_disk_full(outer).errno == errno.ENOSPC
    assert find_disk_full(OSError(errno.EACCES, "denied")) is None
