"""An Azure Blob Storage error answer as one line that says what to fix, with the puller's exit code.

The service names the cause in x-ms-error-code (a HEAD's only word) and in its XML body
(<Error><Code>AuthenticationFailed</Code><Message>...<AuthenticationErrorDetail>...). The server's
text is never quoted whole: for a wrong key it echoes the string it signed, for a SAS the signed fields.
"""

import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from urllib.parse import parse_qs

from .errors import AuthError, NotFoundError, PullerError, TransientError, UsageError
from .s3_auth import xml_error

TRANSIENT_CODES = frozenset({"ServerBusy", "InternalError", "OperationTimedOut"})
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
PERMISSION = (
    "the credentials are valid but may not read it; a SAS needs read (sp=r) and, for a folder, list (sp=rl) on "
    "the container, an account SAS also srt=co; a key may be refused by the account's network rules"
)

# Code -> (error class, what to fix). {what} is the az:// URI, {account} the storage account.
FIXES = {
    "AuthorizationFailure": (AuthError, "not authorized to read {what} (AuthorizationFailure): " + PERMISSION),
    "AuthorizationPermissionMismatch": (
        AuthError,
        "the SAS does not permit reading {what} (AuthorizationPermissionMismatch): " + PERMISSION,
    ),
    "AuthorizationResourceTypeMismatch": (
        AuthError,
        "the SAS does not cover {what} (AuthorizationResourceTypeMismatch): an account SAS needs srt=co",
    ),
    "AuthorizationServiceMismatch": (
        AuthError,
        "the SAS is not for the Blob service (AuthorizationServiceMismatch): an account SAS needs ss=b",
    ),
    "AuthorizationSourceIPMismatch": (
        AuthError,
        "the SAS does not allow this pod's address (AuthorizationSourceIPMismatch): widen its sip range",
    ),
    "AuthorizationProtocolMismatch": (
        AuthError,
        "the SAS allows HTTPS only (AuthorizationProtocolMismatch): use the https endpoint",
    ),
    "InvalidAuthenticationInfo": (
        AuthError,
        "the storage account refused the credentials for {what} (InvalidAuthenticationInfo): check "
        "AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN",
    ),
    "NoAuthenticationInformation": (
        AuthError,
        "{what} is not public and the request carried no credentials (NoAuthenticationInformation)",
    ),
    "AccountIsDisabled": (AuthError, "storage account {account} is disabled (AccountIsDisabled)"),
    "PublicAccessNotPermitted": (
        AuthError,
        "storage account {account} allows no anonymous access (PublicAccessNotPermitted): give credentials",
    ),
    "ContainerNotFound": (
        NotFoundError,
        "no such container for {what} in storage account {account} (ContainerNotFound): check the container "
        "name and the account",
    ),
    "BlobNotFound": (NotFoundError, "no such blob {what} (BlobNotFound); for a folder, end the URL with '/'"),
    "ResourceNotFound": (
        NotFoundError,
        "{what} was not found in storage account {account} (ResourceNotFound): check the container, the blob "
        "and the account",
    ),
    "InvalidResourceName": (UsageError, "{what} is not a valid container or blob name (InvalidResourceName)"),
}
NO_CREDENTIALS = (
    "; the request was anonymous because no Azure credentials were found: set AZURE_STORAGE_ACCOUNT with "
    "AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or AZURE_STORAGE_CONNECTION_STRING (a Secret)"
)


def authentication_detail(body: bytes) -> str:
    try:
        return (ET.fromstring(body).findtext("AuthenticationErrorDetail") or "").strip()
    except ET.ParseError:
        return ""


def sas_expiry(sas: str | None) -> datetime | None:
    """The se= expiry of a SAS token (no secret: the signature is sig=), or None."""
    try:
        text = parse_qs(sas or "").get("se", [""])[0]
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc) if text else None
    except ValueError:
        return None


