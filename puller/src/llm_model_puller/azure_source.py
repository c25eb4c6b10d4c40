"""Where an Azure Blob Storage source lives, and with what it is read: account, container, blob or
prefix, endpoint, Shared Key or SAS.

Two URL forms:
  az://<container>/<blob>             the account from the environment (as adlfs and fsspec read it);
  https://<account>.blob.core.windows.net/<container>/<blob>   the account in the host (Azure's own
                                       link; a query on it is a SAS token, which then comes first).
A blob name ending in "/" is a prefix: every blob under it, the layout kept.

Credentials are the variables Azure's CLI and SDKs read, so one Secret serves the puller and `az storage
blob download` alike, first match wins:
  1. AZURE_STORAGE_CONNECTION_STRING: AccountName and AccountKey, or SharedAccessSignature; its
     BlobEndpoint (Azurite, a private endpoint) or DefaultEndpointsProtocol and EndpointSuffix (a
     sovereign cloud) say where the account's blobs are;
  2. AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY (Shared Key: every request signed with the key);
  3. AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_SAS_TOKEN (a SAS: the token in every request's query);
  4. none: anonymous requests, which a container with public read access answers.
Azure AD (a service principal, workload identity, a managed identity) is not read.
"""

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, unquote, urlsplit

from .errors import UsageError
from .progress import register_secret
from .sources import redact_url, url_secrets

SCHEME = "az"
# An account's blob host in Azure's public and sovereign clouds.
BLOB_HOST = re.compile(
    r"^(?P<account>[a-z0-9]{3,24})\.blob\."
    r"(?P<suffix>core\.windows\.net|core\.chinacloudapi\.cn|core\.usgovcloudapi\.net)$"
)
ACCOUNT_NAME = re.compile(r"^[a-z0-9]{3,24}$")
CONTAINER_NAME = re.compile(r"^(\$root|[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9])$")
DEFAULT_SUFFIX = "core.windows.net"
VARIABLES = ("AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING")
SECRET_VARIABLES = ("AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING")
NO_ACCOUNT = (
    "set AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or AZURE_STORAGE_CONNECTION_STRING "
    "(the keys of spec.source.credentialsSecret; a missing Secret or key leaves them unset)"
)


@dataclass(frozen=True)
class AzureCredentials:
    key: bytes | None = None  # the account key, decoded: Shared Key
    sas: str | None = None  # a SAS token, without its leading "?"
    origin: str = "environment"

    def __repr__(self) -> str:  # never a secret in a traceback or a debug print
        return f"AzureCredentials(origin={self.origin!r})"


@dataclass(frozen=True)
class AzureLocation:
    account: str
    container: str
    key: str  # the blob's name, or the prefix (ending in "/") of a folder
    endpoint: str  # the account's blob endpoint, no trailing slash: https://<account>.blob.core.windows.net
    creds: AzureCredentials | None = field(default=None, compare=False)

    @property
    def is_prefix(self) -> bool:
        return self.key.endswith("/")

    @property
    def uri(self) -> str:
        return f"az://{self.container}/{self.key}"

    @property
    def label(self) -> str:
        """A short name for progress lines: the prefix's last segment (the container for a whole one)."""
        return self.key.rstrip("/").rsplit("/", 1)[-1] or self.container

    def container_url(self) -> str:
        return f"{self.endpoint}/{self.container}"

    def object_url(self, key: str) -> str:
        return f"{self.container_url()}/{quote(key, safe='/~')}"


