"""The store's checksum of a whole object, and the hashers that check it.

An S3 object may carry one x-amz-checksum-<algorithm> (base64), of the whole object when
x-amz-checksum-type is FULL_OBJECT (a single PUT, or a multipart upload that asked for one); a
COMPOSITE one (a checksum of the parts' checksums, "<value>-<N>") says nothing of the file without
the upload's part boundaries and is not used. An Azure blob may carry the MD5 of its whole content
(Content-MD5, azure_source.py). Of the algorithms, three are checked here with the
standard library: SHA256 and MD5 (hashlib) and CRC32 (zlib's, the ISO-HDLC polynomial S3 calls CRC32).
CRC32 costs about a third of sha256's CPU and the CRCs of consecutive parts combine into the whole
object's (crc32_combine), so the parts of one object are checked in parallel, each in the thread that
receives it; a sha256 of one object can only be computed in order. CRC32C and CRC64NVME would need a
compiled library the image does not have: such an object is hashed with sha256 for its record only.
"""

import base64
import hashlib
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

ALGORITHMS = ("crc32", "md5", "sha256")  # what the puller can check, the cheaper first
IN_ORDER = frozenset({"md5", "sha256"})  # hashed in order by one thread; a CRC32 combines from parts
CRC32_POLYNOMIAL = 0xEDB88320  # reflected


@dataclass(frozen=True)
class StoreChecksum:
    algorithm: str  # one of ALGORITHMS
    hex: str

    @property
    def header(self) -> str:
        """Where the store gave it: Azure's Content-MD5, S3's x-amz-checksum-<algorithm>."""
        return "Content-MD5" if self.algorithm == "md5" else f"x-amz-checksum-{self.algorithm}"


def store_checksum(headers: Mapping[str, str]) -> StoreChecksum | None:
    """The whole object's checksum in a response's headers, if it is one the puller can check."""
    if headers.get("x-amz-checksum-type", "FULL_OBJECT").upper() != "FULL_OBJECT":
        return None
    for algorithm in ("crc32", "sha256"):
        value = headers.get(f"x-amz-checksum-{algorithm}")
        if value and "-" not in value:
            try:
                return StoreChecksum(algorithm, base64.b64decode(value, validate=True).hex())
            except ValueError:
                return None
    return None


class Crc32:
    """zlib.crc32 behind hashlib's update/hexdigest (zlib lets other threads run on large buffers)."""

    name = "crc32"

    def __init__(self, value: int = 0):
        self.value = value

    def update(self, data) -> None:
        self.value = zlib.crc32(data, self.value)

    def hexdigest(self) -> str:
        return f"{self.value:08x}"


def algorithms(checksum: StoreChecksum | None, wants_sha256: bool) -> list[str]:
    """What to hash an object with: the store's checksum, and sha256 when MODEL_SHA256 asks for it or
    when the store gives nothing the record can pin (nothing, or an MD5: the record holds a sha256)."""
    if checksum is None:
        return ["sha256"]
    wants_sha256 = wants_sha256 or checksum.algorithm == "md5"
    return sorted({checksum.algorithm} | ({"sha256"} if wants_sha256 else set()), key=ALGORITHMS.index)


def hasher(algorithm: str):
    return Crc32() if algorithm == "crc32" else hashlib.new(algorithm)


def _times(matrix: list[int], vector: int) -> int:
    """A 32x32 matrix over GF(2) (one int per column) times a vector."""
    total, column = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[column]
        vector >>= 1
        column += 1
    return total


def _square(matrix: list[int]) -> list[int]:
    return [_times(matrix, column) for column in matrix]


class Crc32Shift:
    """The operator that appends `length` zero bytes to a CRC32's register: with it, the CRC of A+B is
    shift(crc(A)) ^ crc(B) when len(B) == length (zlib's crc32_combine). Built once per part size."""

    def __init__(self, length: int):
        operator = [1 << n for n in range(32)]  # identity
        power = [CRC32_POLYNOMIAL] + [1 << n for n in range(31)]  # one zero bit
        for _ in range(3):
            power = _square(power)  # one zero byte
        while length:
            if length & 1:
                operator = [_times(power, column) for column in operator]
            length >>= 1
            if length:
                power = _square(power)
        self.operator = operator

    def combine(self, crc_a: int, crc_b: int) -> int:
        return _times(self.operator, crc_a) ^ crc_b


class Digests:
    """Several hashers fed the same bytes (the store's CRC32 and the sha256 MODEL_SHA256 asks for)."""

    def __init__(self, algorithms):
        self.hashers = {algorithm: hasher(algorithm) for algorithm in algorithms}

    def update(self, data) -> None:
        for each in self.hashers.values():
            each.update(data)

    def digests(self) -> dict[str, str]:
        return {algorithm: each.hexdigest() for algorithm, each in self.hashers.items()}
