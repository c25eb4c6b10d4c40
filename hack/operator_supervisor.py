#!/usr/bin/env python3
"""Run the local operator so that nothing it started outlives it.

    operator_supervisor.py [--pidfile FILE] [--grace SECONDS] -- COMMAND...

ansible-operator starts an ansible-runner per reconcile, and ansible-runner starts ansible-playbook
in a session of its own (on a pseudo-terminal). When the operator dies, a run in flight is
orphaned: re-parented to init, out of reach of the operator's process group and session, it keeps
running (seen: four of them at ~4 % of a core each for 14 minutes). This supervisor:

- makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so every process orphaned below it
  is re-parented to it instead of init and the whole tree stays findable under its pid;
- starts COMMAND in a process group of its own;
- on SIGTERM, SIGINT or SIGHUP sends SIGTERM to that group, and SIGKILL after --grace seconds;
- once COMMAND has ended, whatever ended it (a stop, a crash, a SIGKILL), ends every process still
  below it (SIGTERM, then SIGKILL after a few seconds), reaps them, removes --pidfile if it still
  names the supervisor, and exits with COMMAND's status.

Between events it sleeps in waitpid(): an idle operator costs the supervisor nothing.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import pathlib
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proctree  # noqa: E402  (hack/ is not a package)

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
LEFTOVER_GRACE = 3.0  # seconds between SIGTERM and SIGKILL for what the operator left behind


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(error)}")


def say(message: str) -> None:
    print(f"operator-supervisor: {message}", file=sys.stderr, flush=True)


class Supervisor:
    def __init__(self, command: list[str], grace: float):
        self.command, self.grace = command, grace
        self.pid = 0

    def start(self) -> None:
        # setpgroup=0: the command leads a new process group, so a stop reaches it and the
        # ansible-runners it starts (they stay in its group) in one signal.
        self.pid = os.posix_spawnp(self.command[0], self.command, os.environ, setpgroup=0)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self.stop)
        signal.signal(signal.SIGALRM, self.kill)

    def signal_group(self, signum: int) -> None:
        try:
            os.killpg(self.pid, signum)
        except ProcessLookupError:
            pass

    def stop(self, signum: int, _frame) -> None:
        say(f"{signal.Signals(signum).name}: stopping the operator (pid {self.pid})")
        self.signal_group(signal.SIGTERM)
        signal.alarm(max(1, round(self.grace)))

    def kill(self, _signum: int, _frame) -> None:
        say(f"the operator did not stop within {self.grace:.0f}s: SIGKILL")
        self.signal_group(signal.SIGKILL)

    def wait(self) -> int:
        """Reap children (adopted orphans included) until the command itself has ended."""
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                return 1
            if pid == self.pid:
                signal.alarm(0)
                return os.waitstatus_to_exitcode(status)

    @staticmethod
    def reap() -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def end_leftovers(self) -> list[int]:
        """End every process still below the supervisor; returns the pids that were found."""
        ended: list[int] = []
        deadline = time.monotonic() + LEFTOVER_GRACE
        while True:
            self.reap()
            left = proctree.descendants(os.getpid())
            if not left:
                return ended
            late = time.monotonic() >= deadline
            for pid in left:
                if pid not in ended or late:
                    try:
                        os.kill(pid, signal.SIGKILL if late else signal.SIGTERM)
                    except ProcessLookupError:
                        pass
                if pid not in ended:
                    ended.append(pid)
            time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pidfile", help="removed at exit if it still holds the supervisor's pid")
    parser.add_argument("--grace", type=float, default=20, help="seconds from SIGTERM to SIGKILL when stopping")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("a command is needed after --")
    become_subreaper()
    supervisor = Supervisor(command, args.grace)
    supervisor.start()
    code = supervisor.wait()
    left = supervisor.end_leftovers()
    say(f"the operator ended ({'exit ' + str(code) if code >= 0 else signal.Signals(-code).name})"
        + (f"; ended {len(left)} process(es) it left behind" if left else "; nothing left behind"))
    if args.pidfile:
        pidfile = pathlib.Path(args.pidfile)
        try:
            if int(pidfile.read_text().strip()) == os.getpid():
                pidfile.unlink()
        except (OSError, ValueError):
            pass
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
