"""An S3 error response as one line that says what to fix, with the puller's exit code.

S3 names the cause in its XML body (<Error><Code>SignatureDoesNotMatch</Code>...); a HEAD has no body,
so the puller reads objects and listings with GET only. The server's own message is quoted only for
codes whose text carries no request detail (S3 echoes the string it signed for SignatureDoesNotMatch).
"""

import re

from .errors import AuthError, NotFoundError, PullerError, TransientError, UsageError
from .s3_auth import xml_error

# Code -> (error class, what to fix). {what} is the s3:// URI, {region} the region signed for.
FIXES = {
    "SignatureDoesNotMatch": (
        AuthError,
        "the store rejected the signature of {what} (SignatureDoesNotMatch): AWS_SECRET_ACCESS_KEY is not the "
        "secret of AWS_ACCESS_KEY_ID",
    ),
    "InvalidAccessKeyId": (
        AuthError,
        "the store does not know the access key (InvalidAccessKeyId) for {what}: check AWS_ACCESS_KEY_ID, "
        "and AWS_ENDPOINT_URL (a key of one store is unknown to another)",
    ),
    "AccessDenied": (
        AuthError,
        "access denied to {what} (AccessDenied): the credentials are valid but may not read it; grant "
        "s3:GetObject on the objects (and s3:ListBucket on the bucket for a prefix)",
    ),
    "AllAccessDisabled": (AuthError, "all access to {what} is disabled (AllAccessDisabled)"),
    "ExpiredToken": (
        AuthError,
        "the session token has expired (ExpiredToken) reading {what}: renew AWS_SESSION_TOKEN with its key, or "
        "leave the three unset to use the pod's role",
    ),
    "TokenRefreshRequired": (AuthError, "the session token must be refreshed (TokenRefreshRequired) reading {what}"),
    "InvalidToken": (
        AuthError,
        "the store does not accept AWS_SESSION_TOKEN (InvalidToken) for {what}: a session token goes only with "
        "the temporary key it was issued with",
    ),
    "RequestTimeTooSkewed": (AuthError, "this machine's clock is too far from the store's (RequestTimeTooSkewed)"),
    "NoSuchBucket": (
        NotFoundError,
        "no such bucket for {what} (NoSuchBucket): check the bucket name and AWS_ENDPOINT_URL",
    ),
    "NoSuchKey": (NotFoundError, "no such object {what} (NoSuchKey); for a folder, end the URL with '/'"),
    "AuthorizationHeaderMalformed": (
        UsageError,
        "the bucket of {what} is not in region {region} (AuthorizationHeaderMalformed{detail}): set AWS_REGION "
        "to the bucket's region",
    ),
    "PermanentRedirect": (
        UsageError,
        "the bucket of {what} is not in region {region} (PermanentRedirect{detail}): set AWS_REGION to the "
        "bucket's region",
    ),
    "IllegalLocationConstraintException": (
        UsageError,
        "the bucket of {what} is not in region {region}{detail}: set AWS_REGION to the bucket's region",
    ),
}
TRANSIENT_CODES = frozenset({"SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout"})
EXPECTING = re.compile(r"expecting ['\"]([a-z0-9-]+)['\"]")
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


def s3_error(status: int, headers, body: bytes, what: str, region: str, *, signed: bool = True) -> Exception:
    """The exception for an S3 error answer: a PullerError to raise at once, or a TransientError to retry."""
    code, message = xml_error(body)
    if code in TRANSIENT_CODES or (not code and status in TRANSIENT_STATUSES):
        return TransientError(f"HTTP {status} {code or ''} for {what}".replace("  ", " "))
    if not signed and status in (401, 403):
        return AuthError(
            f"HTTP {status} {code or ''} for {what}: the request was unsigned because no AWS credentials were found; "
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (a Secret), or give the pod a role".replace("  ", " ")
        )
    if code in FIXES:
        kind, text = FIXES[code]
        expected = headers.get("x-amz-bucket-region") or _expected_region(message)
        detail = f"; the store says {expected}" if expected else ""
        return kind(text.format(what=what, region=region, detail=detail))
    if status in (401, 403):
        return AuthError(
            f"HTTP {status} {code or 'without an S3 error code'} for {what}: the store refused the credentials"
        )
    if status in (404, 410):
        return NotFoundError(f"HTTP {status} {code or ''} for {what}".replace("  ", " "))
    if status == 301:
        return UsageError(f"{what} answered a redirect (HTTP 301): set AWS_REGION to the bucket's region")
    shown = f"{code}: {message}" if code else message
    return PullerError(f"unexpected HTTP {status} for {what}" + (f" ({shown[:200]})" if shown else ""))


def _expected_region(message: str) -> str | None:
    """The region AuthorizationHeaderMalformed names: "... the region 'us-east-1' is wrong; expecting 'eu-west-1'"."""
    match = EXPECTING.search(message)
    return match.group(1) if match else None
