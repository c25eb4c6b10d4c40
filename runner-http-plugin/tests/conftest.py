import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from receiver import EventReceiver  # noqa: E402


@pytest.fixture
def socket_path():
    # AF_UNIX paths are limited to ~107 bytes: pytest's tmp_path can be longer, so use a short dir.
    with tempfile.TemporaryDirectory(prefix="rh-") as directory:
        yield os.path.join(directory, "events.sock")


@pytest.fixture
def receiver(socket_path):
    with EventReceiver(socket_path) as running:
        yield running


@pytest.fixture(autouse=True)
def fresh_failure_budget():
    """Each test starts with the full number of reported delivery failures, as each run does."""
    from llm_operator_runner_http import handlers

    handlers._failures["count"] = 0
