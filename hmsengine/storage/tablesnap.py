"""The table snapshot: the document table as of a clean close, so an open replays only the
journal written after it.

``gen-NNNNNNNN/table.snap`` is written (atomically) when a store closes cleanly, after its final
checkpoint: every live entry's id, text record location (offset, length, crc), version key and
revision, metadata JSON and embedding, plus the journal position it covers (``journal_end``, the
sequence there, and a sha256 of the journal's last 4 KiB before it). It is an optimisation, never
a source of truth: the journal stays complete, and an open ignores a snapshot that is missing,
damaged, of another version or of another store (then it replays the whole journal, as without
one). It is also a witness: the header names the store (``store_id``), and a whole snapshot of
this store whose journal is now shorter, or differs before ``journal_end``, proves the journal
was cut or changed after a clean close (engine/recovery.py refuses such a store). Encoded with
the store's codec (so encrypted with its key), bound to its file name. Layout (docs/PERSISTED-FORMAT.md §15)::

    magic "HMSTSNP1" | u8 flags | 3 zero bytes | u64 stored length | u32 crc32 of stored | stored

where ``stored`` is the codec's encoding of::

    u32 header length | header JSON | ids | metadata | int64 columns | embedding mask | embeddings
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import zstandard

from ..errors import CorruptStore, HmsError
from .codec import FLAG_ZSTD, Codec, derived_limit

FILE_NAME = "table.snap"
MAGIC = b"HMSTSNP1"
VERSION = 1
TAIL_BYTES = 4096
_PREFIX = struct.Struct("<8sB3xQI")
COLUMNS = 5  # offset, length, crc, revision, key


# Bytes of a blob scanned at a time by ``_newlines``: a piece and its temporaries stay in cache
# (one pass over a 120 MB blob took 2-3 times longer than these pieces together).
_SCAN_BYTES = 1 << 20


def _newlines(blob: bytes) -> np.ndarray:
    """The positions of every newline in ``blob``, which must be UTF-8 (``UnicodeDecodeError``
    otherwise: every row valid, checked once, so rows decode lazily). A piece at a time, each
    cut after a newline, so no character straddles two pieces."""
    data = np.frombuffer(blob, dtype=np.uint8)
    found = []
    start = 0
    while start < len(blob):
        stop = blob.rfind(b"\n", start, start + _SCAN_BYTES) + 1 \
            if start + _SCAN_BYTES < len(blob) else len(blob)
        if stop <= start:  # no newline in a whole piece: a long row, scanned to the next one
            at = blob.find(b"\n", start + _SCAN_BYTES)
            stop = at + 1 if at >= 0 else len(blob)
        blob[start:stop].decode("utf-8")
        found.append(np.flatnonzero(data[start:stop] == 0x0A) + start)
        start = stop
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


class PackedText:
    """A column of strings or None packed in one UTF-8 blob, as the snapshot stores metadata
    (rows joined by newlines, None as an empty row): the table keeps a snapshot's metadata so,
    one byte per ASCII character and 8 per row, where a ``str`` per row costs ~50 bytes more
    (a fact's ~117-character stamp: 176 bytes as a str, 126 packed). A row is decoded when it
    is read (``DocEntry`` built at a first lookup, ``metadata_items`` at a scan), or handed out
    still packed (``span``: the memory index groups equal rows before decoding any).

    The blob holds no raw newline inside a row: compact JSON escapes control characters."""

    __slots__ = ("_blob", "_bounds")

    def __init__(self, blob: bytes = b"", count: int = 0) -> None:
        """``count`` rows of ``blob`` (joined by newlines); ``ValueError`` if the blob holds
        another number of rows or is not UTF-8."""
        if count == 0:
            if blob:
                raise ValueError("metadata bytes for no rows")
            bounds = np.zeros(1, dtype=np.int64)
        else:
            newlines = _newlines(blob)
            if len(newlines) != count - 1:
                raise ValueError(f"{count} metadata rows expected, {len(newlines) + 1} found")
            bounds = np.empty(count + 1, dtype=np.int64)
            bounds[0] = 0
            bounds[1:count] = newlines + 1
            bounds[count] = len(blob) + 1
        self._blob = blob
        # Row i is blob[bounds[i]:bounds[i + 1] - 1] (each row is followed by a separator).
        self._bounds = bounds

    @classmethod
    def of(cls, rows: list[str | None]) -> PackedText:
        return cls("\n".join(r if r is not None else "" for r in rows).encode("utf-8"), len(rows))

    def __len__(self) -> int:
        return len(self._bounds) - 1

    def __getitem__(self, row: int) -> str | None:
        if not 0 <= row < len(self._bounds) - 1:
            raise IndexError(row)
        start, end = int(self._bounds[row]), int(self._bounds[row + 1]) - 1
        return self._blob[start:end].decode("utf-8") if end > start else None

    def __iter__(self) -> Iterator[str | None]:
        blob = self._blob
        bounds = self._bounds.tolist()
        for start, stop in itertools.pairwise(bounds):
            yield blob[start:stop - 1].decode("utf-8") if stop - 1 > start else None

    def span(self, start: int, stop: int) -> tuple[memoryview, np.ndarray]:
        """Rows ``start`` to ``stop`` (exclusive) as a blob and bounds of their own, in this
        column's form (row i is ``blob[bounds[i]:bounds[i + 1] - 1]``): a view of this
        column's bytes, nothing copied or decoded."""
        if not 0 <= start <= stop <= len(self._bounds) - 1:
            raise IndexError((start, stop))
        first = int(self._bounds[start])
        bounds = self._bounds[start:stop + 1] - first
        end = first + max(int(bounds[-1]) - 1, 0)
        return memoryview(self._blob)[first:end], bounds

    def rows_starting_with(self, prefix: str) -> list[int]:
        """The rows whose text starts with ``prefix`` (no row decoded; one ``find`` per match,
        since a row starts the blob or follows a newline, and no row holds one)."""
        blob, head = self._blob, prefix.encode("utf-8")
        if not head or "\n" in prefix:
            raise ValueError("a prefix is a non-empty line")
        starts = [0] if blob.startswith(head) else []
        at = blob.find(b"\n" + head)
        while at >= 0:
            starts.append(at + 1)
            at = blob.find(b"\n" + head, at + 1)
        if not starts:
            return []
        return np.searchsorted(self._bounds, np.asarray(starts), side="left").tolist()  # type: ignore[no-any-return]

    @property
    def nbytes(self) -> int:
        """The memory the column holds (blob and row bounds)."""
        return len(self._blob) + self._bounds.nbytes


@attrs.frozen(kw_only=True)
class TableSnapshot:
    """A decoded snapshot: the columns of every entry and the state it was taken at."""

    journal_end: int
    sequence: int
    tail_sha256: str
    store_id: str | None  # None: written by a build before the field existed
    text_synced: int
    zeroed_through: int
    embedding_dim: int | None
    ids: list[str]
    metadata: PackedText
    columns: np.ndarray  # (n, 5) int64
    embeddings: list[np.ndarray | None]


def journal_tail_digest(journal: bytes, end: int) -> str:
    return hashlib.sha256(journal[max(0, end - TAIL_BYTES):end]).hexdigest()


def encode(codec: Codec, label: bytes, *, journal_end: int, journal_tail: bytes, sequence: int,
           text_synced: int, store_id: str,
           zeroed_through: int, embedding_dim: int | None, ids: list[str],
           metadata: list[str | None], columns: np.ndarray,
           embeddings: list[np.ndarray | None]) -> bytes:
    """The snapshot file's bytes; ``journal_tail`` is the journal's last ``TAIL_BYTES`` (or fewer)
    bytes before ``journal_end``, the point the table reflects."""
    # Ids never hold control characters (engine/values.py check_id) and compact metadata JSON
    # escapes them, so a newline separates both; None metadata is an empty line.
    ids_blob = "\n".join(ids).encode("utf-8")
    meta_blob = "\n".join(m if m is not None else "" for m in metadata).encode("utf-8")
    mask = np.asarray([e is not None for e in embeddings], dtype=np.uint8)
    rows = [e for e in embeddings if e is not None]
    matrix = (np.stack(rows).astype("<f4") if rows else np.zeros((0, 0), dtype="<f4"))
    header = {
        "version": VERSION, "count": len(ids), "journal_end": journal_end, "sequence": sequence,
        "store_id": store_id,
        "tail_sha256": hashlib.sha256(journal_tail).hexdigest(), "text_synced": text_synced,
        "zeroed_through": zeroed_through, "embedding_dim": embedding_dim,
        "ids_bytes": len(ids_blob), "metadata_bytes": len(meta_blob),
        "embedding_rows": int(matrix.shape[0]), "embedding_width": int(matrix.shape[1]) if rows else 0,
    }
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw = b"".join([struct.pack("<I", len(head)), head, ids_blob, meta_blob,
                    np.ascontiguousarray(columns, dtype="<i8").tobytes(), mask.tobytes(),
                    matrix.tobytes()])
    flags, stored = codec.encode(raw, aad=label, fast=True)  # derived: rewritten often
    return _PREFIX.pack(MAGIC, flags, len(stored), zlib.crc32(stored) & 0xFFFFFFFF) + stored


def decode(codec: Codec, label: bytes, data: bytes, where: str) -> TableSnapshot | None:
    """The snapshot in ``data``, or None if it is damaged or of another version (never raises
    for damage: the caller then replays the whole journal)."""
    try:
        return _decode(codec, label, data, where)
    except (HmsError, ValueError, KeyError, TypeError, IndexError, struct.error, UnicodeDecodeError):
        return None


def decode_body(codec: Codec, label: bytes, data: bytes, where: str) -> bytes:
    """The decoded body of a snapshot file (checksum verified, decrypted, decompressed); damage
    raises :class:`CorruptStore` saying what is wrong (``hms check`` reports it)."""
    flags, stored = _stored(data, where)
    return codec.decode(flags, stored, aad=label, where=where, offset=0,
                        max_size=derived_limit(len(stored)))


# What ``_body_reader`` hands out: both read and fill a buffer the same way.
_Reader = io.BytesIO | zstandard.ZstdDecompressionReader


def _stored(data: bytes, where: str) -> tuple[int, bytes]:
    """(flags, stored bytes) of a snapshot file whose prefix and checksum are right."""
    if len(data) < _PREFIX.size:
        raise CorruptStore("table snapshot shorter than its header", file=where)
    magic, flags, length, crc = _PREFIX.unpack_from(data, 0)
    stored = data[_PREFIX.size:]
    if magic != MAGIC:
        raise CorruptStore("table snapshot has a bad magic", file=where)
    if len(stored) != length or zlib.crc32(stored) & 0xFFFFFFFF != crc:
        raise CorruptStore("table snapshot fails its checksum", file=where)
    return flags, stored


def _body_reader(codec: Codec, label: bytes, data: bytes, where: str) -> _Reader:
    """The decoded body as a stream, read part by part into each part's own buffer. For the
    plain codec the zstd frame is decompressed as it is read (without the GIL), never whole:
    decoding a million rows' snapshot whole and then copying its metadata and columns out cost
    ~0.3-0.6 s of CPU at open (two 100+ MB copies and their page faults) and its size again at
    the peak; other codecs (encrypted) decode it whole first."""
    flags, stored = _stored(data, where)
    if codec.encrypted or flags != FLAG_ZSTD:
        return io.BytesIO(decode_body(codec, label, data, where))
    size = zstandard.frame_content_size(stored)
    if not 0 <= size <= derived_limit(len(stored)):
        raise CorruptStore(f"table snapshot records {size} decompressed bytes, not a size within "
                           "its bounds", file=where)
    return zstandard.ZstdDecompressor().stream_reader(stored)


def _read_exactly(reader: _Reader, size: int) -> bytes:
    """``size`` bytes of the body (ValueError where it ends first)."""
    out = reader.read(size) if size else b""
    if out is None or len(out) != size:
        raise ValueError("table snapshot body ends early")
    return out


def _decode(codec: Codec, label: bytes, data: bytes, where: str) -> TableSnapshot | None:
    try:
        with _body_reader(codec, label, data, where) as reader:
            return _read_parts(reader)
    except zstandard.ZstdError as exc:
        raise CorruptStore(f"undecodable table snapshot ({exc})", file=where) from exc


def _read_parts(reader: _Reader) -> TableSnapshot | None:
    """The snapshot the body holds (module docstring), each part read into its own buffer;
    None for another version or parts of the wrong sizes."""
    (head_len,) = struct.unpack("<I", _read_exactly(reader, 4))
    header: dict[str, Any] = json.loads(_read_exactly(reader, head_len))
    if header.get("version") != VERSION:
        return None
    n = int(header["count"])
    ids_blob = _read_exactly(reader, int(header["ids_bytes"]))
    meta_blob = _read_exactly(reader, int(header["metadata_bytes"]))
    ids = ids_blob.decode("utf-8").split("\n") if n else []
    del ids_blob
    metas = PackedText(meta_blob, n)
    # Straight into an aligned, writable int64 array (the table keeps it as is).
    columns = np.empty((n, COLUMNS), dtype="<i8")
    if reader.readinto(columns.data.cast("B")) != columns.nbytes:
        raise ValueError("table snapshot body ends early")
    mask = np.frombuffer(_read_exactly(reader, n), dtype=np.uint8)
    rows, width = int(header["embedding_rows"]), int(header["embedding_width"])
    matrix = np.frombuffer(_read_exactly(reader, rows * width * 4), dtype="<f4").reshape(rows, width)
    if len(ids) != n or len(metas) != n or int(mask.sum()) != rows or reader.read(1):
        return None
    embeddings: list[np.ndarray | None] = [None] * n
    for row, at in enumerate(np.flatnonzero(mask).tolist()):
        embeddings[at] = matrix[row].astype(np.float32)
    return TableSnapshot(
        journal_end=int(header["journal_end"]), sequence=int(header["sequence"]),
        tail_sha256=str(header["tail_sha256"]), text_synced=int(header["text_synced"]),
        store_id=header["store_id"] if isinstance(header.get("store_id"), str) else None,
        zeroed_through=int(header["zeroed_through"]),
        embedding_dim=None if header["embedding_dim"] is None else int(header["embedding_dim"]),
        ids=ids, metadata=metas, columns=columns.astype(np.int64, copy=False),
        embeddings=embeddings)


__all__ = ["FILE_NAME", "PackedText", "TableSnapshot", "decode", "decode_body", "encode",
           "journal_tail_digest"]
