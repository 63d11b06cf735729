"""Record codecs: how a payload becomes the bytes stored in a file, and back.

Every journal frame payload and every text record goes through a :class:`Codec`. The plain codec
compresses with zstd (level 3: ~3.8x on text at ~146 MB/s here, see PERF-NOTES.md). The
encrypted codec (issue 4) compresses and then seals with an AEAD, binding each ciphertext to its
file, position and format version through the associated data; the ``flags`` byte stored beside
each record says which transformations were applied, so a reader never guesses.

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
# A decompressed record is never larger than this (a transaction carries at most 64 MiB of text,
# JSON-escaped); the bound protects readers from a damaged or hostile size field.
MAX_DECOMPRESSED = 1024 * 1024 * 1024

_local = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    c = getattr(_local, "compressor", None)
    if c is None:
        # write_content_size lets the decompressor size its buffer exactly.
        c = _local.compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_content_size=True)
    return c


def _decompressor() -> zstandard.ZstdDecompressor:
    d = getattr(_local, "decompressor", None)
    if d is None:
        d = _local.decompressor = zstandard.ZstdDecompressor()
    return d


class Codec:
    """The plain codec: zstd compression, no encryption."""

    encrypted = False

    def encode(self, data: bytes, *, aad: bytes) -> tuple[int, bytes]:
        """Return ``(flags, stored bytes)`` for ``data``; ``aad`` binds a ciphertext to its place."""
        del aad  # only the encrypted codec binds the position
        return FLAG_ZSTD, _compressor().compress(data)

    def decode(self, flags: int, stored: bytes, *, aad: bytes, where: str, offset: int) -> bytes:
        """Invert :meth:`encode`; damage raises :class:`CorruptStore` naming ``where`` and ``offset``."""
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
            _recorded_size(stored, where, offset)
            return _decompressor().decompress(stored, max_output_size=MAX_DECOMPRESSED)
        except zstandard.ZstdError as exc:
            raise CorruptStore(f"undecodable compressed record ({exc})", file=where, offset=offset) from exc

    def decode_writable(self, flags: int, stored: bytes, *, aad: bytes, where: str,
                        offset: int) -> memoryview:
        """:meth:`decode` into a writable ``memoryview`` of fresh memory, decompressed straight
        into it: numpy arrays viewing it are writable without a copy (an index segment of
        300 MB: copying its arrays out of immutable bytes cost ~0.7 s here, page faults mostly).
        """
        if flags != FLAG_ZSTD:
            return memoryview(bytearray(self.decode(flags, stored, aad=aad, where=where,
                                                    offset=offset)))
        return _decompress_into(stored, where, offset)


def _recorded_size(stored: bytes, where: str, offset: int) -> int:
    """The content size a zstd frame records (-1 if none), refused over ``MAX_DECOMPRESSED``:
    python-zstandard ignores ``max_output_size`` when the frame records its size (ours always
    do), so the recorded size is what bounds a damaged or hostile record."""
    size = zstandard.frame_content_size(stored)
    if size > MAX_DECOMPRESSED:
        raise CorruptStore(f"record claims {size} decompressed bytes", file=where, offset=offset)
    return int(size)


def _decompress_into(stored: bytes, where: str, offset: int) -> memoryview:
    """One zstd frame, decompressed into fresh memory of its recorded content size.

    ``numpy.empty``, not ``bytearray(size)``: the latter zeroes every page first, which cost a
    third of the decompression here; the decompressor writes every byte (checked below).
    """
    try:
        size = _recorded_size(stored, where, offset)
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
