"""`make bench`, in parts: common (paths, commands), control (the cluster and the operator), sampling
(process tree, metrics), models (manifests and the model watch), parsing (log, artifacts, metrics
text), report (figures to a table), session (one bench run's state), and the scenarios: apply,
steady (no-op, idle, restart, changing specs), delete. bench/bench.py runs them in order."""

import pathlib
import sys

# hack/proctree.py: the process-tree reader the operator's supervisor uses too.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "hack"))
