"""Real HTTP servers on 127.0.0.1 (or another local address) for the tests and the benchmark.

FileServer serves byte strings with Range/If-Range support, records every request, and injects
failures on demand (an HTTP status, or a connection dropped after N bytes of the body).
FakeHub answers the routes huggingface_hub 2.4.0 uses in snapshot_download: model info
(/api/models/{repo}/revision/{rev}), the tree listing (/api/models/{repo}/tree/{rev}) and
HEAD/GET /{repo}/resolve/{rev}/{path} with X-Repo-Commit, ETag and Content-Length.
"""

import hashlib
import json
import os
import re
import socket
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")
CHUNK = 1 << 16


@dataclass
class Seen:
    method: str
    path: str
    headers: Message  # case-insensitive: httpx2 sends lower-case names, requests capitalised ones


@dataclass
class Fault:
    status: int | None = None  # answer with this status instead of the body
    drop_after: int | None = None  # send headers and this many body bytes, then close the connection


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.server.app.handle(self, "GET")

    def do_HEAD(self):  # noqa: N802
        self.server.app.handle(self, "HEAD")

    def do_PATCH(self):  # noqa: N802
        self.server.app.handle(self, "PATCH")

    def do_POST(self):  # noqa: N802
        self.server.app.handle(self, "POST")

    def log_message(self, *args):
        pass  # quiet tests


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False


class RecordingServer:
    """A threaded HTTP server on 127.0.0.1 that records what it was asked. Use as a context manager.

    ``host``: another local address to listen on (the e2e suite uses the real node's bridge address,
    where its pods reach this machine)."""

    def __init__(self, host: str = "127.0.0.1"):
        self.requests: list[Seen] = []
        self.faults: dict[str, list[Fault]] = defaultdict(list)
        self._lock = threading.Lock()
        self._httpd = _Server((host, 0), _Handler)
        self._httpd.app = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()

    def handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        with self._lock:
            self.requests.append(Seen(method, handler.path, handler.headers))
        handler.close_connection = True
        self.respond(handler, method, urlsplit(handler.path))

    def respond(self, handler, method, url) -> None:
        raise NotImplementedError

    def fail(self, path: str, status: int, times: int = 1) -> None:
        """The next `times` GETs of path get this status."""
        with self._lock:
            self.faults[path].extend(Fault(status=status) for _ in range(times))

    def drop(self, path: str, after: int, times: int = 1) -> None:
        """The next `times` GETs of path lose their connection after `after` bytes of the body."""
        with self._lock:
            self.faults[path].extend(Fault(drop_after=after) for _ in range(times))

    def take_fault(self, path: str) -> Fault | None:
        with self._lock:
            return self.faults[path].pop(0) if self.faults[path] else None

    def seen(self, method: str | None = None, path: str | None = None) -> list[Seen]:
        with self._lock:
            return [
                r
                for r in self.requests
                if (method is None or r.method == method) and (path is None or urlsplit(r.path).path == path)
            ]

    # -- helpers for subclasses --------------------------------------------------------------------

    @staticmethod
    def send_status(handler, status: int, headers: dict | None = None, body: bytes = b"") -> None:
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        if body and handler.command != "HEAD":
            handler.wfile.write(body)

    @staticmethod
    def send_json(handler, status: int, payload, headers: dict | None = None) -> None:
        RecordingServer.send_status(
            handler, status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(payload).encode()
        )

    @staticmethod
    def send_bytes(
        handler,
        data: bytes,
        *,
        etag: str,
        headers: dict | None = None,
        honour_range: bool = True,
        send_length: bool = True,
        fault: Fault | None = None,
        chunk_delay: float = 0.0,
    ) -> None:
        """Serve data, honouring Range (and If-Range) unless told not to; apply a Fault if given."""
        start, status = 0, 200
        wanted = handler.headers.get("Range")
        if_range = handler.headers.get("If-Range")
        if wanted and honour_range and (if_range is None or if_range == etag):
            match = RANGE.match(wanted)
            if match:
                start = int(match.group(1))
                end = int(match.group(2)) if match.group(2) else len(data) - 1
                if start >= len(data):
                    RecordingServer.send_status(handler, 416, {"Content-Range": f"bytes */{len(data)}"})
                    return
                data_end = min(end, len(data) - 1) + 1
                body, status = data[start:data_end], 206
            else:
                body = data
        else:
            body = data
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("ETag", etag)
        handler.send_header("Accept-Ranges", "bytes")
        if status == 206:
            handler.send_header("Content-Range", f"bytes {start}-{start + len(body) - 1}/{len(data)}")
        if send_length:
            handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        if handler.command == "HEAD":
            return
        limit = len(body) if fault is None or fault.drop_after is None else min(fault.drop_after, len(body))
        for offset in range(0, limit, CHUNK):
            handler.wfile.write(body[offset : min(offset + CHUNK, limit)])
            if chunk_delay:
                handler.wfile.flush()
                time.sleep(chunk_delay)  # a slow link, so that a download lasts a few seconds
        handler.wfile.flush()
        if limit < len(body):
            handler.connection.shutdown(socket.SHUT_RDWR)  # the "network" breaks mid-body


