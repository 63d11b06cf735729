"""The memory API's guarantees: supersession over time, known_at, retries, atomic batches,
determinism, forget semantics, explanations, the default path equal to search."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import random

import pytest

from hmsengine import (
    Conflict,
    Engine,
    ForgetScope,
    InvalidRequest,
    Memory,
    MemoryConfig,
    NotFound,
    RememberInput,
)

UTC = dt.UTC
DAY = 86_400_000


class Clock:
    """A test clock: starts at a fixed ms and advances by one ms per reading."""

    def __init__(self, start: int = 1_700_000_000_000) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 1
        return self.now


async def test_seed_quick_start():
    """The seed's quick start: recall now gives Berlin, as_of 2020 Paris; explain; forget."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        await memory.remember("Alice lives in Paris", id="home-1", subject="alice/city",
                              valid_from=1_577_836_800_000)
        await memory.remember("Alice lives in Berlin", id="home-2", valid_from=1_735_689_600_000,
                              supersedes=["home-1"])
        now = await memory.recall("where does Alice live")
        assert [h.fact.id for h in now] == ["home-2"]
        then = await memory.recall("where does Alice live", as_of=1_600_000_000_000)
        assert [h.fact.id for h in then] == ["home-1"]
        why = await memory.explain("where does Alice live", "home-1")
        assert why.status == "superseded" and why.rank is None and why.chain == ("home-1", "home-2")
        report = await memory.forget(ForgetScope.subject("alice/city"))
        assert report.removed == ("home-1",)
        assert await memory.get("home-1") is None

    async with Engine.open(None) as engine:
        memory = Memory(engine, {"supersession": "latest-by-subject"})
        await memory.remember("Alice lives in Paris", subject="alice/city",
                              valid_from=dt.datetime(2020, 1, 1, tzinfo=UTC))
        await memory.remember("Alice lives in Berlin", subject="alice/city",
                              valid_from=dt.datetime(2025, 1, 1, tzinfo=UTC))
        assert [h.fact.text for h in await memory.recall("where does Alice live")] == \
            ["Alice lives in Berlin"]
        assert [h.fact.text for h in await memory.recall(
            "where does Alice live", as_of=dt.datetime(2021, 6, 1, tzinfo=UTC))] == ["Alice lives in Paris"]


SLOT = [("Alice lives in Paris", 100 * DAY), ("Alice lives in Rome", 200 * DAY),
        ("Alice lives in Oslo", 300 * DAY), ("Alice lives in Lima", 400 * DAY)]
PROBES = [50 * DAY, 100 * DAY, 150 * DAY, 200 * DAY, 250 * DAY, 300 * DAY, 350 * DAY, 500 * DAY]


def expected_current(t: int) -> str | None:
    begun = [text for text, start in SLOT if start <= t]
    return begun[-1] if begun else None


async def test_latest_by_subject_every_arrival_order():
    """All 24 arrival orders of four facts in one slot give the right current fact at 8 times."""
    for order in itertools.permutations(range(4)):
        async with Engine.open(None, clock=Clock()) as engine:
            memory = Memory(engine, {"supersession": "latest-by-subject"})
            for i in order:
                text, start = SLOT[i]
                await memory.remember(text, subject="alice/city", valid_from=start)
            for t in PROBES:
                hits = await memory.recall("Alice lives", as_of=t, k=10)
                got = [h.fact.text for h in hits]
                want = expected_current(t)
                assert got == ([want] if want else []), (order, t, got)
                assert all(h.status == "current" for h in hits)
            history = await memory.recall("Alice lives", history="all", k=10, as_of=500 * DAY)
            assert sorted(h.status for h in history) == ["current", "superseded", "superseded", "superseded"]


async def test_known_at_ignores_later_facts_and_supersessions():
    """known_at hides facts ingested later, and the supersessions they would cause."""
    clock = Clock()
    async with Engine.open(None, clock=clock) as engine:
        memory = Memory(engine)
        await memory.remember("Bob works at Acme", id="job-1", valid_from=10 * DAY)
        known = clock.now
        clock.now += 1000
        await memory.remember("Bob works at Initech", id="job-2", valid_from=20 * DAY,
                              supersedes=["job-1"])
        hits = await memory.recall("Bob works", as_of=30 * DAY, known_at=known)
        assert [(h.fact.id, h.status) for h in hits] == [("job-1", "current")]
        hits = await memory.recall("Bob works", as_of=30 * DAY)
        assert [h.fact.id for h in hits] == ["job-2"]
        hits = await memory.recall("Bob works", as_of=30 * DAY, history="all")
        assert {(h.fact.id, h.status) for h in hits} == {("job-1", "superseded"), ("job-2", "current")}
        explanation = await memory.explain("Bob works", "job-2", known_at=known)
        assert explanation.known is False and explanation.rank is None


