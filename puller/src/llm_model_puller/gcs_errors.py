"""A Cloud Storage JSON API error answer as one line that says what to fix, with the puller's exit code.

The API names the cause in a JSON body ({"error": {"code", "message", "errors": [{"reason"}]}});
its message names the bucket or object, never a credential, and is quoted (shortened).
"""

import json

from .errors import AuthError, NotFoundError, PullerError, TransientError

TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
NO_CREDENTIALS = (
    "the request carried no credentials (no GOOGLE_APPLICATION_CREDENTIALS key file, HMAC keys or metadata "
    "server found): put a service-account key file's JSON under the credentialsSecret key "
    "GOOGLE_APPLICATION_CREDENTIALS, or run the pull pod with GKE workload identity"
)


def api_message(body: bytes) -> tuple[str, str]:
    """(reason, message) of a JSON API error body, or ('', the text)."""
    try:
        error = json.loads(body).get("error") or {}
        reasons = [e.get("reason", "") for e in error.get("errors") or [] if isinstance(e, dict)]
        return (reasons[0] if reasons else ""), str(error.get("message") or "")[:200]
    except (ValueError, AttributeError, TypeError):
        return "", body[:200].decode("utf-8", "replace").strip()


def gcs_error(
    status: int, body: bytes, what: str, identity: str, *, anonymous: bool, no_bucket: bool = False
) -> Exception:
    """The exception for an error answer: a PullerError to raise at once, or a TransientError to retry.
    no_bucket: a 404 is known to mean the bucket (a listing's, or the bucket's own metadata's)."""
    reason, message = api_message(body)
    said = f" ({reason + ': ' if reason else ''}{message})" if message or reason else ""
    if status in TRANSIENT_STATUSES:
        return TransientError(f"HTTP {status} for {what}{said}")
    if status in (401, 403) and anonymous:
        return AuthError(f"HTTP {status} for {what}{said}: {NO_CREDENTIALS}")
    if status == 401:
        return AuthError(
            f"Cloud Storage refused the access token of {identity} for {what} (HTTP 401{said}): the token has "
            "expired or was revoked; check the key or the workload identity binding"
        )
    if status == 403:
        return AuthError(
            f"access denied to {what} for {identity} (HTTP 403{said}): grant that account roles/storage.objectViewer "
            "on the bucket (storage.objects.get, and storage.objects.list for a folder)"
        )
    if status in (404, 410):
        if no_bucket or "bucket does not exist" in message.lower():
            return NotFoundError(f"no such bucket for {what} (HTTP {status}{said}): check the bucket name")
        return NotFoundError(f"no such object {what} (HTTP {status}{said}); for a folder, end the URL with '/'")
    return PullerError(f"unexpected HTTP {status} for {what}{said}")
