"""The plain-BM25 lane (index/lane.py) gives exactly what the general query path gives."""

from __future__ import annotations

import os
import random
import threading

import pytest
import trio

from hmsengine import Engine, InvalidRequest
from hmsengine.engine import indexer as indexer_module
from hmsengine.engine import readers
from hmsengine.index import lane
from hmsengine.index import search as executor
from hmsengine.index.mergepolicy import MergePolicy
from hmsengine.kernels import bm25, filters, pruning, topk, warm_up
from hmsengine.kernels import lane as lane_kernel

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
QUERIES = ["w0 w1", "w0 w1 w2 w3", "w0", "w70 w0 w1", "w40 w41 w2", "w79 w5", "w3 w3 w60",
           "w9 nowhere", "nowhere", "w2 w2 w2 w11 w30"]
KS = (1, 2, 3, 5, 10, 17, lane.LANE_MAX_K)


def _corpus(seed: int, n: int, vocab: int = 80) -> list[str]:
    # Zipf-like texts, a third of them repeats from a small pool: exact score ties are common.
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    weights = [1.0 / (i + 1) ** 1.1 for i in range(vocab)]
    pool = [" ".join(rng.choices(words, weights, k=rng.randint(1, 8))) for _ in range(15)]
    return [rng.choice(pool) if rng.random() < 0.3
            else " ".join(rng.choices(words, weights, k=rng.randint(1, 30))) for _ in range(n)]


