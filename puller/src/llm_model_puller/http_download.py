"""One file over HTTP(S): streamed, resumed with Range, checked against MODEL_SHA256."""

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import requests

from . import __version__
from .body import chunks, hash_range, write_at
from .config import Config
from .errors import AuthError, ChecksumError, DiskFullError, NotFoundError, PullerError, TransientError
from .progress import Progress, human_bytes, log
from .retry import with_retries
from .sources import DEFAULT_HF_ENDPOINT, redact_url
from .store import Staging, write_atomically
from .writeback import WriteBehind

CONTENT_RANGE = re.compile(r"^bytes\s+(?:(\d+)-(\d+)|\*)/(\d+|\*)$")
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
TRANSIENT_EXCEPTIONS = (
    requests.exceptions.ConnectionError,
    requests.exceptions.Timeout,
    requests.exceptions.ChunkedEncodingError,
    requests.exceptions.ContentDecodingError,
)


def pull_url(cfg: Config, staging: Staging, progress: Progress) -> dict:
    """Download cfg.fetch_url into staging; return the manifest details. The caller publishes."""
    headers = {"User-Agent": f"llm-model-puller/{__version__}", "Accept-Encoding": "identity"}
    hub_host = urlsplit(cfg.hf_endpoint or DEFAULT_HF_ENDPOINT).netloc
    if cfg.hf_token and urlsplit(cfg.fetch_url).netloc == hub_host:
        # A /resolve/ URL of a gated or private repo; requests drops the header on a redirect to another host.
        headers["Authorization"] = f"Bearer {cfg.hf_token}"
    # s3:// and gs:// never come here (cli.py: signed, by s3_download).
    auth_hint = " (the HF_TOKEN was refused)" if "Authorization" in headers else ""
    download = Download(
        cfg.fetch_url,
        staging.files / cfg.file_name,
        staging.root / "url-state.json",
        headers=headers,
        auth_hint=auth_hint,
        timeout=cfg.settings.timeout_seconds,
        progress=progress,
    )
    with_retries(download.attempt, cfg.settings, progress_marker=lambda: download.size, what=download.shown_url)
    digest = download.hasher.hexdigest()
    if cfg.sha256 and digest != cfg.sha256:
        download.discard()
        raise ChecksumError(f"{cfg.file_name} from {download.shown_url} has sha256 {digest}, expected {cfg.sha256}")
    log.info("sha256 %s %s", digest, "verified" if cfg.sha256 else "(no MODEL_SHA256 to compare with)")
    details = {"kind": "url", "sha256": digest}
    if cfg.fetch_url != cfg.url:
        details["fetched_from"] = redact_url(cfg.fetch_url)
    return details


