#!/usr/bin/env python3
"""Install the Ansible collections of requirements.yml into .cache/collections, without Galaxy.

The operator image installs them with `ansible-galaxy collection install -r requirements.yml`; Galaxy is
unreachable here. PyPI's `ansible` package (pinned in requirements-collections.txt) bundles the same
collection releases, so this script

1. downloads that wheel (`pip download --no-deps`, into a temporary directory),
2. takes `ansible_collections/<namespace>/<name>/` out of it and checks that its MANIFEST.json says the
   version requirements.yml pins, and that every file it carries has the sha256 the release's own
   FILES.json records (the bundle leaves out tests and CI files, nothing else changes),
3. builds a Galaxy collection artifact `.cache/collections/<namespace>-<name>-<version>.tar.gz`
   (MANIFEST.json, FILES.json with the sha256 of every file it holds, reproducible bytes), and
4. installs that artifact with the image's `ansible-galaxy collection install` into
   `.cache/collections/ansible_collections`, the path ANSIBLE_COLLECTIONS_PATH names in every run of
   the role (Makefile, Molecule, tests, bench).

The same artifact can be installed into the operator image. Each step runs only when its output is
missing or of another version, so a warm `make collections` does nothing.

Usage: install_collections.py [--dest .cache/collections] [--check]
  --check   only verify that the installed collections match requirements.yml (exit 1 if not)
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
REQUIREMENTS_YML = ROOT / "requirements.yml"
BUNDLE_PIN = ROOT / "requirements-collections.txt"
DEFAULT_DEST = ROOT / ".cache" / "collections"
# Every member of the artifact gets this time, so the same inputs give the same bytes.
FIXED_MTIME = 0


def wanted_collections() -> list[tuple[str, str, str]]:
    """(namespace, name, version) of every collection requirements.yml pins."""
    data = yaml.safe_load(REQUIREMENTS_YML.read_text()) or {}
    wanted = []
    for entry in data.get("collections") or []:
        fqcn, version = entry.get("name", ""), str(entry.get("version", ""))
        if fqcn.count(".") != 1 or not re.fullmatch(r"\d+\.\d+\.\d+", version):
            sys.exit(f"install_collections: requirements.yml must pin 'namespace.name' at an exact version: {entry}")
        namespace, name = fqcn.split(".")
        wanted.append((namespace, name, version))
    return wanted


def bundle_requirement() -> str:
    """The `ansible==X.Y.Z` line of requirements-collections.txt."""
    for line in BUNDLE_PIN.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if re.fullmatch(r"ansible==\d+\.\d+\.\d+", line):
            return line
    sys.exit(f"install_collections: {BUNDLE_PIN.name} must pin ansible==X.Y.Z")


def installed_version(dest: pathlib.Path, namespace: str, name: str) -> str | None:
    manifest = dest / "ansible_collections" / namespace / name / "MANIFEST.json"
    if not manifest.is_file():
        return None
    return json.loads(manifest.read_text())["collection_info"]["version"]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def download_bundle(workdir: pathlib.Path) -> pathlib.Path:
    requirement = bundle_requirement()
    print(f"install_collections: pip download --no-deps {requirement}", flush=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
         "--only-binary=:all:", "--dest", str(workdir), requirement],
        check=True,
    )
    wheels = sorted(workdir.glob("ansible-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"install_collections: expected one ansible wheel in {workdir}, found {wheels}")
    return wheels[0]


def collection_files(wheel: pathlib.Path, namespace: str, name: str, version: str) -> tuple[dict, dict[str, bytes]]:
    """The release's MANIFEST.json and the files the wheel carries for it (path relative to the
    collection -> bytes), checked against the release's own MANIFEST.json and FILES.json."""
    prefix = f"ansible_collections/{namespace}/{name}/"
    with zipfile.ZipFile(wheel) as archive:
        files = {
            member[len(prefix):]: archive.read(member)
            for member in archive.namelist()
            if member.startswith(prefix) and not member.endswith("/")
        }
    if "MANIFEST.json" not in files or "FILES.json" not in files:
        sys.exit(f"install_collections: {wheel.name} has no {namespace}.{name} with MANIFEST.json and FILES.json")
    manifest = json.loads(files.pop("MANIFEST.json"))
    release_files = files.pop("FILES.json")
    bundled = manifest["collection_info"]["version"]
    if bundled != version:
        sys.exit(
            f"install_collections: {wheel.name} bundles {namespace}.{name} {bundled}, requirements.yml pins {version}; "
            f"pin the ansible release that bundles {version} in {BUNDLE_PIN.name}"
        )
    if sha256(release_files) != manifest["file_manifest_file"]["chksum_sha256"]:
        sys.exit(f"install_collections: FILES.json of {namespace}.{name} does not match its MANIFEST.json")
    released = {e["name"]: e["chksum_sha256"] for e in json.loads(release_files)["files"] if e["ftype"] == "file"}
    for path, data in files.items():
        if released.get(path) != sha256(data):
            sys.exit(f"install_collections: {namespace}.{name}/{path} in {wheel.name} differs from the {version} release")
    return manifest, files


