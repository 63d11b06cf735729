"""Snapshots: a directory that can be checked completely before anything is restored from it.

Layout of ``hmsengine-snapshot-v2``::

    manifest.json          written last (its presence means the snapshot is whole)
    facts.jsonl            the records of an export (portability/exchange.py), header first
    attachments/<sha256>   opt-in: the bytes of file-backed ranges under 8 KiB, named by sha256

``manifest.json`` holds ``format``, ``schemaVersion``, ``snapshotId`` (sha256 of the sorted
sha256s of the record lines: the same content gives the same id), ``createdAt``, ``counts``,
``files`` (path, size and sha256 of every other file), ``digest`` (sha256 over the lines
``<path> <sha256>`` of ``files``, sorted) and ``manifestDigest`` (sha256 of the canonical JSON
of the manifest without that key), so a change to any file, the manifest included, is found.

``restore`` reads only regular files inside the snapshot directory (no symbolic link, FIFO or
device: hmsengine/localfiles.py), each no larger than the manifest says, all of them together no
larger than ``max_bytes`` (1 GiB by default), checked before anything is read. It verifies
every checksum, then parses and validates every record, and only then writes, in one
transaction, with the import rules of exchange.py (equivalent facts skipped, so a repeated
restore adds nothing; tombstoned ids refused). It also accepts a HotMem snapshot v2
(``hotmem-snapshot-v2``; portability/hotmem.py maps its records), and ``snapshot(format=
"hotmem-v2")`` writes one that HotMem's own hydrate loads (facts only: HotMem has no tombstones).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import trio

from ..engine import DocumentEngine
from ..errors import CorruptStore, IncompatibleStore, InvalidRequest
from ..localfiles import NotRegular, OutsideBase, TooLarge, open_beneath, read_range, read_whole
from .exchange import (
    ImportReport,
    Progress,
    _os_errors,
    apply,
    collect,
    encode,
    parse_records,
    write_atomically,
)
from .records import canonical, incoming

SNAPSHOT_FORMAT = "hmsengine-snapshot-v2"
SNAPSHOT_SCHEMA = 1
FORMATS = ("hmsengine-v2", "hotmem-v2")
FACTS_FILE = "facts.jsonl"
ATTACHMENT_LIMIT = 8 * 1024
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
# The most a restore reads from a snapshot's files together (a restore is one transaction, whose
# journal frame holds at most 256 MiB compressed: a snapshot near this size is already too big).
DEFAULT_MAX_RESTORE_BYTES = 1024 * 1024 * 1024


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files_digest(files: list[dict[str, Any]]) -> str:
    lines = sorted(f"{f['path']} {f['sha256']}" for f in files)
    return _sha256("\n".join(lines).encode("utf-8"))


def _snapshot_id(data: bytes) -> str:
    """sha256 of the sorted sha256s of the record lines (the header line excluded)."""
    hashes = sorted(_sha256(line) for line in data.split(b"\n")[1:] if line)
    return _sha256("\n".join(hashes).encode("ascii"))


def _manifest_digest(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != "manifestDigest"}
    return _sha256(canonical(body).encode("utf-8"))


def _prepare_target(path: object) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidRequest(f"path: expected a directory path, got {type(path).__name__}")
    target = Path(path)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InvalidRequest(f"path: {str(target)!r} exists and is not an empty directory",
                             hint="a snapshot goes into a new (or empty) directory")
    return target


def _attachments(records: list[dict[str, Any]],
                 exclude: tuple[str, ...] = ()) -> tuple[dict[str, bytes], list[str]]:
    """(sha256 -> bytes) of the file-backed ranges under 8 KiB that still match, and the ids of
    those that could not be attached (missing, changed, relative path, not a regular file, in
    ``exclude``: the store's own directory). Each is read from the descriptor that was checked."""
    from ..localfiles import NotRegular, OutsideBase, read_range
    from ..memory.files import locate, open_place

    found: dict[str, bytes] = {}
    skipped: list[str] = []
    for r in records:
        ref = r.get("file") if r["type"] == "fact" else None
        if ref is None or ref["length"] >= ATTACHMENT_LIMIT:
            continue
        try:
            fd, _ = open_place(locate(ref["uri"], None), exclude)
            try:
                data = read_range(fd, ref["offset"], ref["length"])
            finally:
                os.close(fd)
        except (OSError, InvalidRequest, NotRegular, OutsideBase):
            skipped.append(r["id"])
            continue
        if len(data) == ref["length"] and _sha256(data) == ref["sha256"]:
            found[ref["sha256"]] = data
        else:
            skipped.append(r["id"])
    return found, skipped


def _write_snapshot(target: Path, records: list[dict[str, Any]], attachments: bool,
                    created_at: int, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    target.mkdir(parents=True, exist_ok=True)
    data = encode(records)
    files = []
    write_atomically(target / FACTS_FILE, data)
    files.append({"path": FACTS_FILE, "size": len(data), "sha256": _sha256(data)})
    skipped: list[str] = []
    if attachments:
        blobs, skipped = _attachments(records, exclude)
        if blobs:
            (target / "attachments").mkdir(exist_ok=True)
        for sha, blob in sorted(blobs.items()):
            write_atomically(target / "attachments" / sha, blob)
            files.append({"path": f"attachments/{sha}", "size": len(blob), "sha256": sha})
    counts = json.loads(data.split(b"\n", 1)[0])["counts"]
    manifest: dict[str, Any] = {
        "format": SNAPSHOT_FORMAT, "schemaVersion": SNAPSHOT_SCHEMA,
        "snapshotId": _snapshot_id(data), "createdAt": created_at, "counts": counts,
        "files": files, "digest": _files_digest(files), "attachmentsSkipped": sorted(skipped),
    }
    manifest["manifestDigest"] = _manifest_digest(manifest)
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    write_atomically(target / "manifest.json", text.encode("utf-8"))
    return manifest


async def snapshot(engine: DocumentEngine, path: object, *, format: str = "hmsengine-v2",
                   attachments: bool = False, progress: Progress | None = None) -> dict[str, Any]:
    """Write a snapshot of the whole store into ``path`` (new or empty); return its manifest."""
    if format not in FORMATS:
        raise InvalidRequest(f"format: expected one of {', '.join(FORMATS)}, got {format!r}")
    if not isinstance(attachments, bool):
        raise InvalidRequest("attachments: expected a bool")
    target = _prepare_target(path)
    records = await collect(engine, progress=progress)
    created_at = engine.now()
    exclude = () if engine.path is None else (engine.path,)
    with _os_errors(target):
        if format == "hotmem-v2":
            return await trio.to_thread.run_sync(_write_hotmem, target, records, attachments,
                                                 created_at, exclude)
        return await trio.to_thread.run_sync(_write_snapshot, target, records, attachments,
                                             created_at, exclude)


def _write_hotmem(target: Path, records: list[dict[str, Any]], attachments: bool,
                  created_at: int, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    from .hotmem_write import write_hotmem_snapshot

    facts = [r if r["type"] == "fact" else _as_fact(r) for r in records if r["type"] != "tombstone"]
    blobs = _attachments(facts, exclude)[0] if attachments else None
    return write_hotmem_snapshot(target, facts, attachments=blobs, created_at=created_at)


def _as_fact(record: dict[str, Any]) -> dict[str, Any]:
    """A plain document as a fact record (HotMem knows only facts)."""
    return {"type": "fact", "id": record["id"], "text": record["text"], "kind": "fact",
            "namespace": "default", "subject": None, "entities": [], "metadata": record["metadata"],
            "embedding": record["embedding"], "eventTime": None, "validFrom": None, "validTo": None,
            "ingestTime": 0, "supersedes": [], "sources": [], "actor": None, "importance": None,
            "file": None}


# -- verifying and restoring -------------------------------------------------------------------------


def open_member(root: Path, name: str) -> tuple[int, os.stat_result]:
    """(descriptor, stat) of the regular file ``name`` of the snapshot at ``root``: never
    through a symbolic link, never a FIFO or a device (``CorruptStore`` naming it)."""
    where = str(root / name)
    try:
        return open_beneath(root, name, follow_links=False)
    except (FileNotFoundError, NotADirectoryError):
        raise CorruptStore("a file of the snapshot is missing", file=where) from None
    except NotRegular as exc:
        raise CorruptStore(f"a file of the snapshot is {exc.kind}, not a regular file",
                           file=where) from None
    except OutsideBase:
        raise CorruptStore("a file of the snapshot lies outside its directory", file=where) from None


def read_manifest(root: Path) -> dict[str, Any]:
    where = root / "manifest.json"
    try:
        fd, st = open_member(root, "manifest.json")
    except CorruptStore:
        if not os.path.lexists(where):
            raise InvalidRequest(f"{root}: no manifest.json here: not a snapshot directory") from None
        raise
    try:
        value = json.loads(read_whole(fd, st, MAX_MANIFEST_BYTES))
    except TooLarge:
        raise InvalidRequest(f"{where}: {st.st_size} bytes is too large for a manifest") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptStore(f"manifest.json is not valid JSON ({exc})", file=str(where)) from None
    finally:
        os.close(fd)
    if not isinstance(value, dict):
        raise InvalidRequest(f"{where}: expected a JSON object")
    return value


def _safe_member(root: Path, name: object, where: str) -> Path:
    if not isinstance(name, str) or not name or name.startswith("/") or ".." in Path(name).parts:
        raise CorruptStore(f"the manifest names an unsafe path {name!r}", file=where)
    return root / name


def verify(root: Path, max_bytes: int = DEFAULT_MAX_RESTORE_BYTES) -> tuple[dict[str, Any], bytes]:
    """Check the manifest and every file it lists (their sizes together at most ``max_bytes``,
    before any is read); (manifest, facts.jsonl bytes)."""
    manifest = read_manifest(root)
    where = str(root / "manifest.json")
    fmt = manifest.get("format")
    if fmt != SNAPSHOT_FORMAT:
        raise InvalidRequest(f"{where}: the format is {fmt!r}, not {SNAPSHOT_FORMAT!r} or "
                             "'hotmem-snapshot-v2'")
    version = manifest.get("schemaVersion")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidRequest(f"{where}: schemaVersion: expected a positive integer, got {version!r}")
    if version > SNAPSHOT_SCHEMA:
        raise IncompatibleStore(f"{where}: snapshot schema version {version} is newer than this "
                                f"build reads ({SNAPSHOT_SCHEMA}); nothing was written")
    if manifest.get("manifestDigest") != _manifest_digest(manifest):
        raise CorruptStore("the manifest was changed after it was written (manifestDigest)", file=where)
    files = manifest.get("files")
    if not isinstance(files, list) or not all(
            isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("sha256"), str)
            and isinstance(f.get("size"), int) and not isinstance(f.get("size"), bool) for f in files):
        raise CorruptStore("the manifest's files is not a list of {path, size, sha256}", file=where)
    if manifest.get("digest") != _files_digest(files):
        raise CorruptStore("the manifest's digest does not match its files", file=where)
    check_total(sum(max(0, f["size"]) for f in files), max_bytes, root)
    facts: bytes | None = None
    for entry in files:
        member = _safe_member(root, entry.get("path"), where)
        fd, st = open_member(root, entry["path"])
        try:
            if st.st_size != entry["size"]:
                raise CorruptStore("the file's size does not match the manifest", file=str(member))
            data = read_range(fd, 0, entry["size"])
        finally:
            os.close(fd)
        if len(data) != entry.get("size") or _sha256(data) != entry.get("sha256"):
            raise CorruptStore("the file's size or sha256 does not match the manifest",
                               file=str(member))
        if entry["path"] == FACTS_FILE:
            facts = data
    if facts is None:
        raise CorruptStore(f"the manifest lists no {FACTS_FILE}", file=where)
    if manifest.get("snapshotId") != _snapshot_id(facts):
        raise CorruptStore("the snapshot id does not match the records", file=where)
    return manifest, facts


def check_total(total: int, max_bytes: int, root: Path) -> None:
    """Refuse a snapshot whose files hold more than ``max_bytes`` together (before reading)."""
    if total > max_bytes:
        raise InvalidRequest(f"{root}: the snapshot's files hold {total} bytes, over the limit of "
                             f"{max_bytes}", hint="pass a larger max_bytes if the snapshot is trusted")


def _load(root: Path, max_bytes: int = DEFAULT_MAX_RESTORE_BYTES) -> tuple[str, list[Any]]:
    """(the format, the validated records) of the snapshot at ``root``, verified first."""
    from .hotmem import is_hotmem_snapshot, read_hotmem_snapshot

    if is_hotmem_snapshot(root):
        snap = read_hotmem_snapshot(root, max_bytes=max_bytes)
        items = []
        for record in snap.records:
            try:
                items.append(incoming(record))
            except InvalidRequest as exc:
                raise InvalidRequest(f"{root}: HotMem record {record.get('id')!r}: {exc.message}") from None
        return "hotmem-snapshot-v2", items
    _, facts = verify(root, max_bytes)
    lines = ((n, line) for n, line in enumerate(facts.split(b"\n"), start=1) if line.strip())
    return SNAPSHOT_FORMAT, parse_records(lines, str(root / FACTS_FILE))


async def restore(engine: DocumentEngine, path: object, *, progress: Progress | None = None,
                  max_bytes: int = DEFAULT_MAX_RESTORE_BYTES) -> ImportReport:
    """Verify the snapshot at ``path`` completely (regular files only, at most ``max_bytes``
    together), then restore it in one transaction."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidRequest(f"path: expected a directory path, got {type(path).__name__}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise InvalidRequest(f"max_bytes: expected a positive integer, got {max_bytes!r}")
    root = Path(path)
    if not root.is_dir():
        raise InvalidRequest(f"path: no snapshot directory at {str(root)!r}")
    with _os_errors(root):
        _, items = await trio.to_thread.run_sync(_load, root, max_bytes)
    return await apply(engine, items, source=str(root), progress=progress)


__all__ = ["SNAPSHOT_FORMAT", "restore", "snapshot", "verify"]
