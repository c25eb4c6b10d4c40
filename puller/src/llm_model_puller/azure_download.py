"""az:// sources (and https://<account>.blob.core.windows.net links): one blob, or every blob under a
prefix (the layout kept), read with Shared Key or a SAS (azure_source.py, azure_auth.py).

The pull is s3_download's (pull_from): a large blob in parallel ranged parts (If-Match on its ETag,
finished parts kept for a killed pod's next run), a smaller one resumed by Range (If-Match in place of
If-Range: a blob changed since is fetched again), a prefix listed (List Blobs) and fetched a bounded
number at a time, a finished blob of an interrupted run kept while its ETag is the listing's. Each blob
is checked against its Content-MD5 when it has one (Azure stores it for a blob put in one request; AzCopy
--put-md5 sets it for larger ones); the record holds each blob's sha256.
"""

import base64
import threading
from urllib.parse import quote, urlsplit

import requests

from . import __version__
from .azure_auth import sign, with_sas
from .azure_errors import azure_error
from .azure_source import AzureLocation, describe
from .checksums import StoreChecksum
from .config import Config
from .progress import Progress, log
from .s3_download import MAX_LIST_PAGES, S3Object, check_layout, listing_page, pull_from, relative_path
from .store import Staging

LIST_PAGE = 5000  # the service's largest page


class AzureClient:
    """Requests to one container, signed with the account key or carrying the SAS (s3_download's client
    interface: what, object_url, headers, error, store_checksum, list_prefix)."""

    kind = "azure"  # the manifest's kind: "azure" for one blob, "azure-prefix" for a folder
    checksum_request: dict = {}  # a blob's MD5 comes with every GET

    def __init__(self, location: AzureLocation, timeout: float):
        self.location = location
        self.creds = location.creds
        self.auth = None if self.creds is None else "Shared Key" if self.creds.key else "SAS"
        self.timeout = timeout
        self.session = requests.Session()
        self._local = threading.local()

    def session_for_thread(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def what(self, key: str) -> str:
        return f"az://{self.location.container}/{key}"

    def object_url(self, key: str) -> str:
        return with_sas(self.location.object_url(key), self.creds)

    def headers(self, url: str, extra: dict | None = None, method: str = "GET") -> dict:
        extra = dict(extra or {})
        if "If-Range" in extra:  # resume only the version begun: a changed blob answers 412
            extra["If-Match"] = extra.pop("If-Range")
        signed = sign(method, url, self.location.account, self.creds, extra)
        return {**signed, "User-Agent": f"llm-model-puller/{__version__}", "Accept-Encoding": "identity"}

    def error(self, response: requests.Response, what: str) -> Exception:
        body = response.content if response.request is None or response.request.method != "HEAD" else b""
        sas = self.creds.sas if self.creds else None
        return azure_error(response.status_code, response.headers, body, what, self.location.account, self.auth, sas)

    @staticmethod
    def store_checksum(headers) -> StoreChecksum | None:
        """The blob's MD5: x-ms-blob-content-md5 on a ranged GET, Content-MD5 on a whole one."""
        value = headers.get("x-ms-blob-content-md5") or headers.get("Content-MD5")
        try:
            raw = base64.b64decode(value or "", validate=True)
        except ValueError:
            return None
        return StoreChecksum("md5", raw.hex()) if len(raw) == 16 else None

    def unreachable(self, exc: Exception) -> str:
        host = urlsplit(self.location.endpoint).netloc
        return (
            f"the storage account's blob endpoint {host} does not answer ({type(exc).__name__}): check the account "
            "name, and the BlobEndpoint of AZURE_STORAGE_CONNECTION_STRING"
        )

    def nothing_under(self) -> str:
        return (
            f"no blob under {self.location.uri} in storage account {self.location.account}: check the prefix "
            "(names are case-sensitive)"
        )

    def list_prefix(self, settings) -> list[S3Object]:
        """Every blob under the prefix (folder markers left out), each with its path below it."""
        prefix, found, marker = self.location.key, [], None
        what = self.location.uri
        for _ in range(MAX_LIST_PAGES):
            query = f"restype=container&comp=list&include=metadata&maxresults={LIST_PAGE}"
            query += f"&prefix={quote(prefix, safe='')}"
            if marker:
                query += f"&marker={quote(marker, safe='')}"
            url = with_sas(f"{self.location.container_url()}?{query}", self.creds)
            root = listing_page(self, url, what, settings, "a blob listing: check the account and its endpoint")
            for blob in root.iter("Blob"):
                name = blob.findtext("Name") or ""
                folder = (blob.findtext("Metadata/hdi_isfolder") or "").lower() == "true"
                if name.endswith("/") or folder:
                    continue  # a folder marker (a hierarchical namespace's directory)
                size, etag = blob.findtext("Properties/Content-Length"), blob.findtext("Properties/Etag")
                if etag and not etag.startswith('"'):
                    etag = f'"{etag}"'  # as a GET's ETag header gives it
                found.append(S3Object(name, relative_path(prefix, name), int(size) if size else None, etag))
            marker = root.findtext("NextMarker")
            if not marker:
                break
        check_layout(found, what)
        return found


def pull_azure(cfg: Config, staging: Staging, progress: Progress) -> tuple[list[str], dict]:
    """Download cfg.azure into staging; return (top-level names, manifest details). The caller publishes."""
    location = cfg.azure
    account, endpoint = location.account, location.endpoint
    log.info("%s in storage account %s at %s, %s", location.uri, account, endpoint, describe(location))
    return pull_from(AzureClient(location, cfg.settings.timeout_seconds), cfg, staging, progress)
