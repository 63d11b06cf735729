"""The journal: an append-only file of checksummed frames, one frame per transaction.

Frame layout (little-endian, 32-byte header, then the stored payload)::

    offset size  field
    0      4     magic            b"HMJ1"
    4      2     format version   (FORMAT_VERSION of storage/manifest.py when written)
    6      1     kind             1 = transaction, 2 = checkpoint, 3 = base
    7      1     codec flags      bit 0 zstd, bit 1 AEAD (see codec.py)
    8      8     sequence         the store revision after this frame
    16     4     stored length    bytes of payload that follow the header
    20     4     payload crc32    over the stored payload bytes
    24     4     reserved         zero
    28     4     header crc32     over bytes 0..28, xor HEADER_CRC_XOR

A transaction frame's sequence is the previous frame's sequence plus one (the revision it
creates); a checkpoint frame repeats the current revision. Base frames (written by compaction)
open a journal: they carry the live documents as of the revision in their sequence. The magic is
non-zero and the header checksum is xored with a constant, so an all-zero region (crc32 of zeros
would otherwise pass) never validates as a frame.

Recovery (:func:`scan`): frames are read in order. At the first frame that does not validate,
the rest of the file is searched for any later valid frame. If there is one, the damage is not a
torn tail: :class:`CorruptStore` names the file and the offset, and nothing is dropped. If there
is none, the damage is a torn or partial tail left by a crash (an unacknowledged write, since a
frame is acknowledged only after its fsync) and is truncated away by the caller.

Limitation, stated plainly: damage confined to the very last frame after it was fsynced (bit rot
in the newest transaction) is indistinguishable from a torn write and is truncated like one.

Preallocation (:class:`JournalFile`): while a store is open, the journal file is kept longer than
its frames by a tail of zeros written ahead of time, so a commit overwrites blocks that are
already allocated and written, and its ``fdatasync`` has no file size or block allocation to make
durable (on ext4, no journal commit of the file system's own). A clean close cuts the zeros off;
after a crash, recovery finds them after the last valid frame and truncates them like any torn
tail (older builds do the same), so the on-disk frame format is unchanged.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

import attrs

from ..errors import CorruptStore, IncompatibleStore, InvalidRequest
from .codec import Codec
from .directory import FileHandle

MAGIC = b"HMJ1"
PREFIX = struct.Struct("<4sHBBQIII")  # the 28 bytes the header crc covers
HEADER = struct.Struct("<4sHBBQIIII")
HEADER_SIZE = HEADER.size  # 32
_U32 = struct.Struct("<I")
HEADER_CRC_XOR = 0x5A17C0DE
KIND_TRANSACTION = 1
KIND_CHECKPOINT = 2
KIND_BASE = 3  # a compacted journal's opening frames: live documents as of a revision
MAX_FRAME_PAYLOAD = 256 * 1024 * 1024
# Zeros written ahead of the journal's last frame: a quarter of the journal, between these bounds
# (rounded to 4 KiB). Each extension costs one fdatasync that carries metadata; the commits that
# then overwrite the zeros in place do not.
PREALLOCATE_MIN = 128 * 1024
PREALLOCATE_MAX = 8 * 1024 * 1024


def _header_crc(prefix: bytes) -> int:
    return (zlib.crc32(prefix) ^ HEADER_CRC_XOR) & 0xFFFFFFFF


def encode_frame(
    codec: Codec, *, kind: int, sequence: int, payload: bytes, version: int, file_label: bytes,
    offset: int, compress_small: bool = False,
) -> bytes:
    """Encode one frame. ``offset`` is where it will be written (bound into the AEAD data); a
    small payload goes in a raw zstd block unless ``compress_small`` (see codec.py)."""
    aad = frame_aad(file_label, offset, version) if codec.encrypted else b""  # plain: unused
    flags, stored = codec.encode(payload, aad=aad, compress_small=compress_small)
    if len(stored) > MAX_FRAME_PAYLOAD:
        raise InvalidRequest(
            f"transaction of {len(stored)} bytes (compressed) is over the limit of {MAX_FRAME_PAYLOAD}",
            hint="split the batch into smaller put_documents calls",
        )
    prefix = PREFIX.pack(
        MAGIC, version, kind, flags, sequence, len(stored), zlib.crc32(stored) & 0xFFFFFFFF, 0
    )
    return prefix + _U32.pack(_header_crc(prefix)) + stored


def frame_aad(file_label: bytes, offset: int, version: int) -> bytes:
    """Associated data of a frame: the file, the frame's position, the format version."""
    return b"journal|" + file_label + b"|" + str(offset).encode() + b"|" + str(version).encode()


