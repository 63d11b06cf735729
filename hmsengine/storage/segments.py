"""The text segment ``documents.text``: one record per stored document text, addressed by offset.

Record layout (little-endian, 20-byte header, then the stored bytes)::

    offset size  field
    0      4     magic           b"HMT1"
    4      1     codec flags     bit 0 zstd, bit 1 AEAD
    5      3     reserved        zero
    8      4     stored length   bytes after the header
    12     4     raw length      UTF-8 bytes of the text once decoded
    16     4     crc32           over bytes 0..16 and the stored bytes, xor RECORD_CRC_XOR

A record's offset and total length live in the journal operation that stored it (and in the
in-memory document table); records are never moved and offsets are never reused, so a region of
the file belongs to exactly one record for the life of a generation.

Deleting or replacing a document overwrites its whole record with zeros in place; the zeroed
region fails the magic check forever after. The segment is not fsynced on every commit: the
journal, which also carries each text, is the source of truth, and recovery re-verifies every
record written after the last synced checkpoint (see engine/recovery.py).
"""

from __future__ import annotations

import struct
import zlib

from ..errors import CorruptStore
from .codec import (
    FLAG_ZSTD,
    MAX_DECOMPRESSED,
    RAW_FRAME_HEADS,
    SMALL_PAYLOAD_BYTES,
    Codec,
)
from .directory import FileHandle

TEXT_MAGIC = b"HMT1"
RECORD_HEADER = struct.Struct("<4sB3xIII")
RECORD_HEADER_SIZE = RECORD_HEADER.size  # 20
_HEAD = struct.Struct("<4sB3xII")  # the 16 bytes before the crc
_CRC = struct.Struct("<I")
RECORD_CRC_XOR = 0x7E57AB1E


def record_aad(file_label: bytes, offset: int, version: int) -> bytes:
    """Associated data of a text record: the file, the record's offset, the format version."""
    return b"text|" + file_label + b"|" + str(offset).encode() + b"|" + str(version).encode()


def _raw_record_prefixes() -> tuple[tuple[bytes, bytes, int], ...]:
    """For each payload size n under ``SMALL_PAYLOAD_BYTES``: the 16 header bytes before the crc
    of a plain record holding n bytes in a raw zstd frame, the frame's bytes before the payload,
    and the crc32 over both (which the payload's bytes continue)."""
    out = []
    for n, frame_head in enumerate(RAW_FRAME_HEADS):
        head = _HEAD.pack(TEXT_MAGIC, FLAG_ZSTD, len(frame_head) + n, n)
        out.append((head, frame_head, zlib.crc32(frame_head, zlib.crc32(head))))
    return tuple(out)


_RAW_RECORD_PREFIXES = _raw_record_prefixes()


def encode_record(codec: Codec, raw: bytes, *, offset: int, file_label: bytes, version: int,
                  compress_small: bool = False) -> bytes:
    """Encode a text record that will be written at ``offset`` (a small text in a raw zstd block
    unless ``compress_small``: see codec.py)."""
    if codec.__class__ is Codec and not compress_small and len(raw) < SMALL_PAYLOAD_BYTES:
        # The common record (plain store, small text), from its size's precomputed prefix: the
        # same bytes as the general path below, one crc32 call instead of two and no frame or
        # header built per record (every put's text runs through here).
        head, frame_head, crc = _RAW_RECORD_PREFIXES[len(raw)]
        crc = (zlib.crc32(raw, crc) ^ RECORD_CRC_XOR) & 0xFFFFFFFF
        return b"".join((head, _CRC.pack(crc), frame_head, raw))
    aad = record_aad(file_label, offset, version) if codec.encrypted else b""  # plain: unused
    flags, stored = codec.encode(raw, aad=aad, compress_small=compress_small)
    head = _HEAD.pack(TEXT_MAGIC, flags, len(stored), len(raw))
    crc = (zlib.crc32(stored, zlib.crc32(head)) ^ RECORD_CRC_XOR) & 0xFFFFFFFF
    return head + _CRC.pack(crc) + stored


def encode_records(codec: Codec, raws: list[bytes], *, offset: int, file_label: bytes,
                   version: int) -> tuple[list[bytes], list[int], list[int]]:
    """Records of ``raws`` written one after another from ``offset``, as :func:`encode_record`
    writes each: the pieces to write, in order (joined, they are the records), and each
    record's length and crc. A bulk put's every text runs through here: a small text of a plain
    store costs one crc32 call and no bytes built for it but its checksum."""
    parts: list[bytes] = []
    lengths: list[int] = []
    crcs: list[int] = []
    plain = codec.__class__ is Codec
    prefixes, crc32, pack = _RAW_RECORD_PREFIXES, zlib.crc32, _CRC.pack
    for raw in raws:
        n = len(raw)
        if plain and n < SMALL_PAYLOAD_BYTES:
            head, frame_head, crc = prefixes[n]
            crc = (crc32(raw, crc) ^ RECORD_CRC_XOR) & 0xFFFFFFFF
            parts += (head, pack(crc), frame_head, raw)
            n += RECORD_HEADER_SIZE + len(frame_head)
        else:
            record = encode_record(codec, raw, offset=offset, file_label=file_label, version=version)
            crc = record_crc(record)
            parts.append(record)
            n = len(record)
        lengths.append(n)
        crcs.append(crc)
        offset += n
    return parts, lengths, crcs


