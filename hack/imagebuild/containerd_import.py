"""Import the exported images into a containerd, into the namespace the kubelet's CRI uses (k8s.io).

`ctr images import` reads docker-archive tars; `--local` runs the import in ctr itself (containerd 2.x
otherwise goes through its transfer service). The image is unpacked for the snapshotter, so a pod
starts from it without pulling; the kubelet never pulls an image that is present when its
imagePullPolicy is IfNotPresent or Never.
"""

from __future__ import annotations

import pathlib
import subprocess

NAMESPACE = "k8s.io"


def _ctr(ctr: str, address: str) -> list[str]:
    return [ctr, "--address", address, "--namespace", NAMESPACE]


def present(ctr: str, address: str) -> set[str]:
    result = subprocess.run([*_ctr(ctr, address), "images", "list", "--quiet"], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"images: cannot list images of the containerd at {address}: {result.stderr.strip()}")
    return set(result.stdout.split())


def load(ctr: str, address: str, archives: dict[str, pathlib.Path]) -> None:
    """Import each archive (name -> tar) and check that the containerd then lists the name."""
    for name, archive in archives.items():
        print(f"images: importing {name} from {archive}", flush=True)
        subprocess.run([*_ctr(ctr, address), "images", "import", "--local", str(archive)], check=True)
    missing = sorted(set(archives) - present(ctr, address))
    if missing:
        raise SystemExit(f"images: containerd at {address} does not list {', '.join(missing)} after the import")
