"""Failure classes and their exit codes (the table in README.md)."""

import errno
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1  # anything not classified below: an unexpected HTTP status, a bug
    USAGE = 2  # bad or contradictory environment, unusable MODEL_DEST
    AUTH = 3  # 401/403: missing or wrong token, gated or private repo, private bucket
    NOT_FOUND = 4  # 404/410: no such repo, revision, file or object
    CHECKSUM = 5  # the downloaded file does not match MODEL_SHA256
    DISK_FULL = 6  # ENOSPC/EDQUOT while writing, or not enough free space to start
    NETWORK = 7  # connection errors, timeouts, 5xx/429: gave up after the retries


class PullerError(Exception):
    """A failure with a one-line message for people and an exit code for the operator."""

    exit_code = ExitCode.ERROR
    label = "error"


class UsageError(PullerError):
    exit_code = ExitCode.USAGE
    label = "configuration error"


class AuthError(PullerError):
    exit_code = ExitCode.AUTH
    label = "access refused"


class NotFoundError(PullerError):
    exit_code = ExitCode.NOT_FOUND
    label = "not found"


class ChecksumError(PullerError):
    exit_code = ExitCode.CHECKSUM
    label = "checksum mismatch"


class DiskFullError(PullerError):
    exit_code = ExitCode.DISK_FULL
    label = "disk full"


class NetworkError(PullerError):
    exit_code = ExitCode.NETWORK
    label = "network failure"


class TransientError(Exception):
    """A failure worth another attempt (connection reset, timeout, 5xx); becomes NetworkError when retries run out."""


DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def find_disk_full(exc: BaseException) -> OSError | None:
    """The ENOSPC/EDQUOT error in exc's cause/context chain, if any (libraries like to wrap them)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in DISK_FULL_ERRNOS:
            return current
        current = current.__cause__ or current.__context__
    return None
