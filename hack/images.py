#!/usr/bin/env python3
"""The project's container images, built from its own Dockerfiles without a Docker daemon.

    images.py build [KEY ...]     build what changed (all images by default), export the project's
                                  images to .cache/images/<key>.tar
    images.py import              import those tars into a containerd (--address, --ctr)
    images.py list                print key, name and exported tar of every image

Options: --operator-image (IMG), --puller-image (LLMMODEL_PULLER_IMAGE), --router-image
(LLM_ROUTER_IMAGE), --ansible-operator (the
binary the stand-in base carries). Bases that cannot be pulled here are stand-ins made locally
(images/README.md). Each image is rebuilt only when its inputs changed (hack/imagebuild/digest.py).
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from imagebuild import builder, catalog, containerd_import, paths  # noqa: E402

TOOLS = ("buildah", "mmdebstrap")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("build", "import", "list"))
    parser.add_argument("keys", nargs="*", help="images to build (default: all)")
    parser.add_argument("--operator-image", default="ghcr.io/llm-operator/llm-operator:0.1.0")
    parser.add_argument("--puller-image", default="ghcr.io/llm-operator/llm-model-puller:0.1.0")
    parser.add_argument("--router-image", default=catalog.ROUTER)
    parser.add_argument("--ansible-operator", type=pathlib.Path, default=paths.ROOT / "bin" / "ansible-operator")
    parser.add_argument("--address", default="/run/containerd/containerd.sock", help="containerd socket")
    parser.add_argument("--ctr", default="ctr", help="the ctr binary")
    return parser.parse_args(argv)


def selected(all_images: list[catalog.Image], keys: list[str]) -> list[catalog.Image]:
    """The images asked for and, before them, every local base they are built from."""
    by_name = {image.name: image for image in all_images}
    known = {image.key for image in all_images}
    unknown = sorted(set(keys) - known)
    if unknown:
        raise SystemExit(f"images: unknown {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    wanted = set(keys or known)
    changed = True
    while changed:
        needed = {by_name[base].key for image in all_images if image.key in wanted for base in image.bases}
        changed = not needed <= wanted
        wanted |= needed
    return [image for image in all_images if image.key in wanted]


def build(images: list[catalog.Image]) -> None:
    absent = [tool for tool in TOOLS if not shutil.which(tool)]
    if absent:
        raise SystemExit(f"images: {', '.join(absent)} missing: python3 hack/apt_install.py images")
    started = time.monotonic()
    for image in images:
        builder.ensure(image)
    print(f"images: done in {time.monotonic() - started:.0f}s", flush=True)


def main(argv: list[str]) -> int:
    args = parse(argv)
    all_images = catalog.images(args.operator_image, args.puller_image, args.ansible_operator, args.router_image)
    if args.action == "list":
        for image in all_images:
            print(image.key, image.name, paths.IMAGES / f"{image.key}.tar" if image.export else "-")
    elif args.action == "build":
        build(selected(all_images, args.keys))
    else:
        archives = {image.name: paths.IMAGES / f"{image.key}.tar" for image in all_images if image.export}
        absent = [str(archive) for archive in archives.values() if not archive.exists()]
        if absent:
            raise SystemExit(f"images: not built yet (make images): {', '.join(absent)}")
        containerd_import.load(args.ctr, args.address, archives)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
