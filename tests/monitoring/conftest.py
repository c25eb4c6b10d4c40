"""Fixtures and helpers of the monitoring tests (tests/monitoring, docs/monitoring.md).

The tests without the `cluster` mark read what ships (the PrometheusRule, kube-state-metrics'
configuration, the dashboard, the runbooks, the docs) and need nothing running (`make monitoring-test`
also runs promtool over them). The `cluster` tests need the local cluster (`make
monitoring-cluster-test`); without it they fail, never skip.
"""

from __future__ import annotations

import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "hack"))
sys.path.insert(0, str(REPO / "tests" / "testbed"))


def pytest_configure(config):
    config.addinivalue_line("markers", "cluster: needs the local cluster and runs the operator (make monitoring-cluster-test)")


@pytest.fixture(scope="session")
def repo():
    return REPO
