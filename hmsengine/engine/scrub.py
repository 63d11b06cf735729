"""The scrub behind ``Engine.check`` and ``hms check``: read every byte of a store, verify every
checksum and authentication tag, and hand every decoded piece of content to a searcher.

Synchronous (no trio): engine/check.py runs it in worker threads, on a live store or a closed
one. What is verified, file by file (docs/PERSISTED-FORMAT.md has the layouts):

* ``format.json`` (its fields), ``CURRENT`` (its crc, the generation it names), ``LOCK`` (empty);
* the live generation's ``journal.log``: every frame from offset 0, also the prefix a table
  snapshot lets ``open`` skip: header crc, payload crc, authentication tag, the payload's JSON,
  the sequence; the zeros of a preallocated tail are accepted, a torn or damaged last frame is a
  finding (open would truncate it);
* ``documents.text``: every byte belongs to a whole record (magic, crc, tag, decoded length) or
  to zeros (a deleted record), and each record the journal's live documents point at is there;
* ``table.snap``: crc, tag, layout, and that it describes a prefix of the journal;
* ``index/MANIFEST`` and every segment it lists: crcs, tag, layout.

Every decoded piece (journal payloads, texts, table snapshot bodies, index segment payloads),
every file's raw bytes and every zstd frame found in bytes no structure explains (damaged
regions, temporary, stray and unknown files) goes to :meth:`Scrub.content`. Other generations
(left by an interrupted compaction) are scrubbed for content only: open erases them.

Findings name the file (relative to the store root), the offset, what is wrong and whether the
file is *rebuildable* from the journal (the text segment, the table snapshot, the index files)
or not (the journal, ``format.json``, ``CURRENT``).

Live stores: the journal is read up to a committed length and the text segment up to its size
at the start; a record that fails and then reads differently (zeroed meanwhile: the one write
in place) is not damage, nor is a missing live record whose document changed since
(``still_live``).
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Callable, Iterable

import attrs
import zstandard

from ..errors import CorruptStore, HmsError
from ..index import persist
from ..storage import generations, manifest, tablesnap
from ..storage.codec import Codec
from ..storage.directory import Directory, FsDirectory
from ..storage.journal import (
    HEADER,
    HEADER_CRC_XOR,
    HEADER_SIZE,
    KIND_BASE,
    KIND_CHECKPOINT,
    KIND_TRANSACTION,
    MAGIC,
    MAX_FRAME_PAYLOAD,
    frame_aad,
)
from ..storage.manifest import FORMAT_VERSION
from ..storage.segments import RECORD_HEADER, RECORD_HEADER_SIZE, TEXT_MAGIC, decode_record
from .state import KEY_STRIDE
from .txn import decode_checkpoint, decode_transaction

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
WINDOW = 8 << 20  # documents.text is read in windows of this size
_WHERE = re.compile(r" \[file [^\]]*\]$")

Sink = Callable[[str, int, bytes], None]  # (file, offset, decoded bytes)
Ref = tuple[int, int, int, int]  # a live document's text record: offset, length, crc, revision


@attrs.frozen(kw_only=True)
class CheckFinding:
    """One problem ``check`` found: where (``file`` relative to the store, ``offset`` or None for
    the whole file), ``what`` is wrong, and whether the file can be rebuilt from the journal.
    ``absent`` is the string found, for a hit of an ``absent`` search (None for damage)."""

    file: str
    offset: int | None
    what: str
    rebuildable: bool
    absent: str | None = None


@attrs.frozen(kw_only=True)
class CheckReport:
    """What ``check`` verified and found. ``ok``: no finding (nothing damaged, no ``absent``
    string found). Counts: files read, journal frames, text records and index segments verified,
    bytes read. ``notes``: what was seen but is not damage (stray generations, unknown files)."""

    ok: bool
    findings: tuple[CheckFinding, ...]
    generation: str | None
    files: int
    frames: int
    records: int
    segments: int
    bytes: int
    absent: tuple[str, ...]
    notes: tuple[str, ...]


def _reason(exc: HmsError) -> str:
    return _WHERE.sub("", exc.message)


def zstd_frames(data: bytes | memoryview) -> Iterable[tuple[int, bytes]]:
    """(offset, content) of every zstd frame that decodes, found by its magic ``28 B5 2F FD``."""
    view = memoryview(data)
    raw = bytes(view) if not isinstance(data, bytes) else data
    pos = raw.find(ZSTD_MAGIC)
    while pos >= 0:
        try:
            yield pos, zstandard.ZstdDecompressor().decompressobj().decompress(view[pos:])
        except zstandard.ZstdError:
            pass
        pos = raw.find(ZSTD_MAGIC, pos + 1)


class Needles:
    """Strings that must be absent, each searched ASCII case-insensitively as UTF-8 and as JSON
    writes it (``\\u`` escapes, escaped quotes); remembers the first hit per string and file."""

    def __init__(self, strings: Iterable[str]) -> None:
        self.forms: list[tuple[str, tuple[bytes, ...]]] = []
        for text in strings:
            variants = {text.encode("utf-8"), json.dumps(text)[1:-1].encode("ascii"),
                        json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8")}
            self.forms.append((text, tuple(sorted(v.lower() for v in variants))))
        self.hits: dict[tuple[str, str], int] = {}

    def search(self, file: str, offset: int, data: bytes | memoryview) -> None:
        if not self.forms:
            return
        low = bytes(data).lower()
        for text, variants in self.forms:
            if (text, file) not in self.hits and any(v in low for v in variants):
                self.hits[(text, file)] = offset


class Reader:
    """Reads a store's files and never writes: read-only descriptors on disk."""

    def __init__(self, directory: Directory) -> None:
        self.directory = directory
        self._disk = isinstance(directory, FsDirectory)

    def read(self, name: str, offset: int = 0, length: int | None = None) -> bytes:
        if self._disk:
            with open(self.directory.describe(name), "rb") as f:
                f.seek(offset)
                return f.read() if length is None else f.read(length)
        data = self.directory.read_bytes(name)
        return data[offset:] if length is None else data[offset:offset + length]

    def size(self, name: str) -> int:
        if self._disk:
            return os.path.getsize(self.directory.describe(name))
        return len(self.directory.read_bytes(name))


