"""s3:// sources: one object, or every object under a prefix (the layout kept), signed with SigV4.

Each object is an http_download.Download whose every attempt is signed afresh, so it streams, hashes
and resumes by Range (within the run and after a killed pod) exactly as a URL does. A prefix is listed
with ListObjectsV2 and its objects are fetched a bounded number at a time (PULLER_S3_MAX_WORKERS). An
object finished by an earlier, interrupted run of the same source is kept without a request when its
ETag is still the listing's. Each object is checked against the store's full-object checksum when
the store gives one it can check (x-amz-checksum-crc32 or -sha256, checksums.py), a single object
also against MODEL_SHA256. The sha256 of an object is computed when something asks for it (the store's
checksum, MODEL_SHA256) or when there is nothing else to record; a CRC32 alone is cheaper to check.

The pull itself (pull_from: one object by parts or whole, a prefix's objects, their records) is the
store's client's to sign and name: S3Client here, azure_download.AzureClient for az:// the same way.
"""

import hashlib
import json
import os
import threading
import xml.etree.ElementTree as ET
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import quote, urlsplit

import requests

from . import __version__
from .config import Config
from .errors import ChecksumError, NotFoundError, TransientError, UsageError
from .checksums import ALGORITHMS, Digests, StoreChecksum, algorithms, store_checksum
from .http_download import TRANSIENT_EXCEPTIONS, Download
from .progress import Progress, human_bytes, log
from .retry import with_retries
from .s3_auth import Credentials, describe, resolve_credentials, sign
from .s3_errors import s3_error
from .s3_parts import PartedDownload, Probe, SharedProgress
from .s3_source import S3Location
from .sources import redact_url
from .store import Staging, write_atomically

MiB = 1 << 20
S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
MAX_LIST_PAGES = 10_000  # 10 million objects: far beyond any model, a bound on a store that never stops
STATE_DIR = "s3-state"


@dataclass(frozen=True)
class S3Object:
    key: str
    path: str  # relative path in MODEL_DEST
    size: int | None
    etag: str | None


# Headers of a request that are sent unsigned: a resume's, the same for every signature scheme.
UNSIGNED = frozenset({"range", "if-range"})


class S3Client:
    """Signed requests to one bucket."""

    kind = "s3"  # the manifest's kind: "s3" for one object, "s3-prefix" for a folder
    checksum_request = {"x-amz-checksum-mode": "ENABLED"}  # what asks a GET or HEAD for the checksum

    def __init__(self, location: S3Location, creds: Credentials | None, timeout: float):
        self.location = location
        self.creds = creds
        self.timeout = timeout
        self.session = requests.Session()
        self._local = threading.local()

    def what(self, key: str) -> str:
        """How an object is named in log lines and errors."""
        return f"s3://{self.location.bucket}/{key}"

    def object_url(self, key: str) -> str:
        return self.location.object_url(key)

    def error(self, response: requests.Response, what: str) -> Exception:
        signed = self.creds is not None
        return s3_error(
            response.status_code, response.headers, response.content, what, self.location.region, signed=signed
        )

    @staticmethod
    def store_checksum(headers) -> StoreChecksum | None:
        return store_checksum(headers)

    def unreachable(self, exc: Exception) -> str:
        return unreachable(self.location, exc)

    def nothing_under(self) -> str:
        return f"no object under {self.location.uri}: check the prefix (keys are case-sensitive) and the bucket"

    def session_for_thread(self) -> requests.Session:
        """A Session per thread: requests does not promise that one Session is safe across threads."""
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def headers(self, url: str, extra: dict | None = None, method: str = "GET") -> dict:
        extra = dict(extra or {})
        unsigned = {name: value for name, value in extra.items() if name.lower() in UNSIGNED}
        to_sign = {name: value for name, value in extra.items() if name.lower() not in UNSIGNED}
        signed = sign(method, url, self.creds, self.location.region, to_sign) if self.creds else to_sign
        return {**signed, **unsigned, "User-Agent": f"llm-model-puller/{__version__}", "Accept-Encoding": "identity"}

    def list_prefix(self, settings) -> list[S3Object]:
        """Every object under the prefix (directory markers left out), each with its path below it."""
        prefix, found, token = self.location.key, [], None
        what = self.location.uri
        for _ in range(MAX_LIST_PAGES):
            query = f"list-type=2&prefix={quote(prefix, safe='-_.~')}"
            if token:
                query += f"&continuation-token={quote(token, safe='-_.~')}"
            url = f"{self.location.bucket_url()}/?{query}"
            root = listing_page(self, url, what, settings, "an S3 listing: check AWS_ENDPOINT_URL")
            for item in root.iter(f"{S3_NS}Contents"):
                key = item.findtext(f"{S3_NS}Key") or ""
                if key.endswith("/"):
                    continue  # a "folder" marker object
                size = item.findtext(f"{S3_NS}Size")
                found.append(
                    S3Object(
                        key, relative_path(prefix, key), int(size) if size else None, item.findtext(f"{S3_NS}ETag")
                    )
                )
            token = root.findtext(f"{S3_NS}NextContinuationToken")
            if root.findtext(f"{S3_NS}IsTruncated") != "true" or not token:
                break
        check_layout(found, what)
        return found


