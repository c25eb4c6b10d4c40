"""Where an s3:// or gs:// source lives: bucket, key or prefix, endpoint, region, addressing style.

Read from the variables the AWS SDKs and CLI read, so that one Secret serves the puller and `aws s3 cp`:
AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL (an S3-compatible store, addressed path style),
AWS_REGION / AWS_DEFAULT_REGION (default us-east-1).

gs:// with HMAC keys in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and no service-account key file:
gcs_source.reads_json_api) goes through Cloud Storage's S3 interoperability (XML) API at
https://storage.googleapis.com, path style, signed with SigV4 (region "auto" unless AWS_REGION says
otherwise); every other gs:// source goes through the JSON API (gcs_download.py).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from .errors import UsageError
from .sources import redact_url

DEFAULT_REGION = "us-east-1"
GCS_ENDPOINT = "https://storage.googleapis.com"
GCS_REGION = "auto"
REGION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


@dataclass(frozen=True)
class S3Location:
    bucket: str
    key: str  # the object's key, or the prefix (ending in "/") of a folder
    region: str
    endpoint: str | None  # a custom endpoint (path style), None for AWS (virtual-hosted style)
    scheme: str = "s3"  # "gs": Cloud Storage through its S3 interoperability API

    @property
    def is_prefix(self) -> bool:
        return self.key.endswith("/")

    @property
    def uri(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.key}"

    def bucket_url(self) -> str:
        """The URL of the bucket, without a trailing slash: object URLs and the listing hang off it."""
        if self.endpoint:
            return f"{self.endpoint}/{self.bucket}"
        if "." in self.bucket:  # the virtual-host certificate does not cover dots
            return f"https://s3.{self.region}.amazonaws.com/{self.bucket}"
        return f"https://{self.bucket}.s3.{self.region}.amazonaws.com"

    def object_url(self, key: str) -> str:
        return f"{self.bucket_url()}/{quote(key, safe='/~')}"


def _get(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def s3_location(url: str, env: Mapping[str, str]) -> S3Location:
    """The S3Location of an s3:// or gs:// URL (a key, or a prefix ending in "/"), or UsageError."""
    scheme = urlsplit(url).scheme.lower()
    bucket = urlsplit(url).netloc
    key = url.split("://", 1)[1][len(bucket) :].lstrip("/")
    if not bucket or not key or "@" in bucket:
        raise UsageError(
            f"MODEL_URL: {scheme}:// URL must name a bucket and an object key or a prefix: {redact_url(url)}"
        )
    default_region = GCS_REGION if scheme == "gs" else DEFAULT_REGION
    region = _get(env, "AWS_REGION", "AWS_DEFAULT_REGION") or default_region
    if not set(region) <= REGION_CHARS:
        raise UsageError(f"AWS_REGION must look like us-east-1, got {region!r}")
    endpoint = _get(env, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
    if endpoint:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"AWS_ENDPOINT_URL must be an http(s) URL, got {redact_url(endpoint)!r}")
        endpoint = endpoint.rstrip("/")
    elif scheme == "gs":
        endpoint = GCS_ENDPOINT
    return S3Location(bucket=bucket, key=key, region=region, endpoint=endpoint, scheme=scheme)


def prefix_label(location: S3Location) -> str:
    """A short name for progress lines: the prefix's last segment (the bucket for a whole bucket)."""
    return location.key.rstrip("/").rsplit("/", 1)[-1] or location.bucket
