"""Where the reliability suite finds things, and its size.

Puts hack/ (proctree, run_operator), tests/testbed (testbed_helpers) and tests/process
(process_helpers) on sys.path: the suite reuses their helpers rather than writing them again.
"""

from __future__ import annotations

import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
for shared in (REPO / "hack", REPO / "tests" / "testbed", REPO / "tests" / "process"):
    if str(shared) not in sys.path:
        sys.path.insert(0, str(shared))

PIDFILE = REPO / ".cluster" / "operator.pid"
# A log of the suite's own, so each scenario reads only its operator's lines.
OPERATOR_LOG = REPO / ".cluster" / "operator-reliability.log"
FIGURES = REPO / ".cluster" / "reliability-figures.json"

# The suite's size: 1 fits CI (the whole suite in a few minutes); RELIABILITY_SCALE=4 makes four
# times the models and the kills. RELIABILITY_SEED picks the random kill moments.
SCALE = max(1, int(os.environ.get("RELIABILITY_SCALE", "1")))
SEED = int(os.environ.get("RELIABILITY_SEED", "13"))
