"""A real S3 server on 127.0.0.1 for the tests and `make bench-pull`: versitygw (bin/versitygw, built by
`make tools`), which checks AWS Signature V4, over a directory of this machine.

Runs with its internal IAM so that a second, ordinary account exists: the root account owns the
buckets, the `reader` account is refused them (AccessDenied). Objects are uploaded with the puller's own
signer and an x-amz-checksum-sha256, as `aws s3 cp --checksum-algorithm SHA256` stores them.
"""

import base64
import hashlib
import os
import socket
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import quote

import requests

from llm_model_puller.checksums import hasher
from llm_model_puller.s3_auth import Credentials, sign

ROOT = Path(__file__).resolve().parents[2]
VERSITYGW = Path(os.environ.get("VERSITYGW", ROOT / "bin" / "versitygw"))
ROOT_KEY = Credentials("AKIAROOTTESTKEY00001", "root/Secret+Key/ForTheS3Gateway0000001")
READER_KEY = Credentials("AKIAREADERTESTKEY001", "reader/Secret+Key/ForTheS3Gateway00001")
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(process: subprocess.Popen, host: str, port: int, log: Path, seconds: float) -> None:
    """Wait until a server process listens on host:port; stop it and raise with its log if it never does."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stop(process)
                raise RuntimeError(f"{Path(process.args[0]).name} did not start: {log.read_text()}") from None
            time.sleep(0.05)


def stop(process: subprocess.Popen | None) -> None:
    """Terminate a server process (kill it after 10 s) and reap it."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


class S3Server:
    """versitygw on 127.0.0.1 (or `host`: the e2e suite binds the real node's bridge address, where its
    pods reach this machine) with a root and a reader account. Use as a context manager."""

    def __init__(self, workdir: Path, *, keep_alive: bool = True, host: str = "127.0.0.1"):
        self.workdir = workdir
        self.host = host
        self.port, self.admin_port = free_port(), free_port()
        self.keep_alive = keep_alive
        self.process: subprocess.Popen | None = None
        self.session = requests.Session()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "gw"

    def env(self, creds: Credentials = ROOT_KEY) -> dict[str, str]:
        """What a Secret for this store holds: the standard AWS variables."""
        return {
            "AWS_ACCESS_KEY_ID": creds.access_key,
            "AWS_SECRET_ACCESS_KEY": creds.secret_key,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": self.url,
        }

    def __enter__(self):
        if not VERSITYGW.exists():
            raise RuntimeError(f"{VERSITYGW} is missing: run `make tools` (hack/build_tools.py versitygw)")
        for sub in ("gw", "iam"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "ROOT_ACCESS_KEY": ROOT_KEY.access_key,
            "ROOT_SECRET_KEY": ROOT_KEY.secret_key,
        }
        command = [
            str(VERSITYGW),
            "--port",
            f"{self.host}:{self.port}",
            "--admin-port",
            f"127.0.0.1:{self.admin_port}",
            "--iam-dir",
            str(self.workdir / "iam"),
            "--quiet",
            "--region",
            REGION,
        ]
        if self.keep_alive:
            command.append("--keep-alive")
        log = open(self.workdir / "versitygw.log", "wb")  # noqa: SIM115 (closed with the process)
        self.process = subprocess.Popen([*command, "posix", str(self.data_dir)], env=env, stdout=log, stderr=log)
        log.close()
        wait_listening(self.process, self.host, self.port, self.workdir / "versitygw.log", 20)
        admin = [
            str(VERSITYGW),
            "admin",
            "--access",
            ROOT_KEY.access_key,
            "--secret",
            ROOT_KEY.secret_key,
            "--endpoint-url",
            f"http://127.0.0.1:{self.admin_port}",
        ]
        subprocess.run(
            [
                *admin,
                "create-user",
                "--access",
                READER_KEY.access_key,
                "--secret",
                READER_KEY.secret_key,
                "--role",
                "user",
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )
        return self

    def __exit__(self, *exc):
        stop(self.process)

    def request(self, method: str, path: str, data: bytes = b"", headers: dict | None = None) -> requests.Response:
        url = self.url + quote(path, safe="/~")
        digest = hashlib.sha256(data).hexdigest()
        signed = sign(method, url, ROOT_KEY, REGION, headers or {}, payload_sha256=digest)
        response = self.session.request(method, url, data=data, headers=signed, timeout=60)
        if response.status_code >= 300:
            raise RuntimeError(f"{method} {path}: HTTP {response.status_code} {response.text[:300]}")
        return response

    def create_bucket(self, bucket: str) -> None:
        self.request("PUT", f"/{bucket}")

    def put(self, bucket: str, key: str, data: bytes, *, checksum: str | None = "sha256") -> str:
        """Upload one object with its x-amz-checksum-<checksum> (sha256 or crc32; None: without); its ETag."""
        headers = checksum_header(checksum, [data]) if checksum else {}
        return self.request("PUT", f"/{bucket}/{key}", data, headers).headers["ETag"]

    def put_file(self, bucket: str, key: str, path: Path, checksum: str = "sha256") -> str:
        return upload_file(self.url, bucket, key, path, checksum)

    def delete(self, bucket: str, key: str) -> None:
        self.request("DELETE", f"/{bucket}/{key}")


def checksum_header(algorithm: str, blocks) -> dict[str, str]:
    """The x-amz-checksum-<algorithm> header of the bytes in blocks, as an SDK sends it with a PUT (the
    server computes its own and refuses the upload when they differ)."""
    digest = hasher(algorithm)
    for block in blocks:
        digest.update(block)
    return {f"x-amz-checksum-{algorithm}": base64.b64encode(bytes.fromhex(digest.hexdigest())).decode()}


def upload_file(server_url: str, bucket: str, key: str, path: Path, checksum: str = "sha256") -> str:
    """Upload a file streamed from disk (UNSIGNED-PAYLOAD) as root, with its x-amz-checksum-<checksum>; its ETag."""
    with open(path, "rb") as f:
        headers = checksum_header(checksum, iter(lambda: f.read(8 << 20), b""))
    url = server_url + quote(f"/{bucket}/{key}", safe="/~")
    signed = sign("PUT", url, ROOT_KEY, REGION, headers, payload_sha256="UNSIGNED-PAYLOAD")
    with open(path, "rb") as f:
        response = requests.put(
            url, data=f, headers={**signed, "Content-Length": str(path.stat().st_size)}, timeout=600
        )
    if response.status_code >= 300:
        raise RuntimeError(f"PUT {key}: HTTP {response.status_code} {response.text[:300]}")
    return response.headers["ETag"]


class SlowProxy:
    """A TCP proxy on 127.0.0.1 that passes the server's answers on at about `rate` bytes a second (0:
    as fast as it can): a slow link, so that a test can kill a puller in the middle of an object. It
    counts the connections and the bytes the server sent (`served`, headers included). Use as a context manager."""

    def __init__(self, upstream_port: int, rate: int):
        self.upstream_port = upstream_port
        self.rate = rate
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.connections = self.served = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.listener.close()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._pipe, args=(client, upstream, 0, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, self.rate, True), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket, rate: int, served: bool) -> None:
        chunk = 16 << 10
        try:
            while not self.stopped.is_set():
                data = source.recv(chunk)
                if not data:
                    break
                target.sendall(data)
                if served:
                    with self.lock:
                        self.served += len(data)
                if rate:
                    time.sleep(len(data) / rate)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
