"""HotMem Snapshot v2 interop: read ``hotmem-snapshot-v2`` directories as fact records (writing
them is portability/hotmem_write.py, the same mapping inverted).

Pure and synchronous (no trio, no engine): the portability layer turns what this module returns into
``restore`` input, and feeds ``snapshot(format="hotmem-v2")`` output through it.

HotMem's layout (hotmem 0.2.6, ``hotmem/snapshot/``)::

    manifest.json     format "hotmem-snapshot-v2", schema_version 2, files {rel: {size, sha256}},
                      overall_sha256 = sha256 of the per-file hex digests concatenated in name order,
                      snapshot_id = sha256 of the records' sorted content hashes concatenated,
                      memory/inline/file_backed counts, file_backed_references, attachments
    memories.jsonl    one JSON object per memory, sorted by id (checksummed)
    metadata.json     informational only, never checksummed (it holds a wall-clock time)
    attachments/<h>   optional copies of small file ranges, named by the sha256 of their bytes

Mapping, HotMem record -> fact record:

    id -> id (HotMem's own stable uuid hex, so a repeated restore maps to the same ids)
    identifier -> subject ("" -> None);  namespace -> namespace ("" -> "default")
    fact_text -> text (a file memory's text is its fact_summary, or "")
    importance -> importance;  metadata -> metadata ({} -> None)
    created_at -> validFrom and ingestTime (HotMem keeps no separate knowledge time in v2; without
    a created_at, validFrom is None and ingestTime the manifest's created_at)
    ttl_seconds -> validTo = created_at + ttl (HotMem hides expired memories from search)
    source_uri/byte_offset/byte_length/source_format -> file.uri/offset/length/format
    source_checksum (sha256 of the byte *range*) -> file.sha256, else the range's attachment name,
    else ""; fact_summary -> file.summary; file.size and file.mtime -> 0 (HotMem records neither)
    kind "fact", no entities/eventTime/supersedes/sources/actor, embedding None: HotMem's vectors
    live in its own hash space, so both sides re-embed from the text
    everything else of HotMem's (tier, tags, source, provenance, promotion_state, ...) whose value
    is not HotMem's default -> metadata["hotmem"]

The writer inverts this (``metadata["hotmem"]`` goes back to its original fields; a fact without a
subject gets its id as identifier; "default" becomes HotMem's "" namespace; importance None is 0.5;
validFrom, else ingestTime, is created_at; validTo becomes ttl_seconds rounded up to whole seconds;
content_hash is HotMem's canonical one, so HotMem's hydrate treats facts with the same identifier
and text, or the same file range, as one memory). Any
field of ours that the inverse would not give back exactly (kind, entities, a missing subject, an
ingest time other than the valid-from time, file size and mtime, ...) is kept in
``metadata["hmsengine"]``, which the reader applies again: hmsengine -> HotMem -> hmsengine is
lossless except for embeddings. Both metadata keys are reserved for this module.

The reader is stricter than HotMem's: HotMem skips a malformed record and checks only the listed
files; this refuses the whole snapshot, and also checks snapshot_id, the counts, the file references
and the attachment list, which HotMem's own writer always gets right.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import attrs

from hmsengine.errors import CorruptStore, IncompatibleStore, InvalidRequest, map_errors
from hmsengine.localfiles import (
    NotRegular,
    OutsideBase,
    TooLarge,
    open_beneath,
    read_beneath,
    read_whole,
)

HOTMEM_FORMAT = "hotmem-snapshot-v2"
HOTMEM_SCHEMA_VERSION = 2
MANIFEST_NAME = "manifest.json"
MEMORIES_NAME = "memories.jsonl"
METADATA_NAME = "metadata.json"
ATTACHMENTS_DIR = "attachments"
HOTMEM_KEY = "hotmem"
HMS_KEY = "hmsengine"
DEFAULT_NAMESPACE = "default"
WRITER = "hmsengine"

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MS = _dt.timedelta(milliseconds=1)
_CHUNK = 1 << 20
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_BYTES = 1024 * 1024 * 1024  # all listed files together (restore's default too)
# Never carried: HotMem's vectors are in its own space, content_hash is derived, schema_version is ours.
_DROPPED = frozenset({"embedding", "embedding_b64", "embedding_dim", "embedding_model", "content_hash",
                      "schema_version"})
_FILE_FIELDS = ("source_uri", "byte_offset", "byte_length", "source_format", "source_checksum")
# HotMem's column defaults: a field holding one of these is not worth a metadata["hotmem"] entry.
_DEFAULTS: dict[str, Any] = {
    "tier": "hot", "tags": [], "source": "", "provenance": None, "promotion_state": "HOT",
    "promotion_candidate": 0, "parent_memory": "", "related_memories": [], "snapshot_id": "",
    "updated_at": None, "memory_type": "fact", "fact_summary": None, "fact_text": "",
    "ttl_seconds": None, "source_uri": "", "byte_offset": None, "byte_length": None,
    "source_format": "", "source_checksum": "",
}
_WRITE_DEFAULTS = {k: v for k, v in _DEFAULTS.items() if k not in (
    "parent_memory", "related_memories", "snapshot_id", "updated_at")}
# Fields a fact's own fields already say (plus _DROPPED): never copied into metadata["hotmem"].
_INLINE_USED = _DROPPED | {"id", "identifier", "fact_text", "namespace", "importance", "metadata",
                           "created_at", "ttl_seconds"}
_FILE_USED = _INLINE_USED | {*_FILE_FIELDS, "fact_summary", "memory_type"}
_FACT_DEFAULTS: dict[str, Any] = {
    "text": "", "kind": "fact", "namespace": DEFAULT_NAMESPACE, "subject": None, "entities": [],
    "metadata": None, "eventTime": None, "validFrom": None, "validTo": None, "ingestTime": 0,
    "supersedes": [], "sources": [], "actor": None, "importance": None, "file": None,
}


@attrs.frozen(kw_only=True)
class HotmemSnapshot:
    """A verified HotMem snapshot: fact records sorted by id, attachments by sha256, the manifest."""

    records: tuple[dict[str, Any], ...]
    attachments: dict[str, bytes]
    manifest: dict[str, Any]


class _Bad(Exception):
    """A malformed value; the caller names the file and line (or the record)."""


def is_hotmem_snapshot(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a directory whose manifest.json says ``format: hotmem-snapshot-v2``."""
    try:
        raw = json.loads(read_beneath(path, MANIFEST_NAME, limit=MAX_MANIFEST_BYTES))
    except (OSError, ValueError, RecursionError, NotRegular, OutsideBase, TooLarge):
        return False
    return isinstance(raw, dict) and raw.get("format") == HOTMEM_FORMAT


