"""Cloud Storage for the gs:// tests: fake-gcs-server (bin/fake-gcs-server, the JSON API over memory)
behind GoogleFront, a small server of these tests that stands in for what cannot run here:

- Google's OAuth 2.0 token endpoint (`/token`): it VERIFIES the RS256 signature of the JWT a
  service-account key file's holder sends, against the public key of a key pair the test generated,
  and its audience, expiry and scope, and only then issues a random access token;
- GKE's metadata server (`/computeMetadata/v1/...`, only with `Metadata-Flavor: Google`): the token
  of the pod's workload identity;
- Cloud Storage's check of that token: every other request must carry a token it issued (else 401),
  and an account may be refused a bucket (403, as IAM would), before it is passed to fake-gcs-server,
  which checks no token itself.
"""

import base64
import json
import os
import secrets
import socket
import subprocess
import threading
import time
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote

import requests
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from s3_server import free_port

ROOT = Path(__file__).resolve().parents[2]
FAKE_GCS_SERVER = Path(os.environ.get("FAKE_GCS_SERVER", ROOT / "bin" / "fake-gcs-server"))
SCOPE = "https://www.googleapis.com/auth/devstorage.read_only"
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def key_file(email: str, key: rsa.RSAPrivateKey, token_uri: str) -> dict:
    """A service-account key file as `gcloud iam service-accounts keys create` writes it."""
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return {
        "type": "service_account",
        "project_id": "test-project",
        "private_key_id": secrets.token_hex(20),
        "private_key": pem.decode(),
        "client_email": email,
        "client_id": "1234567890",
        "token_uri": token_uri,
    }


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class FakeGcs:
    """fake-gcs-server on 127.0.0.1, memory backend. Use as a context manager."""

    def __init__(self, workdir: Path, host: str = "127.0.0.1"):
        self.workdir, self.host, self.port = workdir, host, free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self):
        if not FAKE_GCS_SERVER.exists():
            raise RuntimeError(f"{FAKE_GCS_SERVER} is missing: run `make fake-gcs-server`")
        log = open(self.workdir / "fake-gcs-server.log", "wb")  # noqa: SIM115 (closed with the process)
        command = [
            str(FAKE_GCS_SERVER),
            "-scheme",
            "http",
            "-host",
            self.host,
            "-port",
            str(self.port),
            "-backend",
            "memory",
            "-log-level",
            "warn",
            "-public-host",
            f"{self.host}:{self.port}",
            "-external-url",
            self.url,
        ]
        self.process = subprocess.Popen(command, stdout=log, stderr=log, cwd=self.workdir)
        log.close()
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection((self.host, self.port), timeout=0.5).close()
                return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError(
                        "fake-gcs-server did not start: " + (self.workdir / "fake-gcs-server.log").read_text()
                    ) from None
                time.sleep(0.05)

    def __exit__(self, *exc):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def create_bucket(self, bucket: str) -> None:
        requests.post(f"{self.url}/storage/v1/b", json={"name": bucket}, timeout=30).raise_for_status()

    def put(self, bucket: str, name: str, data: bytes) -> dict:
        """Upload one object; its metadata (generation, md5Hash, crc32c: computed by the server)."""
        url = f"{self.url}/upload/storage/v1/b/{bucket}/o?uploadType=media&name={quote(name, safe='')}"
        response = requests.post(url, data=data, headers={"Content-Type": "application/octet-stream"}, timeout=60)
        response.raise_for_status()
        return response.json()

    def delete(self, bucket: str, name: str) -> None:
        requests.delete(f"{self.url}/storage/v1/b/{bucket}/o/{quote(name, safe='')}", timeout=30).raise_for_status()