class Download:
    """The state of one file's download across attempts: bytes on disk, their hash, the resume validator."""

    def __init__(
        self,
        url: str,
        path: Path,
        state_file: Path,
        *,
        headers: dict,
        auth_hint: str,
        timeout: float,
        progress: Progress,
    ):
        self.url = url
        self.shown_url = redact_url(url)
        self.path = path
        self.state_file = state_file
        self.headers = headers
        self.auth_hint = auth_hint
        self.timeout = timeout
        self.progress = progress
        self.session = requests.Session()
        self.size = path.stat().st_size if path.exists() else 0
        self.hasher = None  # built lazily from the bytes already on disk
        self.started = False
        state = self._read_state() if self.size else {}
        self.validator = state.get("validator")
        self.total = state.get("total")
        if self.size:
            log.info("resuming %s at %s", path.name, human_bytes(self.size))

    def attempt(self) -> None:
        resume = {}
        if self.size:
            resume["Range"] = f"bytes={self.size}-"
            if self.validator:
                resume["If-Range"] = self.validator
        headers = self.request_headers(resume)
        try:
            with self.session.get(self.url, headers=headers, stream=True, timeout=self.timeout) as response:
                if self._accept(response):
                    self._receive(response)
        except TRANSIENT_EXCEPTIONS as exc:
            raise TransientError(self._describe(exc)) from exc

    def request_headers(self, resume: dict) -> dict:
        """The headers of one attempt: the download's own and the resume's (Range, If-Range). A store
        that signs its requests (s3_download, azure_download) signs them here, afresh each attempt."""
        return {**self.headers, **resume}

    def _accept(self, response: requests.Response) -> bool:
        """Check the status; return False when there is nothing left to receive."""
        status = response.status_code
        where = f"HTTP {status} for {self.shown_url}"
        if status in (401, 403):
            raise AuthError(f"{where}{self.auth_hint}")
        if status in (404, 410):
            raise NotFoundError(where)
        if status in TRANSIENT_STATUSES:
            raise TransientError(where)
        if status == 416 and self.size:
            match = CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
            if match and match.group(3) == str(self.size):
                self.total = self.size
                self._ensure_hasher()
                return False  # the partial file was already complete
            log.warning("%s refused the resume range; restarting from zero", self.shown_url)
            self._restart(None)
            raise TransientError(f"{where} (range not satisfiable)")
        if status == 206:
            match = CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
            if not self.size or not match or match.group(1) is None or int(match.group(1)) != self.size:
                self._restart(None)
                raise TransientError(f"{where} with an unexpected Content-Range; restarting from zero")
            self.total = int(match.group(3)) if match.group(3) != "*" else None
        elif status == 200:
            if self.size:
                log.warning("%s ignored the resume range (HTTP 200); restarting from zero", self.shown_url)
            self._restart(self._length(response))
            self.validator = self._validator(response)
            write_atomically(self.state_file, json.dumps({"validator": self.validator, "total": self.total}))
        else:
            raise PullerError(f"unexpected {where}")
        self._check_space()
        return True

    def _receive(self, response: requests.Response) -> None:
        self._ensure_hasher()
        if not self.started:
            self.progress.begin(self.size, self.total)
            self.started = True
        else:
            self.progress.rebase(self.size, self.total)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o666)
        try:
            behind = WriteBehind(fd, self.size)
            for chunk in chunks(response):
                self.hasher.update(chunk)  # hashlib lets other threads run while it hashes a large buffer
                write_at(fd, chunk, self.size)
                self.size += len(chunk)
                behind.wrote(self.size)
                self.progress.add(len(chunk))
            behind.finish()
            os.fsync(fd)  # once per file: its bytes are on disk before anything records it as finished
        finally:
            os.close(fd)
        if self.total is None:
            self.total = self.size
        elif self.size < self.total:
            raise TransientError(f"connection closed after {self.size} of {self.total} bytes")
        elif self.size > self.total:
            self._restart(None)
            raise TransientError(f"received more bytes than the announced {self.total}; restarting from zero")

    def _new_hasher(self):
        """What the bytes are hashed with: sha256 here, a store's own checksum for an s3:// object."""
        return hashlib.sha256()

    def _ensure_hasher(self) -> None:
        if self.hasher is not None:
            return
        self.hasher = self._new_hasher()
        fd = os.open(self.path, os.O_RDONLY)
        try:
            hash_range(self.hasher, fd, 0, self.size)
        finally:
            os.close(fd)

    def _restart(self, total: int | None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "wb"):
            pass
        self.size, self.total, self.validator = 0, total, None
        self.hasher = self._new_hasher()
        self.state_file.unlink(missing_ok=True)

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)
        self.state_file.unlink(missing_ok=True)

    def _check_space(self) -> None:
        if self.total is None:
            return
        needed = self.total - self.size
        free = shutil.disk_usage(self.path.parent).free
        if needed > free:
            raise DiskFullError(
                f"{self.path.name} needs {human_bytes(needed)} more but MODEL_DEST has {human_bytes(free)} free"
            )

    def _read_state(self) -> dict:
        try:
            state = json.loads(self.state_file.read_text())
            return state if isinstance(state, dict) else {}
        except (OSError, ValueError):
            return {}

    @staticmethod
    def _length(response: requests.Response) -> int | None:
        encoding = response.headers.get("Content-Encoding", "identity").lower()
        length = response.headers.get("Content-Length")
        if encoding != "identity" or not length or not length.isdigit():
            return None
        return int(length)

    @staticmethod
    def _validator(response: requests.Response) -> str | None:
        """What If-Range may carry: a strong ETag, else Last-Modified."""
        etag = response.headers.get("ETag")
        if etag and not etag.startswith("W/"):
            return etag
        return response.headers.get("Last-Modified")

    @staticmethod
    def _describe(exc: Exception) -> str:
        # The text names the URL, query included: every log line and the termination message go
        # through progress.redact, which removes it.
        return f"{type(exc).__name__}: {str(exc) or type(exc).__name__}"
