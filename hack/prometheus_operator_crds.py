#!/usr/bin/env python3
"""The Prometheus Operator's CRDs the tests install (PodMonitor, ServiceMonitor, PrometheusRule, v1).

No GitHub download here: the CRD manifests ship in the Go module of the Prometheus Operator
(example/prometheus-operator-crd/ of github.com/prometheus-operator/prometheus-operator), which the Go
module proxy serves. `go mod download -json` puts the module in the module cache; the three files are
copied from there to .cache/prometheus-operator/<version>/ (never committed). Prints the directory.

Usage: prometheus_operator_crds.py [--dest DIR]
"""

from __future__ import annotations

import pathlib
import sys

from go_modules import command, copy_files

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODULE = "github.com/prometheus-operator/prometheus-operator"
# The one version of the root module the proxy serves here (docs/monitoring.md).
VERSION = "v0.85.0"
CRD_DIR = "example/prometheus-operator-crd"
FILES = [f"monitoring.coreos.com_{plural}.yaml" for plural in ("podmonitors", "servicemonitors", "prometheusrules")]


def fetch(dest: pathlib.Path | None = None, version: str = VERSION) -> pathlib.Path:
    """Copy the three CRDs into dest (default .cache/prometheus-operator/<version>/); reuse them there."""
    return copy_files(MODULE, version, CRD_DIR, FILES, dest or ROOT / ".cache" / "prometheus-operator" / version)


if __name__ == "__main__":
    sys.exit(command(fetch, __doc__, sys.argv[1:]))