@attrs.frozen(kw_only=True)
class Frame:
    """A validated frame: where it is, what it is, and its decoded payload."""

    offset: int
    end: int
    kind: int
    sequence: int
    version: int
    payload: bytes


@attrs.frozen(kw_only=True)
class ScanResult:
    """Every valid frame in order, and where the valid journal ends (the truncation point)."""

    frames: list[Frame]
    valid_end: int
    file_size: int

    @property
    def torn_tail(self) -> bool:
        return self.valid_end < self.file_size


def _check_header(data: bytes, pos: int, max_version: int) -> tuple[int, int, int, int, int, int] | None:
    """Return (version, kind, flags, sequence, length, crc) if a whole valid header starts at pos."""
    if pos + HEADER_SIZE > len(data) or data[pos : pos + 4] != MAGIC:
        return None
    _magic, version, kind, flags, sequence, length, crc, _reserved, hcrc = HEADER.unpack_from(data, pos)
    if _header_crc(data[pos : pos + 28]) != hcrc:
        return None
    if kind not in (KIND_TRANSACTION, KIND_CHECKPOINT, KIND_BASE) or version < 1 or version > max_version:
        return None
    if length > MAX_FRAME_PAYLOAD:
        return None
    return version, kind, flags, sequence, length, crc


def _valid_frame_at(data: bytes, pos: int, max_version: int) -> tuple[int, int, int, int, int] | None:
    """Return (version, kind, flags, sequence, end) if a whole valid frame starts at pos."""
    header = _check_header(data, pos, max_version)
    if header is None:
        return None
    version, kind, flags, sequence, length, crc = header
    end = pos + HEADER_SIZE + length
    if end > len(data) or zlib.crc32(data[pos + HEADER_SIZE : end]) & 0xFFFFFFFF != crc:
        return None
    return version, kind, flags, sequence, end


def _later_valid_frame(data: bytes, start: int, max_version: int) -> int | None:
    """The offset of a valid frame somewhere after ``start``, or None (then the tail is torn)."""
    pos = data.find(MAGIC, start + 1)
    while pos >= 0:
        if _valid_frame_at(data, pos, max_version) is not None:
            return pos
        pos = data.find(MAGIC, pos + 1)
    return None


