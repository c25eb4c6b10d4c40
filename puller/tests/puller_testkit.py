"""Shared test helpers (a distinct module name: other test trees in this repository have a conftest too)."""

import hashlib
import random
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MANIFEST = ".llm-model-puller.json"
STAGING = ".llm-model-puller.partial"
MiB = 1 << 20


def payload(size: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(size)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
