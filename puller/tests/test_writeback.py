"""writeback.py: a stream's bytes are handed to the disk window by window, and a file that refuses it
(a pipe here) is written as before, with nothing started early."""

import os

from llm_model_puller.body import write_at
from llm_model_puller.writeback import WriteBehind


def test_each_window_is_written_back_while_the_stream_goes_on(tmp_path):
    data = os.urandom(5 * 65536 + 123)
    fd = os.open(tmp_path / "weights", os.O_RDWR | os.O_CREAT)
    try:
        behind = WriteBehind(fd, 1000, window=65536)
        offsets = []
        for start in range(0, len(data), 40000):
            chunk = memoryview(data)[start : start + 40000]
            write_at(fd, chunk, 1000 + start)
            behind.wrote(1000 + start + len(chunk))
            offsets.append((behind.waited, behind.started))
        assert behind.enabled  # the kernel took every sync_file_range
        # the write-back started window by window and the stream waited for the one before the last
        assert sorted(set(offsets)) == sorted(set(offsets), key=lambda o: o[1])
        assert offsets[-1][0] > 1000 and offsets[-1][1] - offsets[-1][0] >= 65536
        behind.finish()
        assert behind.waited == behind.started == 1000 + len(data)
        assert os.pread(fd, len(data), 1000) == data
    finally:
        os.close(fd)


def test_a_file_that_takes_no_write_back_is_written_all_the_same():
    read, write = os.pipe()
    try:
        behind = WriteBehind(write, 0, window=4)
        os.write(write, b"weights!")
        behind.wrote(8)  # ESPIPE: write-back is left to the fsync
        behind.finish()
        assert not behind.enabled
        assert os.read(read, 8) == b"weights!"
    finally:
        os.close(read)
        os.close(write)
