#!/usr/bin/env python3
"""The Prometheus Operator's CRDs the tests install (PodMonitor, ServiceMonitor, PrometheusRule, v1).

No GitHub download here: the CRD manifests ship in the Go module of the Prometheus Operator
(example/prometheus-operator-crd/ of github.com/prometheus-operator/prometheus-operator), which the Go
module proxy serves. `go mod download -json` puts the module in the module cache; the three files are
copied from there to .cache/prometheus-operator/<version>/ (never committed). Prints the directory.

Usage: prometheus_operator_crds.py [--dest DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODULE = "github.com/prometheus-operator/prometheus-operator"
# The one version of the root module the proxy serves here (docs/monitoring.md).
VERSION = "v0.85.0"
CRD_DIR = "example/prometheus-operator-crd"
FILES = [f"monitoring.coreos.com_{plural}.yaml" for plural in ("podmonitors", "servicemonitors", "prometheusrules")]


def module_dir(version: str = VERSION) -> pathlib.Path:
    """The module's directory in the Go module cache, downloaded through the proxy if missing."""
    with tempfile.TemporaryDirectory() as scratch:  # outside any go.mod or go.work
        env = dict(os.environ, GOWORK="off", GOFLAGS="-mod=mod")
        done = subprocess.run(["go", "mod", "download", "-json", f"{MODULE}@{version}"], cwd=scratch, env=env,
                              capture_output=True, text=True, check=False)
    info = json.loads(done.stdout or "{}")
    if done.returncode != 0 or info.get("Error") or not info.get("Dir"):
        sys.exit(f"prometheus_operator_crds: go mod download {MODULE}@{version} failed: "
                 f"{info.get('Error') or done.stderr.strip()}")
    return pathlib.Path(info["Dir"])


def fetch(dest: pathlib.Path | None = None, version: str = VERSION) -> pathlib.Path:
    """Copy the three CRDs into dest (default .cache/prometheus-operator/<version>/); reuse them there."""
    dest = dest or ROOT / ".cache" / "prometheus-operator" / version
    if all((dest / name).is_file() for name in FILES):
        return dest
    source = module_dir(version) / CRD_DIR
    dest.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        target = dest / name
        shutil.copyfile(source / name, target)
        target.chmod(0o644)  # the module cache is read-only
    return dest


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=pathlib.Path)
    print(fetch(parser.parse_args(argv).dest))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