def read_hotmem_snapshot(path: str | os.PathLike[str], *,
                         max_bytes: int = DEFAULT_MAX_BYTES) -> HotmemSnapshot:
    """Verify a HotMem Snapshot v2 directory completely, then return its memories as fact records.

    Verified before anything is returned: every file the manifest lists (size, then sha256), the
    overall digest, the snapshot id, the counts, and that the file references match the records.
    Only regular files inside the directory are read (no symbolic link, FIFO or device), the
    listed ones at most ``max_bytes`` together, checked before any is read.
    Raises ``CorruptStore`` (``.file`` names it) for a missing file or a mismatch, ``InvalidRequest``
    for a manifest of another format or malformed content (the file, and the line for
    memories.jsonl) or files over ``max_bytes``, ``IncompatibleStore`` for a schema version above
    2. Nothing is written.
    """
    root = Path(path)
    with map_errors("reading a HotMem snapshot", file=str(root)):
        if not root.is_dir():
            raise InvalidRequest(f"{root}: not a directory", hint="pass a HotMem snapshot directory")
        manifest = _load_manifest(root)
        files = _manifest_files(root, manifest)
        total = sum(max(0, size) for size, _ in files.values())
        if total > max_bytes:
            raise InvalidRequest(f"{root}: the snapshot's files hold {total} bytes, over the "
                                 f"limit of {max_bytes}",
                                 hint="pass a larger max_bytes if the snapshot is trusted")
        digests: dict[str, str] = {}
        attachments: dict[str, bytes] = {}
        for rel, (size, sha) in sorted(files.items()):
            data = _verify_file(root, rel, size, sha, keep=rel.startswith(ATTACHMENTS_DIR + "/"))
            digests[rel] = sha
            if data is not None:
                if rel != f"{ATTACHMENTS_DIR}/{sha}":
                    raise CorruptStore(f"attachment {rel} is not named by its sha256", file=str(root / rel))
                attachments[sha] = data
        if MEMORIES_NAME not in files:
            raise CorruptStore(f"{MEMORIES_NAME} is not covered by the manifest's checksums",
                               file=str(root / MEMORIES_NAME))
        if _overall(digests) != manifest.get("overall_sha256"):
            _manifest_mismatch(root, "overall_sha256 does not match the listed files")
        refs = _manifest_refs(root, manifest)
        records = _read_records(root, manifest, refs, attachments, files[MEMORIES_NAME][0])
    return HotmemSnapshot(records=records, attachments=attachments, manifest=manifest)