def files_manifest(files: dict[str, bytes]) -> bytes:
    """FILES.json as Galaxy writes it: '.', then every directory and file in path order, files with sha256."""
    directories = {"."}
    for path in files:
        parts = path.split("/")[:-1]
        directories.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    entries = []
    for path in sorted(directories | set(files), key=lambda p: "" if p == "." else p):
        is_file = path in files
        entries.append({
            "name": path,
            "ftype": "file" if is_file else "dir",
            "chksum_type": "sha256" if is_file else None,
            "chksum_sha256": sha256(files[path]) if is_file else None,
            "format": 1,
        })
    return json.dumps({"files": entries, "format": 1}, indent=4).encode()


def build_artifact(manifest: dict, files: dict[str, bytes], artifact: pathlib.Path) -> None:
    """A collection tarball that `ansible-galaxy collection install` accepts, with reproducible bytes."""
    files_json = files_manifest(files)
    manifest = dict(manifest)
    manifest["file_manifest_file"] = dict(manifest["file_manifest_file"], chksum_sha256=sha256(files_json))
    members: list[tuple[str, bytes | None]] = [
        ("MANIFEST.json", json.dumps(manifest, indent=4).encode()),
        ("FILES.json", files_json),
    ]
    for entry in json.loads(files_json)["files"]:
        if entry["name"] != ".":
            members.append((entry["name"], files[entry["name"]] if entry["ftype"] == "file" else None))

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path, data in members:
            info = tarfile.TarInfo(path)
            info.mtime, info.uid, info.gid, info.uname, info.gname = FIXED_MTIME, 0, 0, "", ""
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    artifact.parent.mkdir(parents=True, exist_ok=True)
    partial = artifact.with_suffix(".partial")
    with open(partial, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=FIXED_MTIME, filename="") as gz:
        gz.write(buffer.getvalue())
    partial.replace(artifact)
    print(f"install_collections: built {artifact.relative_to(ROOT) if artifact.is_relative_to(ROOT) else artifact}"
          f" ({len(files)} files)", flush=True)


def galaxy_install(artifact: pathlib.Path, dest: pathlib.Path) -> None:
    galaxy = pathlib.Path(sys.executable).parent / "ansible-galaxy"
    subprocess.run(
        [str(galaxy), "collection", "install", "--offline", "--force", "--no-deps",
         "--collections-path", str(dest), str(artifact)],
        check=True, env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(dest)},
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=pathlib.Path, default=DEFAULT_DEST)
    parser.add_argument("--check", action="store_true", help="only verify the installed collections")
    opts = parser.parse_args()
    dest = opts.dest.resolve()

    wanted = wanted_collections()
    missing = [(ns, n, v) for ns, n, v in wanted if installed_version(dest, ns, n) != v]
    if opts.check:
        for ns, n, v in missing:
            print(f"install_collections: {ns}.{n} {v} is not installed in {dest} "
                  f"(found {installed_version(dest, ns, n)}); run `make collections`", file=sys.stderr)
        return 1 if missing else 0
    if not missing:
        return 0

    with tempfile.TemporaryDirectory(prefix="collections-") as tmp:
        wheel = None
        for namespace, name, version in missing:
            artifact = dest / f"{namespace}-{name}-{version}.tar.gz"
            if not artifact.is_file():
                wheel = wheel or download_bundle(pathlib.Path(tmp))
                manifest, files = collection_files(wheel, namespace, name, version)
                build_artifact(manifest, files, artifact)
            galaxy_install(artifact, dest)
            if installed_version(dest, namespace, name) != version:
                sys.exit(f"install_collections: {namespace}.{name} {version} did not install into {dest}")
    shutil.rmtree(dest / ".tmp", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
