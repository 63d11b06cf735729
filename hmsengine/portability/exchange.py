"""JSONL export and import, and the one import path that restores share.

``export_jsonl`` writes a header line and then one record per fact, plain document and tombstone
of the store (portability/records.py), as canonical JSON, in commit order: the order in which
search breaks score ties, so a store restored from it ranks ties as the original did. Two exports
of equal stores are byte-identical, ``.jsonl.gz`` included (gzip with mtime 0 and no file name). The file
is written beside its final name, fsynced and renamed, so a crash leaves the old file or the
whole new one. An export is plaintext even from an encrypted store: protect it accordingly.

``import_jsonl`` reads and validates every line before it writes anything (an error names the
file and the line), then writes everything in one transaction. It reads a regular file only (a
FIFO or a device is refused at once), at most ``max_bytes`` of it (1 GiB by default, counted
after gzip decompression, so a small compressed file cannot expand without bound), one line of
at most 8 MiB at a time. A fact's file reference is checked like a new one's name
(memory/files.locate: a ``file://`` URI or a path, no other scheme); whether its file may be read
is decided by the memory that hydrates it (its file base), never by the import.

* a fact or document whose id the store holds with the same content is skipped (a repeated
  import adds nothing), a fact also when only its vector differs (the store keeps its own: a
  vector is its embedder's, and ``reembed`` replaces them); with different content it is
  ``Conflict`` and nothing is written;
* an id the store holds a tombstone for is refused (listed in the report): purged content never
  comes back;
* a tombstone in the file is applied: a live document with that id is replaced by it and the
  store compacted with purge, so forgetting travels with the data.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import zlib
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any

import attrs
import trio

from ..engine import DocumentEngine, PutOp
from ..errors import Conflict, HmsError, IncompatibleStore, InvalidRequest
from ..localfiles import NotRegular, open_regular
from ..memory.restamp import ensure_marked
from .records import Incoming, canonical, incoming, record_of, tombstone_record

EXPORT_FORMAT = "hmsengine-jsonl"
SCHEMA_VERSION = 1
READ_CHUNK = 2000  # documents read between checkpoints, so a large export never stalls the loop
MAX_LINE_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_IMPORT_BYTES = 1024 * 1024 * 1024
Progress = Callable[[int, int], Any]  # (done, total)


@attrs.frozen(kw_only=True)
class ImportReport:
    """What an import or restore did: ``added`` facts and documents written, ``skipped`` ones
    already stored with the same content, ``refused`` ids the store holds tombstones for,
    ``tombstones`` written from the source and ``purged`` live documents they replaced."""

    added: int
    skipped: int
    refused: tuple[str, ...]
    tombstones: int
    purged: int
    source: str


# -- reading the store --------------------------------------------------------------------------


async def collect(engine: DocumentEngine, *, progress: Progress | None = None) -> list[dict[str, Any]]:
    """Every record of the store at one revision, in commit order (see below).

    Reads in chunks with checkpoints between them; if a write lands meanwhile, it reads again
    (twice at most), and the last attempt reads without yielding, so the result is always the
    state of one committed revision.
    """
    for attempt in range(3):
        revision = engine.revision
        records = await _read_all(engine, yielding=attempt < 2, progress=progress)
        if engine.revision == revision:
            return records
    raise AssertionError("unreachable: the last attempt does not yield")


async def _read_all(engine: DocumentEngine, *, yielding: bool,
                    progress: Progress | None) -> list[dict[str, Any]]:
    tombstones = engine.tombstones()
    items = engine.scan_metadata(commit_order=True)
    records: list[dict[str, Any]] = []
    for n, (doc_id, _) in enumerate(items):
        if yielding and n and n % READ_CHUNK == 0:
            if progress is not None:
                progress(n, len(items))
            await trio.lowlevel.checkpoint()
        purged_at = tombstones.get(doc_id)
        if purged_at is not None:
            records.append(tombstone_record(doc_id, purged_at))
            continue
        doc = await engine.get_document(doc_id)
        if doc is not None:
            records.append(record_of(doc.id, doc.text, doc.metadata, doc.embedding))
    if progress is not None:
        progress(len(items), len(items))
    return records


def header(records: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {"facts": 0, "documents": 0, "tombstones": 0}
    for r in records:
        counts[{"fact": "facts", "document": "documents", "tombstone": "tombstones"}[r["type"]]] += 1
    return {"type": "header", "format": EXPORT_FORMAT, "schemaVersion": SCHEMA_VERSION, "counts": counts}


def encode(records: list[dict[str, Any]]) -> bytes:
    """The JSONL bytes of ``records`` (in commit order), header first."""
    lines = [canonical(header(records))]
    lines.extend(canonical(r) for r in records)
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a synced temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _gzip(data: bytes) -> bytes:
    # mtime 0 and no file name in the header: equal stores give byte-identical .jsonl.gz files.
    return gzip.compress(data, compresslevel=6, mtime=0)


def _check_path(path: object, *, for_writing: bool) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidRequest(f"path: expected a file path, got {type(path).__name__}")
    p = Path(path)
    if for_writing:
        if not p.name.endswith((".jsonl", ".jsonl.gz")):
            raise InvalidRequest(f"path: {str(p)!r} must end in .jsonl or .jsonl.gz")
        if not p.parent.is_dir():
            raise InvalidRequest(f"path: the directory {str(p.parent)!r} does not exist")
        if p.is_dir():
            raise InvalidRequest(f"path: {str(p)!r} is a directory")
    return p


async def export_jsonl(engine: DocumentEngine, path: object, *,
                       progress: Progress | None = None) -> dict[str, Any]:
    """Write every record of the store to ``path`` (.jsonl or .jsonl.gz); the header's counts."""
    target = _check_path(path, for_writing=True)
    records = await collect(engine, progress=progress)
    data = encode(records)
    if target.name.endswith(".gz"):
        data = await trio.to_thread.run_sync(_gzip, data)
    with _os_errors(target):
        await trio.to_thread.run_sync(write_atomically, target, data)
    counts: dict[str, Any] = header(records)["counts"]
    return counts


