import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from puller_testkit import SRC

sys.path.insert(0, str(SRC))  # the unit tests import the package even before `pip install -e puller`


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    termination: str | None

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@pytest.fixture
def dest(tmp_path) -> Path:
    path = tmp_path / "model-weights"
    path.mkdir()
    return path


@pytest.fixture
def home(tmp_path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def puller(tmp_path, dest, home):
    """Run `python -m llm_model_puller` as a subprocess with a clean, local-only environment."""
    termination = tmp_path / "termination-log"

    def run(env: dict[str, str], *, wrapper: list[str] | None = None, args: list[str] | None = None) -> Run:
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(SRC),
            "HF_HOME": str(tmp_path / "hf-home"),
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "NO_PROXY": "*",
            "AWS_EC2_METADATA_DISABLED": "true",  # never ask a metadata service (169.254.169.254) from a test
            "MODEL_DEST": str(dest),
            "PULLER_TERMINATION_LOG": str(termination),
            "PULLER_BACKOFF_SECONDS": "0.01",
            "PULLER_PROGRESS_SECONDS": "0.2",
            **env,
        }
        termination.unlink(missing_ok=True)
        command = [*(wrapper or []), sys.executable, "-m", "llm_model_puller", *(args or [])]
        done = subprocess.run(command, env=full_env, capture_output=True, text=True, timeout=60)
        return Run(
            done.returncode,
            done.stdout,
            done.stderr,
            termination.read_text() if termination.exists() else None,
        )

    return run
