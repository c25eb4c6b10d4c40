"""buildah, daemonless, with its image store under .cache/containers (not /var/lib/containers).

Builds use `--isolation chroot` (no runtime or cgroup set-up needed inside a build) and
`--pull=never` (bases are local: nothing is ever pulled). The overlay driver works on this machine's
ext4; IMAGES_STORAGE_DRIVER=vfs is the fallback where overlay mounts are not allowed.
"""

from __future__ import annotations

import os
import pathlib
import subprocess

from . import paths

# The host's CA bundle: pip inside a build reaches PyPI through this machine's TLS-inspecting proxy.
# Bind-mounted read-only over the image's own bundle (Debian's pip trusts that file) for the RUN steps
# of images that ask for it (catalog.Image.host_ca); it never lands in a layer.
HOST_CA_BUNDLE = pathlib.Path("/etc/ssl/certs/ca-certificates.crt")


def _global() -> list[str]:
    driver = os.environ.get("IMAGES_STORAGE_DRIVER", "overlay")
    return [
        "buildah",
        "--root", str(paths.STORAGE / "storage"),
        "--runroot", str(paths.STORAGE / "run"),
        "--storage-driver", driver,
    ]


def image_id(name: str) -> str | None:
    """The full ID of the local image `name`, or None when the store has no such image."""
    result = subprocess.run(
        [*_global(), "images", "--noheading", "--no-trunc", "--format", "{{.ID}}", name],
        capture_output=True, text=True,
    )
    ids = result.stdout.split()
    return ids[0].removeprefix("sha256:") if result.returncode == 0 and ids else None


def build(name: str, context: pathlib.Path, build_args: dict[str, str], host_ca: bool) -> None:
    command = [*_global(), "bud", "--isolation", "chroot", "--pull=never", "--layers=false", "--tag", name]
    for key, value in build_args.items():
        command += ["--build-arg", f"{key}={value}"]
    if host_ca and HOST_CA_BUNDLE.exists():
        command += ["--volume", f"{HOST_CA_BUNDLE}:/etc/ssl/certs/ca-certificates.crt:ro"]
    command += ["--file", str(context / "Dockerfile"), str(context)]
    subprocess.run(command, check=True)


def export(name: str, archive: pathlib.Path) -> None:
    """Write `name` as a docker-archive tar (what `ctr images import` and `docker load` read)."""
    partial = archive.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    subprocess.run([*_global(), "push", "--quiet", name, f"docker-archive:{partial}:{name}"], check=True)
    partial.rename(archive)


def remove_dangling() -> None:
    """Drop untagged images a rebuild left behind, so the store does not grow without bound."""
    subprocess.run([*_global(), "rmi", "--prune"], capture_output=True)
