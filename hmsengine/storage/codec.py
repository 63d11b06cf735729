"""Record codecs: how a payload becomes the bytes stored in a file, and back.

Every journal frame payload and every text record goes through a :class:`Codec`. The plain codec
stores one zstd frame (level 3: ~3.8x on text at ~146 MB/s here, see PERF-NOTES.md). The
encrypted codec (issue 4) builds the same zstd frame and then seals it with an AEAD, binding each
ciphertext to its file, position and format version through the associated data; the ``flags``
byte stored beside each record says which transformations were applied, so a reader never
guesses.

Small payloads are not worth compressing: a payload under ``SMALL_PAYLOAD_BYTES`` is stored as a
zstd frame of one raw (uncompressed) block, the very framing zstd itself emits for incompressible
input, built here without calling the compressor. Every zstd decoder, and so every build of
hmsengine, reads it like any other frame. Why: zstd's fixed cost per call (context reset, entropy
tables) is ~4 us warm and, measured inside a commit on this VM, 10-20 us per call with the
caches cold after an fdatasync, while a few hundred bytes of text shrink by only 20-35% (LoCoMo
turns: 0.98 of their size under 128 bytes, 0.78 at 128-256, 0.70 at 256-512). A single put paid
two such calls (its text record and its journal frame): skipping them took ~15% off a lone
writer's time per put and ~25% off the CPU per put of 32 concurrent writers (processes of the
old and the new code interleaved on bench/ingest.py's texts, 2026-12-01).
Compaction passes ``compress_small=True``: it compresses every record and frame it rewrites
(keeping the raw block where that is shorter), so raw blocks of compressible text live only until
the next compaction.

zstd contexts are not thread-safe, and records are encoded in the writer's worker thread and
decoded on the event loop and in index builders: each thread gets its own contexts.
"""

from __future__ import annotations

import threading

import numpy as np
import zstandard

from ..errors import CorruptStore

FLAG_ZSTD = 0x01
FLAG_AEAD = 0x02  # reserved for the encrypted codec

ZSTD_LEVEL = 3
# Disposable files derived from the journal (index segments, the table snapshot) are written at
# this level instead (``fast=True``): on a 200k-document index segment level 1 compressed at
# ~550 MB/s against level 3's ~290 and decompressed ~10% faster, for a file ~4% larger (3.29x
# against 3.43x). Any zstd decoder reads either; only the writer chooses.
ZSTD_FAST_LEVEL = 1
# Payloads under this many bytes are stored in a raw zstd block unless the caller insists (see
# the module docstring); at or above it they are compressed.
SMALL_PAYLOAD_BYTES = 1024
# RFC 8878: a frame's magic, then a frame header descriptor with Single_Segment_flag set (no
# window descriptor) and the size of the Frame_Content_Size field: 1 byte (flag 0) below 256
# bytes, else 2 bytes holding the size minus 256 (flag 1).
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_FCS_1 = _ZSTD_MAGIC + b"\x20"
_FCS_2 = _ZSTD_MAGIC + b"\x60"
# A decompressed record is never larger than this (a transaction carries at most 64 MiB of text,
# JSON-escaped); the bound protects readers from a damaged or hostile size field.
MAX_DECOMPRESSED = 1024 * 1024 * 1024
# Disposable files derived from the journal (index segments, the table snapshot) are refused
# when they claim more than this many times their stored size (at least DERIVED_FLOOR bytes),
# before anything is allocated: zstd can expand a 32 KiB file of RLE blocks to a gigabyte, and
# such a file is dropped (and rebuilt from the journal) anyway. Real index segments decode to
# 4-5x their size, and to ~40x in the most repetitive store measured (50,000 identical texts with
# identical embeddings); one past the ratio is only rebuilt, never trusted less.
DERIVED_RATIO = 256
DERIVED_FLOOR = 16 * 1024 * 1024


def derived_limit(stored_size: int) -> int:
    """The most a derived file of ``stored_size`` stored bytes may decompress to."""
    return min(MAX_DECOMPRESSED, max(DERIVED_FLOOR, DERIVED_RATIO * stored_size))

_local = threading.local()


def _compressor(fast: bool = False) -> zstandard.ZstdCompressor:
    name = "fast_compressor" if fast else "compressor"
    c = getattr(_local, name, None)
    if c is None:
        # write_content_size lets the decompressor size its buffer exactly.
        c = zstandard.ZstdCompressor(level=ZSTD_FAST_LEVEL if fast else ZSTD_LEVEL,
                                     write_content_size=True)
        setattr(_local, name, c)
    return c


def _decompressor() -> zstandard.ZstdDecompressor:
    d = getattr(_local, "decompressor", None)
    if d is None:
        d = _local.decompressor = zstandard.ZstdDecompressor()
    return d


def raw_zstd_frame(data: bytes) -> bytes:
    """One zstd frame holding ``data`` (under ``SMALL_PAYLOAD_BYTES``) in a single raw block.

    Byte for byte what zstd writes for an incompressible input of that size: the frame header
    (magic, descriptor, content size), a 3-byte block header (last block, type Raw, size), the
    bytes. No checksum, like every frame we write (records carry their own crc32)."""
    n = len(data)
    if n >= SMALL_PAYLOAD_BYTES:
        raise ValueError(f"a raw zstd frame here holds under {SMALL_PAYLOAD_BYTES} bytes, not {n}")
    head = _FCS_1 + bytes((n,)) if n < 256 else _FCS_2 + (n - 256).to_bytes(2, "little")
    return head + ((n << 3) | 1).to_bytes(3, "little") + data


