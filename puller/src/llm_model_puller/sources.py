"""Pure functions about sources: URL translation, file names, canonical names, what may be shown."""

import hashlib
from urllib.parse import quote, unquote, unquote_plus, urlsplit

from requests.utils import requote_uri

URL_SCHEMES = ("http", "https", "s3", "gs", "az")
KEY_SCHEMES = ("s3", "gs", "az")  # everything after the bucket (container) is a raw object key, '#' and '?' included
DEFAULT_HF_ENDPOINT = "https://huggingface.co"
REDACTED_QUERY = "?<redacted>"
QUERY_DIGEST_LENGTH = 16
# A part shorter than this is no credential worth hiding (X-Amz-Expires=900) and hiding it would
# blank that text in every log line; a URL in a line loses its query and user info anyway (scrub_urls).
MIN_SECRET_LENGTH = 4


def file_name_for_url(url: str) -> str:
    """The file name the weights get in MODEL_DEST: the last segment of the URL's path."""
    parts = urlsplit(url)
    if parts.scheme.lower() in KEY_SCHEMES:
        path = url.split("://", 1)[1][len(parts.netloc) :]
    else:
        path = unquote(parts.path)
    name = path.rstrip("/").rsplit("/", 1)[-1] if path.strip("/") else ""
    if name in ("", ".", "..") or name.startswith(".llm-model-puller"):
        raise ValueError(f"cannot derive a file name from URL {redact_url(url)}")
    return name


def _parts(url: str) -> tuple[str, str, str, str, str | None]:
    """(scheme://, user info, host[:port], path, query or None) of url, cut as text: nothing else of
    the URL changes (case, percent-encoding, IPv6 brackets, a port that is not a number). The fragment
    of an http(s) URL is dropped (it is never sent); after an s3:// or gs:// bucket a '#' is part of
    the key and only a '?' starts what is hidden."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    cut = min([i for i in map(rest.find, "/?#") if i >= 0] or [len(rest)])
    userinfo, _, host = rest[:cut].rpartition("@")
    tail = rest[cut:]
    if scheme.lower() not in KEY_SCHEMES:
        tail = tail.partition("#")[0]
    path, question, query = tail.partition("?")
    return scheme + sep, userinfo, host, path, query if question else None


def redact_url(url: str) -> str:
    """url as it may be shown: no user info, the query replaced by ?<redacted>, no fragment."""
    prefix, _, host, path, query = _parts(url)
    return prefix + host + path + (REDACTED_QUERY if query else "")


def source_identity(url: str) -> str:
    """What MODEL_DEST's manifest records for url: the URL without user info and fragment, its query
    replaced by ?query-sha256=<digest>, so two signatures of a link are two sources and none is readable."""
    prefix, _, host, path, query = _parts(url)
    digest = hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()[:QUERY_DIGEST_LENGTH] if query else ""
    return prefix + host + path + ("?query-sha256=" + digest if query else "?" if query == "" else "")


def url_secrets(url: str) -> list[str]:
    """The parts of url that must never be shown, as written and as they may be re-encoded or decoded
    on their way into an error message: the user info, the password (or a lone user name, which is
    then the token), the whole query and each query value."""
    _, userinfo, _, _, query = _parts(url or "")
    parts: list[str] = []
    if userinfo:
        user, colon, password = userinfo.partition(":")
        parts += [userinfo, password if colon else user]
    if query:
        parts += [query, requote_uri(query), quote(query, safe="/~")]
        parts += [pair.partition("=")[2] or pair for pair in query.split("&")]
    forms = parts + [unquote(text) for text in parts] + [unquote_plus(text) for text in parts]
    return list(dict.fromkeys(text for text in forms if len(text) >= MIN_SECRET_LENGTH))


def hf_source(repo: str, revision: str) -> str:
    """Canonical name of a Hugging Face source, as the LLMModel status shows it (weights.source)."""
    return f"hf://{repo}@{revision}"
