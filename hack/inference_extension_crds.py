#!/usr/bin/env python3
"""The Gateway API Inference Extension's InferencePool CRD (inference.networking.k8s.io/v1) the tests
install, from its Go module (sigs.k8s.io/gateway-api-inference-extension, config/crd/bases/), which
the Go module proxy serves: copied to .cache/inference-extension/<version>/ (never committed). Prints
the directory.

Usage: inference_extension_crds.py [--dest DIR]
"""

from __future__ import annotations

import pathlib
import sys

from go_modules import command, copy_files

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODULE = "sigs.k8s.io/gateway-api-inference-extension"
# The newest v1 release the proxy serves here (docs/design.md, "Gateway API"). The CRDs of v1.0 to
# v1.5 require spec.endpointPickerRef, which the operator does not set; v1.6 made it optional.
VERSION = "v1.6.2"
CRD_DIR = "config/crd/bases"
FILES = ["inference.networking.k8s.io_inferencepools.yaml"]


def fetch(dest: pathlib.Path | None = None, version: str = VERSION) -> pathlib.Path:
    """Copy the CRD into dest (default .cache/inference-extension/<version>/); reuse it there."""
    return copy_files(MODULE, version, CRD_DIR, FILES, dest or ROOT / ".cache" / "inference-extension" / version)


if __name__ == "__main__":
    sys.exit(command(fetch, __doc__, sys.argv[1:]))
