"""Azure Storage's Shared Key authorization (HMAC-SHA256 with the account key) and SAS tokens, for the
Blob service's GET requests: the standard library, no SDK.

Shared Key signs the verb, the standard headers Azure lists (Range and If-Match among them), every
x-ms-* header and the canonical resource (/<account><path> and each query parameter), so a request's
headers are all known when it is signed. A SAS is no signature of the request: its token goes in the
query of every URL, and no Authorization header is sent.
"""

import base64
import hashlib
import hmac
from collections.abc import Mapping
from datetime import datetime, timezone
from email.utils import format_datetime
from urllib.parse import parse_qsl, urlsplit

from .azure_source import AzureCredentials

API_VERSION = "2023-11-03"  # x-ms-version: Azurite 3.37 and the service answer it; x-ms-blob-content-md5 on ranges
# The standard headers of the string to sign, in Azure's order (Date is empty: x-ms-date is sent).
SIGNED_STANDARD = (
    "content-encoding",
    "content-language",
    "content-length",
    "content-md5",
    "content-type",
    "date",
    "if-modified-since",
    "if-match",
    "if-none-match",
    "if-unmodified-since",
    "range",
)


def with_sas(url: str, creds: AzureCredentials | None) -> str:
    """url with the SAS token in its query, when the credentials are a SAS."""
    if creds is None or not creds.sas:
        return url
    return f"{url}{'&' if urlsplit(url).query else '?'}{creds.sas}"


def string_to_sign(method: str, url: str, account: str, headers: Mapping[str, str]) -> str:
    parts = urlsplit(url)
    lowered = {name.lower(): str(value).strip() for name, value in headers.items()}
    standard = [lowered.get(name, "") for name in SIGNED_STANDARD]
    if standard[2] == "0":
        standard[2] = ""  # Content-Length 0 is signed as empty (version 2015-02-21 on)
    canonical_headers = "".join(f"{name}:{lowered[name]}\n" for name in sorted(lowered) if name.startswith("x-ms-"))
    resource = f"/{account}{parts.path or '/'}"
    query: dict[str, list[str]] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        query.setdefault(name.lower(), []).append(value)
    resource += "".join(f"\n{name}:{','.join(sorted(query[name]))}" for name in sorted(query))
    return "\n".join([method.upper(), *standard, canonical_headers + resource])


def sign(
    method: str,
    url: str,
    account: str,
    creds: AzureCredentials | None,
    headers: Mapping[str, str] | None = None,
    *,
    now: datetime | None = None,
) -> dict[str, str]:
    """The headers of a Blob service request: the given ones, x-ms-date and x-ms-version, and with an
    account key the Authorization: SharedKey <account>:<signature>. url already holds a SAS token."""
    stamp = format_datetime(now or datetime.now(timezone.utc), usegmt=True)
    result = {**(headers or {}), "x-ms-date": stamp, "x-ms-version": API_VERSION}
    if creds is not None and creds.key:
        text = string_to_sign(method, url, account, result)
        signature = base64.b64encode(hmac.new(creds.key, text.encode("utf-8"), hashlib.sha256).digest()).decode()
        result["Authorization"] = f"SharedKey {account}:{signature}"
    return result
