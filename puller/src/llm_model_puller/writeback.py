"""Write-behind: a download's bytes go to the disk while the next ones arrive, not all at its final fsync.

Every WINDOW bytes a stream has written, the kernel is asked to start writing them back
(sync_file_range(2), SYNC_FILE_RANGE_WRITE: it returns at once), and the stream then waits for the
window before it to be on the device, so that at most two windows per stream are dirty in the page
cache. The fsync that records a file as finished then has only the last window and the metadata
left to write, instead of the whole file: the disk works during the download instead of after it.
sync_file_range makes nothing durable by itself (no metadata, no device cache flush): the fsync stays.

Where sync_file_range is missing (not Linux, or a filesystem that refuses it), nothing is started
early and the fsync does it all, as before.
"""

import ctypes
import ctypes.util
import os

WINDOW = 8 << 20
WAIT_BEFORE, WRITE, WAIT_AFTER = 1, 2, 4  # SYNC_FILE_RANGE_* of <fcntl.h>


def _sync_file_range():
    try:
        function = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    function.restype = ctypes.c_int
    return function  # a CDLL function: the GIL is released while the kernel works


_SYNC_FILE_RANGE = _sync_file_range()


class WriteBehind:
    """The write-back of one stream of writes that goes forward from `start` in one file."""

    def __init__(self, fd: int, start: int, window: int = WINDOW):
        self.fd, self.window = fd, window
        self.waited = self.started = self.end = start
        self.enabled = _SYNC_FILE_RANGE is not None

    def wrote(self, end: int) -> None:
        """The stream has written everything up to `end`."""
        self.end = end
        if self.enabled and end - self.started >= self.window:
            self._call(self.started, end - self.started, WRITE)
            self._call(self.waited, self.started - self.waited, WAIT_BEFORE | WRITE | WAIT_AFTER)
            self.waited, self.started = self.started, end

    def finish(self) -> None:
        """Write back and wait for what the stream wrote (still no metadata, no cache flush: fsync after)."""
        if self.enabled and self.end > self.waited:
            self._call(self.waited, self.end - self.waited, WAIT_BEFORE | WRITE | WAIT_AFTER)
            self.waited = self.started = self.end

    def _call(self, offset: int, length: int, flags: int) -> None:
        if length <= 0 or not self.enabled:
            return
        if _SYNC_FILE_RANGE(self.fd, offset, length, flags) != 0:
            errno = ctypes.get_errno()
            if errno == 4:  # EINTR: a signal; what was asked is only a head start
                return
            self.enabled = False  # ESPIPE, EINVAL, ENOSYS: this file or filesystem does not take it
            if errno not in (22, 29, 38, 95):
                raise OSError(errno, os.strerror(errno))