def _queries(rng: random.Random, vocab: int, count: int) -> list[str]:
    out = []
    for _ in range(count):
        terms = [f"w{min(int(rng.paretovariate(0.8)) - 1, vocab + 5)}"
                 for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.2:
            terms.append(rng.choice(terms))  # a repeated term weighs twice
        if rng.random() < 0.1:
            terms.append("nowhere")
        out.append(" ".join(terms))
    return out


def _general(engine: Engine, text: str, k: int) -> list[tuple[str, str]]:
    """The general path (build_query, prepare, run) on the current snapshot: (id, score bits)."""
    indexer = engine._indexer
    snap = indexer.snapshot
    q = readers.build_query(indexer, text, k=k, embedding=None, ids=None, metadata=None,
                            semantic=None, lexical_weight=1.0, semantic_weight=1.0)
    assert q is not None
    scored = executor.run(snap, q, executor.prepare(snap, q))
    ids = snap.ids_of([s.docnum for s in scored])
    tombstones = indexer._core.table.tombstones
    return [(i, s.score.hex()) for i, s in zip(ids, scored, strict=True) if i not in tombstones]


async def _compare(engine: Engine, queries: list[str], ks: tuple[int, ...]) -> int:
    """Every query at every k: the lane (called directly, and through search_documents and
    search_ids) equals the general path bit for bit; the number of non-empty answers."""
    indexer = engine._indexer
    answered = 0
    for text in queries:
        terms = indexer.analyzer.query_terms(text)
        for k in ks:
            expected = _general(engine, text, k)
            found = lane.plain_top(indexer.snapshot, terms, k, readers.INLINE_WORK)
            assert found is not None  # the lane answered, not the fallback
            tombstones = indexer._core.table.tombstones
            got = [(i, s.hex()) for i, s in zip(*found, strict=True) if i not in tombstones]
            assert got == expected, (text, k)
            hits = await engine.search_documents(text, k=k)
            assert [(h.id, h.score.hex(), h.lexical, h.semantic) for h in hits] == \
                [(i, s, float.fromhex(s), None) for i, s in expected], (text, k)
            assert [(i, s.hex()) for i, s in await engine.search_ids(text, k=k)] == expected
            answered += bool(expected)
    return answered


async def _segmented(engine: Engine, texts: list[str], batches: list[int], tail: int,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Put ``texts`` in ``batches`` (each folded into a segment of its own), then the last
    ``tail`` of them left as an unfolded tail."""
    indexer = engine._indexer
    # Each batch stays a segment of its own: no merges while they come.
    monkeypatch.setattr(indexer_module, "MERGE_POLICY",
                        MergePolicy(ratio=0.0, max_merge=0, max_segments=10**6))
    start = 0
    for size in batches:
        await engine.put_documents([{"id": f"d{i}", "text": texts[i]}
                                    for i in range(start, start + size)])
        start += size
        with trio.fail_after(120):  # let the builder fold the tail (slow without the JIT)
            while indexer.snapshot.tail:
                await trio.sleep(0.02)

    async def no_fold() -> None:
        await trio.lowlevel.checkpoint()

    monkeypatch.setattr(indexer, "_fold", no_fold)  # the rest stays an unfolded tail
    if tail:
        await engine.put_documents([{"id": f"d{i}", "text": texts[i]}
                                    for i in range(start, start + tail)])


async def test_plain_lane_equals_the_general_path_over_segments_tail_and_deletions(monkeypatch):
    """Over several segments, an unfolded tail and deletions in both, the lane's ids and scores
    equal the general path's bit for bit for every k it takes, with repeated and unknown terms;
    search_ids and search_documents agree with it."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)  # keep the segments
    texts = _corpus(3, 2600)
    async with Engine.open(None, analyzer="simple") as engine:
        await _segmented(engine, texts, [300] * 8, 200, monkeypatch)
        for i in range(0, 2600, 7):
            await engine.delete_document(f"d{i}")
        snap = engine._indexer.snapshot
        assert len(snap.segments) > 1 and len(snap.tail) > 0
        assert any(v.n_live < v.segment.n_docs for v in snap.segments)
        assert await _compare(engine, QUERIES, KS) > 50


@pytest.mark.parametrize("seed", range(11, 19))
async def test_plain_lane_equals_the_general_path_on_random_stores(monkeypatch, seed):
    """On seeded random stores (random segment sizes, tail, deletions, purges, many exact score
    ties), random queries at every k the lane takes give the general path's ids, scores (bits)
    and tie order."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    rng = random.Random(seed)
    vocab = rng.choice([12, 40, 120])
    batches = [rng.randint(1, 400) for _ in range(rng.randint(1, 4))]
    tail = rng.choice([0, rng.randint(1, 150)])
    texts = _corpus(seed, sum(batches) + tail, vocab)
    async with Engine.open(None, analyzer="simple") as engine:
        await _segmented(engine, texts, batches, tail, monkeypatch)
        victims = rng.sample(range(len(texts)), len(texts) // 5)
        for n in victims[: len(victims) // 2]:
            await engine.delete_document(f"d{n}")
        for n in victims[len(victims) // 2:][:5]:
            await engine.delete_document(f"d{n}", purge=True)
        snap = engine._indexer.snapshot
        assert len(snap.views) == len(batches) + (tail > 0)
        assert engine._indexer._core.table.tombstones
        assert await _compare(engine, _queries(rng, vocab, 30), KS) > 0


async def test_plain_lane_equals_the_general_path_where_maxscore_prunes(monkeypatch):
    """Segments large enough for MaxScore (a common term's thousands of postings next to a rare
    term that fills the top k), the later ones pruned from the bar the largest one set: the
    lane still equals the general path bit for bit."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    texts = _corpus(31, 5800)
    async with Engine.open(None, analyzer="simple") as engine:
        await _segmented(engine, texts, [4000, 1500], 300, monkeypatch)
        queries = ["w0 w1 w50", "w0 w40", "w2 w3 w60 w70", "w0 w1 w2 w3 w45", "w0 w0 w1 w33",
                   *_queries(random.Random(31), 80, 20)]
        assert await _compare(engine, queries, KS) > 100


async def test_plain_lane_on_a_reopened_disk_store_equals_the_general_path(tmp_path, monkeypatch):
    """On a store reopened from disk (persisted segments, read-only arrays), the lane equals the
    general path; ids and scores are those the store gave before it closed."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    texts = _corpus(21, 900)
    path = tmp_path / "store"
    async with Engine.open(path, analyzer="simple") as engine:
        await _segmented(engine, texts, [400, 300], 200, monkeypatch)
        await engine.delete_document("d5")
        before = {q: await engine.search_ids(q, k=10) for q in QUERIES}
    async with Engine.open(path, analyzer="simple") as engine:
        assert await _compare(engine, QUERIES, KS) > 20
        assert {q: await engine.search_ids(q, k=10) for q in QUERIES} == before


async def test_plain_lane_on_an_empty_or_emptied_store_returns_nothing():
    """An empty store, and one whose every document was deleted, answer [] through the lane."""
    async with Engine.open(None, analyzer="simple") as engine:
        snap = engine._indexer.snapshot
        assert lane.plain_top(snap, ["w1", "w2"], 10, readers.INLINE_WORK) == ([], [])
        assert await engine.search_documents("w1 w2", k=10) == []
        await engine.put_documents([{"id": f"d{i}", "text": "w1 w2 w1"} for i in range(5)])
        assert len(await engine.search_documents("w1", k=10)) == 5
        for i in range(5):
            await engine.delete_document(f"d{i}")
        snap = engine._indexer.snapshot
        assert lane.plain_top(snap, ["w1"], 10, readers.INLINE_WORK) == ([], [])
        assert await engine.search_documents("w1", k=10) == []
        assert await engine.search_ids("w1 w2", k=3) == []


async def test_plain_lane_breaks_ties_across_segments_by_document_number(monkeypatch):
    """Identical documents in different segments and the tail tie exactly: the earliest put
    comes first, at every k, as on the general path."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    texts = ["alpha beta", "gamma", "alpha beta"] * 40
    async with Engine.open(None, analyzer="simple") as engine:
        await _segmented(engine, texts, [30, 30, 30], 30, monkeypatch)
        assert len(engine._indexer.snapshot.views) == 4
        for k in KS:
            hits = await engine.search_documents("alpha beta", k=k)
            assert [h.id for h in hits] == [f"d{i}" for i, t in enumerate(texts)
                                            if t == "alpha beta"][:k]
            assert len({h.score for h in hits}) == 1
        await _compare(engine, ["alpha", "beta alpha", "gamma alpha"], KS)


async def test_plain_lane_reads_ids_of_hits_in_one_view_from_that_view(monkeypatch):
    """When every hit of a query lies in one view (the kernel then names it and gives local
    numbers), the ids are that view's, whichever view it is: the largest, a smaller segment, or
    the unfolded tail; hits over several views keep the packed path. Both equal the general
    path."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    # Words only the first segment, only the second and only the tail hold, and one all hold.
    texts = ([f"big{i % 7} shared" for i in range(60)] + [f"mid{i % 5} shared" for i in range(20)]
             + [f"tail{i % 3} shared" for i in range(10)])
    async with Engine.open(None, analyzer="simple") as engine:
        await _segmented(engine, texts, [60, 20], 10, monkeypatch)
        snap = engine._indexer.snapshot
        assert len(snap.views) == 3
        calls = []
        real = lane.bm25_lane_topk

        def spy(*args):
            found = real(*args)
            calls.append(found[1])
            return found

        monkeypatch.setattr(lane, "bm25_lane_topk", spy)
        for text, view in (("big3", 0), ("mid2", 1), ("tail1", 2), ("mid4 tail0", -1),
                           ("big1 mid1", -1)):
            calls.clear()
            await _compare(engine, [text], (1, 5, 10))
            # Every call (direct, search_documents', search_ids') names the one view, or, with
            # hits in several views (at k = 5 and 10), none.
            assert calls and (set(calls) == {view} if view >= 0 else -1 in calls), text
        hits = await engine.search_documents("tail1", k=10)
        assert sorted(h.id for h in hits) == [f"d{i}" for i in range(80, 90) if (i - 80) % 3 == 1]


async def test_plain_lane_leaves_large_work_and_large_k_to_the_general_path():
    """A query estimated above the inline budget is not the lane's (None: the engine runs it in
    a worker thread), nor a k above LANE_MAX_K; both still answer through search_documents with
    the general path's ids and scores."""
    texts = _corpus(5, 600)
    async with Engine.open(None, analyzer="simple") as engine:
        await engine.put_documents([{"id": f"d{i}", "text": t} for i, t in enumerate(texts)])
        snap = engine._indexer.snapshot
        assert lane.plain_top(snap, ["w0", "w1"], 10, 0) is None
        assert lane.plain_top(snap, ["w0", "w1"], 10, 10 ** 9) is not None
        assert lane.plain_top(snap, [], 10, 0) == ([], [])
        for k in (lane.LANE_MAX_K + 1, 100, readers.MAX_K):
            for text in ("w0 w1", "w5 w9 w9", "w30"):
                hits = await engine.search_documents(text, k=k)
                assert [(h.id, h.score.hex()) for h in hits] == _general(engine, text, k)
                assert [(i, s.hex()) for i, s in await engine.search_ids(text, k=k)] == \
                    _general(engine, text, k)


@pytest.mark.parametrize("options", [
    {"query": 5}, {"query": "a\ud800"}, {"k": 0}, {"k": True}, {"k": 1001}, {"k": "3"},
    {"k": 2.0}, {"lexical_weight": -1}, {"semantic_weight": float("nan")},
    {"lexical_weight": True}, {"lexical_weight": float("inf")}, {"semantic_weight": -0.5},
    {"query": "w1 " * 30000}, {"query": "\u00e9" * 40000},
])
async def test_plain_lane_refuses_what_the_general_path_refuses(options):
    """Bad input to a plain query gets the same InvalidRequest as through build_query."""
    args = {"query": "w1", "k": 10, "embedding": None, "ids": None, "metadata": None,
            "semantic": None, "lexical_weight": 1.0, "semantic_weight": 1.0, **options}
    async with Engine.open(None, analyzer="simple") as engine:
        await engine.put_documents([{"id": "d1", "text": "w1 w2"}])
        with pytest.raises(InvalidRequest) as general:
            readers.build_query(engine._indexer, **args)
        query = args.pop("query")
        for call in (engine.search_documents, engine.search_ids):
            with pytest.raises(InvalidRequest) as through_lane:
                await call(query, **args)
            assert str(through_lane.value) == str(general.value)


@pytest.mark.skipif(NO_JIT, reason="compiled specialisations exist only with the JIT")
async def test_warm_up_compiles_what_the_lane_calls(tmp_path):
    """After warm_up, lane queries on a reopened disk store (read-only persisted arrays, a
    deletion) and on an in-memory one compile no new specialisation of the lane's kernels."""
    path = tmp_path / "store"
    async with Engine.open(path, analyzer="simple") as engine:
        await engine.put_documents([{"id": f"d{i}", "text": t}
                                    for i, t in enumerate(_corpus(8, 300))])
        await engine.delete_document("d3")
    warm_up()
    kernels = (lane_kernel.bm25_lane_topk, lane_kernel._fill_row, pruning.segment_best)
    before = [len(kernel.signatures) for kernel in kernels]
    for where in (path, None):
        async with Engine.open(where, analyzer="simple") as engine:
            if where is None:
                await engine.put_documents([{"id": "x", "text": "w0 w1"}])
            for text in QUERIES:
                await engine.search_documents(text, k=10)
    assert [len(kernel.signatures) for kernel in kernels] == before


@pytest.mark.skipif(NO_JIT, reason="compiled specialisations exist only with the JIT")
async def test_warm_up_compiles_what_the_inline_general_path_calls(tmp_path):
    """After warm_up, inline queries of the general path (a k above the lane's, an ids filter,
    a metadata filter) on a reopened disk store and an in-memory one run the kernels' twins that
    keep the GIL, and compile no new specialisation of them."""
    path = tmp_path / "store"
    async with Engine.open(path, analyzer="simple") as engine:
        await engine.put_documents([{"id": f"d{i}", "text": t, "metadata": {"g": i % 3}}
                                    for i, t in enumerate(_corpus(9, 300))])
        await engine.delete_document("d3")
    warm_up()
    kernels = (pruning.bm25_segment_topk_held, topk.topk_finish_held, bm25.bm25_score_docs_held,
               filters.sorted_numbers, filters.live_locals, filters.mask_of)
    before = [len(kernel.signatures) for kernel in kernels]
    assert all(before)
    for where in (path, None):
        async with Engine.open(where, analyzer="simple") as engine:
            if where is None:
                await engine.put_documents([{"id": f"x{i}", "text": "w0 w1", "metadata": {"g": 1}}
                                            for i in range(40)])
            for text in QUERIES:
                await engine.search_documents(text, k=lane.LANE_MAX_K + 5)
                await engine.search_documents(text, k=5, ids=["d1", "d2", "d7", "x1"])
                await engine.search_documents(text, k=5, metadata={"g": 1})
    assert [len(kernel.signatures) for kernel in kernels] == before


@pytest.mark.parametrize("search", ["search_documents", "search_ids"])
@pytest.mark.parametrize("tail, threaded", [(readers.TAIL_INLINE_DOCS + 100, True), (300, False)])
async def test_a_large_tail_segment_is_built_in_a_worker_thread(monkeypatch, search, tail,
                                                                threaded):
    """A search over a snapshot whose unfolded tail holds TAIL_INLINE_DOCS documents or more
    builds the tail's query-time segment in a worker thread (inline it stalled the event loop
    ~0.1 s after a burst at 200k); a smaller tail is built inline. Either way the answers are
    the general path's."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    texts = _corpus(5, 600 + tail)
    async with Engine.open(None, analyzer="simple") as engine:
        indexer = engine._indexer
        built_in: list[int] = []
        original = indexer.tail_segment

        def recording(view):  # type: ignore[no-untyped-def]
            built_in.append(threading.get_ident())
            return original(view)

        monkeypatch.setattr(indexer, "tail_segment", recording)
        await _segmented(engine, texts, [300, 300], tail, monkeypatch)
        snap = indexer.snapshot
        assert snap.tail_pending == tail
        await getattr(engine, search)(QUERIES[0], k=10)
        assert len(built_in) == 1
        assert (built_in[0] != threading.get_ident()) is threaded
        assert indexer.snapshot is snap and snap.tail_pending == 0
        assert await _compare(engine, QUERIES, KS) > 10
        assert len(built_in) == 1  # built once for the snapshot
