"""A fold or a merge carries the term memo over (index/termcarry.py): ready at the landing
(translated in its worker thread and at the landing, ``adopt_memo``), or lazily (``carry_terms``)
for what that could not cover. What the new snapshot takes is exactly what it would compute
afresh."""

from __future__ import annotations

import random

import pytest
import trio

from hmsengine import Engine
from hmsengine.engine import indexer as indexer_module
from hmsengine.index import lane, termcarry
from hmsengine.index.analyzer import get_analyzer
from hmsengine.index.mergepolicy import MergePolicy
from hmsengine.index.segment import build_segment
from hmsengine.index.snapshot import Snapshot

VOCAB = 120
TERMS = [f"w{i}" for i in range(VOCAB)] + ["nowhere", "w999"]


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) ** 1.1 for i in range(VOCAB)]
    return [" ".join(rng.choices(TERMS[:VOCAB], weights, k=rng.randint(1, 25))) for _ in range(n)]


def _fresh(snap: Snapshot) -> Snapshot:
    """The same snapshot with empty memos and nothing carried."""
    return snap.with_segments(snap.segments)


def _same_as_fresh(snap: Snapshot, terms: list[str]) -> None:
    fresh = _fresh(snap)
    for term in terms:
        (got,) = lane.term_infos(snap, snap.memo("terms"), [term])
        (want,) = lane.term_infos(fresh, {}, [term])
        assert got[2].hex() == want[2].hex(), term
        assert got[:2] == want[:2] and got[3:] == want[3:], term


async def _fill(engine: Engine, terms: list[str]) -> None:
    for i in range(0, len(terms), 3):
        await engine.search_documents(" ".join(terms[i:i + 3]), k=5)


def _idf_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = lane.bm25_idfs

    def counting(dfs: list[int], n: int) -> list[float]:
        calls.append(len(dfs))
        return real(dfs, n)

    monkeypatch.setattr(lane, "bm25_idfs", counting)
    return calls


def _builder_told(monkeypatch: pytest.MonkeyPatch) -> None:
    """The builder merges and consolidates nothing on its own, and folds when told to."""
    monkeypatch.setattr(indexer_module, "MERGE_POLICY",
                        MergePolicy(ratio=0.0, max_merge=0, max_segments=10**6))
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    monkeypatch.setattr(indexer_module, "FOLD_IDLE_SECONDS", 3600.0)


async def _segments_of_300(engine: Engine, texts: list[str], end: int) -> None:
    """``texts[:end]`` put and folded 300 at a time: a segment each."""
    for start in range(0, end, 300):
        await engine.put_documents([{"id": f"d{i}", "text": texts[i]}
                                    for i in range(start, start + 300)])
        await engine._indexer._fold()