def scan(
    data: bytes, *, codec: Codec, where: str, file_label: bytes, max_version: int,
    first_sequence: int = 0, start: int = 0,
) -> ScanResult:
    """Validate and decode every frame of a journal's bytes (from ``start``, a frame boundary
    whose preceding frames a table snapshot covers; offsets stay absolute).

    Raises :class:`CorruptStore` for damage before the tail (a bad frame followed by a valid one,
    a sequence gap, a payload that passes its checksum but does not decode). A torn tail is
    reported through ``valid_end < file_size``; nothing is modified here.
    """
    frames: list[Frame] = []
    pos = start
    sequence = first_sequence
    size = len(data)
    while pos < size:
        found = _valid_frame_at(data, pos, max_version)
        if found is None:
            newer = _valid_frame_at(data, pos, 0xFFFF)
            if newer is not None:
                # A whole, valid frame from a newer format: refuse, never truncate it away.
                raise IncompatibleStore(
                    f"journal frame written by format version {newer[0]} at offset {pos} of {where}"
                )
            later = _later_valid_frame(data, pos, max_version)
            if later is not None:
                raise CorruptStore(
                    f"journal frame damaged before the tail (a valid frame follows at offset {later})",
                    file=where, offset=pos,
                )
            break
        version, kind, flags, seq, end = found
        if kind == KIND_BASE:
            # Base frames open a compacted journal: all carry the revision they start from.
            if frames and (frames[-1].kind != KIND_BASE or frames[-1].sequence != seq):
                raise CorruptStore("journal base frame after other frames", file=where, offset=pos)
            sequence = seq
        expected = sequence + 1 if kind == KIND_TRANSACTION else sequence
        if seq != expected:
            raise CorruptStore(
                f"journal sequence gap: expected revision {expected}, found {seq}",
                file=where, offset=pos,
            )
        sequence = seq
        stored = data[pos + HEADER_SIZE : end]
        payload = codec.decode(
            flags, stored, aad=frame_aad(file_label, pos, version), where=where, offset=pos
        )
        frames.append(Frame(offset=pos, end=end, kind=kind, sequence=seq, version=version, payload=payload))
        pos = end
    return ScanResult(frames=frames, valid_end=pos, file_size=size)


def iter_frame_offsets(data: bytes, max_version: int) -> Iterator[tuple[int, int]]:
    """(offset, end) of each leading valid frame; a helper for tests and tools."""
    pos = 0
    while True:
        found = _valid_frame_at(data, pos, max_version)
        if found is None:
            return
        yield pos, found[4]
        pos = found[4]


class JournalFile:
    """A journal's file handle that keeps a preallocated tail of zeros past its last frame.

    It is a :class:`~hmsengine.storage.directory.FileHandle` over ``inner`` whose ``size`` is the
    journal's logical end (the end of the frames), not the file's length. Until the first
    ``append`` or ``truncate`` the two are the same (recovery reads the whole file, scans it and
    truncates whatever follows the last valid frame, zeros included). ``append`` writes the frame
    at the logical end and, when it would pass the zeros, first writes a new stretch of zeros
    past it; the caller's ``sync`` makes both durable, so an acknowledged frame never depends on
    a later write. ``close`` cuts the file back to its logical end (not synced: a crash before
    the cut only leaves zeros that recovery truncates).

    Durability and failure: ``sync`` is the inner handle's (``fdatasync`` on a real directory);
    an error from any call propagates unchanged for the store to latch. After a failed
    ``append`` the logical end is unchanged, so whatever part of the frame landed lies past the
    end, where recovery treats it as a torn tail.
    """

    def __init__(self, inner: FileHandle, *, preallocate: bool) -> None:
        self.name = inner.name
        self._inner = inner
        self._preallocate = preallocate
        self._end = self._allocated = inner.size()

    def size(self) -> int:
        return self._end

    def read_at(self, offset: int, length: int) -> bytes:
        return self._inner.read_at(offset, min(length, self._end - offset))

    def write_at(self, offset: int, data: bytes) -> None:
        self._inner.write_at(offset, data)
        self._end = max(self._end, offset + len(data))
        self._allocated = max(self._allocated, self._end)

    def append(self, data: bytes) -> int:
        offset = self._end
        end = offset + len(data)
        self._inner.write_at(offset, data)
        if self._preallocate and end > self._allocated:
            grow = min(max(end // 4, PREALLOCATE_MIN), PREALLOCATE_MAX)
            target = -(-(end + grow) // 4096) * 4096
            start = max(self._allocated, end)
            self._inner.write_at(start, bytes(target - start))
            self._allocated = target
        self._end = end
        self._allocated = max(self._allocated, end)
        return offset

    def truncate(self, length: int) -> None:
        self._inner.truncate(length)
        self._end = self._allocated = length

    def sync(self) -> None:
        self._inner.sync()

    def close(self) -> None:
        try:
            if self._allocated > self._end:
                self._inner.truncate(self._end)
                self._allocated = self._end
        except OSError:
            pass  # the zeros stay; recovery truncates them at the next open
        finally:
            self._inner.close()