def listing_page(client, url: str, what: str, settings, expected: str) -> ET.Element:
    """One page of a store's listing, signed by the client, retried while the store is unreachable;
    its XML root, or UsageError saying that url did not answer `expected`."""

    def attempt():
        try:
            response = client.session.get(url, headers=client.headers(url), timeout=client.timeout)
        except TRANSIENT_EXCEPTIONS as exc:
            raise TransientError(client.unreachable(exc)) from exc
        if response.status_code != 200:
            raise client.error(response, what)
        return response.content

    body = with_retries(attempt, settings, progress_marker=lambda: 0, what=what)
    try:
        return ET.fromstring(body)
    except ET.ParseError:
        raise UsageError(f"{redact_url(url)} did not answer {expected}") from None


def relative_path(prefix: str, key: str) -> str:
    """Where key goes below MODEL_DEST: its part after the prefix, refused when it could leave it."""
    rest = key[len(prefix) :]
    parts = rest.split("/")
    if not rest or any(part in ("", ".", "..") for part in parts) or parts[0].startswith(".llm-model-puller"):
        raise UsageError(f"object key {key!r} cannot be a path below MODEL_DEST (empty, '.' or '..' segments)")
    return rest


def check_layout(objects: list[S3Object], what: str) -> None:
    paths = {o.path for o in objects}
    for o in objects:
        parent = PurePosixPath(o.path).parent
        while str(parent) != ".":
            if str(parent) in paths:
                raise UsageError(
                    f"{what} holds both an object {parent} and objects below {parent}/: no folder can hold both"
                )
            parent = parent.parent


def unreachable(location: S3Location, exc: Exception) -> str:
    host = urlsplit(location.bucket_url()).netloc
    hint = "check AWS_ENDPOINT_URL" if location.endpoint else "check the network and AWS_REGION"
    return f"the store at {host} does not answer ({type(exc).__name__}): {hint}"


class ObjectDownload(Download):
    """A Download whose every attempt is signed afresh by the store's client, whose errors are read as
    the store's errors."""

    def __init__(self, client, key: str, path: Path, state_file: Path, progress, timeout: float, wants_sha256: bool):
        url = client.object_url(key)
        self.checksum_file = state_file.with_suffix(".checksum")
        self.checksum = self._read_checksum() if path.exists() and path.stat().st_size else None
        self.wants_sha256 = wants_sha256  # MODEL_SHA256 is to be checked
        super().__init__(url, path, state_file, headers={}, auth_hint="", timeout=timeout, progress=progress)
        self.client = client
        self.what = client.what(key)
        self.shown_url = self.what

    def request_headers(self, resume: dict) -> dict:
        return self.client.headers(self.url, {**self.client.checksum_request, **resume})

    def _accept(self, response: requests.Response) -> bool:
        if response.status_code == 412:  # a store that resumes by If-Match (Azure): the object changed
            log.warning("%s changed since the partial download; restarting from zero", self.what)
            self._restart(None)
            raise TransientError(f"HTTP 412 for {self.what}: the object changed; restarting from zero")
        if response.status_code >= 300 and response.status_code != 416:
            raise self.client.error(response, self.what)
        if response.status_code == 200:  # before the hasher is chosen (Download._restart)
            self.checksum = self.client.store_checksum(response.headers)
            saved = {"algorithm": self.checksum.algorithm, "hex": self.checksum.hex} if self.checksum else {}
            write_atomically(self.checksum_file, json.dumps(saved))
        return super()._accept(response)

    def _new_hasher(self) -> Digests:
        return Digests(algorithms(self.checksum, self.wants_sha256))

    def _read_checksum(self) -> StoreChecksum | None:
        try:
            saved = json.loads(self.checksum_file.read_text())
            return StoreChecksum(saved["algorithm"], saved["hex"]) if saved.get("algorithm") in ALGORITHMS else None
        except (OSError, ValueError, AttributeError, KeyError):
            return None

    def _describe(self, exc: Exception) -> str:
        if isinstance(exc, requests.exceptions.ConnectionError):
            return self.client.unreachable(exc)
        return super()._describe(exc)

    def verify(self, expected_sha256: str | None) -> dict[str, str]:
        """The file's digests after checking them against the store's checksum and expected_sha256."""
        digests = self.hasher.digests()
        problem = mismatch(self.what, digests, self.checksum, expected_sha256)
        if problem:
            self.discard()
            raise ChecksumError(problem)
        return digests

    def discard(self) -> None:
        super().discard()
        self.checksum_file.unlink(missing_ok=True)