def is_azure_url(url: str) -> bool:
    """True for az:// and for an https URL on an account's blob host."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme == SCHEME or (scheme == "https" and bool(BLOB_HOST.match((parts.hostname or "").lower())))


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def connection_string(text: str) -> dict[str, str]:
    """The fields of an Azure Storage connection string (Key=Value;...; a value may hold "=")."""
    fields = {}
    for part in text.split(";"):
        name, sep, value = part.strip().partition("=")
        if part.strip() and not sep:
            raise UsageError("AZURE_STORAGE_CONNECTION_STRING must be Name=Value pairs separated by ';'")
        if name:
            fields[name.strip()] = value.strip()
    return fields


def hide(text: str | None) -> None:
    """Register a credential with the log redaction, in every form a URL or a message may carry it."""
    text = (text or "").strip()
    if text:
        for secret in [text, *url_secrets("x://h/?" + text.lstrip("?"))]:
            register_secret(secret)


def _key(text: str, name: str) -> bytes:
    hide(text)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise UsageError(f"{name} must be the storage account's key, base64 as the portal shows it") from None


def _sas(text: str) -> str:
    hide(text)
    token = text.lstrip("?")
    if "sig=" not in token:
        raise UsageError("AZURE_STORAGE_SAS_TOKEN must be a SAS token (sv=...&sig=...), without the blob URL")
    return token


def credentials_from_env(env: Mapping[str, str]) -> tuple[str | None, str | None, AzureCredentials | None]:
    """(account, blob endpoint, credentials) from the environment (module docstring); each may be None."""
    text = _get(env, "AZURE_STORAGE_CONNECTION_STRING")
    if text:
        hide(text)
        fields = connection_string(text)
        account = fields.get("AccountName")
        endpoint = fields.get("BlobEndpoint")
        if not endpoint and account:
            protocol = fields.get("DefaultEndpointsProtocol", "https")
            endpoint = f"{protocol}://{account}.blob.{fields.get('EndpointSuffix', DEFAULT_SUFFIX)}"
        if fields.get("AccountKey"):
            if not account:
                raise UsageError("AZURE_STORAGE_CONNECTION_STRING has an AccountKey but no AccountName")
            key = _key(fields["AccountKey"], "the AccountKey of AZURE_STORAGE_CONNECTION_STRING")
            creds = AzureCredentials(key=key, origin="AZURE_STORAGE_CONNECTION_STRING (account key)")
        elif fields.get("SharedAccessSignature"):
            creds = AzureCredentials(sas=_sas(fields["SharedAccessSignature"]),
                                     origin="AZURE_STORAGE_CONNECTION_STRING (SAS)")
        else:
            raise UsageError("AZURE_STORAGE_CONNECTION_STRING has neither AccountKey nor SharedAccessSignature")
        return account or _account_of(endpoint), endpoint, creds
    account = _get(env, "AZURE_STORAGE_ACCOUNT")
    key, sas = _get(env, "AZURE_STORAGE_KEY"), _get(env, "AZURE_STORAGE_SAS_TOKEN")
    if (key or sas) and not account:
        raise UsageError(f"{'AZURE_STORAGE_KEY' if key else 'AZURE_STORAGE_SAS_TOKEN'} needs AZURE_STORAGE_ACCOUNT")
    if key:
        return account, None, AzureCredentials(key=_key(key, "AZURE_STORAGE_KEY"), origin="AZURE_STORAGE_KEY")
    if sas:
        return account, None, AzureCredentials(sas=_sas(sas), origin="AZURE_STORAGE_SAS_TOKEN")
    return account, None, None


def _account_of(endpoint: str | None) -> str | None:
    """The account of a blob endpoint: an account's blob host's first label, (Azurite) the path's first
    segment, else (a custom domain, a private endpoint) the host's first label."""
    if not endpoint:
        return None
    parts = urlsplit(endpoint)
    host = (parts.hostname or "").lower()
    match = BLOB_HOST.match(host)
    if match:
        return match.group("account")
    return parts.path.strip("/").split("/", 1)[0] or host.split(".", 1)[0] or None


def azure_location(url: str, env: Mapping[str, str]) -> AzureLocation:
    """The AzureLocation of an az:// or blob https URL, its credentials registered as secrets; or UsageError."""
    account, endpoint, creds = credentials_from_env(env)
    parts = urlsplit(url)
    if parts.scheme.lower() == SCHEME:
        container = parts.netloc
        key = url.split("://", 1)[1][len(container) :].lstrip("/")  # a raw blob name: '#' and '?' included
        if not account:
            raise UsageError(f"an az:// URL takes the storage account from the environment: {NO_ACCOUNT}")
    else:
        host = BLOB_HOST.match((parts.hostname or "").lower())
        if account and account != host.group("account"):
            raise UsageError(
                f"MODEL_URL names account {host.group('account')} but the credentials are of account {account}"
            )
        account = host.group("account")
        endpoint = endpoint or f"https://{parts.netloc.lower()}"
        container, _, key = parts.path.lstrip("/").partition("/")
        key = unquote(key)
        if parts.query:  # a SAS URL: its token is the credential, whatever the environment holds
            creds = AzureCredentials(sas=_sas(parts.query), origin="the URL's SAS token")
    if not ACCOUNT_NAME.match(account or ""):
        raise UsageError(f"the storage account name must be 3 to 24 lowercase letters and digits, got {account!r}")
    if not container or not key:
        raise UsageError(f"MODEL_URL must name a container and a blob or a prefix ending in '/': {redact_url(url)}")
    if not CONTAINER_NAME.match(container):
        raise UsageError(
            f"container {container!r} is not a valid name (3 to 63 lowercase letters, digits and single hyphens)"
        )
    endpoint = (endpoint or f"https://{account}.blob.{DEFAULT_SUFFIX}").rstrip("/")
    if urlsplit(endpoint).scheme not in ("http", "https") or not urlsplit(endpoint).netloc:
        raise UsageError(
            f"the BlobEndpoint of AZURE_STORAGE_CONNECTION_STRING must be an http(s) URL, got {endpoint!r}"
        )
    return AzureLocation(account=account, container=container, key=key, endpoint=endpoint, creds=creds)


def describe(location: AzureLocation) -> str:
    creds = location.creds
    if creds is None:
        return "anonymous requests (no Azure credentials found)"
    return f"{'Shared Key' if creds.key else 'SAS'} from {creds.origin}"