class Scrub:
    """One pass over a store's files; ``report`` sums it up. Not thread-safe: one thread at a
    time (the live driver calls it from successive worker threads)."""

    def __init__(self, directory: Directory, codec: Codec | None, *, absent: Iterable[str] = (),
                 sink: Sink | None = None,
                 still_live: Callable[[str, Ref], bool] | None = None) -> None:
        self.reader = Reader(directory)
        self.directory = directory
        self.codec = codec
        self.needles = Needles(absent)
        self.sink = sink
        self.still_live = still_live or (lambda doc_id, ref: True)
        self.findings: list[CheckFinding] = []
        self.notes: list[str] = []
        self.quiet = False  # other generations: their content is searched, damage not reported
        self.files = self.frames = self.records = self.segments = self.bytes = 0

    # -- bookkeeping ---------------------------------------------------------------------------

    def found(self, file: str, offset: int | None, what: str, *, rebuildable: bool) -> None:
        if not self.quiet:
            self.findings.append(CheckFinding(file=file, offset=offset, what=what,
                                              rebuildable=rebuildable))

    def content(self, file: str, offset: int, data: bytes | memoryview) -> None:
        """A piece of decoded content: to the sink and the absent strings."""
        if self.sink is not None:
            self.sink(file, offset, bytes(data))
        self.needles.search(file, offset, data)

    def unexplained(self, file: str, offset: int, data: bytes | memoryview) -> None:
        """Bytes no structure decodes: searched as they are and in every zstd frame inside."""
        self.content(file, offset, data)
        if self.sink is not None or self.needles.forms:
            for at, inner in zstd_frames(data):
                self.content(file, offset + at, inner)

    def whole(self, name: str) -> bytes:
        """A whole file, counted and searched raw."""
        data = self.reader.read(name)
        self.files += 1
        self.bytes += len(data)
        self.content(name, 0, data)
        return data

    def report(self, generation: str | None) -> CheckReport:
        findings = list(self.findings)
        for (text, file), offset in sorted(self.needles.hits.items()):
            findings.append(CheckFinding(file=file, offset=offset, rebuildable=False, absent=text,
                                         what=f"found {text!r} in the decoded content"))
        return CheckReport(ok=not findings, findings=tuple(findings), generation=generation,
                           files=self.files, frames=self.frames, records=self.records,
                           segments=self.segments, bytes=self.bytes,
                           absent=tuple(t for t, _ in self.needles.forms), notes=tuple(self.notes))

    # -- the root ------------------------------------------------------------------------------

    def root(self) -> str | None:
        """``format.json``, ``CURRENT``, ``LOCK`` and anything else at the root that is not a
        generation; returns the live generation (None when ``CURRENT`` is damaged)."""
        generation = None
        for name in self.directory.listdir(""):
            if self.directory.isdir(name):
                if generations.generation_number(name) is None:
                    self.other(name)
                continue
            data = self.whole(name)
            if name == manifest.FORMAT_FILE:
                try:
                    manifest.StoreFormat.from_json(data, where=name)
                except CorruptStore as exc:
                    self.found(name, None, _reason(exc), rebuildable=False)
            elif name == manifest.CURRENT_FILE:
                try:
                    generation = generations.read_current(self.directory)
                except CorruptStore as exc:
                    self.found(name, None, _reason(exc), rebuildable=False)
            elif name == "LOCK":
                if data:
                    self.found(name, 0, "LOCK is not empty (this build never writes to it)",
                               rebuildable=True)
            elif name not in (manifest.FORMAT_FILE + ".tmp", manifest.CURRENT_FILE + ".tmp"):
                self.notes.append(f"{name}: not a file of the store (searched, not verified)")
                self.unexplained(name, 0, data)
        if generation is None and not self.directory.exists(manifest.CURRENT_FILE):
            self.found(manifest.CURRENT_FILE, None, "CURRENT is missing", rebuildable=False)
        return generation

    def other(self, name: str) -> None:
        """A file or directory that is not the store's: every file in it searched, nothing
        verified."""
        if self.directory.isdir(name):
            for entry in self.directory.listdir(name):
                self.other(f"{name}/{entry}")
            return
        self.notes.append(f"{name}: not a file of the store (searched, not verified)")
        data = self.reader.read(name)
        self.files += 1
        self.bytes += len(data)
        self.unexplained(name, 0, data)

    def strays(self, live: str | None) -> None:
        """Generations other than the live one: left by an interrupted compaction, erased by
        the next open; their content is searched (with their own labels), damage not reported."""
        for name in self.directory.listdir(""):
            if generations.generation_number(name) is None or name == live:
                continue
            self.notes.append(f"{name}: a generation an interrupted compaction left; the next "
                              "open erases it (searched, not verified)")
            self.quiet = True
            try:
                self.generation(name)
            except (HmsError, OSError):
                pass  # half-written or half-erased: what could be read was searched
            finally:
                self.quiet = False

    # -- one generation ------------------------------------------------------------------------

    def generation(self, name: str, *, journal_end: int | None = None,
                   text_end: int | None = None, index: bool = True) -> None:
        """Every file of generation ``name`` (the index too unless the caller reads it)."""
        known = {manifest.JOURNAL_FILE, manifest.TEXT_FILE, tablesnap.FILE_NAME, persist.INDEX_DIR}
        journal = b""
        if self.directory.exists(f"{name}/{manifest.JOURNAL_FILE}"):
            journal, refs = self.journal(f"{name}/{manifest.JOURNAL_FILE}", journal_end)
            if self.directory.exists(f"{name}/{manifest.TEXT_FILE}"):
                self.text(f"{name}/{manifest.TEXT_FILE}", text_end, refs)
            else:
                self.found(f"{name}/{manifest.TEXT_FILE}", None, "documents.text is missing",
                           rebuildable=True)
        else:
            self.found(f"{name}/{manifest.JOURNAL_FILE}", None, "journal.log is missing",
                       rebuildable=False)
        if self.directory.exists(f"{name}/{tablesnap.FILE_NAME}"):
            self.table_snapshot(f"{name}/{tablesnap.FILE_NAME}", journal)
        if index and self.directory.isdir(f"{name}/{persist.INDEX_DIR}"):
            listed = self.index_manifest(name)
            for file in listed:
                path = f"{name}/{persist.INDEX_DIR}/{file}"
                if self.directory.exists(path):
                    self.segment(path, file, self.reader.read(path))
                else:
                    self.found(path, None, "an index segment the manifest lists is missing",
                               rebuildable=True)
            self.index_leftovers(name, listed)
        for entry in self.directory.listdir(name):
            if entry.endswith(".tmp"):
                self.other_quietly(f"{name}/{entry}")
            elif entry not in known:
                self.other(f"{name}/{entry}")

    def other_quietly(self, name: str) -> None:
        """A temporary file of an atomic write (harmless, replaced by the next one): searched."""
        data = self.reader.read(name)
        self.files += 1
        self.bytes += len(data)
        self.unexplained(name, 0, data)

    # -- journal.log ---------------------------------------------------------------------------

    def journal(self, name: str, end: int | None) -> tuple[bytes, dict[str, Ref]]:
        """Every frame of the journal (up to ``end``); the live documents' text records."""
        data = self.reader.read(name, 0, end)
        self.files += 1
        self.bytes += len(data)
        self.content(name, 0, data)  # raw too (the payloads, decoded, follow frame by frame)
        refs: dict[str, Ref] = {}
        label = name.encode()
        pos = 0
        sequence: int | None = 0
        while pos < len(data):
            problem = _frame_problem(data, pos)
            if problem is not None:
                pos = self._journal_damage(name, data, pos, problem)
                sequence = None  # resynchronised: the next frame's sequence is taken as it is
                continue
            _m, version, kind, flags, seq, length, _crc, _r, _h = HEADER.unpack_from(data, pos)
            end_ = pos + HEADER_SIZE + length
            if kind == KIND_BASE:
                sequence = seq  # base frames all carry the revision the journal starts from
            expected = seq if sequence is None else \
                sequence + 1 if kind == KIND_TRANSACTION else sequence
            if seq != expected:
                self.found(name, pos, f"journal sequence gap: expected revision {expected}, "
                           f"found {seq}", rebuildable=False)
            sequence = seq
            try:
                payload = self._codec().decode(flags, data[pos + HEADER_SIZE:end_],
                                               aad=frame_aad(label, pos, version), where=name,
                                               offset=pos)
                self.frames += 1
                self.content(name, pos, payload)
                self._apply(refs, kind, seq, payload, name, pos)
            except CorruptStore as exc:
                self.found(name, pos, _reason(exc), rebuildable=False)
            pos = end_
        return data, refs

    def _codec(self) -> Codec:
        if self.codec is None:
            raise CorruptStore("format.json is damaged, so no record can be decoded")
        return self.codec

    def _journal_damage(self, name: str, data: bytes, pos: int, problem: str) -> int:
        """Report the bad bytes at ``pos``; return where the next valid frame starts (or the
        end). Zeros to the end are a preallocated tail, not damage."""
        rest = memoryview(data)[pos:]
        if not bytes(rest).strip(b"\0"):
            return len(data)
        later = data.find(MAGIC, pos + 1)
        while later >= 0 and _frame_problem(data, later) is not None:
            later = data.find(MAGIC, later + 1)
        if later < 0:
            self.found(name, pos, f"the journal ends in a torn or damaged frame ({problem}): an "
                       "unacknowledged write, or damage to its newest frame; open truncates it",
                       rebuildable=False)
            self.unexplained(name, pos, rest)
            return len(data)
        self.found(name, pos, f"journal frame damaged ({problem}); a valid frame follows at "
                   f"offset {later}", rebuildable=False)
        self.unexplained(name, pos, rest[:later - pos])
        return later

    @staticmethod
    def _apply(refs: dict[str, Ref], kind: int, sequence: int, payload: bytes, name: str,
               pos: int) -> None:
        """Follow the live documents' text records through one frame."""
        if kind == KIND_CHECKPOINT:
            for doc_id, revision, offset, length, crc in decode_checkpoint(
                    payload, where=name, offset=pos).moved:
                ref = refs.get(doc_id)
                if ref is not None and ref[3] == revision:
                    refs[doc_id] = (offset, length, crc, revision)
            return
        ops, _dim = decode_transaction(payload, where=name, offset=pos)
        for op in ops:
            if isinstance(op, tuple):
                op_id, _, _, _, offset, length, crc, key = op
                revision = key // KEY_STRIDE if key is not None else sequence
                refs[op_id] = (offset, length, crc, revision)
            else:
                refs.pop(op.id, None)

    # -- documents.text ------------------------------------------------------------------------

    def text(self, name: str, end: int | None, refs: dict[str, Ref]) -> None:
        """Every byte of the text segment (up to ``end``): records or zeros; then each live
        document's record."""
        size = self.reader.size(name) if end is None else end
        self.files += 1
        self.bytes += size
        window = _Window(self.reader, name, size)
        good: dict[int, tuple[int, int]] = {}
        bad: set[int] = set()
        pos = 0
        while pos < size:
            head = window.get(pos, RECORD_HEADER_SIZE)
            if head[:4] == TEXT_MAGIC and len(head) == RECORD_HEADER_SIZE:
                pos = self._record(name, window, pos, head, good, bad)
            elif head[:1] == b"\0":
                pos = window.skip_zeros(pos)
            else:
                nxt = window.find_magic(pos + 1)
                region = window.get(pos, nxt - pos)
                if self.reader.read(name, pos, len(region)) == region:  # not being zeroed
                    self.found(name, pos, f"{nxt - pos} bytes that are neither a text record nor "
                               "zeros", rebuildable=True)
                    bad.add(pos)
                self.unexplained(name, pos, region)
                pos = nxt
        for doc_id, (offset, length, crc, revision) in refs.items():
            if good.get(offset) == (length, crc) or offset in bad:
                continue
            if self.still_live(doc_id, (offset, length, crc, revision)):
                self.found(name, offset, f"the text record of document {doc_id!r} is missing "
                           "or damaged (the journal holds its text)", rebuildable=True)

    def _record(self, name: str, window: _Window, pos: int, head: bytes,
                good: dict[int, tuple[int, int]], bad: set[int]) -> int:
        """Verify the record at ``pos``; return where the next one may start."""
        _magic, _flags, stored, _raw, crc = RECORD_HEADER.unpack(head)
        total = RECORD_HEADER_SIZE + int(stored)
        if pos + total > window.size:
            region = window.get(pos, window.size - pos)
            self.found(name, pos, "a torn record at the end of the text segment (an "
                       "unacknowledged write, or one recovery rewrites from the journal)",
                       rebuildable=True)
            bad.add(pos)
            self.unexplained(name, pos, region)
            return window.size
        record = window.get(pos, total)
        try:
            raw = decode_record(self._codec(), record, offset=pos, where=name,
                                file_label=name.encode(), version=FORMAT_VERSION)
        except CorruptStore as exc:
            if self.reader.read(name, pos, total) == record:  # not zeroed meanwhile
                self.found(name, pos, _reason(exc), rebuildable=True)
                bad.add(pos)
            self.unexplained(name, pos, record)
            after = pos + total
            follows = window.get(after, 4)
            # Trust the length only when something plausible follows it.
            return after if not follows or follows == TEXT_MAGIC or follows[:1] == b"\0" \
                else window.find_magic(pos + 1)
        self.records += 1
        good[pos] = (total, crc)
        self.content(name, pos, raw)
        return pos + total

    # -- table.snap ----------------------------------------------------------------------------

    def table_snapshot(self, name: str, journal: bytes) -> None:
        data = self.whole(name)
        where = name
        try:
            body = tablesnap.decode_body(self._codec(), name.encode(), data, where)
        except CorruptStore as exc:
            self.found(name, None, f"{_reason(exc)} (ignored at open; a clean close writes a "
                       "new one)", rebuildable=True)
            self.unexplained(name, 0, data)
            return
        self.content(name, 0, body)
        snap = tablesnap.decode(self._codec(), name.encode(), data, where)
        if snap is None:
            self.found(name, None, "table snapshot layout is damaged (ignored at open)",
                       rebuildable=True)
        elif snap.journal_end > len(journal) or \
                tablesnap.journal_tail_digest(journal, snap.journal_end) != snap.tail_sha256:
            self.found(name, None, "table snapshot does not describe a prefix of the journal "
                       "(ignored at open)", rebuildable=True)

    # -- index/ --------------------------------------------------------------------------------

    def index_manifest(self, generation: str) -> list[str]:
        """The segment files the index manifest lists ([] when there is none or it is bad)."""
        name = f"{generation}/{persist.MANIFEST}"
        if not self.directory.exists(name):
            return []
        data = self.whole(name)
        try:
            listed = persist.parse_manifest(data, name)["segments"]
        except CorruptStore as exc:
            self.found(name, None, f"{_reason(exc)} (the index is rebuilt from the journal)",
                       rebuildable=True)
            return []
        return [str(f) for f in listed]

    def segment(self, path: str, file: str, data: bytes) -> None:
        """One index segment file's bytes (read by the caller)."""
        self.files += 1
        self.bytes += len(data)
        self.content(path, 0, data)
        try:
            payload = persist.decode_payload(data, self._codec(), file, path)
            persist.parse_segment(payload, path)
        except CorruptStore as exc:
            self.found(path, None, f"{_reason(exc)} (the index is rebuilt from the journal)",
                       rebuildable=True)
            self.unexplained(path, 0, data)
            return
        self.segments += 1
        self.content(path, 0, payload)

    def index_leftovers(self, generation: str, listed: list[str]) -> None:
        """Files in ``index/`` the manifest does not list (the next persist deletes them)."""
        folder = f"{generation}/{persist.INDEX_DIR}"
        for entry in self.directory.listdir(folder):
            if entry != "MANIFEST" and entry not in listed:
                self.other_quietly(f"{folder}/{entry}")


