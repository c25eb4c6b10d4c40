#!/usr/bin/env python3
"""Write what the host looks like, the part the real node may touch, as JSON on stdout.

`make node-test` records it before `cluster-up REAL_NODE=1`; test_node_leftovers.py compares the
host after `cluster-down` with that record.
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "hack"))
import node  # noqa: E402
import node_host  # noqa: E402


def sysctls() -> dict[str, str]:
    values = {}
    for key in node_host.SYSCTLS:
        file = pathlib.Path("/proc/sys") / key
        if file.exists():
            values[key] = file.read_text().strip()
    return values


def host_paths() -> dict[str, bool]:
    """Whether each path the kubelet uses outside the node's own directories exists."""
    return {str(path): path.exists() for path in (*node.HOST_DIRS, node.DEVICE_PLUGIN_SOCKET)}


if __name__ == "__main__":
    json.dump({"sysctls": sysctls(), "paths": host_paths()}, sys.stdout, indent=1)
    print()
