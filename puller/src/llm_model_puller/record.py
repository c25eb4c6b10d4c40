"""The success record: what the volume now holds, in the one JSON line the operator reads from the
pull pod's termination message (Kubernetes keeps at most 4096 bytes of it)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

# A split GGUF model: <name>-00001-of-00003.gguf, ... (llama.cpp's gguf-split naming); a server is
# given the first part and reads the others.
_SPLIT = re.compile(r"^(?P<stem>.+)-(?P<part>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


def gguf_model(paths: list[str]) -> str | None:
    """The GGUF model file among ``paths`` a server should load, or None when there is none or the
    choice is not obvious (several quantisations: the user names one with spec.serve.modelFile).

    Multimodal projectors (mmproj*.gguf) are not models. A split model counts as one: its first part.
    """
    models = [p for p in paths if p.lower().endswith(".gguf") and not PurePosixPath(p).name.lower().startswith("mmproj")]
    if len(models) == 1:
        return models[0]
    splits = {(str(PurePosixPath(p).parent), m["stem"], m["count"]) for p in models if (m := _SPLIT.match(PurePosixPath(p).name))}
    if models and len(splits) == 1 and all(_SPLIT.match(PurePosixPath(p).name) for p in models):
        return sorted(models)[0]
    return None


# What pins what a volume holds, the strongest first: a Hub commit, a file's sha256, or (an s3://
# object checked by the store's CRC32 alone, no sha256 computed) its CRC32.
PINS = ("commit", "sha256", "crc32")


def pinned(manifest: dict) -> str:
    """'commit <id>', 'sha256 <hex>' or 'crc32 <hex>': the first of PINS the manifest has."""
    key = next((key for key in PINS if manifest.get(key)), "sha256")
    return f"{key} {manifest.get(key)}"


def success_record(manifest: dict, source: str) -> dict:
    """source, commit, sha256 or crc32, size (bytes of every file) and, when there is one, the GGUF model file."""
    record = {"source": source, "size": int(manifest.get("total_bytes") or sum(f["size"] for f in manifest["files"]))}
    for key in PINS:
        if manifest.get(key):
            record[key] = manifest[key]
    gguf = gguf_model([f["path"] for f in manifest["files"]])
    if gguf:
        record["gguf"] = gguf
    return record