class FileServer(RecordingServer):
    """Static files from memory, with failure injection per path (consumed one per GET)."""

    def __init__(self, files: dict[str, bytes] | None = None, host: str = "127.0.0.1"):
        super().__init__(host)
        self.files: dict[str, bytes] = dict(files or {})
        self.honour_range = True
        self.send_length = True
        self.require_token: str | None = None
        self.chunk_delay = 0.0  # seconds between 64 KiB chunks
        self.redirects: dict[str, str] = {}  # path -> Location of a 302 (a CDN's signed link, say)

    def add(self, path: str, data: bytes) -> str:
        self.files[path] = data
        return self.url + path

    def etag(self, path: str) -> str:
        return '"' + hashlib.sha256(self.files[path]).hexdigest()[:32] + '"'

    def respond(self, handler, method, url) -> None:
        path = unquote(url.path)
        if path in self.redirects:
            self.send_status(handler, 302, {"Location": self.redirects[path]})
            return
        if self.require_token and handler.headers.get("Authorization") != f"Bearer {self.require_token}":
            self.send_status(handler, 401, body=b"token required\n")
            return
        if path not in self.files:
            self.send_status(handler, 404, body=b"no such file\n")
            return
        fault = self.take_fault(path) if method == "GET" else None
        if fault is not None and fault.status is not None:
            self.send_status(handler, fault.status, body=f"injected {fault.status}\n".encode())
            return
        self.send_bytes(
            handler,
            self.files[path],
            etag=self.etag(path),
            honour_range=self.honour_range,
            send_length=self.send_length,
            fault=fault,
            chunk_delay=self.chunk_delay,
        )


class StatusServer(RecordingServer):
    """Stands in for the Kubernetes API server's status subresource: records merge patches.

    PATCH <object>/status with the expected bearer token and content type answers 200 with the
    patched object; another token 401, another path 403 (as RBAC with resourceNames would).
    """

    def __init__(self, object_path: str, token: str):
        super().__init__()
        self.object_path = object_path
        self.token = token
        self.patches: list[dict] = []
        self.status: dict = {}

    def respond(self, handler, method, url) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        if handler.headers.get("Authorization") != f"Bearer {self.token}":
            self.send_json(handler, 401, {"kind": "Status", "code": 401, "message": "Unauthorized"})
            return
        if method != "PATCH" or url.path != self.object_path + "/status":
            message = f"forbidden: cannot patch resource at {url.path}"
            self.send_json(handler, 403, {"kind": "Status", "code": 403, "message": message})
            return
        if handler.headers.get("Content-Type") != "application/merge-patch+json":
            self.send_json(handler, 415, {"kind": "Status", "code": 415, "message": "unsupported media type"})
            return
        patch = json.loads(body)
        with self._lock:
            self.patches.append(patch)
            self.status = merge(self.status, patch.get("status", {}))
        self.send_json(handler, 200, {"kind": "LLMModel", "status": self.status})


