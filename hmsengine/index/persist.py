"""Persisted index segments: disposable, checksummed copies so a reopen need not re-tokenize.

Files, under the live generation's directory::

    index/MANIFEST             which segment files make up the persisted index (atomic replace)
    index/seg-NNNNNNNN.hsi     one immutable segment each (written once, atomically)

A segment file is the codec-encoded payload followed by a 28-byte footer (little-endian)::

    offset size  field
    0      4     magic          b"HMSI"
    4      2     format version
    6      1     codec flags    (storage/codec.py)
    7      1     kind           1 = segment
    8      8     stored length  bytes of payload before the footer
    16     4     payload crc32  over the stored payload
    20     4     reserved       zero
    24     4     footer crc32   over bytes 0..24, xor FOOTER_CRC_XOR

The decoded payload is ``u32 header length``, a JSON header (``n_docs`` and, for each array,
its dtype, shape and offset), then the arrays' raw bytes, each starting on an 8-byte boundary.
Version 2 (written since) keeps the ids and the vocabulary (in term-id order) as two of those
arrays, ``ids_utf8`` and ``vocab_utf8``: UTF-8 joined by newlines (ids hold no control
characters, the analyzers' terms no newline; a list with a newline in a value is written as
header JSON instead, ``ids`` or ``vocab``). Version 1 (read still) listed both in the header as
JSON, ``ids`` and ``vocab``.

Nothing here is a source of truth: the journal is. A damaged, missing or unreadable file is
rejected (never trusted) and its documents are re-indexed from the document table; a document
whose stored version changed since the segment was written is simply marked dead in it (the
engine compares each document's version key).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from ..errors import CorruptStore, HmsError
from ..storage.codec import Codec, derived_limit
from ..storage.directory import Directory
from .segment import Postings, Segment, numbered_in_order

MAGIC = b"HMSI"
FOOTER = struct.Struct("<4sHBBQIII")
FOOTER_SIZE = FOOTER.size  # 28
FOOTER_CRC_XOR = 0x1D3C5EA1
VERSION = 2  # written; files of version 1 (ids and vocabulary as header JSON) are read too
READABLE_VERSIONS = (1, 2)
INDEX_DIR = "index"
MANIFEST = "index/MANIFEST"

_ARRAYS = (
    ("docnums", lambda s: s.docnums), ("term_offsets", lambda s: s.terms.offsets),
    ("term_docs", lambda s: s.terms.doc_ids), ("term_tfs", lambda s: s.terms.values),
    ("doc_lens", lambda s: s.doc_lens), ("df", lambda s: s.df),
    ("fwd_offsets", lambda s: s.forward.offsets), ("fwd_terms", lambda s: s.forward.doc_ids),
    ("fwd_values", lambda s: s.forward.values), ("gram_offsets", lambda s: _grams(s, "offsets")),
    ("gram_docs", lambda s: _grams(s, "doc_ids")), ("gram_values", lambda s: _grams(s, "values")),
    ("has_embedding", lambda s: s.has_embedding), ("embeddings", lambda s: s.embeddings),
)


def _grams(segment: Segment, field: str) -> np.ndarray | None:
    built = segment.ngrams_if_built
    return None if built is None else getattr(built, field)


def _aad(name: str, version: int = VERSION) -> bytes:
    return b"index|" + name.encode() + b"|" + str(version).encode()


# A segment is persisted in a worker thread while the event loop answers queries. Every
# C-level call that copies or encodes a whole segment holds the GIL for its duration (numpy's
# copies of bytes included): with ndarray.tobytes, b"".join and one json.dumps, a 460k-document
# segment held it for up to ~117 ms at a time, stalling every search for as long. So the bytes
# are copied a few MB at a time and the ids and terms are joined a piece at a time: the GIL can
# change hands between two (zstd and crc32 release it themselves). Joined, not JSON: the JSON
# of a 50k-document segment's ids and vocabulary held it ~12-22 ms in all (the most frequent
# stall of searches right after a burst of writes, bench/results/right_after.notes.md), their
# join and encoding ~1-2 ms.
_TEXT_PIECE = 65_536
_COPY_PIECE = 1 << 22


def _lines(values: Sequence[str]) -> list[bytes] | None:
    """``"\n".join(values).encode()`` as parts to be written one after the other (a piece of
    ``_TEXT_PIECE`` values per C-level call), or None when a value holds a newline."""
    parts: list[bytes] = []
    for lo in range(0, len(values), _TEXT_PIECE):
        piece = values[lo:lo + _TEXT_PIECE]
        joined = "\n".join(piece).encode()
        if joined.count(b"\n") != len(piece) - 1:
            return None
        if parts:
            parts.append(b"\n")
        parts.append(joined)
    return parts


def _split_lines(blob: np.ndarray, count: int) -> list[str]:
    """The ``count`` values ``_lines`` joined into ``blob``; ValueError if it holds another
    number (or is not UTF-8)."""
    values = blob.tobytes().decode().split("\n") if count else []
    if len(values) != count or (not count and blob.size):
        raise ValueError(f"{len(values)} newline-separated values where {count} belong")
    return values


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _terms_by_id(vocab: dict[str, int]) -> list[str]:
    """``sorted(vocab, key=vocab.__getitem__)``: the keys as they are when the ids number them
    in insertion order (``segment.numbered_in_order``, as every build, merge and load makes
    them). The sort is one C-level call that holds the GIL: ~200 ms at a million terms."""
    return list(vocab) if numbered_in_order(vocab) else sorted(vocab, key=vocab.__getitem__)


def _segment_header(n_docs: int, arrays: dict[str, list[Any]], ids: Sequence[str] | None,
                    vocab: list[str] | None) -> bytes:
    # json.dumps of {"n_docs", "arrays"}, with "ids" or "vocab" when they could not be joined
    # (a newline in one: ids never hold one, check_id; the analyzers' terms neither).
    listed = {key: list(values) for key, values in (("ids", ids), ("vocab", vocab))
              if values is not None}
    return _dumps({"n_docs": n_docs, **listed, "arrays": arrays}).encode()


def _copy_into(out: np.ndarray, at: int, data: Any) -> None:
    """``out[at:at + len] = data``'s bytes, ``_COPY_PIECE`` bytes a copy (see above)."""
    source = data.reshape(-1).view(np.uint8) if isinstance(data, np.ndarray) \
        else np.frombuffer(data, dtype=np.uint8)
    for lo in range(0, source.size, _COPY_PIECE):
        hi = min(lo + _COPY_PIECE, source.size)
        out[at + lo:at + hi] = source[lo:hi]