async def test_statuses():
    """not-yet-valid before valid_from, expired at valid_to, superseded, current."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        await memory.remember("the offer is valid", id="offer", valid_from=10 * DAY, valid_to=20 * DAY)
        for t, status in ((5 * DAY, "not-yet-valid"), (10 * DAY, "current"), (19 * DAY, "current"),
                          (20 * DAY, "expired")):
            hits = await memory.recall("offer", as_of=t, history="all")
            assert [h.status for h in hits] == [status]
        assert await memory.recall("offer", as_of=25 * DAY) == []
        hits = await memory.recall("offer", as_of=25 * DAY, history="historical")
        assert [h.fact.id for h in hits] == ["offer"]


async def test_idempotent_retries_and_conflicts():
    """Same id and payload: created False, nothing written, first ingest time kept; a different
    payload is Conflict; an id-less retry stores one fact."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        first = await memory.remember("tea at five", id="t", subject="habit")
        fact = await memory.get("t")
        revision = engine.revision
        again = await memory.remember("tea at five", id="t", subject="habit")
        assert first.created and not again.created and engine.revision == revision
        assert (await memory.get("t")).ingest_time == fact.ingest_time
        with pytest.raises(Conflict):
            await memory.remember("coffee at five", id="t", subject="habit")
        a = await memory.remember("no id given")
        b = await memory.remember("no id given")
        assert a.id == b.id and a.created and not b.created
        assert engine.statistics().documents == 2


async def test_remember_many_is_atomic():
    """One bad input (or a conflict) stores nothing; a good batch is one transaction."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        bad = [RememberInput(text="fine"), RememberInput(text="bad kind", kind="opinion")]
        with pytest.raises(InvalidRequest, match=r"inputs\[1\]\.kind"):
            await memory.remember_many(bad)
        await memory.remember("held", id="x")
        with pytest.raises(Conflict):
            await memory.remember_many([RememberInput(text="new"), RememberInput(text="other", id="x")])
        assert engine.statistics().documents == 1
        revision = engine.revision
        results = await memory.remember_many([RememberInput(text=f"fact {i}") for i in range(10)])
        assert all(r.created for r in results) and engine.revision == revision + 1


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.remember("t", valid_from=dt.datetime(2020, 1, 1)), "valid_from"),
        (lambda m: m.remember("t", valid_from=10, valid_to=10), "valid_to"),
        (lambda m: m.remember("t", kind="opinion"), "kind"),
        (lambda m: m.remember("t", supersedes=["missing"]), "supersedes"),
        (lambda m: m.remember("t", metadata={"_hms": 1}), "metadata._hms"),
        (lambda m: m.remember("x" * (64 * 1024 + 1)), "text"),
        (lambda m: m.remember("w " * 4097), "text"),
        (lambda m: m.recall("q", kinds=()), "kinds"),
        (lambda m: m.recall("q", candidate_limit=1001), "candidate_limit"),
        (lambda m: m.recall("q", as_of=dt.datetime(2020, 1, 1)), "as_of"),
        (lambda m: m.recall("q", history="some"), "history"),
        (lambda m: m.recall(5), "query"),
        (lambda m: m.recall(5, k=3, history="all"), "query"),
        (lambda m: m.recall("q", history=["current"]), "history"),
        # A filter that matches nothing must not let an oversized query through (found by the
        # OpenAPI fuzz: a namespace no fact has, a query over 64 KiB, answered 200 with []).
        (lambda m: m.recall("; " + "*" * 70_000, namespace="\x1e*"), "query"),
        (lambda m: m.recall("; " + "*" * 70_000, subject="nobody", k=3), "query"),
        (lambda m: m.recall("\ud800", namespace="none"), "query"),
        (lambda m: m.explain("; " + "*" * 70_000, "no-such-fact"), "query"),
        (lambda m: m.forget(ForgetScope(kind="ids", value=("a",)), dry_run="yes"), "dry_run"),
        (lambda m: m.call("forget", {"scope": {"subject": "a", "entity": "b"}}), "scope"),
        (lambda m: m.call("recall", {"query": "q", "colour": "red"}), "colour"),
    ],
)
async def test_bad_input_names_the_field(call, field):
    """Bad input is InvalidRequest naming the field, and nothing is written."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        with pytest.raises(InvalidRequest) as info:
            await call(memory)
        assert info.value.message.startswith(field), info.value.message
        assert engine.revision == 0


