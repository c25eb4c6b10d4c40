"""Stage an image's build context: only the files its Dockerfile copies, so the context is small and its
digest covers exactly what can change the image."""

from __future__ import annotations

import os
import pathlib
import shutil

from . import paths, rootfs
from .catalog import Image

# Never part of an image: caches and metadata that `pip install -e` leaves in a developer's checkout
# (.dockerignore keeps the same out of a Docker build).
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".pytest_cache")


def stage(image: Image) -> pathlib.Path:
    """Copy the image's context afresh into .cache/images/contexts/<key> and return that directory."""
    target = paths.CONTEXTS / image.key
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copy2(paths.ROOT / image.dockerfile, target / "Dockerfile")
    for name, source in image.context.items():
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        if not source.exists():
            raise SystemExit(f"images: {image.key} needs {source}, which is missing")
        if source.is_dir():
            shutil.copytree(source, destination, ignore=IGNORED, symlinks=True)
        else:
            shutil.copy2(source, destination)
    if image.rootfs:
        # A hard link: the rootfs is large and the stage is thrown away after the build.
        os.link(rootfs.ensure(image.rootfs), target / "rootfs.tar")
    return target


def files(context: pathlib.Path) -> list[pathlib.Path]:
    """Every file of a staged context, in a stable order (rootfs.tar excepted: its recipe counts)."""
    found = [path for path in context.rglob("*") if not path.is_dir() and path.name != "rootfs.tar"]
    return sorted(found, key=lambda path: path.relative_to(context).as_posix())
