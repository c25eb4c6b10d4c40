"""Where image builds keep their state: everything under .cache/ of the checkout, nothing in /var/lib."""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache"
IMAGES = CACHE / "images"  # exported docker-archive tars, <key>.tar
ROOTFS = IMAGES / "rootfs"  # mmdebstrap root filesystems of the stand-in bases
CONTEXTS = IMAGES / "contexts"  # staged build contexts, one directory per image
STAMPS = IMAGES / "stamps"  # the inputs digest each image was last built from
STORAGE = CACHE / "containers"  # buildah's image store (root and runroot)
COLLECTIONS = CACHE / "collections"  # Galaxy artifacts of `make collections`
MODELS = CACHE / "models"