def refused(what: str, auth: str, sas: str | None, now: datetime) -> Exception | None:
    """A 403 whose cause the credentials tell: a SAS past its expiry (the service says AuthenticationFailed,
    Azurite AuthorizationFailure), a Shared Key request refused (a wrong key: Azurite's AuthorizationFailure)."""
    expiry = sas_expiry(sas) if auth == "SAS" else None
    if expiry is not None and expiry <= now:
        return AuthError(
            f"the SAS token for {what} expired at {expiry:%Y-%m-%dT%H:%M:%SZ}: create a new SAS (se= in the future) "
            "and put it in AZURE_STORAGE_SAS_TOKEN (or the connection string's SharedAccessSignature)"
        )
    return None


def authentication_failed(what: str, auth: str, detail: str) -> Exception:
    """AuthenticationFailed: a wrong key, or a SAS that is expired, not yet valid or not signed right."""
    lowered = detail.lower()
    if auth == "SAS" and ("expir" in lowered or "time frame" in lowered or "not valid" in lowered):
        return AuthError(
            f"the SAS token for {what} is expired or not yet valid (AuthenticationFailed): create a new SAS "
            "(its se= expiry in the future) and put it in AZURE_STORAGE_SAS_TOKEN"
        )
    if auth == "SAS":
        return AuthError(
            f"the storage account rejected the SAS token for {what} (AuthenticationFailed): the token is not "
            "signed by a key of this account (a regenerated key voids it) or was altered; create a new SAS"
        )
    return AuthError(
        f"the storage account rejected the signature of {what} (AuthenticationFailed): AZURE_STORAGE_KEY is not "
        "a key of AZURE_STORAGE_ACCOUNT (or the clock of this machine is off by more than 15 minutes)"
    )


def azure_error(
    status: int, headers, body: bytes, what: str, account: str, auth: str | None, sas: str | None = None,
    now: datetime | None = None,
) -> Exception:
    """The exception for an error answer: a PullerError to raise at once, or a TransientError to retry.
    auth is "Shared Key", "SAS" or None (anonymous); sas the SAS token (its expiry is read, never shown)."""
    code, message = xml_error(body) if body else ("", "")
    code = headers.get("x-ms-error-code") or code
    if code in TRANSIENT_CODES or (not code and status in TRANSIENT_STATUSES):
        return TransientError(f"HTTP {status} {code or ''} for {what}".replace("  ", " "))
    expired = refused(what, auth or "", sas, now or datetime.now(timezone.utc)) if status == 403 else None
    if expired is not None:
        return expired
    if code == "AuthorizationFailure" and auth == "Shared Key":
        return AuthError(
            f"the storage account refused the Shared Key request for {what} (AuthorizationFailure): AZURE_STORAGE_KEY "
            "is not a key of the account (the emulator says so for a wrong key), or the account's network rules "
            "refuse this pod's address"
        )
    if code == "AuthorizationFailure" and auth == "SAS":
        return AuthError(
            f"the storage account refused the SAS for {what} (AuthorizationFailure): the token is not signed by a key "
            "of this account, lacks read (sp=r) and for a folder list (sp=rl), or the account's network rules "
            "refuse this pod's address"
        )
    if code == "AuthenticationFailed":
        return authentication_failed(what, auth or "", authentication_detail(body))
    hint = NO_CREDENTIALS if auth is None and status in (401, 403, 404, 409) else ""
    if code in FIXES:
        kind, text = FIXES[code]
        return kind(text.format(what=what, account=account) + hint)
    if status in (401, 403):
        return AuthError(f"HTTP {status} {code or ''} for {what}: the storage account refused the request{hint}")
    if status in (404, 410):
        return NotFoundError(f"HTTP {status} {code or ''} for {what}{hint}".replace("  ", " "))
    shown = f"{code}: {message}" if code else message
    return PullerError(f"unexpected HTTP {status} for {what}" + (f" ({shown[:200]})" if shown else ""))
