"""A pull killed midway, then run again: what the store sends the second run against what the first left.

Used by pull_s3.py (--resume-check). The first run goes through a proxy that passes each connection
on at a bounded rate, so that the kill (SIGKILL, as a node or the kubelet kills a pod) lands in the
middle; the second through one at full speed that counts the bytes the store sent (headers
included). What the first run left is read from the staging area as the second run will: the parts a
large object's record lists (a part in flight at the kill is fetched again from its start), the
objects of a folder recorded finished, and the bytes of the others' partial files (resumed by Range).
"""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from s3_server import SlowProxy

STAGING = ".llm-model-puller.partial"


def left(dest: Path, parted: bool) -> int:
    """The bytes a resumed pull need not fetch again, as the staging area holds them. A large object in
    parts (`parted`) has its file preallocated: only the parts its record lists count, none before
    the record is written."""
    state, files = dest / STAGING / "s3-state", dest / STAGING / "files"
    held = 0
    if parted:
        for record in state.glob("*.parts") if state.is_dir() else []:
            try:
                parts = json.loads(record.read_text())
            except (OSError, ValueError):
                continue
            for index in parts["done"]:
                held += min(parts["part_size"], parts["size"] - index * parts["part_size"])
        return held
    for path in files.rglob("*") if files.is_dir() else []:
        if path.is_file():
            held += path.stat().st_size  # a finished object, or one that resumes from its length
    return held


def resumed_pull(
    command: list[str], env: dict[str, str], port: int, dest: Path, size: int, rate: int, parted: bool
) -> dict:
    """Kill a pull of `size` bytes once about half is held, run it again; the byte counts of both."""
    with SlowProxy(port, rate) as slow:
        first = subprocess.Popen(
            command,
            env={**env, "AWS_ENDPOINT_URL": slow.url},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 600
        while left(dest, parted) < size // 2 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait()
    held = left(dest, parted)
    with SlowProxy(port, 0) as counted:
        started = time.monotonic()
        second = subprocess.run(command, env={**env, "AWS_ENDPOINT_URL": counted.url}, capture_output=True, text=True)
        seconds = time.monotonic() - started
    if second.returncode != 0:
        raise SystemExit(f"the resumed pull failed (exit {second.returncode}): {second.stderr[-2000:]}")
    return {
        "bytes": size,
        "held_after_kill": held,
        "missing": size - held,
        "served_on_resume": counted.served,
        "served_beyond_missing": counted.served - (size - held),
        "resume_seconds": round(seconds, 2),
        "complete": os.path.exists(dest / ".llm-model-puller.json"),
    }
