"""MODEL_DEST: the completion manifest, the staging area, and moving a finished download into place.

Layout of MODEL_DEST:
    <model files>                  what the server reads
    .llm-model-puller.json         manifest, written last: its presence means "complete"
    .llm-model-puller.partial/     staging: source.json, files/ (downloads in progress), hf-home/

The order that keeps a half-written state from ever looking complete: remove the manifest first, then
old contents; download into staging; move files into place; fsync; write the manifest atomically.

Under the operator, MODEL_DEST is one revision of the weights volume (WEIGHTS_ROOT):
    revisions/<id>/                one directory per source pulled, laid out as above
    <model files>, manifest        a volume of the previous release: one revision at the root
Everything above only ever clears inside MODEL_DEST; prune_revisions removes, before a pull, the
revisions the operator no longer keeps, never MODEL_DEST and never a kept one (the one served).
"""

import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from . import __version__

MANIFEST_NAME = ".llm-model-puller.json"
STAGING_NAME = ".llm-model-puller.partial"
MANIFEST_VERSION = 1
# The root of an ext4 volume has it, it belongs to root, and it is not ours to delete.
KEEP_NAMES = frozenset({"lost+found"})
REVISIONS_DIR = "revisions"
# In KEEP_REVISIONS: the revision a volume of the previous release holds at its root.
ROOT_REVISION = "root"


@dataclass
class Manifest:
    source: str
    files: list[dict]  # [{"path": "config.json", "size": 123}, ...]
    details: dict = field(default_factory=dict)  # kind, repo, revision, commit, url, sha256, ...

    def to_json(self) -> dict:
        return {
            "version": MANIFEST_VERSION,
            "source": self.source,
            **self.details,
            "files": self.files,
            "total_bytes": sum(f["size"] for f in self.files),
            "completed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "puller_version": __version__,
        }


def read_manifest(dest: Path) -> dict | None:
    try:
        data = json.loads((dest / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION or not isinstance(data.get("files"), list):
        return None
    return data


def missing_or_wrong(dest: Path, manifest: dict) -> list[str]:
    """Files the manifest lists that are absent or have another size."""
    bad = []
    for entry in manifest["files"]:
        try:
            path, size = entry["path"], entry["size"]
            if (dest / path).stat().st_size != size:
                bad.append(path)
        except (OSError, KeyError, TypeError):
            bad.append(str(entry))
    return bad


class Staging:
    """The partial area inside MODEL_DEST, tied to one source so that only the same source resumes."""

    def __init__(self, dest: Path):
        self.dest = dest
        self.root = dest / STAGING_NAME
        self.files = self.root / "files"
        self.hf_home = self.root / "hf-home"
        self._source_file = self.root / "source.json"

    def source(self) -> str | None:
        try:
            return json.loads(self._source_file.read_text()).get("source")
        except (OSError, ValueError, AttributeError):
            return None

    def prepare(self, source: str) -> bool:
        """Clear MODEL_DEST for source, keeping a partial download of the same source. True if one was kept."""
        (self.dest / MANIFEST_NAME).unlink(missing_ok=True)
        resumable = self.source() == source
        if not resumable and self.root.exists():
            shutil.rmtree(self.root)
        for entry in self.dest.iterdir():
            if entry.name in KEEP_NAMES or entry == self.root:
                continue
            remove(entry)
        self.files.mkdir(parents=True, exist_ok=True)
        self.hf_home.mkdir(parents=True, exist_ok=True)
        write_atomically(self._source_file, json.dumps({"source": source}) + "\n")
        return resumable

    def used_bytes(self) -> int:
        """Bytes of model data under files/, finished or in progress: what progress polling reads.

        huggingface_hub keeps its bookkeeping in files/.cache/; of that only *.incomplete is model data.
        """
        total = 0
        for dirpath, _, filenames in os.walk(self.files):
            in_cache = ".cache" in Path(dirpath).relative_to(self.files).parts
            for name in filenames:
                if in_cache and not name.endswith(".incomplete"):
                    continue
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except OSError:
                    pass  # a temporary file renamed or removed under our feet
        return total

    def publish(self, names: list[str], source: str, details: dict) -> dict:
        """Move the top-level entries `names` of files/ into MODEL_DEST, write the manifest last, clean up."""
        for name in names:
            target = self.dest / name
            if target.exists() or target.is_symlink():
                remove(target)
            os.replace(self.files / name, target)
        files = list_files(self.dest, names)
        for entry in files:
            fsync_path(self.dest / entry["path"])
        for directory in {(self.dest / entry["path"]).parent for entry in files} | {self.dest}:
            fsync_path(directory)
        manifest = Manifest(source=source, files=files, details=details).to_json()
        write_atomically(self.dest / MANIFEST_NAME, json.dumps(manifest, indent=2) + "\n")
        shutil.rmtree(self.root, ignore_errors=True)
        return manifest


def prune_revisions(root: Path, dest: Path, keep: frozenset[str]) -> list[str]:
    """Remove from the volume at root every revision that is neither dest nor named in keep.

    The revisions are the directories of root/revisions/, and the files of a previous release's
    volume at the root itself (everything but revisions/ and lost+found), kept by the name "root".
    Returns what was removed, relative to root.
    """
    removed = []
    revisions = root / REVISIONS_DIR
    for entry in sorted(revisions.iterdir()) if revisions.is_dir() else []:
        if entry.name in keep or entry.name == dest.name:
            continue
        remove(entry)
        removed.append(f"{REVISIONS_DIR}/{entry.name}")
    if ROOT_REVISION not in keep:
        for entry in sorted(root.iterdir()):
            if entry.name in KEEP_NAMES or entry.name == REVISIONS_DIR:
                continue
            remove(entry)
            removed.append(entry.name)
    return removed


@contextmanager
def exclusive(dest: Path, on_wait: Callable[[], None]) -> Iterator[None]:
    """Hold an flock on MODEL_DEST itself, so that two pullers never interleave on one volume.

    Two pods of one Job can overlap (a replacement starts while the old pod is still terminating).
    flock is advisory and node-local: it covers a ReadWriteOnce volume, not every network filesystem.
    """
    fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def list_files(dest: Path, names: list[str]) -> list[dict]:
    """Relative paths and sizes of every regular file under the given top-level entries of dest."""
    files = []
    for name in names:
        top = dest / name
        if top.is_file():
            files.append({"path": name, "size": top.stat().st_size})
            continue
        for dirpath, _, filenames in os.walk(top):
            for filename in filenames:
                path = Path(dirpath) / filename
                files.append({"path": path.relative_to(dest).as_posix(), "size": path.stat().st_size})
    return sorted(files, key=lambda f: f["path"])


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_path(path.parent)