def _open_member(root: Path, rel: str) -> tuple[int, os.stat_result]:
    """A listed file of the snapshot, opened without following any link (``CorruptStore``
    naming it when missing, not a regular file, or outside the directory)."""
    where = str(root / rel)
    try:
        return open_beneath(root, rel, follow_links=False)
    except (FileNotFoundError, NotADirectoryError):
        raise CorruptStore(f"{rel} is listed in the manifest but missing", file=where) from None
    except NotRegular as exc:
        raise CorruptStore(f"{rel} is {exc.kind}, not a regular file", file=where) from None
    except OutsideBase:
        raise CorruptStore(f"{rel} lies outside the snapshot directory", file=where) from None


def _load_manifest(root: Path) -> dict[str, Any]:
    where = root / MANIFEST_NAME
    fd, st = _open_member(root, MANIFEST_NAME)
    try:
        manifest = json.loads(read_whole(fd, st, MAX_MANIFEST_BYTES))
    except TooLarge:
        raise InvalidRequest(f"{where}: {st.st_size} bytes is too large for a manifest") from None
    except (ValueError, RecursionError) as exc:
        raise InvalidRequest(f"{where}: not valid JSON ({exc})") from None
    finally:
        os.close(fd)
    if not isinstance(manifest, dict):
        raise InvalidRequest(f"{where}: expected a JSON object")
    if manifest.get("format") != HOTMEM_FORMAT:
        raise InvalidRequest(f"{where}: format {manifest.get('format')!r} is not {HOTMEM_FORMAT!r}")
    version = manifest.get("schema_version", HOTMEM_SCHEMA_VERSION)
    if type(version) is not int or version < 1:
        raise InvalidRequest(f"{where}: schema_version: expected a positive integer, got {version!r}")
    if version > HOTMEM_SCHEMA_VERSION:
        raise IncompatibleStore(f"{where}: HotMem snapshot schema_version {version} is newer than "
                                f"{HOTMEM_SCHEMA_VERSION}", hint="export it with a HotMem release "
                                "that writes schema 2, or upgrade hmsengine")
    return manifest


def _manifest_files(root: Path, manifest: dict[str, Any]) -> dict[str, tuple[int, str]]:
    where = root / MANIFEST_NAME
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise InvalidRequest(f"{where}: files: expected an object")
    out: dict[str, tuple[int, str]] = {}
    for rel, entry in files.items():
        if not isinstance(entry, dict) or type(entry.get("size")) is not int or not isinstance(
                entry.get("sha256"), str):
            raise InvalidRequest(f"{where}: files[{rel!r}]: expected {{size: int, sha256: str}}")
        parts = rel.split("/")
        # The same confinement as HotMem's reader: never read outside the snapshot directory.
        if not rel or "\\" in rel or rel.startswith("/") or ":" in parts[0] or ".." in parts \
                or os.path.islink(root / rel) or not (root / rel).resolve().is_relative_to(root.resolve()):
            raise InvalidRequest(f"{where}: files[{rel!r}]: path escapes the snapshot directory")
        out[rel] = (entry["size"], entry["sha256"])
    return out


def _verify_file(root: Path, rel: str, size: int, sha: str, *, keep: bool) -> bytes | None:
    fpath = root / rel
    fd, st = _open_member(root, rel)
    with os.fdopen(fd, "rb") as f:
        if st.st_size != size:
            raise CorruptStore(f"{rel}: size {st.st_size} does not match the manifest's {size}",
                               file=str(fpath))
        h = hashlib.sha256()
        kept = bytearray()
        left = size + 1  # one byte past the size: a file that grew meanwhile fails the check
        while left and (chunk := f.read(min(_CHUNK, left))):
            left -= len(chunk)
            h.update(chunk)
            if keep:
                kept += chunk
    if h.hexdigest() != sha:
        raise CorruptStore(f"{rel}: sha256 does not match the manifest", file=str(fpath))
    return bytes(kept) if keep else None


