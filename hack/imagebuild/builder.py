"""Build one image when its inputs changed, and export it; say what was done and how long it took."""

from __future__ import annotations

import shutil
import time

from . import buildah, context, digest, paths
from .catalog import Image


def ensure(image: Image) -> str:
    """Build (if needed) and export (if exported) `image`; return its image ID."""
    if "COLLECTIONS" in image.build_args and not any(name.endswith(".tar.gz") for name in image.context):
        raise SystemExit(f"images: {image.key} installs kubernetes.core from {paths.COLLECTIONS}/*.tar.gz: "
                         "none there, run `make collections`")
    base_ids = {}
    for base in image.bases:
        base_id = buildah.image_id(base)
        if not base_id:
            raise SystemExit(f"images: base {base} of {image.key} is not in the local store")
        base_ids[base] = base_id
    staged = context.stage(image)
    inputs = digest.compute(image, staged, base_ids)
    stamp = digest.recorded(image)
    current = buildah.image_id(image.name)
    archive = paths.IMAGES / f"{image.key}.tar"
    if current and stamp.get("inputs") == inputs and stamp.get("image_id") == current:
        shutil.rmtree(staged)
        if image.export and not archive.exists():
            buildah.export(image.name, archive)
            print(f"images: {image.key}: up to date, exported again to {archive.name}", flush=True)
        else:
            print(f"images: {image.key}: up to date ({image.name})", flush=True)
        return current
    print(f"images: {image.key}: building {image.name} from {image.dockerfile}", flush=True)
    started = time.monotonic()
    buildah.build(image.name, staged, image.build_args, image.host_ca)
    built = buildah.image_id(image.name)
    if not built:
        raise SystemExit(f"images: {image.key}: buildah reported success but {image.name} is not in the store")
    if image.export:
        buildah.export(image.name, archive)
    seconds = time.monotonic() - started
    digest.record(image, inputs, built, seconds)
    shutil.rmtree(staged)
    buildah.remove_dangling()
    exported = f", exported to {archive}" if image.export else ""
    print(f"images: {image.key}: built in {seconds:.0f}s{exported}", flush=True)
    return built
