"""A real Azure Blob Storage server on 127.0.0.1 for the tests: Azurite (Microsoft's emulator, MIT),
pinned in hack/tools/azurite and installed by `make azurite` into .cache/azurite, which checks Shared
Key and SAS signatures.

Runs one account of its own (AZURITE_ACCOUNTS) with telemetry off and its data under the test's
directory. Blobs are uploaded with the puller's own Shared Key signer (Put Blob: the service stores
the blob's Content-MD5), SAS tokens are made here as `az storage container generate-sas` makes them.
"""

import base64
import hashlib
import hmac
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote, urlencode

import requests

from llm_model_puller.azure_auth import sign
from llm_model_puller.azure_source import AzureCredentials
from s3_server import free_port, stop, wait_listening

ROOT = Path(__file__).resolve().parents[2]
AZURITE = Path(os.environ.get("AZURITE", ROOT / ".cache" / "azurite" / "node_modules" / ".bin" / "azurite-blob"))
ACCOUNT = "modelstore"
KEY = base64.b64encode(b"the account key of the puller's tests, 64 bytes long, not secret!").decode()
WRONG_KEY = base64.b64encode(b"another key entirely, of the same length as the right one, 64 by").decode()
SAS_VERSION = "2018-11-09"


class AzureServer:
    """azurite-blob on 127.0.0.1 (or `host`: the e2e suite binds the real node's bridge address) with
    account ACCOUNT and key KEY. Use as a context manager."""

    def __init__(self, workdir: Path, *, host: str = "127.0.0.1"):
        self.workdir = workdir
        self.host = host
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.session = requests.Session()
        self.creds = AzureCredentials(key=base64.b64decode(KEY))

    @property
    def endpoint(self) -> str:
        """The account's blob endpoint: Azurite addresses the account by the path's first segment."""
        return f"http://{self.host}:{self.port}/{ACCOUNT}"

    def connection_string(self, key: str = KEY) -> str:
        return f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={key};BlobEndpoint={self.endpoint};"

    def env(self, key: str = KEY) -> dict[str, str]:
        """What a Secret for this store holds: the connection string Azure's tools read."""
        return {"AZURE_STORAGE_CONNECTION_STRING": self.connection_string(key)}

    def __enter__(self):
        if not AZURITE.exists():
            raise RuntimeError(f"{AZURITE} is missing: run `make azurite` (npm ci of hack/tools/azurite)")
        data = self.workdir / "azurite"
        data.mkdir(parents=True, exist_ok=True)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "AZURITE_ACCOUNTS": f"{ACCOUNT}:{KEY}"}
        command = [str(AZURITE), "--blobHost", self.host, "--blobPort", str(self.port), "--location", str(data),
                   "--disableTelemetry", "--silent", "--skipApiVersionCheck"]
        log = open(self.workdir / "azurite.log", "wb")  # noqa: SIM115 (closed with the process)
        self.process = subprocess.Popen(command, env=env, stdout=log, stderr=log, cwd=data)
        log.close()
        wait_listening(self.process, self.host, self.port, self.workdir / "azurite.log", 30)
        return self

    def __exit__(self, *exc):
        stop(self.process)

    def request(self, method: str, path: str, data=b"", headers: dict | None = None, length: int | None = None):
        url = self.endpoint + path
        headers = dict(headers or {})
        size = len(data) if length is None else length
        if method == "PUT":
            headers["Content-Length"] = str(size)
        signed = sign(method, url, ACCOUNT, self.creds, headers)
        response = self.session.request(method, url, data=data, headers=signed, timeout=600)
        if response.status_code >= 300:
            raise RuntimeError(f"{method} {path}: HTTP {response.status_code} {response.text[:300]}")
        return response

    def create_container(self, container: str) -> None:
        self.request("PUT", f"/{container}?restype=container")

    def put(self, container: str, name: str, data: bytes, *, md5: bool = True) -> str:
        """Put Blob, with its Content-MD5 stored (as the service stores it for one request) or without; its ETag."""
        headers = {"x-ms-blob-type": "BlockBlob"}
        if md5:
            headers["x-ms-blob-content-md5"] = base64.b64encode(hashlib.md5(data).digest()).decode()
        response = self.request("PUT", f"/{container}/{quote(name, safe='/~')}", data, headers)
        if not md5:  # Azurite stores the MD5 it computes: clear it, as a blob put in blocks has none
            self.request("PUT", f"/{container}/{quote(name, safe='/~')}?comp=properties", b"",
                         {"x-ms-blob-content-md5": ""})
        return response.headers["ETag"]

    def put_file(self, container: str, name: str, path: Path) -> str:
        digest = hashlib.md5()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(8 << 20), b""):
                digest.update(block)
        headers = {"x-ms-blob-type": "BlockBlob", "x-ms-blob-content-md5": base64.b64encode(digest.digest()).decode()}
        with open(path, "rb") as f:
            return self.request("PUT", f"/{container}/{quote(name, safe='/~')}", f, headers,
                                length=path.stat().st_size).headers["ETag"]

    def delete(self, container: str, name: str) -> None:
        self.request("DELETE", f"/{container}/{quote(name, safe='/~')}")

    def container_sas(self, container: str, permissions: str = "rl", *, expiry: datetime | None = None,
                      key: str = KEY) -> str:
        """A service SAS for the container, signed with `key` (version 2018-11-09's string to sign)."""
        expiry = expiry or datetime.now(timezone.utc) + timedelta(hours=1)
        se = expiry.strftime("%Y-%m-%dT%H:%M:%SZ")
        fields = [permissions, "", se, f"/blob/{ACCOUNT}/{container}", "", "", "", SAS_VERSION, "c", "", "", "", "",
                  "", ""]
        mac = hmac.new(base64.b64decode(key), "\n".join(fields).encode(), hashlib.sha256).digest()
        return urlencode({"sv": SAS_VERSION, "sr": "c", "sp": permissions, "se": se,
                          "sig": base64.b64encode(mac).decode()})
