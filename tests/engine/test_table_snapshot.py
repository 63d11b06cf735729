"""The table snapshot written at a clean close: the next open starts from it and replays only
the journal after it; a damaged or mismatched snapshot is ignored (full replay), never trusted."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from hmsengine import Engine
from hmsengine.storage.journal import JournalFile

SNAP = os.path.join("gen-00000001", "table.snap")


async def _fill(path: Path) -> None:
    async with Engine.open(path, clock=lambda: 777) as engine:
        await engine.put_documents([{"id": f"d{i}", "text": f"snapshot text {i}",
                                     "metadata": {"n": i} if i % 2 else None,
                                     "embedding": [float(i), 1.0, 0.5] if i % 3 == 0 else None}
                                    for i in range(200)])
        await engine.delete_document("d5")
        await engine.delete_document("d6", purge=True)  # a tombstone (and a new generation)


async def _state(engine: Engine) -> dict:
    out = {}
    for doc_id, _ in engine.scan_metadata():
        doc = await engine.get_document(doc_id)
        out[doc_id] = None if doc is None else (doc.text, doc.metadata, None if doc.embedding is None
                                                else tuple(np.round(doc.embedding, 6)))
    return {"docs": out, "revision": engine.revision, "tombstones": engine.tombstones(),
            "hits": [h.id for h in await engine.search_documents("snapshot text 7", k=5)]}


async def test_reopen_uses_the_snapshot_and_replays_only_the_tail(tmp_path: Path) -> None:
    store = tmp_path / "s"
    await _fill(store)
    async with Engine.open(store) as engine:
        generation = engine._core.generation
        assert engine.statistics().table_snapshot_documents > 0
        before = await _state(engine)
        await engine.put_document("tail", "written after the snapshot")
        await engine.delete_document("d7")
        # Die without a clean close: no checkpoint, no new snapshot.
        engine._core.dirty = False
        engine._core.write_table_snapshot = lambda: None
    assert (store / generation / "table.snap").exists()
    async with Engine.open(store) as engine:
        assert engine.statistics().table_snapshot_documents == len(before["docs"])
        after = await _state(engine)
        assert after["docs"]["tail"][0] == "written after the snapshot" and "d7" not in after["docs"]
        expected = dict(before["docs"], tail=after["docs"]["tail"])
        del expected["d7"]
        assert after["docs"] == expected and after["tombstones"] == before["tombstones"]
        assert after["revision"] == before["revision"] + 2


async def test_damaged_or_mismatched_snapshot_is_ignored(tmp_path: Path) -> None:
    store = tmp_path / "s"
    await _fill(store)
    async with Engine.open(store) as engine:
        generation = engine._core.generation
        expected = await _state(engine)
    snap = store / generation / "table.snap"
    original = snap.read_bytes()
    for damage in (lambda b: b[:100] + bytes([b[100] ^ 1]) + b[101:], lambda b: b[:-10], lambda b: b"x" * 40):
        snap.write_bytes(damage(original))
        async with Engine.open(store) as engine:
            assert engine.statistics().table_snapshot_documents == 0  # full replay
            assert await _state(engine) == expected
        snap.write_bytes(original)
    # A snapshot of another store (same generation name, another journal): ignored.
    other = tmp_path / "other"
    await _fill(other)
    async with Engine.open(other) as engine:
        await engine.put_document("other-only", "not in the first store")
    snap.write_bytes((other / generation / "table.snap").read_bytes())
    async with Engine.open(store) as engine:
        assert engine.statistics().table_snapshot_documents == 0
        assert await _state(engine) == expected


async def test_an_older_snapshot_still_covers_its_prefix(tmp_path: Path) -> None:
    store = tmp_path / "s"
    await _fill(store)
    async with Engine.open(store) as engine:
        generation = engine._core.generation
    old = (store / generation / "table.snap").read_bytes()
    async with Engine.open(store) as engine:
        for i in range(50):
            await engine.put_document(f"late{i}", f"late text {i}")
        await engine.delete_document("d1")
        expected = await _state(engine)
    (store / generation / "table.snap").write_bytes(old)  # as if the last close wrote none
    async with Engine.open(store) as engine:
        assert engine.statistics().table_snapshot_documents > 0
        assert await _state(engine) == expected


async def test_encrypted_snapshot_holds_no_plaintext(tmp_path: Path) -> None:
    store = tmp_path / "enc"
    async with Engine.open(store, key="correct horse battery staple") as engine:
        await engine.put_document("secret-id-1", "text", metadata={"note": "plaintext-marker-xyz"})
    snaps = list(store.rglob("table.snap"))
    assert snaps and b"plaintext-marker-xyz" not in snaps[0].read_bytes()
    async with Engine.open(store, key="correct horse battery staple") as engine:
        assert engine.statistics().table_snapshot_documents == 1
        doc = await engine.get_document("secret-id-1")
        assert doc is not None and doc.metadata == {"note": "plaintext-marker-xyz"}


async def test_a_session_that_changed_nothing_keeps_the_snapshot(tmp_path: Path) -> None:
    """A close after reads only leaves table.snap as it was (not encoded again); a session that
    writes, deletes or purges rewrites it, and each reopen starts from a snapshot that holds it."""
    store = tmp_path / "s"
    await _fill(store)
    async with Engine.open(store) as engine:
        generation = engine._core.generation
        expected = await _state(engine)
        live = engine.statistics().documents
    snap = store / generation / "table.snap"
    before = snap.stat()
    async with Engine.open(store) as engine:
        assert engine.statistics().table_snapshot_documents > 0
        assert await _state(engine) == expected
        await engine.search_documents("snapshot", k=3)
    after = snap.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)

    async with Engine.open(store) as engine:
        await engine.put_document("new", "written in the second session")
    assert snap.stat().st_ino != after.st_ino
    async with Engine.open(store) as engine:
        assert engine.statistics().table_snapshot_documents == len(expected["docs"]) + 1
        await engine.delete_document("d8")  # a delete alone also rewrites it
    async with Engine.open(store) as engine:
        assert engine.statistics().table_snapshot_documents == len(expected["docs"])
        assert await engine.get_document("d8") is None
        assert (await engine.get_document("new")).text == "written in the second session"
        await engine.delete_document("d9", purge=True)
        generation = engine._core.generation
    async with Engine.open(store) as engine:
        assert engine._core.generation == generation
        assert engine.statistics().table_snapshot_documents > 0  # the purge's tombstone is a row
        assert await engine.get_document("d9") is None
        assert "d9" in engine.tombstones() and engine.statistics().documents == live - 1


async def test_reopen_checks_the_snapshots_digest_and_replays_what_follows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reopen from a matching table snapshot reads the 4 KiB of journal its digest covers to
    check it, then the journal, and replays only the frames written after the snapshot; without
    a snapshot it reads and replays the whole journal."""
    store = tmp_path / "s"
    await _fill(store)
    async with Engine.open(store) as engine:
        for batch in range(10):  # journal bytes the snapshot covers: frames of incompressible text
            await engine.put_documents([{"id": f"more{batch}-{i}", "text": os.urandom(300).hex()}
                                        for i in range(20)])
    reads: list[tuple[int, int]] = []
    real = JournalFile.read_at

    def read_at(self: JournalFile, offset: int, length: int) -> bytes:
        out = real(self, offset, length)
        reads.append((offset, len(out)))
        return out

    monkeypatch.setattr(JournalFile, "read_at", read_at)
    async with Engine.open(store) as engine:
        generation = engine._core.generation
        journal = store / generation / "journal.log"
        covered = engine._core.journal.size()
        assert engine.statistics().table_snapshot_documents > 0
        assert covered > 3 * 4096 and (covered - 4096, 4096) in reads and (0, covered) in reads
        await engine.put_document("tail", "written after the snapshot")
        engine._core.dirty = False  # die without a clean close: the snapshot stays behind
        engine._core.write_table_snapshot = lambda: None
    size = os.path.getsize(journal)
    reads.clear()
    async with Engine.open(store) as engine:
        assert (covered - 4096, 4096) in reads and (0, size) in reads  # the digest, the journal
        assert (await engine.get_document("tail")).text == "written after the snapshot"
        expected = await _state(engine)
    (store / generation / "table.snap").unlink()
    reads.clear()
    whole = os.path.getsize(journal)
    async with Engine.open(store) as engine:
        assert engine.statistics().table_snapshot_documents == 0
        assert (0, whole) in reads and await _state(engine) == expected  # the whole journal