def _manifest_refs(root: Path, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    where = root / MANIFEST_NAME
    refs = manifest.get("file_backed_references") or manifest.get("file_references") or []
    if not isinstance(refs, list):
        raise InvalidRequest(f"{where}: file_backed_references: expected a list")
    out: dict[str, dict[str, Any]] = {}
    for i, ref in enumerate(refs):
        if not isinstance(ref, dict) or not isinstance(ref.get("memory_id"), str) or not isinstance(
                ref.get("source_uri"), str) or not isinstance(ref.get("attachment"), str | None) \
                or ref["memory_id"] in out:
            raise InvalidRequest(f"{where}: file_backed_references[{i}]: malformed or repeated")
        out[ref["memory_id"]] = ref
    return out


def _read_records(root: Path, manifest: dict[str, Any], refs: dict[str, dict[str, Any]],
                  attachments: dict[str, bytes], size: int) -> tuple[dict[str, Any], ...]:
    fpath = root / MEMORIES_NAME
    created = manifest.get("created_at")
    try:
        default_time = _parse_time(created) if isinstance(created, str) and created else 0
    except _Bad:
        default_time = 0
    records: list[dict[str, Any]] = []
    hashes: list[str] = []
    seen: set[str] = set()
    n_file = 0
    matched = 0
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    fd, st = _open_member(root, MEMORIES_NAME)
    try:  # at most the size the manifest lists (and verified): a file swapped since is cut there
        data = read_whole(fd, st, size)
    except TooLarge:
        raise CorruptStore(f"{MEMORIES_NAME} changed while it was read", file=str(fpath)) from None
    finally:
        os.close(fd)
    for lineno, line in enumerate(data.split(b"\n"), 1):  # the numbering of the file's lines
        try:
            text = line.decode("utf-8").strip()
            if not text:
                continue
            try:
                raw = decoder.decode(text)
            except ValueError as exc:  # also the UnicodeDecodeError above, via the outer handler
                raise _Bad(f"not valid JSON ({exc})") from None
            if not isinstance(raw, dict):
                raise _Bad(f"expected a JSON object, got {type(raw).__name__}")
            rid = raw.get("id")
            ref = refs.get(rid) if isinstance(rid, str) else None
            fact = _from_hotmem(raw, attachment=ref.get("attachment") if ref else None,
                                default_time=default_time)
        except (_Bad, ValueError, RecursionError) as exc:
            raise InvalidRequest(f"{fpath}, line {lineno}: {exc}") from None
        if fact["id"] in seen:
            raise InvalidRequest(f"{fpath}, line {lineno}: duplicate id {fact['id']!r}")
        seen.add(fact["id"])
        if isinstance(raw.get("content_hash"), str) and raw["content_hash"]:
            hashes.append(raw["content_hash"])
        if raw.get("memory_type") == "file":
            n_file += 1
            if ref is not None:
                # HotMem copies these from the record (offset and length as ``or 0``).
                if [ref.get(k) for k in _FILE_FIELDS] != [raw.get(k) or 0 if k.startswith("byte")
                                                          else raw.get(k) for k in _FILE_FIELDS]:
                    _manifest_mismatch(root, f"file reference of {fact['id']} differs from its record")
                matched += 1
        records.append(fact)
    if not matched == n_file == len(refs):
        _manifest_mismatch(root, "file_backed_references do not match the file-backed records")
    for ref in refs.values():
        if ref.get("attachment") and ref["attachment"] not in attachments:
            raise CorruptStore(f"attachment {ref['attachment']} is referenced but not listed",
                               file=str(root / ATTACHMENTS_DIR / ref["attachment"]))
    uris = {ref["attachment"]: ref["source_uri"] for ref in reversed(refs.values()) if ref.get("attachment")}
    listed = manifest.get("attachments") or []
    want = sorted(json.dumps([n, len(d), n, uris.get(n, "")]) for n, d in attachments.items())
    if not isinstance(listed, list) or want != sorted(
            json.dumps([a.get(k) for k in ("name", "size", "sha256", "source_uri")], default=str)
            if isinstance(a, dict) else "" for a in listed):
        _manifest_mismatch(root, "attachments do not match the attachment files")
    counts = {"memory_count": len(records), "file_backed_count": n_file,
              "inline_count": len(records) - n_file}
    for key, value in counts.items():
        if manifest.get(key) != value:
            _manifest_mismatch(root, f"{key} {manifest.get(key)!r} does not match the {value} records")
    if _sha("".join(sorted(hashes))) != manifest.get("snapshot_id"):
        _manifest_mismatch(root, "snapshot_id does not match the records' content hashes")
    records.sort(key=lambda r: str(r["id"]))
    return tuple(records)


def _from_hotmem(raw: dict[str, Any], *, attachment: str | None, default_time: int) -> dict[str, Any]:
    """One HotMem record as a fact record (raises ``_Bad`` for wrong types or a missing text)."""
    rid = raw.get("id")
    if not isinstance(rid, str) or not rid:
        raise _Bad("id: expected a non-empty string")
    identifier = _opt(raw, "identifier", str) or ""
    fact_text = _opt(raw, "fact_text", str) or ""
    summary = _opt(raw, "fact_summary", str)
    namespace = _opt(raw, "namespace", str) or DEFAULT_NAMESPACE
    importance = _opt(raw, "importance", int | float)
    metadata = _opt(raw, "metadata", dict)
    created = _opt(raw, "created_at", str)
    ttl = _opt(raw, "ttl_seconds", int)
    valid_from = _parse_time(created) if created else None
    is_file = raw.get("memory_type") == "file"
    extra = {k: raw[k] for k in sorted(raw.keys() - (_FILE_USED if is_file else _INLINE_USED))
             if raw[k] != _DEFAULTS.get(k, ...)}
    if valid_from is None and ttl is not None:
        extra["ttl_seconds"] = ttl
    file: dict[str, Any] | None = None
    if is_file:
        uri = _opt(raw, "source_uri", str)
        length = _opt(raw, "byte_length", int)
        if not uri or length is None:
            raise _Bad("file-backed record needs source_uri and byte_length")
        file = {"uri": uri, "offset": _opt(raw, "byte_offset", int) or 0, "length": length,
                "format": _opt(raw, "source_format", str) or None,
                "sha256": _opt(raw, "source_checksum", str) or attachment or "",
                "size": 0, "mtime": 0, "summary": summary}
        text = summary or ""
        if fact_text:  # HotMem leaves it "" on file memories; anything else is kept
            extra["fact_text"] = fact_text
    else:
        text = fact_text or summary or ""
        if not text:
            raise _Bad("record has no fact_text (missing text)")
        if not fact_text:
            extra.pop("fact_summary", None)
    meta = dict(metadata or {})
    if extra:
        meta[HOTMEM_KEY] = extra
    ours = meta.pop(HMS_KEY, None) if isinstance(meta.get(HMS_KEY), dict) else None
    fact: dict[str, Any] = {
        "type": "fact", "id": rid, "text": text, "kind": "fact", "namespace": namespace,
        "subject": identifier or None, "entities": [], "metadata": meta or None, "embedding": None,
        "eventTime": None, "validFrom": valid_from,
        "validTo": valid_from + ttl * 1000 if valid_from is not None and ttl is not None else None,
        "ingestTime": valid_from if valid_from is not None else default_time, "supersedes": [],
        "sources": [], "actor": None, "importance": None if importance is None else float(importance),
        "file": file,
    }
    if ours:
        fact.update({k: v for k, v in ours.items() if k in _FACT_DEFAULTS})
    return fact


def _req(obj: Mapping[str, Any], key: str, typ: Any) -> Any:
    if key not in obj:
        raise _Bad(f"{key}: missing")
    return _opt(obj, key, typ)


def _opt(obj: Mapping[str, Any], key: str, typ: Any) -> Any:
    value = obj.get(key)
    if value is not None and (not isinstance(value, typ) or isinstance(value, bool)):
        raise _Bad(f"{key}: expected {getattr(typ, '__name__', typ)}, got {type(value).__name__}")
    return value


def _reject_constant(name: str) -> None:
    raise _Bad(f"{name} is not a JSON number")


_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _dumps(rec: dict[str, Any], where: str) -> bytes:
    try:
        return _ENCODER.encode(rec).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"{where}: not representable as JSON ({exc})") from None


def _parse_time(value: str) -> int:
    """HotMem's ISO-8601 ``created_at`` (naive means UTC, as SQLite writes it) as ms."""
    try:
        moment = _dt.datetime.fromisoformat(value)
    except ValueError:
        raise _Bad(f"created_at: {value!r} is not an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    return (moment - _EPOCH) // _MS


def _iso(ms: int) -> str:
    """ms as SQLite's ``%Y-%m-%dT%H:%M:%SZ`` (HotMem's default), with ``.fff`` only when needed."""
    try:
        t = _EPOCH + ms * _MS
    except OverflowError:
        raise _Bad(f"time {ms} ms is out of range") from None
    frac = f".{ms % 1000:03d}" if ms % 1000 else ""
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}{frac}Z"


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def _overall(digests: Mapping[str, str]) -> str:
    return _sha("".join(digests[name] for name in sorted(digests)))


def _manifest_mismatch(root: Path, what: str) -> NoReturn:
    raise CorruptStore(f"{MANIFEST_NAME}: {what}", file=str(root / MANIFEST_NAME))


__all__ = ["HOTMEM_FORMAT", "HotmemSnapshot", "is_hotmem_snapshot", "read_hotmem_snapshot"]
