"""Unpack a docker-archive tar (what `make images` exports and a containerd imports) into a root
filesystem, layer by layer with the OCI whiteout rules, and read the image's run configuration."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import tarfile

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"


@dataclasses.dataclass(frozen=True)
class ImageConfig:
    repo_tags: list[str]
    entrypoint: list[str]
    cmd: list[str]
    env: list[str]
    user: str
    workdir: str
    exposed_ports: list[str]


def _remove(path: pathlib.Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _apply_layer(layer: tarfile.TarFile, rootfs: pathlib.Path) -> None:
    for member in layer:
        parent, _, name = member.name.rstrip("/").rpartition("/")
        directory = rootfs / parent
        if name == OPAQUE:
            for child in directory.iterdir() if directory.is_dir() else ():
                _remove(child)
            continue
        if name.startswith(WHITEOUT):
            _remove(directory / name[len(WHITEOUT):])
            continue
        target = rootfs / member.name
        if not member.isdir() and (target.exists() or target.is_symlink()):
            _remove(target)
        layer.extract(member, rootfs, numeric_owner=True)


def unpack(archive: pathlib.Path, rootfs: pathlib.Path) -> ImageConfig:
    """Write the image in `archive` to `rootfs` (created) and return its configuration."""
    rootfs.mkdir(parents=True)
    with tarfile.open(archive) as outer:
        manifest = json.load(outer.extractfile("manifest.json"))[0]
        for name in manifest["Layers"]:
            with tarfile.open(fileobj=outer.extractfile(name), mode="r|*") as layer:
                _apply_layer(layer, rootfs)
        config = json.load(outer.extractfile(manifest["Config"]))["config"]
    os.chmod(rootfs, 0o755)
    return ImageConfig(
        repo_tags=manifest.get("RepoTags") or [],
        entrypoint=config.get("Entrypoint") or [],
        cmd=config.get("Cmd") or [],
        env=config.get("Env") or [],
        user=config.get("User") or "0",
        workdir=config.get("WorkingDir") or "/",
        exposed_ports=sorted(config.get("ExposedPorts") or {}),
    )
