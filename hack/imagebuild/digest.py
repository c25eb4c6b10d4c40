"""The digest of everything an image is built from, and the stamp that records it after a build.

Inputs: the staged context (every file's path, mode and bytes, the Dockerfile among them), the build
arguments, the image IDs of its local bases, and the recipe of its rootfs. An image is rebuilt only
when this digest differs from its stamp (or the image or its export is gone).
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib

from . import context, paths, rootfs
from .catalog import Image


def compute(image: Image, staged: pathlib.Path, base_ids: dict[str, str]) -> str:
    digest = hashlib.sha256()
    header = {
        "name": image.name,
        "build_args": image.build_args,
        "bases": {base: base_ids[base] for base in image.bases},
        "rootfs": rootfs.recipe(image.rootfs) if image.rootfs else None,
    }
    digest.update(json.dumps(header, sort_keys=True).encode())
    for path in context.files(staged):
        relative = path.relative_to(staged).as_posix()
        if path.is_symlink():
            digest.update(f"\0link {relative} {os.readlink(path)}".encode())
            continue
        digest.update(f"\0file {relative} {path.stat().st_mode & 0o777:o}\0".encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _stamp(image: Image) -> pathlib.Path:
    return paths.STAMPS / f"{image.key}.json"


def recorded(image: Image) -> dict:
    try:
        return json.loads(_stamp(image).read_text())
    except (FileNotFoundError, ValueError):
        return {}


def record(image: Image, inputs: str, image_id: str, seconds: float) -> None:
    paths.STAMPS.mkdir(parents=True, exist_ok=True)
    stamp = {"name": image.name, "inputs": inputs, "image_id": image_id, "build_seconds": round(seconds, 1)}
    _stamp(image).write_text(json.dumps(stamp, indent=2) + "\n")
