"""The locally run operator of the scenarios: the real ansible-operator of this checkout as
`make operator-start` runs it (under hack/operator_supervisor.py), started, stopped, and SIGKILLed
as a whole process group."""

from __future__ import annotations

import os
import re
import signal
import subprocess

from reliability_paths import OPERATOR_LOG, PIDFILE, REPO  # first: puts hack/ and the shared helpers on sys.path

import proctree
import run_operator
from process_helpers import assert_all_gone
from testbed_helpers import KUBECONFIG


def make(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    result = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(REPO), *args, f"KUBECONFIG={KUBECONFIG}"],
                            capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"make {' '.join(args)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result


class Operator:
    """Started with watches.yaml, or with the watches file a scenario gives (kept for restarts)."""

    def __init__(self):
        self.watches: str | None = None

    def start(self, watches: str | None = None) -> int:
        """Start it and return once it is ready; returns the ansible-operator's pid."""
        if watches is not None:
            self.watches = watches
        extra = [f"OPERATOR_LOG={OPERATOR_LOG}", f"OPERATOR_PIDFILE={PIDFILE}"]
        if self.watches:
            # OPERATOR_ARGS from the environment (other ports) names a watches file of its own.
            args = os.environ.get("OPERATOR_ARGS")
            extra.append(f"OPERATOR_ARGS={re.sub(r'--watches-file [^ ]+', '--watches-file ' + self.watches, args)}"
                         if args else f"WATCHES={self.watches}")
        make("operator-start", *extra)
        return self.pid()

    def stop(self) -> None:
        make("operator-stop", f"OPERATOR_PIDFILE={PIDFILE}")

    def supervisor(self) -> int:
        return int(PIDFILE.read_text().strip())

    def pid(self) -> int:
        """The ansible-operator process, the supervisor's child."""
        found = [p for p in proctree.descendants(self.supervisor())
                 if (proctree.command_line(p).split() or [""])[0].endswith("ansible-operator")]
        assert len(found) == 1, f"the supervisor runs {found}, not one ansible-operator"
        return found[0]

    def healthy(self) -> bool:
        return run_operator.healthy()

    def kill(self) -> None:
        """SIGKILL the operator's whole process group, as the kernel's OOM killer or a node loss
        would end it: no chance to clean up. ansible-runner starts ansible-playbook in a session of
        its own, out of the group's reach: the supervisor ends those and exits (removing the
        pidfile); this returns once every process of the tree is gone."""
        supervisor = self.supervisor()
        group = os.getpgid(self.pid())
        assert group != os.getpgrp(), "the operator runs in the test's own process group"
        tree = [supervisor, *proctree.descendants(supervisor)]
        os.killpg(group, signal.SIGKILL)
        assert_all_gone(tree, 30)
