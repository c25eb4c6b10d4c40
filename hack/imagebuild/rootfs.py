"""Root filesystems of Debian suites, made by mmdebstrap from Debian's packages, for the stand-in bases.

The tarball is not reproducible byte for byte (timestamps), so what identifies it is its recipe: the
suite, the mirror and the options. A rootfs is made once per recipe and kept under .cache/images/rootfs.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import time

from . import paths

MIRROR = "http://deb.debian.org/debian"
# The mirror here is a dated snapshot: the Release files of testing (forky) have expired there, and apt
# refuses them unless told not to check. The option stays in the image's apt configuration, so the
# Dockerfiles' own `apt-get update` works too (a public debian image does not need it).
APT_OPTIONS = ['Acquire::Check-Valid-Until "false"']
# Like Docker Hub's debian images: no documentation or translations in the layers.
DPKG_OPTIONS = [
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/locale/*",
]


def recipe(suite: str) -> str:
    """The text that identifies a rootfs: it goes into the digest of the image built from it."""
    return json.dumps(
        {"suite": suite, "variant": "minbase", "mirror": MIRROR, "apt": APT_OPTIONS, "dpkg": DPKG_OPTIONS},
        sort_keys=True,
    )


def ensure(suite: str) -> pathlib.Path:
    """Return the rootfs tarball of `suite`, making it first when missing or made from another recipe."""
    tarball = paths.ROOTFS / f"{suite}.tar"
    recorded = paths.ROOTFS / f"{suite}.recipe"
    if tarball.exists() and recorded.exists() and recorded.read_text() == recipe(suite):
        return tarball
    paths.ROOTFS.mkdir(parents=True, exist_ok=True)
    partial = tarball.with_suffix(".partial.tar")
    command = ["mmdebstrap", "--variant=minbase", "--quiet"]
    command += [f"--aptopt={option}" for option in APT_OPTIONS]
    command += [f"--dpkgopt={option}" for option in DPKG_OPTIONS]
    # Package lists are dropped, as in Docker Hub's images: a Dockerfile runs apt-get update itself.
    command += ['--customize-hook=rm -rf "$1"/var/lib/apt/lists/*']
    command += [suite, str(partial), MIRROR]
    started = time.monotonic()
    print(f"images: mmdebstrap {suite} (Debian root filesystem of a stand-in base)", flush=True)
    subprocess.run(command, check=True)
    partial.rename(tarball)
    recorded.write_text(recipe(suite))
    print(f"images: rootfs {suite} made in {time.monotonic() - started:.0f}s", flush=True)
    return tarball