class GoogleFront:
    """The token endpoint, the metadata server and the token check in front of fake-gcs-server
    (module docstring), on one port. Use as a context manager."""

    def __init__(self, upstream: FakeGcs, host: str = "127.0.0.1"):
        self.upstream, self.host = upstream, host
        self.accounts: dict[str, rsa.RSAPublicKey] = {}  # email -> the public key the token endpoint trusts
        self.tokens: dict[str, str] = {}  # access token -> email
        self.denied: set[tuple[str, str]] = set()  # (email, bucket) refused with 403
        self.workload_identity: str | None = None  # the metadata server's account; None: no metadata server
        self.lock = threading.Lock()
        self.media_bytes = 0  # bytes of objects sent (alt=media)
        self.grants = 0  # tokens issued
        front = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802 (BaseHTTPRequestHandler's name)
                front._token(self)

            def do_GET(self):  # noqa: N802
                if self.path.startswith("/computeMetadata/"):
                    front._metadata(self)
                else:
                    front._storage(self)

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def token_uri(self) -> str:
        return f"{self.url}/token"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def account(self, email: str) -> dict:
        """A new service account whose key the token endpoint trusts; its key file."""
        key = new_key()
        self.accounts[email] = key.public_key()
        return key_file(email, key, self.token_uri)

    def _issue(self, email: str) -> str:
        token = "ya29." + secrets.token_urlsafe(32)
        with self.lock:
            self.tokens[token] = email
            self.grants += 1
        return token

    @staticmethod
    def _json(handler, status: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        for name, value in {
            "Content-Type": "application/json",
            "Content-Length": str(len(data)),
            **(headers or {}),
        }.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def verify_assertion(self, assertion: str) -> str:
        """The email of a JWT bearer assertion whose RS256 signature, audience, expiry and scope hold,
        else ValueError."""
        head, claims, signature = assertion.split(".")
        if json.loads(_unb64(head)).get("alg") != "RS256":
            raise ValueError("Invalid JWT: alg must be RS256")
        body = json.loads(_unb64(claims))
        public = self.accounts.get(body.get("iss"))
        if public is None:
            raise ValueError("Invalid grant: account not found")
        try:
            public.verify(_unb64(signature), f"{head}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            raise ValueError("Invalid JWT Signature.") from None
        now = time.time()
        if body.get("aud") != self.token_uri or not body.get("iat", 0) - 300 <= now < body.get("exp", 0):
            raise ValueError("Invalid JWT: Token must be a short-lived token and in a reasonable timeframe")
        if SCOPE not in str(body.get("scope", "")).split():
            raise ValueError("Invalid scope")
        return body["iss"]

    def _token(self, handler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        form = parse_qs(handler.rfile.read(length).decode())
        if handler.path != "/token" or form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return self._json(handler, 400, {"error": "unsupported_grant_type"})
        try:
            email = self.verify_assertion(form["assertion"][0])
        except (ValueError, KeyError, IndexError) as exc:
            return self._json(handler, 400, {"error": "invalid_grant", "error_description": str(exc)})
        self._json(handler, 200, {"access_token": self._issue(email), "expires_in": 3599, "token_type": "Bearer"})

    def _metadata(self, handler) -> None:
        if self.workload_identity is None or handler.headers.get("Metadata-Flavor") != "Google":
            return self._json(handler, 404 if self.workload_identity is None else 403, {"error": "no"})
        flavor = {"Metadata-Flavor": "Google"}
        if handler.path.endswith("/service-accounts/default/email"):
            data = self.workload_identity.encode()
            handler.send_response(200)
            for name, value in {**flavor, "Content-Type": "text/plain", "Content-Length": str(len(data))}.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        elif handler.path.endswith("/service-accounts/default/token"):
            body = {"access_token": self._issue(self.workload_identity), "expires_in": 3599, "token_type": "Bearer"}
            self._json(handler, 200, body, flavor)
        else:
            self._json(handler, 404, {"error": "not found"}, flavor)

    def _storage(self, handler) -> None:
        auth = handler.headers.get("Authorization", "")
        email = self.tokens.get(auth.removeprefix("Bearer ")) if auth.startswith("Bearer ") else None
        if email is None:
            error = {
                "code": 401,
                "message": "Anonymous caller does not have storage.objects.get access.",
                "errors": [{"reason": "required"}],
            }
            return self._json(handler, 401, {"error": error})
        parts = handler.path.split("/")
        bucket = parts[parts.index("b") + 1] if "b" in parts else ""
        if (email, bucket) in self.denied:
            error = {
                "code": 403,
                "message": f"{email} does not have storage.objects.get access to the Google Cloud Storage object.",
                "errors": [{"reason": "forbidden"}],
            }
            return self._json(handler, 403, {"error": error})
        self._pass(handler)

    def _pass(self, handler) -> None:
        connection = HTTPConnection(self.upstream.host, self.upstream.port, timeout=60)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_HEADERS | {"authorization", "host"}}
        connection.request("GET", handler.path, headers=headers)
        response = connection.getresponse()
        handler.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in HOP_HEADERS:
                handler.send_header(name, value)
        handler.send_header("Connection", "close")
        handler.end_headers()
        media = "alt=media" in handler.path
        try:
            while chunk := response.read(64 << 10):
                handler.wfile.write(chunk)
                if media:
                    with self.lock:
                        self.media_bytes += len(chunk)
        except OSError:
            pass
        finally:
            connection.close()
        handler.close_connection = True
