"""An HTTP response's body read into one buffer the thread keeps, and written at an offset: no copy in Python.

requests' iter_content makes a new bytes object for every chunk (a fresh large allocation the kernel
zeroes page by page, then a copy); here the socket is read straight into a reused buffer through the
http.client response under urllib3 (readinto), and each view of it is hashed and written with pwrite
from there. A body the server encoded (Content-Encoding) goes through requests' decoding as before.
A body read to its end hands its connection back to the Session's pool, as iter_content does.
"""

import http.client
import os
import threading
from collections.abc import Iterator

import requests

BUFFER_SIZE = 1 << 20
_local = threading.local()


def thread_buffer(size: int = BUFFER_SIZE) -> memoryview:
    """This thread's buffer of `size` bytes, allocated once (its pages are touched once, not per chunk)."""
    buffer = getattr(_local, "buffer", None)
    if buffer is None or len(buffer) != size:
        buffer = _local.buffer = memoryview(bytearray(size))
    return buffer


def chunks(response: requests.Response, limit: int | None = None, size: int = BUFFER_SIZE) -> Iterator[memoryview]:
    """The body (at most `limit` bytes) as views of this thread's buffer, each valid until the next."""
    raw = getattr(response.raw, "_fp", None)
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if not isinstance(raw, http.client.HTTPResponse) or encoding not in ("", "identity"):
        yield from _decoded(response, limit, size)
        return
    buffer, remaining = thread_buffer(size), limit
    while remaining is None or remaining > 0:
        view = buffer if remaining is None or remaining >= size else buffer[:remaining]
        try:
            n = raw.readinto(view)
        except TimeoutError as exc:
            raise requests.exceptions.ReadTimeout(f"read timed out: {exc}") from exc
        except (OSError, http.client.HTTPException) as exc:
            raise requests.exceptions.ConnectionError(f"{type(exc).__name__} reading the body: {exc}") from exc
        if not n:
            break
        if remaining is not None:
            remaining -= n
        yield view[:n]
    if raw.isclosed():  # read to its end: requests then returns the connection to the pool
        response._content_consumed = True


def _decoded(response: requests.Response, limit: int | None, size: int) -> Iterator[memoryview]:
    remaining = limit
    for chunk in response.iter_content(size):
        view = memoryview(chunk) if remaining is None else memoryview(chunk)[:remaining]
        if remaining is not None:
            remaining -= len(view)
        if view:
            yield view
        if remaining is not None and remaining <= 0:
            return


def write_at(fd: int, view: memoryview, offset: int) -> None:
    """All of view at offset (pwrite may write less than asked)."""
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


def hash_range(hasher, fd: int, offset: int, length: int, size: int = BUFFER_SIZE) -> int:
    """Feed hasher the file's bytes [offset, offset + length), read into this thread's buffer; how many."""
    buffer, done = thread_buffer(size), 0
    while done < length:
        n = os.preadv(fd, [buffer[: min(size, length - done)]], offset + done)
        if not n:
            break
        hasher.update(buffer[:n])
        done += n
    return done