# What precedes the payload in ``raw_zstd_frame`` of an n-byte payload, for every n it takes.
RAW_FRAME_HEADS = tuple(
    (_FCS_1 + bytes((n,)) if n < 256 else _FCS_2 + (n - 256).to_bytes(2, "little"))
    + ((n << 3) | 1).to_bytes(3, "little") for n in range(SMALL_PAYLOAD_BYTES))


def zstd_frame(data: bytes, *, compress_small: bool = False, fast: bool = False) -> bytes:
    """``data`` as one zstd frame: compressed when it has at least ``SMALL_PAYLOAD_BYTES``, else
    in a raw block; with ``compress_small``, a small payload is compressed too and the shorter
    of the two frames kept (the tiniest texts do not shrink); with ``fast``, at
    ``ZSTD_FAST_LEVEL`` (a disposable file's payload)."""
    if len(data) >= SMALL_PAYLOAD_BYTES:
        return _compressor(fast).compress(data)
    raw = raw_zstd_frame(data)
    if compress_small:
        compressed = _compressor().compress(data)
        if len(compressed) < len(raw):
            return compressed
    return raw


class Codec:
    """The plain codec: one zstd frame per payload, no encryption."""

    encrypted = False

    def encode(self, data: bytes, *, aad: bytes, compress_small: bool = False,
               fast: bool = False) -> tuple[int, bytes]:
        """Return ``(flags, stored bytes)`` for ``data``; ``aad`` binds a ciphertext to its place.

        A payload under ``SMALL_PAYLOAD_BYTES`` is stored in a raw zstd block unless
        ``compress_small`` (compaction, which writes for the long term); ``fast`` compresses at
        ``ZSTD_FAST_LEVEL`` (files derived from the journal, rewritten often)."""
        del aad  # only the encrypted codec binds the position
        return FLAG_ZSTD, zstd_frame(data, compress_small=compress_small, fast=fast)

    def decode(self, flags: int, stored: bytes, *, aad: bytes, where: str, offset: int,
               max_size: int = MAX_DECOMPRESSED) -> bytes:
        """Invert :meth:`encode`; damage raises :class:`CorruptStore` naming ``where`` and ``offset``.

        A record that would decompress to more than ``max_size`` bytes is refused before any
        memory is allocated for it (callers that know a tighter bound pass it)."""
        del aad
        if flags & ~(FLAG_ZSTD | FLAG_AEAD):
            raise CorruptStore(f"unknown codec flags {flags:#04x}", file=where, offset=offset)
        if flags & FLAG_AEAD:
            raise CorruptStore(
                "an encrypted record in a store opened without encryption", file=where, offset=offset
            )
        if not flags & FLAG_ZSTD:
            return bytes(stored)
        try:
            _recorded_size(stored, where, offset, max_size)
            return _decompressor().decompress(stored, max_output_size=max_size)
        except zstandard.ZstdError as exc:
            raise CorruptStore(f"undecodable compressed record ({exc})", file=where, offset=offset) from exc

    def decode_writable(self, flags: int, stored: bytes, *, aad: bytes, where: str,
                        offset: int, max_size: int = MAX_DECOMPRESSED) -> memoryview:
        """:meth:`decode` into a writable ``memoryview`` of fresh memory, decompressed straight
        into it: numpy arrays viewing it are writable without a copy (an index segment of
        300 MB: copying its arrays out of immutable bytes cost ~0.7 s here, page faults mostly).
        """
        if flags != FLAG_ZSTD:
            return memoryview(bytearray(self.decode(flags, stored, aad=aad, where=where,
                                                    offset=offset, max_size=max_size)))
        return _decompress_into(stored, where, offset, max_size)


def _recorded_size(stored: bytes, where: str, offset: int, limit: int = MAX_DECOMPRESSED) -> int:
    """The content size a zstd frame records (-1 if none), refused over ``limit``:
    python-zstandard ignores ``max_output_size`` when the frame records its size (ours always
    do), so the recorded size is what bounds a damaged or hostile record."""
    size = zstandard.frame_content_size(stored)
    if size > limit:
        raise CorruptStore(f"record claims {size} decompressed bytes, over the limit of {limit}",
                           file=where, offset=offset)
    return int(size)


def _decompress_into(stored: bytes, where: str, offset: int,
                     limit: int = MAX_DECOMPRESSED) -> memoryview:
    """One zstd frame, decompressed into fresh memory of its recorded content size.

    ``numpy.empty``, not ``bytearray(size)``: the latter zeroes every page first, which cost a
    third of the decompression here; the decompressor writes every byte (checked below).
    """
    try:
        size = _recorded_size(stored, where, offset, limit)
        if size < 0:
            raise CorruptStore("compressed record without its content size", file=where, offset=offset)
        view = np.empty(size, dtype=np.uint8).data
        filled = 0
        with _decompressor().stream_reader(stored) as reader:
            while filled < size:
                n = reader.readinto(view[filled:])
                if n <= 0:
                    break
                filled += n
            if filled != size or reader.read(1):
                raise CorruptStore(f"compressed record holds other than its recorded {size} bytes",
                                   file=where, offset=offset)
    except zstandard.ZstdError as exc:
        raise CorruptStore(f"undecodable compressed record ({exc})", file=where, offset=offset) from exc
    return view


PLAIN = Codec()