def _frame_problem(data: bytes, pos: int) -> str | None:
    """Why no valid frame starts at ``pos`` (None when one does)."""
    if pos + HEADER_SIZE > len(data):
        return "a header cut short"
    if data[pos:pos + 4] != MAGIC:
        return "no frame magic"
    _m, version, kind, _flags, _seq, length, crc, _r, hcrc = HEADER.unpack_from(data, pos)
    if (zlib.crc32(data[pos:pos + 28]) ^ HEADER_CRC_XOR) & 0xFFFFFFFF != hcrc:
        return "header checksum fails"
    if kind not in (KIND_TRANSACTION, KIND_CHECKPOINT, KIND_BASE):
        return f"unknown frame kind {kind}"
    if not 1 <= version <= FORMAT_VERSION:
        return f"frame of format version {version}"
    if length > MAX_FRAME_PAYLOAD or pos + HEADER_SIZE + length > len(data):
        return "payload runs past the end"
    if zlib.crc32(data[pos + HEADER_SIZE:pos + HEADER_SIZE + length]) & 0xFFFFFFFF != crc:
        return "payload checksum fails"
    return None


class _Window:
    """Positional reads of a large file through one buffered window."""

    def __init__(self, reader: Reader, name: str, size: int) -> None:
        self.reader, self.name, self.size = reader, name, size
        self._start, self._data = 0, b""

    def get(self, offset: int, length: int) -> bytes:
        length = max(0, min(length, self.size - offset))
        if not (self._start <= offset and offset + length <= self._start + len(self._data)):
            self._start = offset
            self._data = self.reader.read(self.name, offset, min(max(length, WINDOW),
                                                                 self.size - offset))
        at = offset - self._start
        return self._data[at:at + length]

    def skip_zeros(self, pos: int) -> int:
        while pos < self.size:
            chunk = self.get(pos, WINDOW)
            rest = chunk.lstrip(b"\0")
            pos += len(chunk) - len(rest)
            if rest:
                return pos
        return self.size

    def find_magic(self, pos: int) -> int:
        """The next record magic at or after ``pos``, else the end."""
        while pos < self.size:
            chunk = self.get(pos, WINDOW)
            at = chunk.find(TEXT_MAGIC)
            if at >= 0:
                return pos + at
            if len(chunk) < WINDOW:
                return self.size
            pos += len(chunk) - len(TEXT_MAGIC) + 1
        return self.size
