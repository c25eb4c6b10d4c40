#!/usr/bin/env python3
"""Print, as JSON, the ansible-runner runs ansible-operator made for one object since a given time.

    runner_runs.py ARTIFACTS_DIR SINCE_EPOCH_SECONDS

ARTIFACTS_DIR is <runner dir>/<group>/<version>/<kind>/<namespace>/<name>/artifacts. One entry per
run that started at or after SINCE, oldest first:

    {"ident": "...", "started": 1764688741.1, "finished": true, "ended": 1764688743.0,
     "changed": 0, "failures": 0, "ok": 20}

"finished" is true once the run's playbook_on_stats event is written, and "ended" is when it was
written; "changed", "failures" and "ok" are that event's per-host counts summed (null until then).
It runs on the test machine (molecule/default) or inside the manager pod (molecule/kind), so it uses
the standard library only.
"""

from __future__ import annotations

import json
import os
import sys


def stats_of(run_dir: str) -> tuple[dict, float] | None:
    """The run's playbook_on_stats event data and the time it was written, or None before that."""
    events_dir = os.path.join(run_dir, "job_events")
    try:
        names = os.listdir(events_dir)
    except OSError:
        return None
    for name in names:
        if not name.endswith(".json"):
            continue
        path = os.path.join(events_dir, name)
        try:
            with open(path, encoding="utf-8") as handle:
                event = json.load(handle)
            written = os.stat(path).st_mtime
        except (OSError, ValueError):
            continue  # still being written: the next poll reads it
        if event.get("event") == "playbook_on_stats":
            return event.get("event_data") or {}, written
    return None


def total(counts: object) -> int:
    return sum(counts.values()) if isinstance(counts, dict) else 0


def runs(artifacts_dir: str, since: float) -> list[dict]:
    found = []
    try:
        idents = os.listdir(artifacts_dir)
    except OSError:
        return found
    for ident in idents:
        run_dir = os.path.join(artifacts_dir, ident)
        if os.path.islink(run_dir) or not os.path.isdir(run_dir):
            continue  # "latest" is a symlink to one of the runs
        try:
            # ansible-runner writes the command file when the run starts.
            started = os.stat(os.path.join(run_dir, "command")).st_mtime
        except OSError:
            continue
        if started < since:
            continue
        stats, ended = stats_of(run_dir) or (None, None)
        found.append(
            {
                "ident": ident,
                "started": started,
                "finished": stats is not None,
                "ended": ended,
                "changed": None if stats is None else total(stats.get("changed")),
                "failures": None if stats is None else total(stats.get("failures")) + total(stats.get("dark")),
                "ok": None if stats is None else total(stats.get("ok")),
            }
        )
    return sorted(found, key=lambda run: run["started"])


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(runs(sys.argv[1], float(sys.argv[2]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
