"""Filtered recall reuses what search resolved for a subject or entity filter, and never
serves a stale answer: every write changes the snapshot or the frozen member set."""

from __future__ import annotations

from hmsengine import Engine, ForgetScope


async def test_entity_filter_follows_every_write() -> None:
    async with Engine.open(None) as engine:
        memory = engine.memory()
        await memory.remember_many([{"text": f"walrus fact {i}", "entities": ["zoo"] if i % 2 else ["sea"]}
                                    for i in range(3000)])
        first = await memory.recall("walrus", entity="zoo", k=5)
        again = await memory.recall("walrus", entity="zoo", k=5)
        assert [h.fact.id for h in first] == [h.fact.id for h in again] and len(first) == 5
        assert memory.index.frozen("entity", "zoo") is memory.index.frozen("entity", "zoo")
        # A new member that outranks the rest comes back at once.
        new = await memory.remember("walrus walrus walrus", entities=["zoo"])
        assert (await memory.recall("walrus", entity="zoo", k=5))[0].fact.id == new.id
        # A fact of another entity never leaks in, and a forgotten member is gone.
        other = await memory.remember("walrus walrus walrus walrus", entities=["sea"])
        hits = await memory.recall("walrus", entity="zoo", k=5)
        assert other.id not in {h.fact.id for h in hits}
        await memory.forget(ForgetScope.ids([new.id]))
        assert new.id not in {h.fact.id for h in await memory.recall("walrus", entity="zoo", k=5)}


async def test_search_with_frozenset_ids_is_recomputed_after_a_write() -> None:
    async with Engine.open(None) as engine:
        await engine.put_documents([{"id": f"d{i}", "text": f"otter {i}"} for i in range(3000)])
        ids = frozenset(f"d{i}" for i in range(0, 3000, 2)) | {"later"}
        before = await engine.search_documents("otter", k=3, ids=ids)
        assert all(int(h.id[1:]) % 2 == 0 for h in before)
        assert [h.id for h in await engine.search_documents("otter", k=3, ids=ids)] == [h.id for h in before]
        await engine.put_document("later", "otter otter otter")
        assert (await engine.search_documents("otter", k=3, ids=ids))[0].id == "later"
        await engine.delete_document("later")
        assert "later" not in {h.id for h in await engine.search_documents("otter", k=3, ids=ids)}


async def test_a_filter_asked_again_survives_a_stream_of_one_off_filters() -> None:
    """The resolved-filter cache drops the least recently used entry, so a frozenset filter
    that keeps being asked stays cached while more one-off filters than fit pass through."""
    from hmsengine.engine import readers

    async with Engine.open(None) as engine:
        await engine.put_documents([{"id": f"d{i}", "text": f"otter word{i}"} for i in range(300)])
        hot = frozenset(f"d{i}" for i in range(0, 300, 2))
        want = await engine.search_documents("otter", k=5, ids=hot)
        cache = engine._indexer.snapshot.memo("filters")
        resolved = cache["ids", id(hot)][1]
        for n in range(3 * readers.FILTER_CACHE_SIZE):
            await engine.search_documents("otter", k=3, ids=frozenset({f"d{n % 300}", "d1"}))
            if n % 8 == 0:
                assert await engine.search_documents("otter", k=5, ids=hot) == want
        cache = engine._indexer.snapshot.memo("filters")  # the current snapshot's
        assert len(cache) <= readers.FILTER_CACHE_SIZE
        # Resolved once and never evicted (first-in-first-out would have dropped it by now).
        assert cache["ids", id(hot)][0] is hot and cache["ids", id(hot)][1] is resolved
