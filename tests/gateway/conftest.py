"""The InferencePool on the local cluster (`make gateway-cluster-test`, docs/design.md "Gateway API").
Needs the cluster (make cluster-up); without it the tests fail, never skip."""

from __future__ import annotations

import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
for folder in ("hack", "tests/testbed", "tests/monitoring"):
    sys.path.insert(0, str(REPO / folder))


def pytest_configure(config):
    config.addinivalue_line("markers", "cluster: needs the local cluster and runs the operator (make gateway-cluster-test)")
