"""Where a gs:// source lives and which API reads it.

A gs:// source goes through the Cloud Storage JSON API (gcs_download.py) with an OAuth2 token
(gcs_auth.py): from a service-account key file (GOOGLE_APPLICATION_CREDENTIALS, a path, as Google's
SDKs read it), else the metadata server (GKE workload identity), else anonymously. With HMAC keys
(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) and no key file it goes through the S3 interoperability
API instead (s3_source.py). The endpoint is https://storage.googleapis.com, or STORAGE_EMULATOR_HOST
as the SDKs read it (a host[:port], http:// assumed, or a URL).
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from .errors import UsageError
from .sources import redact_url

GCS_API = "https://storage.googleapis.com"


@dataclass(frozen=True)
class GcsLocation:
    bucket: str
    key: str  # the object's name, or the prefix (ending in "/") of a folder
    endpoint: str  # scheme://host[:port], no trailing slash

    @property
    def is_prefix(self) -> bool:
        return self.key.endswith("/")

    @property
    def uri(self) -> str:
        return f"gs://{self.bucket}/{self.key}"

    def bucket_url(self) -> str:
        return f"{self.endpoint}/storage/v1/b/{quote(self.bucket, safe='')}"

    def list_url(self) -> str:
        return f"{self.bucket_url()}/o"

    def object_url(self, name: str) -> str:
        """The object's metadata; with ?alt=media (media_url) its bytes."""
        return f"{self.list_url()}/{quote(name, safe='')}"

    def media_url(self, name: str, generation: str | None) -> str:
        pinned = f"&generation={generation}" if generation else ""
        bucket, name = quote(self.bucket, safe=""), quote(name, safe="")
        return f"{self.endpoint}/download/storage/v1/b/{bucket}/o/{name}?alt=media{pinned}"


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def reads_json_api(env: Mapping[str, str]) -> bool:
    """True when a gs:// source is read through the JSON API, False for the S3 interoperability API
    (HMAC keys and no key file). UsageError when GOOGLE_APPLICATION_CREDENTIALS names no file and no
    HMAC keys are given: under the operator, the credentials Secret holds neither."""
    key_file = _get(env, "GOOGLE_APPLICATION_CREDENTIALS")
    if key_file and os.path.exists(key_file):
        return True
    if _get(env, "AWS_ACCESS_KEY_ID") or _get(env, "AWS_SECRET_ACCESS_KEY"):
        return False
    if key_file:
        raise UsageError(
            f"no Google credentials: GOOGLE_APPLICATION_CREDENTIALS names {key_file}, which does not exist, and "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (HMAC keys) are not set; put a service-account key file's "
            "JSON under the credentials Secret's key GOOGLE_APPLICATION_CREDENTIALS, or HMAC keys under "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or create the Secret), then retry the pull"
        )
    return True


def gcs_endpoint(env: Mapping[str, str]) -> str:
    emulator = _get(env, "STORAGE_EMULATOR_HOST")
    if not emulator:
        return GCS_API
    endpoint = emulator if "://" in emulator else f"http://{emulator}"
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"STORAGE_EMULATOR_HOST must be host:port or an http(s) URL, got {redact_url(emulator)!r}")
    return f"{parts.scheme}://{parts.netloc}"


def gcs_location(url: str, env: Mapping[str, str]) -> GcsLocation:
    bucket = urlsplit(url).netloc
    key = url.split("://", 1)[1][len(bucket) :].lstrip("/")
    if not bucket or not key or "@" in bucket:
        raise UsageError(f"MODEL_URL: gs:// URL must name a bucket and an object or a prefix: {redact_url(url)}")
    return GcsLocation(bucket=bucket, key=key, endpoint=gcs_endpoint(env))


def prefix_label(location: GcsLocation) -> str:
    return location.key.rstrip("/").rsplit("/", 1)[-1] or location.bucket