class _os_errors:
    """OSError while reading or writing a portability file -> InvalidRequest naming it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, OSError) and not isinstance(exc, HmsError):
            raise InvalidRequest(f"{self.path}: {exc.strerror or exc}") from exc


# -- reading a file ---------------------------------------------------------------------------------


def read_lines(path: Path, max_bytes: int = DEFAULT_MAX_IMPORT_BYTES
               ) -> Generator[tuple[int, bytes], None, None]:
    """(line number, bytes) of a .jsonl or gzip-compressed regular file, blank lines skipped;
    at most ``max_bytes`` (decompressed) and ``MAX_LINE_BYTES`` per line are ever read."""
    try:
        fd, st = open_regular(path)
    except FileNotFoundError:
        raise InvalidRequest(f"path: no file at {str(path)!r}") from None
    except NotRegular as exc:
        raise InvalidRequest(f"path: {str(path)!r} is {exc.kind}, not a regular file") from None
    too_large = InvalidRequest(f"{path}: more than {max_bytes} bytes to import",
                               hint="pass a larger max_bytes if the file is trusted")
    with os.fdopen(fd, "rb") as raw:
        if st.st_size > max_bytes:
            raise too_large
        gzipped = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        try:
            with (gzip.GzipFile(fileobj=raw, mode="rb") if gzipped else raw) as f:
                n = total = 0
                while line := f.readline(MAX_LINE_BYTES + 1):
                    n += 1
                    if len(line) > MAX_LINE_BYTES:
                        raise InvalidRequest(f"{path}:{n}: the line is over {MAX_LINE_BYTES} bytes")
                    total += len(line)
                    if total > max_bytes:
                        raise too_large
                    if line.strip():
                        yield n, line
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise InvalidRequest(f"{path}: not a readable gzip file ({exc})") from None


def parse_records(lines: Iterable[tuple[int, bytes]], where: str, *,
                  expected_format: str = EXPORT_FORMAT) -> list[Incoming]:
    """Validate every line (a header first, optionally); ``InvalidRequest`` naming the place."""
    items: list[Incoming] = []
    seen: dict[str, int] = {}
    first = True
    for n, line in lines:
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise InvalidRequest(f"{where}:{n}: not valid JSON ({reason})") from None
        if first:
            first = False
            if isinstance(value, dict) and value.get("type") == "header":
                check_header(value, f"{where}:{n}", expected_format)
                continue
        try:
            item = incoming(value)
        except InvalidRequest as exc:
            raise InvalidRequest(f"{where}:{n}: {exc.message}", hint=exc.hint) from None
        if item.id in seen:
            raise InvalidRequest(f"{where}:{n}: id {item.id!r} already appeared on line {seen[item.id]}")
        seen[item.id] = n
        items.append(item)
    return items


def check_header(value: dict[str, Any], where: str, expected_format: str) -> None:
    if value.get("format") != expected_format:
        raise InvalidRequest(f"{where}: the format is {value.get('format')!r}, not {expected_format!r}")
    version = value.get("schemaVersion")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidRequest(f"{where}: schemaVersion: expected a positive integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise IncompatibleStore(f"{where}: schema version {version} is newer than this build reads "
                                f"({SCHEMA_VERSION})")


async def import_jsonl(engine: DocumentEngine, path: object, *, progress: Progress | None = None,
                       max_bytes: int = DEFAULT_MAX_IMPORT_BYTES) -> ImportReport:
    """Validate all of ``path``, then write it in one transaction (see the module docstring)."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise InvalidRequest(f"max_bytes: expected a positive integer, got {max_bytes!r}")
    source = _check_path(path, for_writing=False)
    with _os_errors(source):
        items = await trio.to_thread.run_sync(_parse_file, source, max_bytes)
    return await apply(engine, items, source=str(source), progress=progress)