async def test_a_merge_and_a_fold_carry_exactly_what_a_fresh_snapshot_computes(monkeypatch):
    """Segments with deletions, a tail, the memo filled by searches; then a merge of some of the
    segments and a fold of the tail (the same documents): each new snapshot's terms, carried,
    equal a fresh computation (local ids, postings per view and in all, idf bits, the lane's
    record), known terms need no idf computed again, and searches agree with a fresh lane."""
    monkeypatch.setattr(indexer_module, "MERGE_POLICY",
                        MergePolicy(ratio=0.0, max_merge=0, max_segments=10**6))
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    texts = _texts(5, 1900)
    async with Engine.open(None, analyzer="simple") as engine:
        indexer = engine._indexer
        start = 0
        for size in (300, 250, 400, 200, 350, 250):
            await engine.put_documents([{"id": f"d{i}", "text": texts[i]}
                                        for i in range(start, start + size)])
            start += size
            with trio.fail_after(120):
                while indexer.snapshot.tail:
                    await trio.sleep(0.02)
        for i in range(0, start, 9):
            await engine.delete_document(f"d{i}")
        await engine.put_documents([{"id": f"d{i}", "text": texts[i]}
                                    for i in range(start, start + 150)])  # a tail
        queried = TERMS[::2]
        await _fill(engine, queried)
        before = indexer.snapshot
        assert len(before.segments) == 6 and len(before.tail)

        calls = _idf_calls(monkeypatch)
        await indexer._merge(1, 4)
        merged = indexer.snapshot
        assert merged is not before and merged.revision == before.revision
        assert set(queried) <= set(merged.memo("terms")), "translated in the merge's thread"
        assert "carried" in merged.memo("kernel")
        lane.term_infos(merged, merged.memo("terms"), queried)
        assert calls == [], "carried terms keep their idf"
        lane.term_infos(merged, merged.memo("terms"), TERMS[1::2])
        assert calls, "terms not carried are computed as before"
        _same_as_fresh(merged, TERMS)

        await _fill(engine, queried)
        with trio.fail_after(120):  # the builder folds the tail once writes pause
            while indexer.snapshot.tail:
                await trio.sleep(0.02)
        folded = indexer.snapshot
        assert len(folded.segments) == 5 and folded.revision == before.revision
        assert set(queried) <= set(folded.memo("terms")), "translated in the fold's thread"
        assert "carried" in folded.memo("kernel")
        _same_as_fresh(folded, TERMS)
        for i in range(0, len(TERMS) - 2, 2):
            terms = indexer.analyzer.query_terms(" ".join(TERMS[i:i + 3]))
            for k in (1, 5, 10):
                assert lane.plain_top(folded, terms, k, 10**12) == \
                    lane.plain_top(_fresh(folded), terms, k, 10**12)


async def test_nothing_is_carried_over_a_write():
    """A write changes the documents (and so every idf): its snapshot starts afresh."""
    async with Engine.open(None, analyzer="simple") as engine:
        await engine.put_documents([{"id": f"d{i}", "text": t}
                                    for i, t in enumerate(_texts(2, 50))])
        await _fill(engine, TERMS[:30])
        before = engine._indexer.snapshot
        same = _fresh(before)
        termcarry.carry_terms(same, before)
        assert "carried" in same.memo("kernel")  # the same revision: carried
        await engine.put_document("x", "w1 w2 w3")
        after = engine._indexer.snapshot
        termcarry.carry_terms(after, before)
        assert after.revision != before.revision
        assert "carried" not in after.memo("kernel")
        _same_as_fresh(after, TERMS)


async def test_a_merge_and_a_fold_landing_together_pass_the_memo_on(monkeypatch):
    """No query reads the snapshot a merge made before a fold replaces it, and neither landing
    took a memo ready (as when more terms came than a landing translates): the fold's snapshot
    takes what the merge's carried (columns composed), and it is exact."""
    monkeypatch.setattr(termcarry, "adopt_memo", lambda *args: False)
    _builder_told(monkeypatch)
    texts = _texts(8, 1400)
    async with Engine.open(None, analyzer="simple") as engine:
        indexer = engine._indexer
        await _segments_of_300(engine, texts, 1200)
        await engine.put_documents([{"id": f"d{i}", "text": texts[i]}
                                    for i in range(1200, 1400)])  # a tail
        for i in range(0, 1400, 11):
            await engine.delete_document(f"d{i}")
        await _fill(engine, TERMS)
        queried = indexer.snapshot
        assert len(queried.segments) == 4 and len(queried.tail)
        await indexer._merge(0, 2)
        merged = indexer.snapshot
        assert not merged.memo("terms")  # no query read it
        await indexer._fold()
        folded = indexer.snapshot
        assert len(folded.segments) == 4 and not folded.tail
        known, columns = folded.memo("kernel")["carried"]
        assert known is queried.memo("terms") and columns[1:3] == (2, 3)
        calls = _idf_calls(monkeypatch)
        lane.term_infos(folded, folded.memo("terms"), TERMS)
        assert calls == []
        _same_as_fresh(folded, TERMS)


