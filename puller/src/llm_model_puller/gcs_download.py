"""gs:// sources through the Cloud Storage JSON API: one object, or every object under a prefix (the
layout kept), with an OAuth2 token (gcs_auth.py) or anonymously.

The objects' metadata (a listing with the prefix, or one object's) gives each object's size,
generation, md5Hash and crc32c. Each object is fetched at its listed generation (?generation=), so a
replaced object is never mixed with the old one, as an http_download.Download: streamed, resumed by
Range within the run and after a killed pod (a partial file of another generation is dropped). It is
checked against its md5Hash (a composite object has none: its crc32c is recorded, not checked: the
image has no CRC32C) and, for one object, MODEL_SHA256; its sha256 is always computed for the record.
An object an earlier, interrupted run finished is kept without a request while its generation is the
listing's, so a re-pull of an unchanged prefix fetches nothing.
"""

import base64
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

import requests

from . import __version__
from .config import Config
from .errors import ChecksumError, NotFoundError, TransientError, UsageError
from .gcs_auth import TokenSource, resolve_tokens
from .gcs_errors import gcs_error
from .gcs_source import GcsLocation
from .http_download import TRANSIENT_EXCEPTIONS, Download
from .progress import Progress, log
from .retry import with_retries
from .s3_download import STATE_DIR, check_layout, finished_record, pull_objects, relative_path, state_paths
from .store import Staging, write_atomically

MAX_LIST_PAGES = 10_000
LIST_FIELDS = "items(name,size,generation,md5Hash,crc32c),nextPageToken"


@dataclass(frozen=True)
class GcsObject:
    key: str  # the object's name
    path: str  # relative path in MODEL_DEST
    size: int | None
    generation: str | None
    md5: str | None  # hex, from md5Hash (absent for composite objects)
    crc32c: str | None  # hex, from crc32c

    @classmethod
    def from_json(cls, item: dict, path: str) -> "GcsObject":
        size = item.get("size")
        return cls(
            item.get("name", ""),
            path,
            int(size) if size not in (None, "") else None,
            str(item["generation"]) if item.get("generation") not in (None, "") else None,
            b64_hex(item.get("md5Hash")),
            b64_hex(item.get("crc32c")),
        )


def b64_hex(value) -> str | None:
    try:
        return base64.b64decode(value, validate=True).hex() if value else None
    except (ValueError, TypeError):
        return None


class GcsClient:
    """Requests to one bucket with the current token."""

    def __init__(self, location: GcsLocation, tokens: TokenSource, settings):
        self.location, self.tokens, self.settings = location, tokens, settings
        self.timeout = settings.timeout_seconds
        self._local = threading.local()

    def session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def headers(self) -> dict[str, str]:
        return {**self.tokens.headers(), "User-Agent": f"llm-model-puller/{__version__}", "Accept-Encoding": "identity"}

    def error(self, response: requests.Response, what: str, *, no_bucket: bool = False) -> Exception:
        if response.status_code == 404 and not no_bucket:
            no_bucket = self.bucket_missing()
        return gcs_error(
            response.status_code,
            response.content,
            what,
            self.tokens.identity,
            anonymous=self.tokens.anonymous,
            no_bucket=no_bucket,
        )

    def bucket_missing(self) -> bool:
        """True when the bucket's own metadata is not found (an account without storage.buckets.get is
        refused it, 403: then the object is what is missing)."""
        try:
            response = self.session().get(self.location.bucket_url(), headers=self.headers(), timeout=self.timeout)
        except TRANSIENT_EXCEPTIONS:
            return False
        return response.status_code == 404

    def get_json(self, url: str, what: str, *, listing: bool = False) -> dict:
        def attempt() -> dict:
            try:
                response = self.session().get(url, headers=self.headers(), timeout=self.timeout)
            except TRANSIENT_EXCEPTIONS as exc:
                raise TransientError(unreachable(self.location, exc)) from exc
            if response.status_code != 200:
                raise self.error(response, what, no_bucket=listing)
            try:
                body = response.json()
            except ValueError:
                body = None
            if not isinstance(body, dict):
                raise UsageError(
                    f"{redact(url)} did not answer the Cloud Storage JSON API: check STORAGE_EMULATOR_HOST"
                )
            return body

        return with_retries(attempt, self.settings, progress_marker=lambda: 0, what=what)

    def stat(self, name: str) -> GcsObject:
        item = self.get_json(self.location.object_url(name), f"gs://{self.location.bucket}/{name}")
        return GcsObject.from_json(item, name.rsplit("/", 1)[-1])

    def list_prefix(self) -> list[GcsObject]:
        """Every object under the prefix (folder placeholders left out), each with its path below it."""
        prefix, found, token = self.location.key, [], None
        for _ in range(MAX_LIST_PAGES):
            query = f"prefix={quote(prefix, safe='')}&fields={quote(LIST_FIELDS, safe='')}"
            if token:
                query += f"&pageToken={quote(token, safe='')}"
            body = self.get_json(f"{self.location.list_url()}?{query}", self.location.uri, listing=True)
            for item in body.get("items") or []:
                name = item.get("name") or ""
                if name.endswith("/"):
                    continue
                found.append(GcsObject.from_json(item, relative_path(prefix, name)))
            token = body.get("nextPageToken")
            if not token:
                break
        check_layout(found, self.location.uri)
        return found