def _joined(parts: list[bytes]) -> memoryview:
    """``b"".join(parts)``, copied a piece at a time (see above)."""
    out = np.empty(sum(len(p) for p in parts), dtype=np.uint8)
    at = 0
    for part in parts:
        _copy_into(out, at, part)
        at += len(part)
    return out.data


def encode_segment(segment: Segment, codec: Codec, name: str) -> memoryview:
    """The bytes of a segment file named ``name`` (relative to the generation), as a view over
    one buffer (the directories write any bytes-like object)."""
    arrays: dict[str, list[Any]] = {}
    placed: list[tuple[Any, int]] = []
    offset = 0
    for key, get in _ARRAYS:
        array = get(segment)
        if array is None:
            continue
        array = np.ascontiguousarray(array)
        arrays[key] = [array.dtype.str, list(array.shape), offset]
        placed.append((array, offset))
        offset += array.nbytes + (-array.nbytes) % 8
    # The ids as they are (a tuple: a list of them held the GIL ~4.5 ms at 460k documents).
    ids, vocab = segment.ids, _terms_by_id(segment.vocab)
    id_lines, vocab_lines = _lines(ids), _lines(vocab)
    for key, parts in (("ids_utf8", id_lines), ("vocab_utf8", vocab_lines)):
        if parts is None:
            continue
        size = sum(len(p) for p in parts)
        arrays[key] = ["|u1", [size], offset]
        at = offset
        for part in parts:
            placed.append((part, at))
            at += len(part)
        offset += size + (-size) % 8
    header = _segment_header(segment.n_docs, arrays, ids if id_lines is None else None,
                             vocab if vocab_lines is None else None)
    start = 4 + len(header) + (-len(header) - 4) % 8
    raw = np.zeros(start + offset, dtype=np.uint8)  # the pads are zero bytes
    _copy_into(raw, 0, struct.pack("<I", len(header)))
    _copy_into(raw, 4, header)
    for data, at in placed:
        _copy_into(raw, start + at, data)
    flags, stored = codec.encode(memoryview(raw), aad=_aad(name),  # type: ignore[arg-type]
                                 fast=True)  # disposable, rewritten at each merge
    prefix = struct.pack("<4sHBBQII", MAGIC, VERSION, flags, 1, len(stored),
                         zlib.crc32(stored) & 0xFFFFFFFF, 0)
    crc = (zlib.crc32(prefix) ^ FOOTER_CRC_XOR) & 0xFFFFFFFF
    return _joined([stored, prefix, struct.pack("<I", crc)])


