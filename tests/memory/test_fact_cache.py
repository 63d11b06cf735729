"""The shared fact cache and the batched reads behind recall: a cached fact is always what a
fresh read gives (across remember, supersede, forget, raw document writes and reopen), a batch
read gives what one-by-one reads give, and the cache stays within its byte budget."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from hmsengine import Engine, ForgetScope, InvalidRequest, Memory, RecallHit
from hmsengine.memory.facts import FactCache, fact_bytes
from hmsengine.memory.values import cached_recall_hits, recall_hit


async def fresh(memory: Memory, doc_id: str) -> Any:
    """What a read of ``doc_id`` gives with nothing cached."""
    memory.core.state.facts.clear()
    return await memory.fact(doc_id)


async def assert_cache_exact(memory: Memory) -> None:
    """Every cached fact equals a fresh read of it (the cache never serves a stale value)."""
    cached = dict(memory.core.state.facts.facts)
    for doc_id, fact in cached.items():
        assert await fresh(memory, doc_id) == fact, doc_id
    for doc_id in cached:  # refill, so the next check starts from the same state
        await memory.fact(doc_id)


async def test_cache_exact_across_supersede_forget_and_raw_writes(store_path: str | None) -> None:
    """Supersession, forget (newest, middle, relinked), raw put/delete of a fact's id and a
    re-remembered target never leave a stale fact in the cache."""
    async with Engine.open(store_path) as engine:
        memory = Memory(engine)
        a = await memory.remember("alice lives in paris", subject="alice/city")
        b = await memory.remember("alice lives in rome", subject="alice/city", supersedes=[a.id])
        c = await memory.remember("alice lives in oslo", subject="alice/city", supersedes=[b.id])
        other = await memory.remember("bob lives in lima", metadata={"tags": ["x"]})
        ids = [a.id, b.id, c.id, other.id]
        await memory.facts(ids)
        await assert_cache_exact(memory)
        # A middle version forgotten: its successor is relinked to what it superseded.
        await memory.forget(ForgetScope.ids([b.id]))
        assert (await memory.fact(c.id)).supersedes == (a.id,)
        await assert_cache_exact(memory)
        # A raw delete of a superseded fact (no relink): the successor's links shrink.
        await memory.facts(ids)
        await engine.delete_document(a.id)
        assert (await memory.fact(c.id)).supersedes == ()
        await assert_cache_exact(memory)
        # The target comes back under the same id: the successor's link is live again.
        await memory.fact(c.id)
        a2 = await memory.remember("alice lives in paris", subject="alice/city")
        assert a2.id == a.id
        assert (await memory.fact(c.id)).supersedes == (a.id,)
        await assert_cache_exact(memory)
        # A raw write over a fact's id replaces what recall and get return.
        await memory.fact(other.id)
        await engine.put_document(other.id, "bob lives in quito")
        fact = await memory.fact(other.id)
        assert fact.text == "bob lives in quito" and fact.metadata is None
        await assert_cache_exact(memory)
        hits = await memory.recall("bob quito")
        assert [h.fact.text for h in hits] == ["bob lives in quito"]
        # The newest version forgotten: its predecessor is current again, the rest unchanged.
        await memory.facts(ids)
        await memory.forget(ForgetScope.ids([c.id]))
        assert await memory.fact(c.id) is None
        assert [h.fact.id for h in await memory.recall("alice paris")] == [a.id]
        await assert_cache_exact(memory)


async def test_cache_exact_after_reopen(disk_path: str) -> None:
    """A reopened store starts with an empty cache and reads what was committed last."""
    async with Engine.open(disk_path) as engine:
        memory = Memory(engine)
        r = await memory.remember("the walrus sleeps", id="w")
        await memory.recall("walrus")
        await engine.put_document("w", "the walrus swims")
    async with Engine.open(disk_path) as engine:
        memory = Memory(engine)
        assert len(memory.core.state.facts) == 0
        hits = await memory.recall("walrus")
        assert [(h.fact.id, h.fact.text) for h in hits] == [(r.id, "the walrus swims")]
        assert (await memory.recall("walrus"))[0].fact == hits[0].fact
        await assert_cache_exact(memory)


async def test_batched_facts_equal_one_by_one(store_path: str | None) -> None:
    """``facts(ids)`` gives, in order, what ``fact`` gives for each id (None for an unknown or
    forgotten one, plain documents as plain facts), whether cached or not."""
    async with Engine.open(store_path) as engine:
        memory = Memory(engine)
        results = await memory.remember_many(
            [{"text": f"otter fact {i}", "entities": ["zoo"], "metadata": {"n": i}} for i in range(20)])
        await engine.put_document("raw", "a plain otter document", metadata={"k": [1, 2]})
        await memory.forget(ForgetScope.ids([results[3].id]))
        ids = [r.id for r in results] + ["raw", "nope", results[5].id]
        one_by_one = [await fresh(memory, i) for i in ids]
        memory.core.state.facts.clear()
        assert await memory.facts(ids) == one_by_one  # all misses: one get_documents call
        assert await memory.facts(ids) == one_by_one  # now cached
        assert one_by_one[3] is None and one_by_one[-2] is None
        assert one_by_one[20].kind == "fact" and one_by_one[20].metadata == {"k": [1, 2]}


async def test_metadata_of_a_cached_fact_is_never_shared(store_path: str | None) -> None:
    """Mutating the metadata a read returned changes neither the cache nor later reads."""
    async with Engine.open(store_path) as engine:
        memory = Memory(engine)
        r = await memory.remember("heron facts", metadata={"tags": ["a"], "deep": {"x": 1}})
        first = await memory.fact(r.id)  # a miss: read and cached
        first.metadata["tags"].append("mutated")
        first.metadata["deep"]["x"] = 2
        second = (await memory.recall("heron"))[0].fact  # a hit
        assert second.metadata == {"tags": ["a"], "deep": {"x": 1}}
        second.metadata["new"] = True
        assert (await memory.fact(r.id)).metadata == {"tags": ["a"], "deep": {"x": 1}}


async def test_get_documents_equals_get_document(store_path: str | None) -> None:
    """``get_documents`` gives what ``get_document`` gives per id, None for a missing, deleted
    or purged id, and validates every id."""
    async with Engine.open(store_path) as engine:
        await engine.put_documents([{"id": f"d{i}", "text": f"text {i}", "metadata": {"i": i},
                                     "embedding": [float(i), 1.0]} for i in range(5)])
        await engine.put_document("big", "x" * 300_000)  # read as get_document reads it
        await engine.delete_document("d1")
        await engine.delete_document("d2", purge=True)
        ids = ["d0", "d1", "d2", "d3", "big", "missing", "d3"]
        assert await engine.get_documents(ids) == [await engine.get_document(i) for i in ids]
        assert await engine.get_documents([]) == []
        with pytest.raises(InvalidRequest, match=r"ids\[1\]"):
            await engine.get_documents(["d0", ""])
        with pytest.raises(InvalidRequest):
            await engine.get_documents("d0")  # type: ignore[arg-type]


def test_cache_is_bounded_in_bytes() -> None:
    """The cache drops the oldest facts past its byte budget, keeps its byte count exact
    through puts, replacements and pops, and never caches a fact over an eighth of it."""
    from hmsengine.memory.values import Fact

    def make(i: int, size: int) -> Fact:
        return Fact(id=f"f{i}", text="x" * size, kind="fact", namespace="default", subject=None,
                    entities=(), metadata=None, embedding=None, event_time=None, valid_from=None,
                    valid_to=None, ingest_time=0, supersedes=(), sources=(), actor=None,
                    importance=None)

    cache = FactCache(limit=64 * 1024)
    for i in range(200):
        cache.put(make(i, 500))
        assert cache.bytes <= cache.limit
        assert cache.bytes == sum(fact_bytes(f) for f in cache.facts.values())
    assert 0 < len(cache) < 200 and "f199" in cache.facts and "f0" not in cache.facts
    cache.put(make(199, 2000))  # a replacement is counted once, at its new size
    cache.pop("f198")
    assert cache.bytes == sum(fact_bytes(f) for f in cache.facts.values())
    assert cache.facts["f199"].text == "x" * 2000 and "f198" not in cache.facts
    cache.put(make(999, 10_000))
    assert "f999" not in cache.facts
    assert fact_bytes(make(1, 1000)) > fact_bytes(make(1, 10))


async def test_recall_reads_every_hit_once_per_batch(store_path: str | None) -> None:
    """Recall reads its uncached hits in one engine call, then serves them from the cache."""
    async with Engine.open(store_path) as engine:
        memory = Memory(engine)
        await memory.remember_many([{"text": f"lynx note {i}"} for i in range(30)])
        calls: list[int] = []
        real = engine.get_documents

        async def counting(ids: list[str]) -> Any:
            calls.append(len(ids))
            return await real(ids)

        engine.get_documents = counting  # type: ignore[method-assign]
        first = await memory.recall("lynx", k=10)
        again = await memory.recall("lynx", k=10)
        assert calls == [10]
        assert [(h.fact, h.score) for h in again] == [(h.fact, h.score) for h in first]
        search = await engine.search_documents("lynx", k=10)
        assert [(h.fact.id, h.score) for h in first] == [(h.id, h.score) for h in search]


def test_recall_hit_builds_the_same_value() -> None:
    """``recall_hit`` and ``cached_recall_hits`` build RecallHits equal to the constructor's;
    the latter gives None when a fact is missing or has metadata to copy."""
    from hmsengine.memory.values import Fact

    fact = Fact(id="a", text="t", kind="fact", namespace="default", subject=None, entities=(),
                metadata=None, embedding=None, event_time=None, valid_from=None, valid_to=None,
                ingest_time=1, supersedes=(), sources=(), actor=None, importance=None)
    hit = recall_hit(fact, 1.5, "current")
    assert hit == RecallHit(fact=fact, score=1.5, status="current")
    assert type(hit) is RecallHit and hit.explanation is None
    with pytest.raises(AttributeError):
        hit.score = 2.0  # type: ignore[misc]
    hits = [("a", 2.0), ("a", 1.0)]  # (id, score) pairs, as Engine.search_ids gives them
    assert cached_recall_hits(hits, {"a": fact}, "current") == \
        [RecallHit(fact=fact, score=2.0, status="current"),
         RecallHit(fact=fact, score=1.0, status="current")]
    assert cached_recall_hits(hits, {}, "current") is None
    with_metadata = attrs.evolve(fact, metadata={"m": 1})
    assert cached_recall_hits(hits, {"a": with_metadata}, "current") is None


def test_make_fact_builds_the_constructors_value() -> None:
    """``make_fact`` takes every field of Fact, in its order, and builds the same frozen value,
    every field set (a field added to Fact without it fails here)."""
    import inspect

    from hmsengine.memory.values import Fact, FileRef, make_fact

    names = [a.name for a in attrs.fields(Fact)]
    assert list(inspect.signature(make_fact).parameters) == names
    values = dict(zip(names, [f"v{n}" for n in range(len(names))], strict=True))
    values.update(entities=("e",), metadata={"m": [1]}, embedding=(0.5,), supersedes=("s",),
                  file=FileRef(uri="file:///x", offset=0, length=1, format="text", sha256="0" * 64,
                               size=1, mtime=2, summary=None))
    made = make_fact(**values)
    assert type(made) is Fact and made == Fact(**values)
    assert all(getattr(made, name) is values[name] for name in names)
    with pytest.raises(AttributeError):
        made.text = "other"  # type: ignore[misc]


async def test_fewer_candidates_give_the_same_recall(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking search for 3k candidates first (all of them only when too few survive) returns
    exactly what examining all candidate_limit candidates returns, for every history mode,
    filter, known_at and k, including queries where most candidates are not current."""
    import random

    from hmsengine.memory import recall as recall_module

    rng = random.Random(7)
    words = ["heron", "otter", "lynx", "walrus", "ibis", "crane", "newt", "vole"]
    now = 1_700_000_000_000
    async with Engine.open(None, clock=lambda: now) as engine:
        memory = Memory(engine)
        inputs: list[dict[str, Any]] = []
        for i in range(600):
            item: dict[str, Any] = {
                "text": " ".join(rng.choice(words) for _ in range(rng.randint(3, 8))) + f" n{i}",
                "id": f"f{i:04d}", "subject": f"s{i // 4}", "entities": [f"e{i % 3}"],
                "event_time": now - rng.randint(0, 10**9)}
            roll = rng.random()
            if roll < 0.5 and i % 4:
                item["supersedes"] = [f"f{i - 1:04d}"]  # most facts superseded: few survive
            elif roll < 0.7:
                item["valid_from"], item["valid_to"] = now - 10**8, now - 10**6
            inputs.append(item)
        await memory.remember_many(inputs)
        cases = []
        for query in ["heron", "otter lynx", "walrus ibis crane", "vole newt heron otter"]:
            for k in (1, 3, 10, 40):
                for options in ({}, {"entity": "e1"}, {"history": "historical"},
                                {"history": "all"}, {"known_at": now - 1},
                                {"entity": "e2", "history": "historical", "candidate_limit": 50},
                                {"as_of": now - 5 * 10**8}):
                    cases.append((query, k, options))
        asked: list[int] = []
        search = engine.search_ids  # what recall ranks with when no explanation is asked

        async def counting(query: str, **options: Any) -> Any:
            asked.append(options["k"])
            return await search(query, **options)

        engine.search_ids = counting  # type: ignore[method-assign]
        fast = [await memory.recall(q, k=k, **o) for q, k, o in cases]
        engine.search_ids = search  # type: ignore[method-assign]
        # Both paths ran: answers from 3k candidates, and fallbacks to all of them.
        assert 9 in asked and 30 in asked and asked.count(100) > 0 and len(asked) > len(cases)
        monkeypatch.setattr(recall_module, "FIRST_CANDIDATES", 10**6)
        full = [await memory.recall(q, k=k, **o) for q, k, o in cases]
        for case, a, b in zip(cases, fast, full, strict=True):
            assert [(h.fact.id, h.score, h.status) for h in a] == \
                [(h.fact.id, h.score, h.status) for h in b], case
        assert any(len(a) for a in fast)


async def test_default_path_with_explicit_default_options(store_path: str | None) -> None:
    """Explicit default options give search's answer, and invalid ones are still refused."""
    async with Engine.open(store_path) as engine:
        memory = Memory(engine)
        await memory.remember_many([{"text": f"gecko note {i} " + "gecko " * (i % 4)}
                                    for i in range(40)])
        search = [(h.id, h.score) for h in await engine.search_documents("gecko", k=7)]
        for options in ({"k": 7}, {"k": 7, "history": "all", "candidate_limit": 5},
                        {"k": 7, "explain": False, "history": "current"}):
            hits = await memory.recall("gecko", **options)
            assert [(h.fact.id, h.score) for h in hits] == search, options
            assert all(h.status == "current" and h.explanation is None for h in hits)
        explained = await memory.recall("gecko", k=7, explain=True)
        assert all(h.explanation is not None for h in explained)
        for bad in ({"k": 0}, {"k": True}, {"k": 7, "candidate_limit": 0},
                    {"k": 7, "history": "sometimes"}, {"k": 7, "limit": 3}):
            with pytest.raises(InvalidRequest):
                await memory.recall("gecko", **bad)
