"""The decoded scan: every file of a store searched after decoding, never only as raw bytes.

For each file under the store directory, the views searched are:

* its raw bytes, and every zstd frame found in them by its magic ``28 B5 2F FD``, decompressed
  (independent of the store's format: it also catches frames in files nothing else parses);
* every record decoded through the project's own format code (engine/scrub.py, what ``hms
  check`` runs): journal payloads, text records, table snapshots and index segment payloads,
  decrypted with the store's key when it is encrypted.

A closed store is scrubbed with ``check_store``; an open one through the engine's own scrub
(``check_open``, what ``Engine.check`` runs) so the scan sees exactly what is on disk while it is
open. Either way the scrub must report no damage (``coverage``): every byte of every file was
explained by a record, zeros or a file the scrub searched whole, so nothing sealed escaped the
decoding. A test using it must first find its needles where they are (a positive control).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import Any

from hmsengine.engine.check import check_open, check_store
from hmsengine.engine.scrub import CheckReport, zstd_frames
from hmsengine.storage import tablesnap
from hmsengine.storage.keys import SealedCodec

Views = dict[str, list[bytes]]


def _raw_views(root: str, views: Views) -> None:
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, "rb") as f:
                data = f.read()
            views[rel].append(data)
            views[rel].extend(inner for _, inner in zstd_frames(data))


def _sink(views: Views) -> Any:
    def sink(file: str, offset: int, data: bytes) -> None:
        views[file].append(data)
    return sink


def closed_views(root: str, key: bytes | str | None = None) -> tuple[Views, CheckReport]:
    """Every view of every file of the closed store at ``root``, and the scrub's report."""
    views: Views = defaultdict(list)
    _raw_views(root, views)
    report = check_store(root, key=key, sink=_sink(views))
    return views, report


async def open_views(engine: Any, root: str | None) -> tuple[Views, CheckReport]:
    """The same for a store ``engine`` has open (``root`` None: an in-memory store)."""
    views: Views = defaultdict(list)
    if root is not None:
        _raw_views(root, views)
    report = await check_open(engine._core, engine._indexer, (), _sink(views))
    return views, report


def containing(views: Views, needles: list[bytes], *, fold: bool = False) -> dict[bytes, list[str]]:
    """For each needle found in any view, the files holding it; with ``fold``, ASCII case is
    ignored (for analyzed terms, which are lower case: "alic" is in "Alice")."""
    found: dict[bytes, list[str]] = {}
    for needle in needles:
        wanted = needle.lower() if fold else needle
        files = sorted(f for f, vs in views.items()
                       if any(wanted in (v.lower() if fold else v) for v in vs))
        if files:
            found[needle] = files
    return found


def coverage(report: CheckReport) -> None:
    """The scrub explained every byte: no damage, so no sealed record escaped decoding."""
    damage = [f for f in report.findings if f.absent is None]
    assert not damage, damage


def id_outside_tombstones(views: Views, doc_id: str, root: str,
                          key: bytes | None = None) -> list[str]:
    """Files whose decoded content holds ``doc_id`` other than as a content-free tombstone.

    The journal's payloads are parsed (an op naming the id must be a put of an empty text whose
    metadata is exactly the tombstone), the table snapshot is decoded with the project's code
    (the id's metadata must be the tombstone); any other file holding the id is listed.
    """
    needle = doc_id.encode()
    bad = []
    for file, vs in sorted(views.items()):
        holding = [v for v in vs if needle in v]
        if not holding:
            continue
        if file.endswith("journal.log") and all(_journal_view_ok(v, doc_id) for v in holding):
            continue
        if file.endswith(tablesnap.FILE_NAME) and _snapshot_ok(root, file, doc_id, key):
            continue
        bad.append(file)
    return bad


def _journal_view_ok(view: bytes, doc_id: str) -> bool:
    """A view of the journal: the raw file (its payloads are checked one by one, each as its own
    view) or one payload whose ops name the id only as a tombstone."""
    try:
        body = json.loads(view)
    except ValueError:
        return view.startswith(b"HMJ1")  # the whole file (raw or sealed): payloads checked apart
    ops = body.get("ops", []) if isinstance(body, dict) else []
    mentions = [op for op in ops if op.get("id") == doc_id]
    rest = json.dumps([op for op in ops if op.get("id") != doc_id])
    return doc_id not in rest and all(
        op.get("o") == "p" and op.get("t") == "" and set(op.get("m", {})) == {"_hms_tombstone"}
        and "e" not in op for op in mentions)


def _snapshot_ok(root: str, file: str, doc_id: str, key: bytes | None) -> bool:
    data = open(os.path.join(root, file), "rb").read()
    codec: Any = SealedCodec(_derived(root, key)) if key is not None else None
    from hmsengine.storage.codec import PLAIN

    snap = tablesnap.decode(codec or PLAIN, file.encode(), data, file)
    if snap is None:
        return False
    return all(meta is not None and meta.startswith('{"_hms_tombstone":')
               for i, meta in zip(snap.ids, snap.metadata, strict=True) if i == doc_id)


def _derived(root: str, key: bytes) -> bytes:
    from hmsengine.storage.keys import open_encryption
    from hmsengine.storage.manifest import StoreFormat

    fmt = StoreFormat.from_json(open(os.path.join(root, "format.json"), "rb").read(), where=root)
    assert fmt.encryption is not None
    return open_encryption(key, fmt.encryption, fmt.store_id)
