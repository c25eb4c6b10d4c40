"""Where the process tests find the repository and hack/ (proctree, the supervisor)."""

from __future__ import annotations

import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
HACK = REPO / "hack"
if str(HACK) not in sys.path:
    sys.path.insert(0, str(HACK))