async def test_a_memo_is_adopted_only_by_the_snapshot_it_was_made_for(monkeypatch):
    """A merge's landing takes the memo its worker translated, with the terms queries added
    since translated at the landing, or its predecessor's memo translated whole; only for the
    snapshot it lays out (the same revision, the same views), and only up to
    ``ADOPT_LATE_TERMS`` terms translated at the landing. Whatever is adopted equals a fresh
    computation."""
    _builder_told(monkeypatch)
    texts = _texts(11, 900)
    async with Engine.open(None, analyzer="simple") as engine:
        indexer = engine._indexer
        await _segments_of_300(engine, texts, 900)
        await engine.delete_document("d7")
        await _fill(engine, TERMS[::2])
        before = indexer.snapshot
        assert len(before.segments) == 3 and not before.tail
        source = termcarry.carry_source(before)
        segment = indexer._merged([v.segment for v in before.segments[:2]],
                                  [v.live for v in before.segments[:2]], None)
        layout = termcarry.merge_layout(before.segments[0].segment, 2, segment, snap=before)
        assert layout == (-1, 2)
        translated = termcarry.translate_memo(source, layout, segment)
        assert set(translated.memo) == set(TERMS[::2])
        lane.term_infos(before, before.memo("terms"), TERMS[1::2])  # while the worker works

        def merged(snap: Snapshot) -> Snapshot:
            return snap.with_segments((indexer_module.SegmentView.fresh(segment),
                                       snap.segments[2]))

        for made in (translated, None):  # the worker's and the late terms; all at the landing
            landed = merged(before)
            assert termcarry.adopt_memo(landed, before, made, layout, segment)
            assert set(landed.memo("terms")) == set(TERMS)
            _same_as_fresh(landed, TERMS)
        monkeypatch.setattr(termcarry, "ADOPT_LATE_TERMS", len(TERMS) // 2 - 1)
        bounded = merged(before)
        assert termcarry.adopt_memo(bounded, before, translated, layout, segment)
        assert set(bounded.memo("terms")) == set(TERMS[::2]), "too many late terms: lazily"
        assert not termcarry.adopt_memo(merged(before), before, None, layout, segment)
        monkeypatch.setattr(termcarry, "ADOPT_LATE_TERMS", 2048)
        assert not termcarry.adopt_memo(merged(before), before, translated, (2, -1), segment)
        other = indexer._merged([v.segment for v in before.segments[:2]],
                                [v.live for v in before.segments[:2]], None)
        assert not termcarry.adopt_memo(merged(before), before, translated, layout, other)
        await engine.delete_document("d8")  # in the first segment: the third view is kept
        written = indexer.snapshot
        assert written.revision != before.revision and written.segments[2] is before.segments[2]
        after_write = merged(written)
        assert after_write.revision != before.revision
        assert not termcarry.adopt_memo(after_write, before, translated, layout, segment)
        assert not after_write.memo("terms")


def test_a_translation_lays_out_any_views():
    """``translate_memo`` over layouts of no view, one, a reordering and the new segment's in the
    middle: each term's ids and postings by column, the new segment's looked up, the idf kept,
    the record re-packed."""
    segment = build_segment(get_analyzer("simple"), ids=["a", "b"], texts=["x y", "y z z"],
                            embeddings=[None, None], first_docnum=0, dim=16, embedding_dim=None)
    idf = 0.75
    old = {"y": ((4, -1), 3, idf, b"", (2, 1)), "q": ((-1, 7), 5, idf, b"", (0, 5))}
    views = (object(), object())  # the views the old columns index: only their count is read
    source = (old, views, 9)
    local_y = segment.vocab["y"]
    for layout, want_y, want_q in (
            ((), ((), ()), ((), ())),
            ((-1,), ((local_y,), (2,)), ((-1,), (0,))),
            ((1, 0), ((-1, 4), (1, 2)), ((7, -1), (5, 0))),
            ((1, -1, 0), ((-1, local_y, 4), (1, 2, 2)), ((7, -1, -1), (5, 0, 0)))):
        memo = termcarry.translate_memo(source, layout, segment).memo  # type: ignore[arg-type]
        for term, (ids, counts) in (("y", want_y), ("q", want_q)):
            got = memo[term]
            assert (got[0], got[4], got[1], got[2]) == (ids, counts, sum(counts), idf), layout
            assert got[3] == lane.record_packer(len(layout))(idf, *ids)