def decode_payload(data: bytes, codec: Codec, name: str, where: str) -> memoryview:
    """The verified, decoded payload of a segment file named ``name`` (footer, checksum and,
    encrypted, authentication checked); any damage raises :class:`CorruptStore`."""
    if len(data) < FOOTER_SIZE:
        raise CorruptStore("index segment shorter than its footer", file=where)
    footer = data[-FOOTER_SIZE:]
    magic, version, flags, kind, length, crc, _reserved, fcrc = FOOTER.unpack(footer)
    if magic != MAGIC or (zlib.crc32(footer[:24]) ^ FOOTER_CRC_XOR) & 0xFFFFFFFF != fcrc:
        raise CorruptStore("index segment footer is damaged", file=where)
    if version not in READABLE_VERSIONS or kind != 1 or length != len(data) - FOOTER_SIZE:
        raise CorruptStore(f"index segment of version {version}, kind {kind}, bad length", file=where)
    stored = data[:length]
    if zlib.crc32(stored) & 0xFFFFFFFF != crc:
        raise CorruptStore("index segment fails its checksum", file=where)
    # Writable, so the arrays of decode_segment view it in place (numba's kernels take
    # writable arrays).
    return codec.decode_writable(flags, stored, aad=_aad(name, version), where=where, offset=0,
                                 max_size=derived_limit(len(stored)))


def decode_segment(data: bytes, codec: Codec, name: str, where: str) -> Segment:
    """Decode and verify a segment file; any damage raises :class:`CorruptStore`."""
    return parse_segment(decode_payload(data, codec, name, where), where)


def parse_segment(raw: memoryview, where: str) -> Segment:
    """The segment a decoded payload describes (its arrays view ``raw``); a malformed payload
    raises :class:`CorruptStore`."""
    try:
        (hlen,) = struct.unpack_from("<I", raw, 0)
        header = json.loads(bytes(raw[4:4 + hlen]))
        base = 4 + hlen + (-hlen - 4) % 8
        arrays: dict[str, np.ndarray] = {}
        for key, (dtype, shape, off) in header["arrays"].items():
            count = int(np.prod(shape)) if shape else 1
            # A view, no copy: the arrays of a segment cover nearly all of its payload.
            arrays[key] = np.frombuffer(raw, dtype=np.dtype(dtype), count=count,
                                        offset=base + off).reshape(shape)
        n = int(header["n_docs"])
        # Version 1 listed both as header JSON; version 2 joins them (and lists a vocabulary
        # it could not join): either way, what the header lists wins.
        ids = tuple(header["ids"] if "ids" in header else _split_lines(arrays["ids_utf8"], n))
        terms = header["vocab"] if "vocab" in header else _split_lines(
            arrays["vocab_utf8"], arrays["term_offsets"].shape[0] - 1)
        if len(ids) != n or arrays["docnums"].shape != (n,):
            raise ValueError("document count mismatch")
        return Segment(
            ids=ids, docnums=arrays["docnums"],
            vocab=dict(zip(terms, range(len(terms)), strict=True)),
            terms=Postings(offsets=arrays["term_offsets"], doc_ids=arrays["term_docs"],
                           values=arrays["term_tfs"]),
            doc_lens=arrays["doc_lens"], df=arrays["df"],
            forward=Postings(offsets=arrays["fwd_offsets"], doc_ids=arrays["fwd_terms"],
                             values=arrays["fwd_values"]),
            ngrams=Postings(offsets=arrays["gram_offsets"], doc_ids=arrays["gram_docs"],
                            values=arrays["gram_values"]) if "gram_offsets" in arrays else None,
            embeddings=arrays.get("embeddings"), has_embedding=arrays["has_embedding"],
        )
    except (KeyError, ValueError, TypeError, struct.error, AttributeError, IndexError,
            OverflowError, SyntaxError, RecursionError, UnicodeDecodeError) as exc:
        # numpy parses some dtype strings with ast (SyntaxError); a header of the wrong shape
        # fails with AttributeError or IndexError: all of them are a damaged payload.
        raise CorruptStore(f"index segment payload is malformed ({exc})", file=where) from exc