def test_unknown_config_key_is_invalid():
    """An unknown MemoryConfig key is InvalidRequest naming it."""
    from hmsengine import MemoryConfig

    with pytest.raises(InvalidRequest, match=r"config\.supersesion"):
        MemoryConfig.from_json({"supersesion": "latest-by-subject"})
    with pytest.raises(InvalidRequest, match="halfLifeMs"):
        MemoryConfig.from_json({"recency": {"kind": "exponential"}})


async def test_default_recall_equals_search_bit_for_bit():
    """No windows, links or policies: recall returns exactly search_documents's ids and scores."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        await memory.remember_many([RememberInput(text=f"note {i} about {'tea' if i % 3 else 'coffee'} "
                                                  f"and {'cake' if i % 5 else 'bread'}", subject=f"s{i}")
                                    for i in range(200)])
        for query in ("tea cake", "coffee", "bread tea note", "note 17"):
            hits = await engine.search_documents(query, k=10)
            recalled = await memory.recall(query, k=10)
            assert [(h.id, h.score) for h in hits] == [(r.fact.id, r.score) for r in recalled]


async def test_recall_with_a_query_vector_ranks_like_search_with_it():
    """recall(q, embedding=v) with default options returns search_documents(q, embedding=v)'s
    ids and scores: both fuse with the one default semantic weight (issue 23, item 12)."""
    import inspect

    from hmsengine.memory.config import DEFAULT_SEMANTIC_WEIGHT

    assert inspect.signature(Engine.search_documents).parameters["semantic_weight"].default \
        == MemoryConfig().semantic_weight == DEFAULT_SEMANTIC_WEIGHT
    rng = random.Random(23)
    vectors = {i: [rng.uniform(-1, 1) for _ in range(8)] for i in range(120)}
    async with Engine.open(None) as engine:
        memory = Memory(engine, embedder=False)
        await memory.remember_many([RememberInput(text=f"note {i} on {'tea' if i % 3 else 'coffee'}",
                                                  embedding=vectors[i]) for i in range(120)])
        for query, vector in (("tea", vectors[5]), ("coffee note", vectors[40]), ("zz", vectors[7])):
            hits = await engine.search_documents(query, k=10, embedding=vector)
            recalled = await memory.recall(query, k=10, embedding=vector)
            assert [(h.id, h.score) for h in hits] == [(r.fact.id, r.score) for r in recalled]
            assert hits and hits[0].semantic is not None  # the cosine signal took part


async def test_explain_matches_recall_scores():
    """recall(explain=True) scores equal the explanation's score; rank is the position."""
    async with Engine.open(None) as engine:
        memory = Memory(engine, {"recency": {"kind": "exponential", "halfLifeMs": 30 * DAY},
                                 "historicalMultiplier": 0.5})
        for i in range(20):
            await memory.remember(f"meeting notes {i} budget", id=f"m{i}", event_time=i * DAY,
                                  valid_to=(15 * DAY if i < 5 else None))
        hits = await memory.recall("meeting budget", as_of=16 * DAY, k=5, explain=True, history="all")
        for rank, h in enumerate(hits, start=1):
            e = h.explanation
            assert e.rank == rank and e.score == h.score
            assert e.score == pytest.approx(e.lexical * e.recency_multiplier * e.historical_multiplier)
            assert "budget" in e.matched_terms or "budget"[:5] in "".join(e.matched_terms)
        alone = await memory.explain("meeting budget", "m0", as_of=16 * DAY, k=5, history="all")
        assert alone.rank is None and alone.status == "expired" and alone.historical_multiplier == 0.5


