"""Process tests: the local operator's supervisor leaves nothing behind (hack/operator_supervisor.py).

The tests without the `cluster` mark run real process trees shaped like ansible-operator's (a child
in the operator's group, a grandchild in a session of its own, one that ignores SIGTERM); the
`cluster` ones run the real ansible-operator against the local cluster and SIGKILL it mid-reconcile.
"""

from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cluster: needs the local cluster and the machine's one operator slot; run by the cluster suite"
    )