def mismatch(
    what: str, digests: dict[str, str], checksum: StoreChecksum | None, expected_sha256: str | None
) -> str | None:
    """Why a file with these digests is not the object: the store's checksum or MODEL_SHA256 says
    otherwise. None when it matches what is known."""
    if checksum and digests.get(checksum.algorithm) != checksum.hex:
        found = digests.get(checksum.algorithm)
        return f"{what} has {checksum.algorithm} {found} but the store's {checksum.header} says {checksum.hex}"
    if expected_sha256 and digests.get("sha256") != expected_sha256:
        return f"{what} has sha256 {digests.get('sha256')}, expected {expected_sha256}"
    return None


def described(digests: dict[str, str]) -> str:
    """'sha256 <hex>', or 'crc32 <hex>' when no sha256 was computed: how a file's digest is logged."""
    algorithm = "sha256" if "sha256" in digests else "crc32"
    return f"{algorithm} {digests[algorithm]}"


def listed(record: dict) -> str:
    """An object's line in the prefix's list: its sha256 as sha256sum writes it, else crc32:<hex>."""
    return record["sha256"] if "sha256" in record else f"crc32:{record['crc32']}"


def state_paths(staging: Staging, key: str) -> tuple[Path, Path]:
    """(resume state, completion record) of one object, named by a digest of its key."""
    name = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return staging.root / STATE_DIR / f"{name}.json", staging.root / STATE_DIR / f"{name}.done"


def pull_s3(cfg: Config, staging: Staging, progress: Progress) -> tuple[list[str], dict]:
    """Download cfg.s3 into staging; return (top-level names, manifest details). The caller publishes."""
    location = cfg.s3
    timeout = cfg.settings.timeout_seconds
    creds = resolve_credentials(os.environ, location.region, timeout)
    log.info("%s from %s, region %s, %s", location.uri, location.endpoint or "AWS S3", location.region, describe(creds))
    return pull_from(S3Client(location, creds, timeout), cfg, staging, progress)


