"""The bucket layout of a replicated store: object names and the bytes of each object.

Under a store's prefix (``s3://bucket/prefix/``; a tenant of ``hms serve`` under
``prefix/<tenant>/``)::

    format.json                          the store's format.json, byte for byte (written once)
    lease.json                           who may write the store now (lease.py)
    gen-NNNNNNNN/seg-<start>-<end>.hjs   frames [start, end) of that generation's journal.log
    gen-NNNNNNNN/format-<offset>-<ms>.json  the store's format.json as it was from journal
                                         offset ``offset`` of that generation on, changed at
                                         ``ms`` (its settings, such as the embedder's identity,
                                         change without a journal frame)
    gen-NNNNNNNN/index/<file>-<sha256>   a persisted index segment file, byte for byte
    gen-NNNNNNNN/index.json              which of those files make up the generation's
                                         persisted index, and the journal offset it reflects
    gen-NNNNNNNN/generation.json         written once the generation's base is shipped: from
                                         then on a restore may start from this generation

Offsets are 20 decimal digits, so names sort in journal order. Every segment object is
immutable (written with ``If-None-Match: *``) and self-checking: a 48-byte header, the body, and
the sha256 of both. The body is the journal's bytes exactly as on disk (frames with their own
crcs; an encrypted store's payloads stay sealed), compressed as one zstd frame for a plain store.
The index objects are derived (a restore without them re-indexes); they spare a restored
store's first open the tokenizing of every document. docs/PERSISTED-FORMAT.md §16 has the byte
layouts.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from typing import Any

import attrs
import zstandard

from ..errors import CorruptStore, IncompatibleStore

FORMAT_OBJECT = "format.json"
LEASE_OBJECT = "lease.json"
MARKER_NAME = "generation.json"
SEGMENT_MAGIC = b"HMRS"
SEGMENT_VERSION = 1
SEGMENT_HEADER = struct.Struct("<4sHBBQQQQQ")  # magic version flags reserved start end first last body
FLAG_ZSTD = 0x01
DIGEST_BYTES = 32
MARKER_FORMAT = "hmsengine-replica-generation"
INDEX_FORMAT = "hmsengine-replica-index"
INDEX_LISTING = "index.json"
_SEGMENT_RE = re.compile(r"^(gen-\d{8})/seg-(\d{20})-(\d{20})\.hjs$")
_MARKER_RE = re.compile(r"^(gen-\d{8})/generation\.json$")
_FORMAT_RE = re.compile(r"^(gen-\d{8})/format-(\d{20})-(\d{20})\.json$")
_OTHER_RE = re.compile(r"^(gen-\d{8})/(index\.json|index/[^/]+)$")
# A persisted index file's name (index/persist.py) and its object's: the name is bound into the
# file's authentication (an encrypted store), so a restore writes it under the same name.
INDEX_FILE_RE = re.compile(r"^seg-\d{8}\.hsi$")
_INDEX_OBJECT_RE = re.compile(r"^index/(seg-\d{8})-([0-9a-f]{64})\.hsi$")


def segment_name(generation: str, start: int, end: int) -> str:
    return f"{generation}/seg-{start:020d}-{end:020d}.hjs"


def marker_name(generation: str) -> str:
    return f"{generation}/{MARKER_NAME}"


def format_name(generation: str, offset: int, changed_ms: int) -> str:
    return f"{generation}/format-{offset:020d}-{changed_ms:020d}.json"


def index_object_name(file: str, sha256: str) -> str:
    """The key, relative to the generation, of the index file ``file`` with that sha256."""
    return f"index/{file[:-4]}-{sha256}.hsi"


@attrs.frozen(kw_only=True)
class FormatRef:
    """A ``format-<offset>-<ms>.json`` object found by listing."""

    key: str
    generation: str
    offset: int  # in effect from this journal offset of the generation on
    changed_ms: int  # when it changed (the engine's clock; 0: in effect since before the generation)


@attrs.frozen(kw_only=True)
class OtherRef:
    """Any other object of a generation (the index files and their listing)."""

    key: str
    generation: str


@attrs.frozen(kw_only=True)
class SegmentRef:
    """A segment object found by listing: its key, generation and journal range."""

    key: str
    generation: str
    start: int
    end: int
    size: int


def parse_key(key: str, size: int) -> SegmentRef | FormatRef | OtherRef | str | None:
    """A listed key: a ``SegmentRef``, a ``FormatRef``, an ``OtherRef`` (an index object),
    the generation name of a marker, or None (not a generation's object)."""
    m = _SEGMENT_RE.match(key)
    if m:
        return SegmentRef(key=key, generation=m.group(1), start=int(m.group(2)),
                          end=int(m.group(3)), size=size)
    m = _FORMAT_RE.match(key)
    if m:
        return FormatRef(key=key, generation=m.group(1), offset=int(m.group(2)),
                         changed_ms=int(m.group(3)))
    m = _OTHER_RE.match(key)
    if m:
        return OtherRef(key=key, generation=m.group(1))
    m = _MARKER_RE.match(key)
    return m.group(1) if m else None


@attrs.frozen(kw_only=True)
class Segment:
    """A decoded, verified segment object."""

    start: int
    end: int
    first_sequence: int
    last_sequence: int
    body: bytes  # the journal's bytes [start, end)


def encode_segment(body: bytes, *, start: int, first_sequence: int, last_sequence: int,
                   compress: bool) -> bytes:
    """The object for journal bytes ``body`` starting at ``start``."""
    stored = zstandard.ZstdCompressor(level=3).compress(body) if compress else body
    header = SEGMENT_HEADER.pack(SEGMENT_MAGIC, SEGMENT_VERSION, FLAG_ZSTD if compress else 0, 0,
                                 start, start + len(body), first_sequence, last_sequence, len(stored))
    digest = hashlib.sha256(header)
    digest.update(stored)
    return header + stored + digest.digest()


def decode_segment(data: bytes, *, where: str, ref: SegmentRef | None = None) -> Segment:
    """Verify and unpack a segment object; any damage is ``CorruptStore`` naming ``where``."""
    size = SEGMENT_HEADER.size
    if len(data) < size + DIGEST_BYTES or data[:4] != SEGMENT_MAGIC:
        raise CorruptStore("replica segment is truncated or not a segment", file=where)
    if hashlib.sha256(data[:-DIGEST_BYTES]).digest() != data[-DIGEST_BYTES:]:
        raise CorruptStore("replica segment fails its sha256", file=where)
    _magic, version, flags, _r, start, end, first, last, stored_len = SEGMENT_HEADER.unpack_from(data)
    if version > SEGMENT_VERSION:
        raise IncompatibleStore(f"replica segment of version {version} at {where}")
    if stored_len != len(data) - size - DIGEST_BYTES or flags & ~FLAG_ZSTD:
        raise CorruptStore("replica segment header is inconsistent", file=where)
    stored = data[size : size + stored_len]
    try:
        body = (zstandard.ZstdDecompressor().decompress(stored, max_output_size=end - start)
                if flags & FLAG_ZSTD else stored)
    except zstandard.ZstdError as exc:
        raise CorruptStore(f"replica segment does not decompress ({exc})", file=where) from exc
    if len(body) != end - start or (ref is not None and (ref.start, ref.end) != (start, end)):
        raise CorruptStore("replica segment's range does not match its name", file=where)
    return Segment(start=start, end=end, first_sequence=first, last_sequence=last, body=bytes(body))


def canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def with_digest(body: dict[str, Any]) -> bytes:
    """A JSON object plus ``digest``: the sha256 of its canonical form without it."""
    sealed = dict(body, digest=hashlib.sha256(canonical(body)).hexdigest())
    return json.dumps(sealed, sort_keys=True, indent=1).encode() + b"\n"


def read_digested(data: bytes, *, where: str, expected_format: str) -> dict[str, Any]:
    """Parse and verify a :func:`with_digest` object; damage is ``CorruptStore``."""
    try:
        body = json.loads(data)
        digest = body.pop("digest")
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CorruptStore(f"replica object is not valid JSON with a digest ({exc})", file=where) from exc
    if hashlib.sha256(canonical(body)).hexdigest() != digest:
        raise CorruptStore("replica object fails its sha256", file=where)
    if body.get("format") != expected_format:
        raise CorruptStore(f"replica object is not a {expected_format}", file=where)
    if not isinstance(body.get("version"), int) or body["version"] > 1:
        raise IncompatibleStore(f"replica object of a newer version at {where}")
    return dict(body)


@attrs.frozen(kw_only=True)
class GenerationMarker:
    """``gen-N/generation.json``: the generation's base is in the bucket."""

    generation: str
    store_id: str
    base_end: int
    created_ms: int  # wall clock of the node that shipped it, when it began to
    node: str
    format_sha256: str  # of the bucket's format.json, so a restore can check it

    def to_bytes(self) -> bytes:
        return with_digest({"format": MARKER_FORMAT, "version": 1, **attrs.asdict(self)})

    @classmethod
    def from_bytes(cls, data: bytes, *, where: str) -> GenerationMarker:
        body = read_digested(data, where=where, expected_format=MARKER_FORMAT)
        try:
            return cls(generation=str(body["generation"]), store_id=str(body["store_id"]),
                       base_end=int(body["base_end"]), created_ms=int(body["created_ms"]),
                       node=str(body["node"]), format_sha256=str(body["format_sha256"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptStore(f"replica generation marker has a bad field ({exc})", file=where) from exc


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@attrs.frozen(kw_only=True)
class IndexFile:
    """One persisted index file in a generation's ``index.json``."""

    name: str  # the file's name in the store (index/persist.py): seg-NNNNNNNN.hsi
    sha256: str
    size: int

    @property
    def key(self) -> str:
        return index_object_name(self.name, self.sha256)


@attrs.frozen(kw_only=True)
class IndexListing:
    """``gen-N/index.json``: the files of the generation's persisted index (as its
    ``index/MANIFEST`` lists them), written once all of them are in the bucket. ``journal_end``:
    the generation's journal was durable up to this offset when they were written, so every
    document they hold is in the journal before it (a restore that replays less, as known at an
    earlier time, leaves them out: they could hold later documents)."""

    generation: str
    store_id: str
    journal_end: int
    analyzer: str
    dim: int
    files: tuple[IndexFile, ...]

    def to_bytes(self) -> bytes:
        body = attrs.asdict(self)
        body["files"] = [attrs.asdict(f) for f in self.files]
        return with_digest({"format": INDEX_FORMAT, "version": 1, **body})

    @classmethod
    def from_bytes(cls, data: bytes, *, where: str) -> IndexListing:
        body = read_digested(data, where=where, expected_format=INDEX_FORMAT)
        try:
            files = tuple(IndexFile(name=str(f["name"]), sha256=str(f["sha256"]), size=int(f["size"]))
                          for f in body["files"])
            listing = cls(generation=str(body["generation"]), store_id=str(body["store_id"]),
                          journal_end=int(body["journal_end"]), analyzer=str(body["analyzer"]),
                          dim=int(body["dim"]), files=files)
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptStore(f"replica index listing has a bad field ({exc})", file=where) from exc
        for f in files:  # the names become file names in the restored store: nothing else
            if not INDEX_FILE_RE.match(f.name) or not _INDEX_OBJECT_RE.match(f.key):
                raise CorruptStore(f"replica index listing names a bad file {f.name!r}", file=where)
        return listing
