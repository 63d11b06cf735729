"""Writing a HotMem Snapshot v2 directory from fact records (the reader, the format's constants
and the field mapping are in portability/hotmem.py; this module is its other direction).

``engine.snapshot(path, format="hotmem-v2")`` calls :func:`write_hotmem_snapshot`; HotMem's own
``hotmem.snapshot.hydrate`` loads the result (tests/portability/test_hotmem_format.py).
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hmsengine.errors import InvalidRequest, map_errors

from .hotmem import (
    _DROPPED,
    _FACT_DEFAULTS,
    _WRITE_DEFAULTS,
    ATTACHMENTS_DIR,
    DEFAULT_NAMESPACE,
    HMS_KEY,
    HOTMEM_FORMAT,
    HOTMEM_KEY,
    HOTMEM_SCHEMA_VERSION,
    MANIFEST_NAME,
    MEMORIES_NAME,
    METADATA_NAME,
    WRITER,
    _Bad,
    _dumps,
    _from_hotmem,
    _iso,
    _opt,
    _overall,
    _req,
    _sha,
)


def write_hotmem_snapshot(path: str | os.PathLike[str], records: Iterable[dict[str, Any]], *,
                          attachments: Mapping[str, bytes] | None = None,
                          created_at: int | None = None) -> dict[str, Any]:
    """Write fact records as a HotMem Snapshot v2 directory that ``hotmem.snapshot.hydrate`` loads.

    ``path`` must not exist or be an empty directory (else ``InvalidRequest``); the snapshot is built
    in a sibling staging directory, fsynced and renamed into place, so ``path`` never holds a
    half-written snapshot. Records stream to disk (a second pass only reorders them when they do not
    arrive sorted by id); a duplicate id or a malformed record is ``InvalidRequest``. ``attachments``
    maps sha256 hex to bytes, checked, and written under ``attachments/``. ``created_at`` (ms, default
    now) is the only non-deterministic input. Embeddings are not written: HotMem re-embeds from text.
    Returns the manifest written.
    """
    root = Path(path)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise InvalidRequest(f"{root}: already exists and is not an empty directory",
                             hint="snapshot into a new path")
    atts = dict(attachments or {})
    for name, data in atts.items():
        if not isinstance(data, bytes | bytearray) or _sha(bytes(data)) != name:
            raise InvalidRequest(f"attachments[{name!r}]: key is not the sha256 of its bytes")
    if created_at is not None and type(created_at) is not int:
        raise InvalidRequest(f"created_at: expected integer ms, got {type(created_at).__name__}")
    try:
        stamp = _iso(int(time.time() * 1000) if created_at is None else created_at)
    except _Bad as exc:
        raise InvalidRequest(f"created_at: {exc}") from None
    staging = root.parent / f".{root.name}.partial-{uuid.uuid4().hex[:12]}"
    with map_errors("writing a HotMem snapshot", file=str(root)):
        staging.mkdir(parents=True)
        try:
            manifest = _write_dir(staging, records, atts, stamp)
            if root.exists():
                root.rmdir()
            os.replace(staging, root)
            _fsync(root.parent)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return manifest


def _write_dir(staging: Path, records: Iterable[dict[str, Any]], atts: dict[str, bytes],
               stamp: str) -> dict[str, Any]:
    refs: list[dict[str, Any]] = []
    hashes: list[str] = []
    index: list[tuple[str, int, int]] = []
    in_order = True
    offset = 0
    h = hashlib.sha256()
    n_file = 0
    out = staging / MEMORIES_NAME
    with open(out, "wb") as f:
        for i, fact in enumerate(records):
            rec = _to_hotmem(fact, i)
            line = _dumps(rec, f"records[{i}]") + b"\n"
            if index and rec["id"] <= index[-1][0]:
                in_order = False
            index.append((rec["id"], offset, len(line)))
            offset += len(line)
            h.update(line)
            f.write(line)
            hashes.append(rec["content_hash"])
            if rec["memory_type"] == "file":
                n_file += 1
                refs.append({"memory_id": rec["id"], "source_uri": rec["source_uri"],
                             "byte_offset": rec["byte_offset"], "byte_length": rec["byte_length"],
                             "source_format": rec["source_format"],
                             "source_checksum": rec["source_checksum"],
                             "attachment": rec["source_checksum"] if rec["source_checksum"] in atts
                             else None})
        if in_order:
            f.flush()
            os.fsync(f.fileno())
    digest = h.hexdigest() if in_order else _reorder(out, index)
    refs.sort(key=lambda r: str(r["memory_id"]))
    files: dict[str, dict[str, Any]] = {MEMORIES_NAME: {"size": offset, "sha256": digest}}
    entries = []
    if atts:
        (staging / ATTACHMENTS_DIR).mkdir()
        for name in sorted(atts):
            _write_synced(staging / ATTACHMENTS_DIR / name, atts[name])
            files[f"{ATTACHMENTS_DIR}/{name}"] = {"size": len(atts[name]), "sha256": name}
            uri = next((r["source_uri"] for r in refs if r["attachment"] == name), "")
            entries.append({"name": name, "source_uri": uri, "size": len(atts[name]), "sha256": name})
    manifest = {
        "format": HOTMEM_FORMAT, "schema_version": HOTMEM_SCHEMA_VERSION,
        "snapshot_id": _sha("".join(sorted(hashes))), "created_at": stamp, "hotmem_version": WRITER,
        "memory_count": len(index), "file_backed_count": n_file, "inline_count": len(index) - n_file,
        "files": files, "overall_sha256": _overall({k: v["sha256"] for k, v in files.items()}),
        "file_backed_references": refs, "attachments": entries,
    }
    info = {"counts": {"file": n_file, "inline": len(index) - n_file, "total": len(index)},
            "created_at": stamp, "db_path": "", "host": "", "hotmem_version": WRITER}
    for name, body in ((METADATA_NAME, info), (MANIFEST_NAME, manifest)):
        _write_synced(staging / name, (json.dumps(body, sort_keys=True, indent=2) + "\n").encode())
    _fsync(staging)
    return manifest


def _reorder(out: Path, index: list[tuple[str, int, int]]) -> str:
    """Rewrite memories.jsonl in id order (HotMem's writer sorts by id; the records did not come so)."""
    index.sort()
    h = hashlib.sha256()
    unsorted = out.with_name(MEMORIES_NAME + ".unsorted")
    os.replace(out, unsorted)
    # mmap: a seek + read per line on a buffered file would copy a whole buffer per line.
    with open(unsorted, "rb") as src, mmap.mmap(src.fileno(), 0, access=mmap.ACCESS_READ) as mm, \
            open(out, "wb") as dst:
        for i, (rid, offset, length) in enumerate(index):
            if i and rid == index[i - 1][0]:
                raise InvalidRequest(f"records: duplicate id {rid!r}")
            line = mm[offset:offset + length]
            h.update(line)
            dst.write(line)
        dst.flush()
        os.fsync(dst.fileno())
    unsorted.unlink()
    return h.hexdigest()


def _to_hotmem(fact: Any, i: int) -> dict[str, Any]:
    """One fact record as a HotMem record; ``metadata["hmsengine"]`` keeps what would not come back."""
    where = f"records[{i}]"
    if not isinstance(fact, dict) or fact.get("type") != "fact":
        raise InvalidRequest(f"{where}: expected a fact record (type 'fact')")
    try:
        rid = _req(fact, "id", str)
        if not rid:
            raise _Bad("id: expected a non-empty string")
        text = _req(fact, "text", str)
        subject = _opt(fact, "subject", str)
        metadata = dict(_opt(fact, "metadata", dict) or {})
        hm = metadata.pop(HOTMEM_KEY, None)
        hm = {k: v for k, v in hm.items() if k not in _DROPPED} if isinstance(hm, dict) else {}
        valid_from = _opt(fact, "validFrom", int)
        valid_to = _opt(fact, "validTo", int)
        created = valid_from if valid_from is not None else _opt(fact, "ingestTime", int) or 0
        ttl = None if valid_to is None else max(0, -((created - valid_to) // 1000))  # ceil, in s
        importance = _opt(fact, "importance", int | float)
        identifier = subject or rid
        rec: dict[str, Any] = {**_WRITE_DEFAULTS, **hm, "schema_version": HOTMEM_SCHEMA_VERSION,
                               "id": rid, "identifier": identifier, "embedding": None,
                               "embedding_dim": None, "embedding_model": None,
                               "importance": 0.5 if importance is None else importance,
                               "namespace": "" if fact.get("namespace") == DEFAULT_NAMESPACE
                               else _req(fact, "namespace", str),
                               "created_at": _iso(created),
                               "ttl_seconds": ttl}
        file = _opt(fact, "file", dict)
        if file is None:
            rec.update(memory_type="fact", fact_text=text, content_hash=_sha(f"{identifier}:{text}"))
        else:
            checksum = _req(file, "sha256", str) or None
            summary = _opt(file, "summary", str)
            rec.update(memory_type="file", source_uri=_req(file, "uri", str),
                       byte_offset=_req(file, "offset", int), byte_length=_req(file, "length", int),
                       source_format=_opt(file, "format", str) or "", source_checksum=checksum,
                       fact_summary=summary if summary is not None else (text or None))
            rec["content_hash"] = _sha(f"{identifier}:{rec['source_uri']}:{rec['byte_offset']}:"
                                       f"{rec['byte_length']}:{checksum or ''}")
        rec["metadata"] = metadata
        back = _from_hotmem(rec, attachment=None, default_time=0)
    except _Bad as exc:
        raise InvalidRequest(f"{where}: {exc}") from None
    ours = {k: fact.get(k, d) for k, d in _FACT_DEFAULTS.items() if fact.get(k, d) != back[k]}
    if ours:
        rec["metadata"] = {**metadata, HMS_KEY: ours}
    return rec


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["write_hotmem_snapshot"]
