"""Decoding a table snapshot part by part (each part read into its own buffer, the plain
codec's zstd frame decompressed as it is read): the same snapshot as encoded, for the plain
and the encrypted codec; a body with bytes missing, to spare or a frame claiming too much is
refused, never half-read."""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest
import zstandard

from hmsengine.errors import CorruptStore
from hmsengine.storage import tablesnap
from hmsengine.storage.codec import Codec
from hmsengine.storage.keys import SealedCodec

LABEL = b"gen-00000001/table.snap"
CODECS = {"plain": Codec(), "sealed": SealedCodec(os.urandom(32))}


def snapshot_parts(n: int = 3000) -> dict:
    embeddings = [np.array([i, 0.5, -1.0], dtype=np.float32) if i % 3 == 0 else None
                  for i in range(n)]
    return dict(journal_end=4096, journal_tail=b"t" * 100, sequence=77, text_synced=1234,
                store_id="s" * 32, zeroed_through=99, embedding_dim=3,
                ids=[f"id-{i}-é" for i in range(n)],
                metadata=[None if i % 5 == 0 else f'{{"n":{i},"w":"ü{i}"}}' for i in range(n)],
                columns=np.arange(n * 5, dtype=np.int64).reshape(n, 5), embeddings=embeddings)


@pytest.mark.parametrize("name", list(CODECS))
def test_snapshot_decodes_to_what_was_encoded(name: str) -> None:
    """Every part comes back equal, with either codec; the columns are writable int64."""
    codec, parts = CODECS[name], snapshot_parts()
    snap = tablesnap.decode(codec, LABEL, tablesnap.encode(codec, LABEL, **parts), "x")
    assert snap is not None
    assert (snap.journal_end, snap.sequence, snap.text_synced, snap.zeroed_through,
            snap.store_id, snap.embedding_dim) == (4096, 77, 1234, 99, "s" * 32, 3)
    assert snap.ids == parts["ids"] and list(snap.metadata) == parts["metadata"]
    assert snap.columns.dtype == np.int64 and snap.columns.flags.writeable
    assert np.array_equal(snap.columns, parts["columns"])
    assert [None if e is None else e.tolist() for e in snap.embeddings] == \
        [None if e is None else e.tolist() for e in parts["embeddings"]]


def reframed(codec: Codec, data: bytes, change) -> bytes:
    """``data``'s snapshot with its decoded body changed by ``change``, encoded again whole
    (a valid frame and checksum: only the body's sizes are wrong)."""
    body = tablesnap.decode_body(codec, LABEL, data, "x")
    flags, stored = codec.encode(change(body), aad=LABEL)
    return tablesnap._PREFIX.pack(tablesnap.MAGIC, flags, len(stored),
                                  zlib.crc32(stored) & 0xFFFFFFFF) + stored


@pytest.mark.parametrize("name", list(CODECS))
@pytest.mark.parametrize("change", [lambda b: b + b"\0", lambda b: b[:-1], lambda b: b[:len(b) // 2],
                                    lambda b: b[:3]], ids=["extra", "short", "half", "no-header"])
def test_body_of_the_wrong_size_is_refused(name: str, change) -> None:
    """A body one byte longer or shorter than its parts, or cut anywhere, decodes to None (the
    open then replays the whole journal)."""
    codec = CODECS[name]
    data = tablesnap.encode(codec, LABEL, **snapshot_parts(500))
    assert tablesnap.decode(codec, LABEL, data, "x") is not None
    assert tablesnap.decode(codec, LABEL, reframed(codec, data, change), "x") is None


def test_frame_claiming_more_than_the_bound_is_refused_before_reading() -> None:
    """A plain frame that records a decompressed size over the derived bound is refused as
    damage (CorruptStore from the body reader; None from decode), nothing allocated for it."""
    huge = zstandard.ZstdCompressor().compress(bytes(64 << 20))  # a tiny frame of 64 MiB
    data = tablesnap._PREFIX.pack(tablesnap.MAGIC, 1, len(huge), zlib.crc32(huge) & 0xFFFFFFFF) + huge
    with pytest.raises(CorruptStore):
        tablesnap._body_reader(Codec(), LABEL, data, "x")
    assert tablesnap.decode(Codec(), LABEL, data, "x") is None
