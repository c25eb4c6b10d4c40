"""One large object in ranged parts fetched in parallel, as s5cmd and boto3's transfer manager do.

The store is a client (s3_download.S3Client, azure_download.AzureClient) that names an object
(object_url, what), signs a request's headers (headers), reads an error answer (error) and a checksum
(store_checksum, checksum_request).

The file is preallocated (sparse) to the object's size and each part written at its offset; a record
in the staging area lists the finished parts once they are synced, so a killed pod's (or a crashed
node's) next run fetches only the others.
Every part is asked with If-Match: <ETag>, so an object replaced mid-pull is noticed (412) and started
again. One thread hashes the file in order behind the finished parts: the sha256 (and an MD5 to
check) is ready when the last part lands, without a second pass over the weights.
"""

import json
import os
import shutil
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path

from .body import chunks, hash_range, write_at
from .checksums import IN_ORDER, Crc32, Crc32Shift, Digests, StoreChecksum, algorithms
from .errors import DiskFullError, PullerError, TransientError
from .http_download import CONTENT_RANGE, TRANSIENT_EXCEPTIONS
from .progress import Progress, human_bytes, log
from .retry import with_retries
from .store import write_atomically
from .writeback import WriteBehind

MAX_RESTARTS = 3  # an object replaced again and again while it is read
PART_BUFFER = 4 << 20  # per part thread and for the hashing thread: larger reads, fewer trips through Python


class ObjectChangedError(Exception):
    """The object's ETag is no longer the one the parts were fetched for (HTTP 412)."""


class SharedProgress:
    """One Progress for many parallel downloads: counts their bytes, ignores their begin/rebase."""

    def __init__(self, progress: Progress):
        self.progress = progress
        self.lock = threading.Lock()

    def begin(self, done: int, total: int | None) -> None:
        pass

    rebase = begin

    def add(self, n: int) -> None:
        with self.lock:
            self.progress.add(n)


class Probe:
    """A one-byte ranged GET (its errors have a body to read, unlike a HEAD's): whether to go by parts,
    and the object's size, ETag and checksum. No byte of a part is fetched twice, here or on a resume."""

    def __init__(self, client, key: str, part_size: int, settings):
        self.client, self.key, self.part_size = client, key, part_size
        self.what = client.what(key)
        self.url = client.object_url(key)
        self.size = self.etag = None
        self.seen_checksum: StoreChecksum | None = None  # one a ranged GET carries (Azure's blob MD5)
        with_retries(self._attempt, settings, progress_marker=lambda: 0, what=self.what)

    def _attempt(self) -> None:
        headers = self.client.headers(self.url, {"Range": "bytes=0-0"})
        try:
            with self.client.session.get(
                self.url, headers=headers, stream=True, timeout=self.client.timeout
            ) as response:
                if response.status_code == 416:
                    return  # an empty object has no first byte: fetched whole, as a small one
                if response.status_code >= 300:
                    raise self.client.error(response, self.what)
                match = CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
                if response.status_code == 206 and match and match.group(3) != "*":
                    self.size, self.etag = int(match.group(3)), response.headers.get("ETag")
                    self.seen_checksum = self.client.store_checksum(response.headers)
                if response.status_code == 206:
                    response.content  # the one byte, read so that the connection is kept (a 200 closes it)
        except TRANSIENT_EXCEPTIONS as exc:
            raise TransientError(f"{type(exc).__name__} reading {self.what}") from exc

    @property
    def by_parts(self) -> bool:
        """Parts pay off from three of them on, and need a size and an ETag to hold them together."""
        return self.size is not None and self.etag is not None and self.size > 2 * self.part_size

    def checksum(self) -> StoreChecksum | None:
        """The store's full-object checksum (an S3 ranged GET carries none): a HEAD, asked only after the
        GET succeeded, so its bodiless errors need no reading. None when there is none or no answer."""
        if self.seen_checksum is not None:
            return self.seen_checksum
        extra = {**self.client.checksum_request, "If-Match": self.etag}  # the probed version's, or 412
        headers = self.client.headers(self.url, extra, method="HEAD")
        try:
            response = self.client.session.head(self.url, headers=headers, timeout=self.client.timeout)
        except TRANSIENT_EXCEPTIONS as exc:
            log.warning("%s: no checksum to compare with (HEAD: %s)", self.what, type(exc).__name__)
            return None
        if response.status_code == 412:
            raise ObjectChangedError()
        if response.status_code != 200:
            log.warning("%s: no checksum to compare with (HEAD: HTTP %d)", self.what, response.status_code)
            return None
        return self.client.store_checksum(response.headers)