def record_crc(record: bytes) -> int:
    """The checksum stored in an encoded record (the document table keeps it to verify reads)."""
    return int(_CRC.unpack_from(record, 16)[0])


def check_record(data: bytes, expected_crc: int | None = None) -> bool:
    """True if ``data`` is one whole valid record (and carries ``expected_crc`` when given)."""
    if len(data) < RECORD_HEADER_SIZE or data[:4] != TEXT_MAGIC:
        return False
    _magic, _flags, stored_len, _raw_len, crc = RECORD_HEADER.unpack_from(data, 0)
    if RECORD_HEADER_SIZE + stored_len != len(data):
        return False
    if expected_crc is not None and crc != expected_crc:
        return False
    actual = zlib.crc32(data[RECORD_HEADER_SIZE:], zlib.crc32(data[:16])) ^ RECORD_CRC_XOR
    return bool((actual & 0xFFFFFFFF) == crc)


def plain_small_payload(data: bytes, expected_crc: int | None = None) -> bytes | None:
    """The text of ``data`` when it is, byte for byte, the record ``encode_record`` writes for a
    small text in a plain store (a raw zstd block) whose bytes carry its stored checksum (and
    that checksum is ``expected_crc``, when given); else None (``decode_record`` then decodes it
    the general way, which names any damage). Nearly every record of a plain store is one:
    compared with its size's precomputed prefix and checked with one crc32 call, no header
    unpacked (~0.5 against ~1.8 us a read)."""
    size = len(data) - RECORD_HEADER_SIZE - 9  # a raw frame's head: 9 bytes under 256 ...
    if not 0 <= size < 256:
        size -= 1  # ... 10 bytes from 256 up
        if not 256 <= size < SMALL_PAYLOAD_BYTES:
            return None
    head, frame_head, crc = _RAW_RECORD_PREFIXES[size]
    if not data.startswith(head) or not data.startswith(frame_head, RECORD_HEADER_SIZE):
        return None
    payload = data[len(data) - size:]
    stored = _CRC.unpack_from(data, 16)[0]
    if (zlib.crc32(payload, crc) ^ RECORD_CRC_XOR) & 0xFFFFFFFF != stored \
            or (expected_crc is not None and stored != expected_crc):
        return None
    return payload


def decode_record(
    codec: Codec, data: bytes, *, offset: int, where: str, file_label: bytes, version: int,
    expected_crc: int | None = None,
) -> bytes:
    """Decode a record read from ``offset``; any damage raises :class:`CorruptStore`. A plain
    store's small record takes the shortcut (``plain_small_payload``)."""
    if codec.__class__ is Codec:
        text = plain_small_payload(data, expected_crc)
        if text is not None:
            return text
    if not check_record(data, expected_crc):
        raise CorruptStore("text record fails its checksum", file=where, offset=offset)
    _magic, flags, _stored_len, raw_len, _crc = RECORD_HEADER.unpack_from(data, 0)
    raw = codec.decode(
        flags, data[RECORD_HEADER_SIZE:],
        aad=record_aad(file_label, offset, version) if codec.encrypted else b"",
        where=where, offset=offset, max_size=min(raw_len, MAX_DECOMPRESSED),
    )
    if len(raw) != raw_len:
        raise CorruptStore("text record decodes to the wrong length", file=where, offset=offset)
    return raw


class TextSegment:
    """``documents.text`` of one generation: append records, read them back, zero them in place."""

    def __init__(self, handle: FileHandle, *, codec: Codec, where: str, file_label: bytes,
                 version: int) -> None:
        self.handle = handle
        self.codec = codec
        self.where = where
        self.file_label = file_label
        self.version = version

    def encode_at(self, raw: bytes, offset: int, *, compress_small: bool = False) -> bytes:
        return encode_record(self.codec, raw, offset=offset, file_label=self.file_label,
                             version=self.version, compress_small=compress_small)

    def encode_many(self, raws: list[bytes], offset: int) -> tuple[list[bytes], list[int], list[int]]:
        """:func:`encode_records` of ``raws`` written from ``offset`` in this segment."""
        return encode_records(self.codec, raws, offset=offset, file_label=self.file_label,
                              version=self.version)

    def read(self, offset: int, length: int, crc: int) -> bytes:
        """Read and decode the record at ``offset``; the bytes must carry checksum ``crc``."""
        return decode_record(self.codec, self.handle.read_at(offset, length), offset=offset,
                             where=self.where, file_label=self.file_label, version=self.version,
                             expected_crc=crc)

    def is_intact(self, offset: int, length: int, crc: int) -> bool:
        return check_record(self.handle.read_at(offset, length), crc)

    def zero(self, offset: int, length: int) -> None:
        """Overwrite a record with zeros in place (made durable by the next ``sync``)."""
        self.handle.write_at(offset, bytes(length))

    def sync(self) -> None:
        self.handle.sync()