async def test_forget_semantics(disk_path):
    """Newest removed: predecessor current; middle removed: successor re-linked; include_chain
    removes all; dry_run nothing; a second forget nothing; gone everywhere, also after reopen."""
    async with Engine.open(disk_path) as engine:
        memory = Memory(engine)
        await memory.remember("v1 of the plan", id="p1")
        await memory.remember("v2 of the plan", id="p2", supersedes=["p1"])
        await memory.remember("v3 of the plan", id="p3", supersedes=["p2"])
        dry = await memory.forget(ForgetScope.ids(["p2"]), dry_run=True)
        assert dry.removed == ("p2",) and dry.relinked == ("p3",) and dry.dry_run
        assert await memory.get("p2") is not None
        report = await memory.forget(ForgetScope.ids(["p2"]))
        assert report.removed == ("p2",) and report.relinked == ("p3",)
        assert (await memory.get("p3")).supersedes == ("p1",)
        assert [f.id for f in await memory.history("p3")] == ["p1", "p3"]
        again = await memory.forget(ForgetScope.ids(["p2"]))
        assert again.removed == () and again.relinked == ()
        await memory.forget(ForgetScope.ids(["p3"]))
        assert [(h.fact.id, h.status) for h in await memory.recall("plan")] == [("p1", "current")]
        await memory.remember("v2 again", id="q2", supersedes=["p1"])
        chain = await memory.forget(ForgetScope.ids(["q2"]), include_chain=True)
        assert chain.removed == ("p1", "q2")
        for doc_id in ("p1", "p2", "p3", "q2"):
            assert not await engine.has_document(doc_id)
            assert await memory.get(doc_id) is None
            with pytest.raises(NotFound):
                await memory.history(doc_id)
            with pytest.raises(NotFound):
                await memory.explain("plan", doc_id)
        assert await engine.search_documents("plan") == []
        assert await memory.recall("plan", history="all") == []
    async with Engine.open(disk_path) as engine:
        memory = Memory(engine)
        assert await memory.recall("plan", history="all") == []
        assert await memory.get("p1") is None


async def test_forget_scopes():
    """Each scope selects what it names."""
    async with Engine.open(None, clock=Clock()) as engine:
        memory = Memory(engine)
        await memory.remember("a", id="a", subject="s1", entities=["bob"], namespace="n1",
                              event_time=5, metadata={"tag": "x"})
        await memory.remember("b", id="b", subject="s2", entities=["eve"], namespace="n2",
                              event_time=50, metadata={"tag": "y"})
        cutoff = engine.now()
        await memory.remember("c", id="c", namespace="n2")
        for scope, want in ((ForgetScope.subject("s1"), ("a",)), (ForgetScope.entity("eve"), ("b",)),
                            (ForgetScope.namespace("n2"), ("b", "c")),
                            (ForgetScope.ingested_before(cutoff), ("a", "b")),
                            (ForgetScope.event_before(10), ("a",)),
                            (ForgetScope.metadata({"tag": "y"}), ("b",))):
            assert (await memory.forget(scope, dry_run=True)).removed == want, scope


async def test_same_inputs_same_bytes():
    """Two stores fed the same inputs and clock give byte-identical results."""
    outputs = []
    for _ in range(2):
        async with Engine.open(None, clock=Clock()) as engine:
            memory = Memory(engine, {"supersession": "latest-by-subject"})
            for i in range(40):
                await memory.remember(f"Carol's status update number {i % 7}", subject=f"carol/{i % 5}",
                                      valid_from=(i % 9) * DAY)
            out = await memory.call("recall", {"query": "carol status update", "k": 20,
                                               "history": "all", "explain": True, "asOf": 5 * DAY})
            outputs.append(json.dumps(out, sort_keys=True))
    assert outputs[0] == outputs[1]


async def test_several_memories_stay_consistent():
    """Two Memory values over one engine, and raw document writes, see each other at once."""
    async with Engine.open(None) as engine:
        a, b = Memory(engine), Memory(engine)
        await a.remember("shared fact one", id="s1")
        assert (await b.get("s1")).text == "shared fact one"
        await engine.put_document("raw", "a raw document about the shared fact")
        assert {h.fact.id for h in await b.recall("shared fact")} == {"s1", "raw"}
        await b.forget(ForgetScope.ids(["s1"]))
        assert await a.get("s1") is None


