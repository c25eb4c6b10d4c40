"""Waiting in the process tests: until something holds, and until every process of a tree has ended."""

from __future__ import annotations

import time

import process_paths  # noqa: F401  (puts hack/ on sys.path for proctree)
import proctree


def wait_for(predicate, timeout: float, what: str):
    """Poll predicate() until it returns something truthy and return that; fail after timeout s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout}s: {what}")


def assert_all_gone(pids: list[int], timeout: float) -> None:
    """Wait until no process of pids runs; fail naming those that still do."""

    def running() -> list[int]:
        return [p for p in pids if proctree.alive(p)]

    try:
        wait_for(lambda: not running(), timeout, "every process of the tree ended")
    except AssertionError as error:
        raise AssertionError(f"{error}; still running: {running()}") from None
