"""Pure functions about sources: URL translation, file names, canonical names."""

from urllib.parse import quote, unquote, urlsplit

URL_SCHEMES = ("http", "https", "s3", "gs")
DEFAULT_HF_ENDPOINT = "https://huggingface.co"


def public_https_url(url: str, aws_endpoint_url: str | None = None) -> str:
    """The plain HTTP(S) URL that serves a public object named by url.

    http(s) URLs are returned unchanged. s3://bucket/key becomes
    https://bucket.s3.amazonaws.com/key (path style, https://s3.amazonaws.com/bucket/key, when the bucket
    name has dots, which the virtual-host certificate does not cover), or <aws_endpoint_url>/bucket/key
    when an endpoint is given (MinIO, Ceph and most S3-compatible stores want path style).
    gs://bucket/key becomes https://storage.googleapis.com/bucket/key. The key is percent-encoded:
    s3:// and gs:// URIs carry raw keys. Requests are unsigned, so only public objects can be read.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        if not parts.netloc:
            raise ValueError(f"URL has no host: {url}")
        return url
    if scheme not in ("s3", "gs"):
        raise ValueError(f"unsupported URL scheme {parts.scheme!r} (use one of: {', '.join(URL_SCHEMES)})")
    bucket = parts.netloc
    # Everything after the bucket is the key, query-looking characters included.
    key = url.split("://", 1)[1][len(bucket) :].lstrip("/")
    if not bucket or not key or key.endswith("/"):
        raise ValueError(f"{scheme}:// URL must name a bucket and an object key: {url}")
    encoded_key = quote(key, safe="/~")
    if scheme == "gs":
        return f"https://storage.googleapis.com/{bucket}/{encoded_key}"
    if aws_endpoint_url:
        return f"{aws_endpoint_url.rstrip('/')}/{bucket}/{encoded_key}"
    if "." in bucket:
        return f"https://s3.amazonaws.com/{bucket}/{encoded_key}"
    return f"https://{bucket}.s3.amazonaws.com/{encoded_key}"


def file_name_for_url(url: str) -> str:
    """The file name the weights get in MODEL_DEST: the last segment of the URL's path."""
    parts = urlsplit(url)
    if parts.scheme.lower() in ("s3", "gs"):
        path = url.split("://", 1)[1][len(parts.netloc) :]
    else:
        path = unquote(parts.path)
    name = path.rstrip("/").rsplit("/", 1)[-1] if path.strip("/") else ""
    if name in ("", ".", "..") or name.startswith(".llm-model-puller"):
        raise ValueError(f"cannot derive a file name from URL {redact_url(url)}")
    return name


def redact_url(url: str) -> str:
    """url without user info, query and fragment: signed URLs carry credentials there."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    suffix = "?…" if parts.query else ""
    return f"{parts.scheme}://{host}{parts.path}{suffix}"


def hf_source(repo: str, revision: str) -> str:
    """Canonical name of a Hugging Face source, as the LLMModel status shows it (weights.source)."""
    return f"hf://{repo}@{revision}"