def write_manifest(directory: Directory, generation: str, files: list[str], *, analyzer: str,
                   dim: int) -> None:
    body = json.dumps({"format": "hmsengine-index", "version": VERSION, "analyzer": analyzer,
                       "dim": dim, "segments": files}, separators=(",", ":"))
    crc = zlib.crc32(body.encode()) & 0xFFFFFFFF
    directory.atomic_write(f"{generation}/{MANIFEST}", f"{body}\n{crc:08x}\n".encode())


def parse_manifest(data: bytes, where: str) -> dict[str, Any]:
    """The manifest's JSON object after its checksum; damage raises :class:`CorruptStore`."""
    try:
        body, crc = data.decode().split("\n")[:2]
        if int(crc, 16) != zlib.crc32(body.encode()) & 0xFFFFFFFF:
            raise CorruptStore("index manifest fails its checksum", file=where)
        manifest = json.loads(body)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("segments"), list):
            raise CorruptStore("index manifest lists no segments", file=where)
        return manifest
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptStore(f"index manifest is malformed ({exc})", file=where) from exc


def read_manifest(directory: Directory, generation: str, *, analyzer: str, dim: int) -> list[str]:
    """The listed segment files, or [] when there is no usable manifest (never an error)."""
    name = f"{generation}/{MANIFEST}"
    if not directory.exists(name):
        return []
    try:
        manifest = parse_manifest(directory.read_bytes(name), directory.describe(name))
        if manifest.get("version") != VERSION or manifest.get("analyzer") != analyzer \
                or manifest.get("dim") != dim:
            return []
        return [str(f) for f in manifest["segments"]]
    except (HmsError, ValueError, KeyError, TypeError, UnicodeDecodeError, OSError):
        return []


def load_segment(directory: Directory, generation: str, file: str, codec: Codec) -> Segment | None:
    """A persisted segment, or None if it is missing or damaged (the caller re-indexes)."""
    name = f"{generation}/{INDEX_DIR}/{file}"
    try:
        return decode_segment(directory.read_bytes(name), codec, file, directory.describe(name))
    except (HmsError, OSError):
        return None


@attrs.frozen(eq=False)
class PersistedIndex:
    """What ``read_persisted`` found in a generation's index directory."""

    generation: str
    loaded: list[tuple[Segment, str]]  # (segment, file) of each whole segment the manifest lists
    rejected: int  # listed files missing or damaged (their documents are re-indexed)
    last_number: int  # the highest file number listed (new files are numbered after it)


def read_persisted(directory: Directory, generation: str, codec: Codec, *, analyzer: str,
                   dim: int) -> PersistedIndex:
    """Read and decode the segments a generation's index manifest lists (for ``analyzer`` and
    ``dim``; none if the manifest is missing, damaged or for others). Blocking, mostly without
    the GIL (reading, decompressing): the engine's opener runs it in a thread beside recovery,
    which never writes the live generation's index files."""
    out = []
    rejected = last = 0
    for file in read_manifest(directory, generation, analyzer=analyzer, dim=dim):
        segment = load_segment(directory, generation, file, codec)
        if segment is None:
            rejected += 1
        else:
            out.append((segment, file))
        last = max(last, int(file[4:12]) if file[4:12].isdigit() else 0)
    return PersistedIndex(generation=generation, loaded=out, rejected=rejected, last_number=last)