def redact(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def unreachable(location: GcsLocation, exc: Exception) -> str:
    host = urlsplit(location.endpoint).netloc
    hint = "check STORAGE_EMULATOR_HOST" if host != "storage.googleapis.com" else "check the network"
    return f"Cloud Storage at {host} does not answer ({type(exc).__name__}): {hint}"


class Hashes:
    """md5 (to check the store's md5Hash) and sha256 (for the record) of the same bytes."""

    def __init__(self, with_md5: bool):
        self.hashers = {"sha256": hashlib.sha256(), **({"md5": hashlib.md5(usedforsecurity=False)} if with_md5 else {})}

    def update(self, data) -> None:
        for each in self.hashers.values():
            each.update(data)

    def digests(self) -> dict[str, str]:
        return {name: each.hexdigest() for name, each in self.hashers.items()}


class GcsObjectDownload(Download):
    """A Download of one generation of an object, its token fresh at every attempt."""

    def __init__(self, client: GcsClient, obj: GcsObject, path: Path, state_file: Path, progress):
        self.client, self.obj = client, obj
        generation_file = state_file.with_suffix(".generation")
        try:
            same = generation_file.read_text() == (obj.generation or "")
        except OSError:
            same = False
        if not same:  # a partial file of another generation (or of unknown one) is not resumed
            path.unlink(missing_ok=True)
            state_file.unlink(missing_ok=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(generation_file, obj.generation or "")
        url = client.location.media_url(obj.key, obj.generation)
        super().__init__(url, path, state_file, headers={}, auth_hint="", timeout=client.timeout, progress=progress)
        self.what = self.shown_url = f"gs://{client.location.bucket}/{obj.key}"

    def attempt(self) -> None:
        self.headers = self.client.headers()
        super().attempt()

    def _accept(self, response: requests.Response) -> bool:
        if response.status_code >= 300 and response.status_code != 416:
            raise self.client.error(response, self.what)
        return super()._accept(response)

    def _new_hasher(self) -> Hashes:
        return Hashes(self.obj.md5 is not None)

    def _describe(self, exc: Exception) -> str:
        if isinstance(exc, requests.exceptions.ConnectionError):
            return unreachable(self.client.location, exc)
        return super()._describe(exc)

    def verify(self, expected_sha256: str | None) -> dict[str, str]:
        """The file's digests after checking its size, md5Hash and expected_sha256."""
        digests = self.hasher.digests()
        problem = None
        if self.obj.size is not None and self.size != self.obj.size:
            problem = f"{self.what} has {self.size} bytes but the store lists {self.obj.size}"
        elif self.obj.md5 and digests.get("md5") != self.obj.md5:
            problem = f"{self.what} has md5 {digests.get('md5')} but the store's md5Hash says {self.obj.md5}"
        elif expected_sha256 and digests["sha256"] != expected_sha256:
            problem = f"{self.what} has sha256 {digests['sha256']}, expected {expected_sha256}"
        if problem:
            self.discard()
            raise ChecksumError(problem)
        return digests


def record_of(obj: GcsObject, download: GcsObjectDownload, digests: dict[str, str]) -> dict:
    record = {"key": obj.key, "path": obj.path, "size": download.size, "generation": obj.generation, **digests}
    if obj.crc32c:
        record["crc32c"] = obj.crc32c
    return record


def pull_gcs(cfg: Config, staging: Staging, progress: Progress) -> tuple[list[str], dict]:
    """Download cfg.gcs into staging; return (top-level names, manifest details). The caller publishes."""
    location = cfg.gcs
    tokens = resolve_tokens(os.environ, cfg.settings.timeout_seconds)
    log.info("%s from %s, %s", location.uri, location.endpoint, tokens.identity)
    client = GcsClient(location, tokens, cfg.settings)
    (staging.root / STATE_DIR).mkdir(parents=True, exist_ok=True)
    if not location.is_prefix:
        obj = client.stat(location.key)
        obj = GcsObject(obj.key, cfg.file_name, obj.size, obj.generation, obj.md5, obj.crc32c)
        state_file, _ = state_paths(staging, obj.key)
        download = GcsObjectDownload(client, obj, staging.files / cfg.file_name, state_file, progress)
        with_retries(download.attempt, cfg.settings, progress_marker=lambda: download.size, what=download.what)
        digests = download.verify(cfg.sha256)
        checked = ["md5Hash"] * bool(obj.md5) + ["MODEL_SHA256"] * bool(cfg.sha256)
        log.info(
            "sha256 %s, generation %s, %s",
            digests["sha256"],
            obj.generation,
            f"verified ({' and '.join(checked)})" if checked else "(no md5Hash or MODEL_SHA256 to compare with)",
        )
        return [cfg.file_name], {
            "kind": "gcs",
            "sha256": digests["sha256"],
            "objects": [record_of(obj, download, digests)],
        }

    objects = client.list_prefix()
    if not objects:
        raise NotFoundError(
            f"no object under {location.uri}: check the prefix (names are case-sensitive) and the bucket"
        )
    records = pull_objects(
        objects,
        staging,
        progress,
        cfg,
        lambda obj: finished(obj, staging),
        lambda obj, shared: pull_object(client, obj, staging, shared, cfg),
    )
    records.sort(key=lambda r: r["path"])
    listing = "".join(f"{r['sha256']}  {r['path']}\n" for r in records)
    details = {"kind": "gcs-prefix", "sha256": hashlib.sha256(listing.encode()).hexdigest(), "objects": records}
    return sorted({o.path.split("/", 1)[0] for o in objects}), details


def finished(obj: GcsObject, staging: Staging) -> dict | None:
    """The record of an object an earlier run finished, if its generation and size are still the listing's."""
    return finished_record(obj, staging, "generation", obj.generation)


def pull_object(client: GcsClient, obj: GcsObject, staging: Staging, progress, cfg: Config) -> dict:
    state_file, done_file = state_paths(staging, obj.key)
    download = GcsObjectDownload(client, obj, staging.files / obj.path, state_file, progress)
    with_retries(download.attempt, cfg.settings, progress_marker=lambda: download.size, what=download.what)
    record = record_of(obj, download, download.verify(None))
    write_atomically(done_file, json.dumps(record))
    return record
