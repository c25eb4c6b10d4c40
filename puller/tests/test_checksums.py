"""checksums.py: the store's checksum headers read, and CRC32s of parts combined into the whole's."""

import base64
import os
import zlib

import pytest

from llm_model_puller.checksums import Crc32Shift, StoreChecksum, algorithms, store_checksum


@pytest.mark.parametrize("sizes", [(1, 1), (1000, 7), (3, 1 << 20), (0, 5), (5, 0), (4096, 4096, 4096, 11)])
def test_part_crcs_combine_into_the_crc_of_the_whole(sizes):
    parts = [os.urandom(size) for size in sizes]
    crc = 0
    for part in parts:
        crc = Crc32Shift(len(part)).combine(crc, zlib.crc32(part))
    assert crc == zlib.crc32(b"".join(parts))


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def test_the_cheaper_full_object_checksum_is_read_and_a_composite_one_ignored():
    crc = zlib.crc32(b"weights").to_bytes(4, "big")
    assert store_checksum({"x-amz-checksum-crc32": b64(crc)}) == StoreChecksum("crc32", crc.hex())
    assert store_checksum({"x-amz-checksum-sha256": b64(b"\1" * 32), "x-amz-checksum-type": "FULL_OBJECT"}) == (
        StoreChecksum("sha256", "01" * 32)
    )
    assert store_checksum({"x-amz-checksum-crc32": b64(crc), "x-amz-checksum-type": "COMPOSITE"}) is None
    assert store_checksum({"x-amz-checksum-sha256": b64(b"\1" * 32) + "-3"}) is None
    assert store_checksum({"x-amz-checksum-crc64nvme": "AAAAAAAAAAA="}) is None  # not one the puller can compute


def test_sha256_is_computed_when_asked_for_or_when_the_store_gives_nothing():
    assert algorithms(None, False) == ["sha256"]
    assert algorithms(StoreChecksum("crc32", "00"), False) == ["crc32"]
    assert algorithms(StoreChecksum("crc32", "00"), True) == ["crc32", "sha256"]
    assert algorithms(StoreChecksum("sha256", "00"), True) == ["sha256"]