def pull_from(client, cfg: Config, staging: Staging, progress: Progress) -> tuple[list[str], dict]:
    """Download the object or prefix at client.location into staging; (top-level names, manifest details)."""
    location, timeout = client.location, cfg.settings.timeout_seconds
    (staging.root / STATE_DIR).mkdir(parents=True, exist_ok=True)
    if not location.is_prefix:
        key, path = location.key, staging.files / cfg.file_name
        state_file, _ = state_paths(staging, key)
        probe = Probe(client, key, cfg.settings.s3_part_mib * MiB, cfg.settings)
        if probe.by_parts:
            parts = state_file.with_suffix(".parts")
            parted = PartedDownload(client, probe, path, parts, progress, cfg.settings, bool(cfg.sha256))
            digests = parted.run()
            checksum, etag = parted.checksum, parted.probe.etag
            problem = mismatch(probe.what, digests, checksum, cfg.sha256)
            if problem:
                path.unlink(missing_ok=True)
                state_file.with_suffix(".parts").unlink(missing_ok=True)
                raise ChecksumError(problem)
        else:
            download = ObjectDownload(client, key, path, state_file, progress, timeout, bool(cfg.sha256))
            with_retries(download.attempt, cfg.settings, progress_marker=lambda: download.size, what=download.what)
            digests, checksum, etag = download.verify(cfg.sha256), download.checksum, download.validator
        verified = "verified" if cfg.sha256 or checksum else "(no MODEL_SHA256 or store checksum to compare with)"
        log.info("%s %s", described(digests), verified)
        details = {"kind": client.kind, **digests, "objects": [{"key": key, "etag": etag, **digests}]}
        if cfg.fetch_url != cfg.url:
            details["fetched_from"] = redact_url(cfg.fetch_url)
        return [cfg.file_name], details

    objects = client.list_prefix(cfg.settings)
    if not objects:
        raise NotFoundError(client.nothing_under())
    records = pull_objects(
        objects,
        staging,
        progress,
        cfg,
        lambda obj: finished(obj, staging),
        lambda obj, shared: pull_object(client, obj, staging, shared, cfg),
    )
    listing = "".join(f"{listed(r)}  {r['path']}\n" for r in sorted(records, key=lambda r: r["path"]))
    details = {
        "kind": f"{client.kind}-prefix",
        "sha256": hashlib.sha256(listing.encode()).hexdigest(),  # of the sha256sum-style list of every object
        "objects": sorted(records, key=lambda r: r["path"]),
    }
    names = sorted({o.path.split("/", 1)[0] for o in objects})
    return names, details


def pull_objects(objects: list, staging: Staging, progress: Progress, cfg: Config, finished, fetch) -> list[dict]:
    """Fetch every object of a prefix that finished(obj) has no record of, cfg.settings.s3_max_workers
    at a time (fetch(obj, progress) gives its record); every object's record. The objects have key,
    path and size: an s3:// or a gs:// (gcs_download.py) store's."""
    records, todo, have = [], [], 0
    for obj in objects:
        record = finished(obj)
        if record is not None:
            records.append(record)
            have += obj.size or 0
        else:
            todo.append(obj)
            partial = staging.files / obj.path
            have += min(partial.stat().st_size, obj.size or 0) if partial.exists() else 0
    total = sum(o.size or 0 for o in objects)
    log.info(
        "%d objects, %s; %d already here, %d to fetch, %d at a time",
        len(objects),
        human_bytes(total),
        len(objects) - len(todo),
        len(todo),
        cfg.settings.s3_max_workers,
    )
    progress.begin(have, total)
    shared = SharedProgress(progress)
    with ThreadPoolExecutor(max_workers=cfg.settings.s3_max_workers, thread_name_prefix="objects") as pool:
        futures = [pool.submit(fetch, obj, shared) for obj in todo]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        failed = [f for f in done if f.exception() is not None]
        if failed:
            for future in futures:
                future.cancel()
            raise failed[0].exception()
    return records + [future.result() for future in futures]


def finished(obj: S3Object, staging: Staging) -> dict | None:
    """The record of an object an earlier run finished, if its ETag and size are still the listing's."""
    return finished_record(obj, staging, "etag", obj.etag)


def finished_record(obj, staging: Staging, version_key: str, version) -> dict | None:
    """The record an earlier run wrote for obj (a listed object with key, path and size), if the record's
    version (version_key: an ETag, a generation), size and path are still the listing's and the file
    still has that size; else None."""
    _, done_file = state_paths(staging, obj.key)
    try:
        record = json.loads(done_file.read_text())
        size = (staging.files / obj.path).stat().st_size
    except (OSError, ValueError):
        return None
    same = (record.get(version_key), record.get("size"), record.get("path")) == (version, obj.size, obj.path)
    return record if same and size == obj.size else None


def pull_object(client: S3Client, obj: S3Object, staging: Staging, progress: SharedProgress, cfg: Config) -> dict:
    state_file, done_file = state_paths(staging, obj.key)
    path = staging.files / obj.path
    path.parent.mkdir(parents=True, exist_ok=True)
    download = ObjectDownload(client, obj.key, path, state_file, progress, cfg.settings.timeout_seconds, False)
    with_retries(download.attempt, cfg.settings, progress_marker=lambda: download.size, what=download.what)
    digests = download.verify(None)
    record = {
        "key": obj.key,
        "path": obj.path,
        "size": download.size,
        "etag": download.validator or obj.etag,
        **digests,
    }
    write_atomically(done_file, json.dumps(record))
    return record
