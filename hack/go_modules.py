#!/usr/bin/env python3
"""A Go module's files from the Go module proxy, for the CRDs another project ships in its module
(the Prometheus Operator's, the Gateway API Inference Extension's): `go mod download -json` puts the
module in the module cache, read-only; the callers copy what they need into .cache/ (never committed)."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile


def module_dir(module: str, version: str) -> pathlib.Path:
    """The module's directory in the Go module cache, downloaded through the proxy if missing."""
    with tempfile.TemporaryDirectory() as scratch:  # outside any go.mod or go.work
        env = dict(os.environ, GOWORK="off", GOFLAGS="-mod=mod")
        done = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"], cwd=scratch, env=env,
                              capture_output=True, text=True, check=False)
    info = json.loads(done.stdout or "{}")
    if done.returncode != 0 or info.get("Error") or not info.get("Dir"):
        sys.exit(f"go mod download {module}@{version} failed: {info.get('Error') or done.stderr.strip()}")
    return pathlib.Path(info["Dir"])


def copy_files(module: str, version: str, subdir: str, files: list[str], dest: pathlib.Path) -> pathlib.Path:
    """``files`` of the module's ``subdir`` in ``dest``, copied once and reused after."""
    if all((dest / name).is_file() for name in files):
        return dest
    source = module_dir(module, version) / subdir
    dest.mkdir(parents=True, exist_ok=True)
    for name in files:
        target = dest / name
        shutil.copyfile(source / name, target)
        target.chmod(0o644)  # the module cache is read-only
    return dest


def command(fetch, doc: str, argv: list[str]) -> int:
    """The command line of a CRD script: ``[--dest DIR]``; prints the directory ``fetch`` filled."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--dest", type=pathlib.Path)
    print(fetch(parser.parse_args(argv).dest))
    return 0
