#!/usr/bin/env python3
"""Start or stop the locally run operator (the real ansible-operator) in the background.

    run_operator.py start --log FILE --pidfile FILE -- COMMAND...   start it, wait until /readyz answers
    run_operator.py stop --pidfile FILE                              stop it and every process it started

The operator runs under hack/operator_supervisor.py, whose pid the pidfile holds: whatever ends the
operator (this stop, a crash, a SIGKILL), the supervisor ends the ansible-runner and ansible-playbook
processes it left behind.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proctree  # noqa: E402  (hack/ is not a package)

SUPERVISOR = pathlib.Path(__file__).resolve().with_name("operator_supervisor.py")
# The supervisor gives the operator this long to stop after SIGTERM; `stop` waits a little longer.
STOP_GRACE = 20
HEALTH_URL = os.environ.get("LLM_OPERATOR_HEALTH_URL", "http://127.0.0.1:6789/readyz")


def running(pidfile: pathlib.Path) -> int | None:
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if proctree.alive(pid) else None


def healthy() -> bool:
    try:
        with urllib.request.urlopen(HEALTH_URL, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start(args: argparse.Namespace) -> int:
    pidfile, log = pathlib.Path(args.pidfile), pathlib.Path(args.log)
    if running(pidfile):
        print(f"operator: already running (pid {running(pidfile)}, log {log})")
        return 0
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        # A session of its own: the operator does not stop with the shell that started it.
        supervised = [sys.executable, str(SUPERVISOR), "--pidfile", str(pidfile), "--grace", str(STOP_GRACE), "--", *args.command]
        process = subprocess.Popen(supervised, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    pidfile.write_text(f"{process.pid}\n")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
            print(f"operator: exited with {process.returncode} at start; last lines of {log}:\n{tail}", file=sys.stderr)
            return 1
        if healthy():
            print(f"operator: running (pid {process.pid}, log {log})")
            return 0
        time.sleep(0.5)
    print(f"operator: not ready after 60s; see {log}", file=sys.stderr)
    return 1


def stop(args: argparse.Namespace) -> int:
    pidfile = pathlib.Path(args.pidfile)
    pid = running(pidfile)
    if pid is None:
        pidfile.unlink(missing_ok=True)
        return 0
    # The supervisor stops the operator and then ends whatever it left behind.
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE + 15
    while time.monotonic() < deadline:
        if not proctree.alive(pid):
            break
        time.sleep(0.2)
    else:
        # Only if the supervisor itself hangs: kill its whole tree.
        for child in [*proctree.descendants(pid), pid]:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
    pidfile.unlink(missing_ok=True)
    print(f"operator: stopped (pid {pid})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", required=True)
    start_parser = sub.add_parser("start")
    start_parser.add_argument("--log", required=True)
    start_parser.add_argument("--pidfile", required=True)
    start_parser.add_argument("command", nargs=argparse.REMAINDER)
    stop_parser = sub.add_parser("stop")
    stop_parser.add_argument("--pidfile", required=True)
    args = parser.parse_args()
    if args.action == "start":
        if args.command[:1] == ["--"]:
            args.command = args.command[1:]
        if not args.command:
            parser.error("start needs a command after --")
        return start(args)
    return stop(args)


if __name__ == "__main__":
    sys.exit(main())