def merge(target, patch):
    """RFC 7386 merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


@dataclass
class HubRepo:
    files: dict[str, bytes]
    commit: str = field(default_factory=lambda: os.urandom(20).hex())
    gated: bool = False
    private: bool = False


class FakeHub(RecordingServer):
    """Enough of the Hugging Face Hub API for huggingface_hub.snapshot_download.

    Faults are keyed by the file's path in the repo and apply to GET /resolve/ only.
    """

    def __init__(self, repos: dict[str, HubRepo] | None = None, token: str | None = None, host: str = "127.0.0.1"):
        super().__init__(host)
        self.repos: dict[str, HubRepo] = dict(repos or {})
        self.token = token

    def _authorized(self, handler) -> bool:
        return self.token is not None and handler.headers.get("Authorization") == f"Bearer {self.token}"

    def respond(self, handler, method, url) -> None:
        parts = [unquote(p) for p in url.path.split("/")]
        if len(parts) >= 7 and parts[1:3] == ["api", "models"] and parts[5] in ("revision", "tree"):
            repo_id, action, revision = f"{parts[3]}/{parts[4]}", parts[5], parts[6]
            repo = self._lookup(handler, repo_id, revision)
            if repo is None:
                return
            if action == "revision":
                self.send_json(handler, 200, self._info(repo_id, repo))
            else:
                self.send_json(handler, 200, self._tree(repo))
            return
        if len(parts) >= 6 and parts[3] == "resolve":
            repo_id, revision, file_path = f"{parts[1]}/{parts[2]}", parts[4], "/".join(parts[5:])
            repo = self._lookup(handler, repo_id, revision)
            if repo is None:
                return
            if repo.gated and not self._authorized(handler):
                self._error(
                    handler, 401, "GatedRepo", f"Access to model {repo_id} is restricted. You must have access."
                )
                return
            if file_path not in repo.files:
                self._error(handler, 404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": repo.commit})
                return
            fault = self.take_fault(file_path) if method == "GET" else None
            if fault is not None and fault.status is not None:
                self._error(handler, fault.status, "Injected", f"injected {fault.status}")
                return
            data = repo.files[file_path]
            self.send_bytes(
                handler,
                data,
                etag=f'"{hashlib.sha256(data).hexdigest()}"',
                headers={"X-Repo-Commit": repo.commit},
                fault=fault,
            )
            return
        self.send_status(handler, 404, body=b"unknown route\n")

    def _lookup(self, handler, repo_id: str, revision: str) -> HubRepo | None:
        repo = self.repos.get(repo_id)
        if repo is None:
            self._error(handler, 404, "RepoNotFound", "Repository not found")
            return None
        if repo.private and not self._authorized(handler):
            self._error(handler, 401, "RepoNotFound", "Repository not found")
            return None
        if revision not in ("main", repo.commit):
            self._error(handler, 404, "RevisionNotFound", "Invalid rev id: " + revision)
            return None
        return repo

    def _error(self, handler, status: int, code: str, message: str, headers: dict | None = None) -> None:
        self.send_json(
            handler, status, {"error": message}, {"X-Error-Code": code, "X-Error-Message": message, **(headers or {})}
        )

    @staticmethod
    def _info(repo_id: str, repo: HubRepo) -> dict:
        return {
            "_id": "0" * 24,
            "id": repo_id,
            "modelId": repo_id,
            "sha": repo.commit,
            "private": repo.private,
            "gated": "manual" if repo.gated else False,
            "disabled": False,
            "tags": [],
            "siblings": [{"rfilename": path} for path in sorted(repo.files)],
        }

    @staticmethod
    def _tree(repo: HubRepo) -> list[dict]:
        entries, folders = [], set()
        for path, data in sorted(repo.files.items()):
            entry = {"type": "file", "oid": hashlib.sha1(data).hexdigest(), "size": len(data), "path": path}
            if path.endswith((".safetensors", ".bin", ".gguf", ".pth")):
                entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            entries.append(entry)
            folders.update("/".join(path.split("/")[:i]) for i in range(1, path.count("/") + 1))
        entries += [{"type": "directory", "oid": "0" * 40, "size": 0, "path": folder} for folder in sorted(folders)]
        return entries
