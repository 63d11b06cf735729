"""Index segment files as the builds before format version 2 wrote them (ids and vocabulary as
header JSON; docs/PERSISTED-FORMAT.md §12), for the tests that a build still reads them."""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np

from hmsengine.index import persist


def sealed_file(header: bytes, body: bytes, codec, name, *, version):  # type: ignore[no-untyped-def]
    """A segment file around ``header`` (the JSON) and ``body`` (the arrays, 8-byte aligned):
    the codec with the associated data of ``version``, then the footer."""
    raw = struct.pack("<I", len(header)) + header + bytes((-len(header) - 4) % 8) + body
    flags, stored = codec.encode(raw, aad=persist._aad(name, version), fast=True)  # zstd level 1
    prefix = struct.pack("<4sHBBQII", persist.MAGIC, version, flags, 1, len(stored),
                         zlib.crc32(stored) & 0xFFFFFFFF, 0)
    crc = (zlib.crc32(prefix) ^ persist.FOOTER_CRC_XOR) & 0xFFFFFFFF
    return stored + prefix + struct.pack("<I", crc)


def packed_arrays(named):  # type: ignore[no-untyped-def]
    """The header's ``arrays`` table and the body for ``(name, array or None)`` pairs, in order:
    each array's bytes padded to 8 (None is left out)."""
    blobs, arrays, offset = [], {}, 0
    for key, array in named:
        if array is None:
            continue
        data = np.ascontiguousarray(array).tobytes()
        arrays[key] = [array.dtype.str, list(array.shape), offset]
        blobs.append(data + bytes((-len(data)) % 8))
        offset += len(blobs[-1])
    return arrays, b"".join(blobs)


def version_1_file(segment, codec, name):  # type: ignore[no-untyped-def]
    """``segment`` as a version 1 file named ``name``."""
    arrays, body = packed_arrays((key, get(segment)) for key, get in persist._ARRAYS)
    vocab = sorted(segment.vocab, key=segment.vocab.__getitem__)
    header = json.dumps({"n_docs": segment.n_docs, "ids": list(segment.ids), "vocab": vocab,
                         "arrays": arrays}, ensure_ascii=False, separators=(",", ":")).encode()
    return sealed_file(header, body, codec, name, version=1)