def _parse_file(source: Path, max_bytes: int) -> list[Incoming]:
    # Closed here, not when garbage collected: a line that fails validation leaves read_lines
    # suspended inside its ``with``, and the raised error's traceback keeps it (and the open
    # file) alive for as long as the caller holds the error.
    with contextlib.closing(read_lines(source, max_bytes)) as lines:
        return parse_records(lines, str(source))


# -- writing ---------------------------------------------------------------------------------------


async def apply(engine: DocumentEngine, items: list[Incoming], *, source: str,
                progress: Progress | None = None) -> ImportReport:
    """Plan against the store, refuse conflicts, then write everything in one transaction."""
    from .records import stored_content, stored_identity

    tombstones = engine.tombstones()
    puts: list[PutOp] = []
    new_tombstones: list[tuple[str, int]] = []
    refused: list[str] = []
    conflicts: list[str] = []
    skipped = purged = 0
    for n, item in enumerate(items):
        if n and n % READ_CHUNK == 0:
            if progress is not None:
                progress(n, len(items))
            await trio.lowlevel.checkpoint()
        if item.kind == "tombstone":
            if item.id in tombstones:
                skipped += 1
            else:
                purged += await engine.has_document(item.id)
                new_tombstones.append((item.id, item.purged_at or engine.now()))
            continue
        if item.id in tombstones:
            refused.append(item.id)
            continue
        doc = await engine.get_document(item.id)
        if doc is None:
            assert item.put is not None
            puts.append(item.put)
        elif stored_identity(doc.metadata, doc.text, doc.embedding) == (item.kind, item.identity) \
                or (item.content is not None
                    and stored_content(doc.metadata, doc.text) == item.content):
            skipped += 1  # the same, or the same fact with another vector (the store's kept)
        else:
            conflicts.append(item.id)
    if conflicts:
        shown = ", ".join(repr(i) for i in conflicts[:5]) + (" ..." if len(conflicts) > 5 else "")
        raise Conflict(f"{source}: {len(conflicts)} id(s) already hold different content in this "
                       f"store: {shown}; nothing was written",
                       hint="forget those facts first, or import into another store")
    if any(item.retained for item in items if item.put is not None):
        await ensure_marked(engine)  # before the first stamp with a retention end (retention.py)
    if puts or new_tombstones:
        await engine.transact(puts=puts, tombstones=new_tombstones)  # type: ignore[arg-type]
    if purged:
        await engine.compact(purge=True)
    if progress is not None:
        progress(len(items), len(items))
    return ImportReport(added=len(puts), skipped=skipped, refused=tuple(refused),
                        tombstones=len(new_tombstones), purged=purged, source=source)


__all__ = ["DEFAULT_MAX_IMPORT_BYTES", "ImportReport", "apply", "collect", "encode",
           "export_jsonl", "import_jsonl", "parse_records", "read_lines", "write_atomically"]