class PartedDownload:
    """The parts of one object into path; run() gives the digests asked for: the sha256 and MD5 (computed
    in order by one thread reading the parts back) and the CRC32 (each part's in its own thread, combined)."""

    def __init__(self, client, probe: Probe, path: Path, state_file: Path, progress, settings, wants_sha256: bool):
        self.client, self.probe, self.path, self.state_file = client, probe, path, state_file
        self.progress, self.settings = progress, settings  # the pull's Progress: this object's bytes alone
        self.wants_sha256 = wants_sha256  # MODEL_SHA256 is to be checked
        self.checksum: StoreChecksum | None = None  # the store's, of the version fetched
        self.algorithms: frozenset[str] = frozenset()  # of checksums.ALGORITHMS
        self.crcs: dict[int, int] = {}  # each finished part's CRC32 (with "crc32")
        self.counter = SharedProgress(progress)  # what the part threads add to
        self.began = False
        self.part_size = probe.part_size
        self.count = -(-probe.size // self.part_size)
        self.done: set[int] = set()  # parts on disk and in the record
        self.written: set[int] = set()  # parts written, not yet synced and recorded
        self.lock = threading.Condition()
        self.settling = False  # every part is written: the recording thread records what is left and ends
        self.record_error: OSError | None = None  # the recording thread's fdatasync failed
        self.failed = False
        self.hashed = 0  # parts the hashing thread has read

    def run(self) -> dict[str, str]:
        for _ in range(MAX_RESTARTS):
            try:
                return self._run_once()
            except ObjectChangedError:
                log.warning("%s changed while it was read; starting it again", self.probe.what)
                self.state_file.unlink(missing_ok=True)
                self.probe = Probe(self.client, self.probe.key, self.part_size, self.settings)
        raise PullerError(f"{self.probe.what} changed {MAX_RESTARTS} times while it was read")

    def _run_once(self) -> dict[str, str]:
        self.checksum = self.probe.checksum()
        self.algorithms = frozenset(algorithms(self.checksum, self.wants_sha256))
        size = self.probe.size
        self.done, self.written = self._resumable_parts(), set()
        self.crcs = {i: c for i, c in self.crcs.items() if i in self.done}
        have = sum(self._length(i) for i in self.done)
        if not self.done:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            free = shutil.disk_usage(self.path.parent).free
            if size > free:
                raise DiskFullError(
                    f"{self.path.name} needs {human_bytes(size)} but MODEL_DEST has {human_bytes(free)} free"
                )
            with open(self.path, "wb") as f:
                f.truncate(size)
            self._save()
        else:
            log.info(
                "resuming %s: %d of %d parts here (%s)", self.path.name, len(self.done), self.count, human_bytes(have)
            )
        log.info(
            "%s: %s in %d parts of %s, %d at a time",
            self.probe.what,
            human_bytes(size),
            self.count,
            human_bytes(self.part_size),
            self.settings.s3_max_workers,
        )
        (self.progress.rebase if self.began else self.progress.begin)(have, size)
        self.began = True
        self.failed, self.hashed, self.settling, self.record_error = False, 0, False, None
        hasher = Digests(sorted(self.algorithms & IN_ORDER))
        hashing = threading.Thread(target=self._hash, args=(hasher,), name="s3-hash", daemon=True)
        fd = os.open(self.path, os.O_RDWR)
        recording = threading.Thread(target=self._record, args=(fd,), name="s3-record", daemon=True)
        try:
            if self.algorithms & IN_ORDER:
                hashing.start()
            if "crc32" in self.algorithms:
                self._crc_of_old_parts(fd)
            recording.start()
            with ThreadPoolExecutor(max_workers=self.settings.s3_max_workers, thread_name_prefix="s3-part") as pool:
                futures = [pool.submit(self._part, fd, i) for i in range(self.count) if i not in self.done]
                finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
                errors = [f.exception() for f in finished if f.exception() is not None]
                if errors:
                    for future in futures:
                        future.cancel()
                    raise errors[0]
            with self.lock:
                self.settling = True
                self.lock.notify_all()
            recording.join()
            if self.record_error:
                raise self.record_error
            os.fsync(fd)
            self._settle(set(self.written))
        except BaseException:
            with self.lock:
                self.failed = True
                self.lock.notify_all()
            raise
        finally:
            if recording.is_alive():
                recording.join()
            os.close(fd)
            if hashing.is_alive():
                hashing.join()
        digests = {}
        if self.algorithms & IN_ORDER:
            if self.hashed != self.count:
                raise PullerError(f"{self.path.name}: the hash covers {self.hashed} of {self.count} parts")
            digests.update(hasher.digests())
        if "crc32" in self.algorithms:
            shift, crc, last = Crc32Shift(self.part_size), 0, self.count - 1
            for index in range(last):
                crc = shift.combine(crc, self.crcs[index])
            digests["crc32"] = f"{Crc32Shift(self._length(last)).combine(crc, self.crcs[last]):08x}"
        return digests

    def _crc_of_old_parts(self, fd: int) -> None:
        """The CRC32 of parts an earlier run finished without recording one: read back from the file."""
        for index in sorted(self.done - self.crcs.keys()):
            crc = Crc32()
            hash_range(crc, fd, index * self.part_size, self._length(index), PART_BUFFER)
            self.crcs[index] = crc.value

    def _length(self, index: int) -> int:
        return min(self.part_size, self.probe.size - index * self.part_size)

    def _resumable_parts(self) -> set[int]:
        try:
            state = json.loads(self.state_file.read_text())
            same = (state["etag"], state["size"], state["part_size"]) == (
                self.probe.etag,
                self.probe.size,
                self.part_size,
            )
            if same and self.path.exists() and self.path.stat().st_size == self.probe.size:
                done = {int(i) for i in state["done"] if 0 <= int(i) < self.count}
                self.crcs = {int(i): int(c) for i, c in state.get("crc32", {}).items() if int(i) in done}
                return done
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return set()

    def _save(self) -> None:
        write_atomically(self.state_file, self._state())

    def _state(self) -> str:
        state = {
            "etag": self.probe.etag,
            "size": self.probe.size,
            "part_size": self.part_size,
            "done": sorted(self.done),
            "crc32": {str(i): c for i, c in sorted(self.crcs.items())},
        }
        return json.dumps(state)

    def _part(self, fd: int, index: int) -> None:
        start, length = index * self.part_size, self._length(index)
        written, crc = [0], Crc32()

        def attempt() -> None:
            if self.failed:
                return
            first = start + written[0]
            ranged = {"Range": f"bytes={first}-{start + length - 1}", "If-Match": self.probe.etag}
            headers = self.client.headers(self.probe.url, ranged)
            try:
                with self.client.session_for_thread().get(
                    self.probe.url, headers=headers, stream=True, timeout=self.client.timeout
                ) as response:
                    if response.status_code == 412:
                        raise ObjectChangedError()
                    if response.status_code != 206:
                        error = self.client.error(response, self.probe.what)
                        raise (
                            error
                            if response.status_code >= 300
                            else TransientError(f"HTTP {response.status_code} to a range")
                        )
                    behind = WriteBehind(fd, start + written[0])
                    for chunk in chunks(response, length - written[0], PART_BUFFER):
                        if "crc32" in self.algorithms:
                            crc.update(chunk)
                        write_at(fd, chunk, start + written[0])
                        written[0] += len(chunk)
                        behind.wrote(start + written[0])
                        self.progress.add(len(chunk))
                        if self.failed:
                            return
                    behind.finish()
            except TRANSIENT_EXCEPTIONS as exc:
                raise TransientError(f"{type(exc).__name__} in part {index} of {self.probe.what}") from exc
            if written[0] < length:
                raise TransientError(f"part {index} of {self.probe.what} ended after {written[0]} of {length} bytes")

        with_retries(attempt, self.settings, progress_marker=lambda: written[0], what=f"{self.probe.what} part {index}")
        if self.failed:
            return
        with self.lock:
            self.crcs[index] = crc.value
            self.written.add(index)
            self.lock.notify_all()

    def _record(self, fd: int) -> None:
        """The recording thread: the parts written so far become done, in the record, once their bytes
        are on disk: one fdatasync for every part written before it began (a group commit), while the
        part threads go on with the next parts. The record never lists a part a node crash could still
        take back, whose recorded CRC32 would then vouch for zeros. The last parts are recorded after
        the file's final fsync (_settle)."""
        while True:
            with self.lock:
                while not self.written and not self.settling and not self.failed:
                    self.lock.wait()
                if self.failed or not self.written:
                    return
                covered = set(self.written)
            try:
                os.fdatasync(fd)  # little to write: each part thread waited for its own bytes (WriteBehind)
                self._settle(covered)
            except OSError as exc:  # EIO, ENOSPC: the pull fails with it (_run_once raises it)
                with self.lock:
                    self.record_error, self.failed = exc, True
                    self.lock.notify_all()
                return

    def _settle(self, covered: set[int]) -> None:
        """Parts whose bytes are on disk: done, and in the record."""
        with self.lock:
            self.written -= covered
            self.done |= covered
            state = self._state()
            self.lock.notify_all()
        write_atomically(self.state_file, state)  # outside the lock: one writer at a time (recorder, then _run_once)

    def _hash(self, hasher) -> None:
        """Hash the parts in order as they finish (reading them back from the page cache)."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for index in range(self.count):
                with self.lock:
                    while index not in self.done and not self.failed:
                        self.lock.wait()
                    if self.failed:
                        return
                length = self._length(index)
                if hash_range(hasher, fd, index * self.part_size, length, PART_BUFFER) != length:
                    return
                self.hashed += 1
        finally:
            os.close(fd)