async def test_kinds_and_episodes():
    """Episodes never come back unless kinds asks for them."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        await memory.remember("the picnic story", id="e", kind="episode")
        await memory.remember("the picnic fact", id="f")
        assert [h.fact.id for h in await memory.recall("picnic")] == ["f"]
        assert [h.fact.id for h in await memory.recall("picnic", kinds="episode")] == ["e"]


async def test_policies_maintenance_is_dry_by_default():
    """apply_forgetting and consolidate report without changing anything unless asked."""
    clock = Clock()
    async with Engine.open(None, clock=clock) as engine:
        memory = Memory(engine, {"forgetting": {"maxAgeMs": {"episode": 1000}},
                                 "consolidation": {"kind": "exact-duplicates", "removeSources": True}})
        await memory.remember("old story", id="old", kind="episode")
        await memory.remember("Dana likes jazz", id="d1", subject="dana/music")
        await memory.remember("dana likes  JAZZ", id="d2", subject="dana/music")
        clock.now += 5000
        dry = await memory.apply_forgetting()
        assert dry.removed == ("old",) and dry.dry_run and await memory.get("old") is not None
        assert (await memory.apply_forgetting(dry_run=False)).removed == ("old",)
        report = await memory.consolidate()
        assert report.dry_run and report.superseded == ("d1", "d2")
        assert await memory.get(report.created[0]) is None
        done = await memory.consolidate(dry_run=False)
        assert done.removed == () and len(done.created) == 1  # not destructive without permission
        hits = await memory.recall("jazz")
        assert [h.fact.id for h in hits] == [done.created[0]]
        assert (await memory.consolidate(dry_run=False)).created == ()


async def test_json_contract_roundtrip():
    """memory.call covers the operations with camelCase fields and wrapped lists."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        r = await memory.call("remember", {"text": "Eve reads books", "id": "e1", "validFrom": 10})
        assert r == {"id": "e1", "created": True, "superseded": []}
        many = await memory.call("rememberMany", {"inputs": [{"text": "Eve writes"}, {"text": "Eve sings"}]})
        assert len(many["items"]) == 2
        got = await memory.call("get", {"id": "e1"})
        assert got["validFrom"] == 10 and got["ingestTime"] > 0
        with pytest.raises(NotFound):
            await memory.call("get", {"id": "nope"})
        assert (await memory.call("history", {"id": "e1"}))["items"][0]["id"] == "e1"
        ex = await memory.call("explain", {"query": "Eve", "id": "e1"})
        assert ex["id"] == "e1" and ex["status"] == "current"
        f = await memory.call("forget", {"scope": {"ids": ["e1"]}, "dryRun": True})
        assert f == {"removed": ["e1"], "relinked": [], "dryRun": True}
        with pytest.raises(InvalidRequest):
            await memory.call("dance", {})


async def test_concurrent_remembers_share_commits_and_stay_exact():
    """Concurrent remembers of different ids share fsyncs; of one id with two payloads, exactly
    one is stored and the other is Conflict; of one id with one payload, one is created."""
    import trio

    async with Engine.open(None) as engine:
        memory = Memory(engine)
        outcomes: list[str] = []

        async def one(i: int) -> None:
            await memory.remember(f"fact number {i}", id=f"f{i}")

        async def contested(text: str) -> None:
            try:
                result = await memory.remember(text, id="same")
                outcomes.append("created" if result.created else "repeat")
            except Conflict:
                outcomes.append("conflict")

        async with trio.open_nursery() as nursery:
            for i in range(64):
                nursery.start_soon(one, i)
            nursery.start_soon(contested, "first payload")
            nursery.start_soon(contested, "second payload")
            nursery.start_soon(contested, "first payload")
        stats = engine.statistics()
        assert stats.documents == 65
        assert stats.commits < stats.transactions  # remembers were group-committed
        assert outcomes.count("created") == 1
        stored = (await memory.get("same")).text
        assert outcomes.count("conflict") == (2 if stored == "second payload" else 1)


async def test_an_id_that_is_no_string_is_invalid_request():
    """history and explain refuse an id that is not a string (a JSON object or list, as a fuzzed
    request sends it) as InvalidRequest, through the Python API and memory.call alike."""
    async with Engine.open(None) as engine:
        memory = engine.memory()
        await memory.remember("one fact", id="f1")
        for bad in ({"a": {}}, ["f1"], 7):
            with pytest.raises(InvalidRequest):
                await memory.history(bad)  # type: ignore[arg-type]
            with pytest.raises(InvalidRequest):
                await memory.explain("fact", bad)  # type: ignore[arg-type]
            for op, body in (("history", {"id": bad}), ("explain", {"query": "fact", "id": bad})):
                with pytest.raises(InvalidRequest):
                    await memory.call(op, body)
