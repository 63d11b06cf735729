"""Tombstones: a purged id is remembered (content-free), read as absent, and survives compaction
and reopening; a later put may reuse the id."""

from __future__ import annotations

from pathlib import Path

import pytest

from hmsengine import Engine, InvalidRequest


async def test_purge_leaves_a_content_free_tombstone_that_reads_as_absent(tmp_path: Path) -> None:
    store = tmp_path / "s"
    async with Engine.open(store, clock=lambda: 1234) as engine:
        await engine.put_document("keep", "tea and biscuits")
        await engine.put_document("gone", "tea secret recipe", embedding=[1.0, 0.0])
        assert await engine.delete_document("gone", purge=True)
        assert engine.tombstones() == {"gone": 1234}
        assert await engine.get_document("gone") is None and not await engine.has_document("gone")
        assert [h.id for h in await engine.search_documents("tea")] == ["keep"]
        assert [h.id for h in await engine.search_documents("tea", embedding=[1.0, 0.0])] == ["keep"]
        stats = engine.statistics()
        assert (stats.documents, stats.tombstones) == (1, 1)
        # Deleting a tombstoned id deletes nothing and keeps the tombstone.
        assert not await engine.delete_document("gone")
        assert await engine.transact(deletes=["gone", "keep"]) == [False, True]
        assert "gone" in engine.tombstones()
    async with Engine.open(store) as engine:  # replayed from the journal
        assert engine.tombstones() == {"gone": 1234}
        await engine.compact()
    async with Engine.open(store) as engine:  # carried through a compaction
        assert engine.tombstones() == {"gone": 1234}
        assert await engine.get_document("gone") is None
        await engine.put_document("gone", "a new document under the old id")
        assert engine.tombstones() == {}
        doc = await engine.get_document("gone")
        assert doc is not None and doc.text == "a new document under the old id"
    for path in store.rglob("*"):
        if path.is_file():
            assert b"secret recipe" not in path.read_bytes(), path


async def test_transact_tombstones_and_reserved_key() -> None:
    async with Engine.open(None, clock=lambda: 50) as engine:
        await engine.put_documents([{"id": "a", "text": "alpha"}, {"id": "b", "text": "beta"}])
        results = await engine.transact(puts=[{"id": "c", "text": "gamma"}],
                                        tombstones=["a", ("b", 7), "never-existed"])
        assert len(results) == 4
        assert engine.tombstones() == {"a": 50, "b": 7, "never-existed": 50}
        assert engine.statistics().documents == 1
        with pytest.raises(InvalidRequest, match="reserved"):
            await engine.put_document("x", "t", metadata={"_hms_tombstone": 1})
        with pytest.raises(InvalidRequest, match="appears twice"):
            await engine.transact(deletes=["c"], tombstones=["c"])
        with pytest.raises(InvalidRequest, match="pair"):
            await engine.transact(tombstones=[("c", "later")])  # type: ignore[list-item]
        # Deleting nothing live with purge writes no tombstone (there was nothing to forget).
        assert not await engine.delete_document("zzz", purge=True)
        assert "zzz" not in engine.tombstones()
