"""The index builder applies the size-ratio merge policy to a real engine's segments.

Many concurrent writers (each put its own transaction, group-committed) with deletions among
them: once the builder is idle, the segments satisfy the policy's invariant, every live document
is in exactly one of them, and rankings equal those of the same documents put in one batch.
"""

from __future__ import annotations

import math
import random
import threading

import trio

from hmsengine import Engine
from hmsengine.engine import indexer as indexer_module

N_DOCS = 6_000
WRITERS = 48
QUERIES = ["w0 w1", "w3 w17", "w40 w41 w2", "w79 w5", "w9", "w12 w60 w61"]


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(80)]
    weights = [1.0 / (i + 1) ** 1.1 for i in range(len(vocab))]
    return [" ".join(rng.choices(vocab, weights, k=rng.randint(1, 30))) for _ in range(n)]


async def _burst(engine: Engine, texts: list[str], doomed: set[int]) -> None:
    """``WRITERS`` tasks put every text, one document per call; each doomed document is
    deleted right after it is put (so deletions land in the tail, folds and merges)."""
    next_doc = 0

    async def writer() -> None:
        nonlocal next_doc
        while next_doc < len(texts):
            n = next_doc
            next_doc += 1
            await engine.put_document(f"d{n}", texts[n])
            if n in doomed:
                await engine.delete_document(f"d{n}")

    async with trio.open_nursery() as nursery:
        for _ in range(WRITERS):
            nursery.start_soon(writer)


async def test_a_burst_of_writers_leaves_segments_the_policy_allows(monkeypatch):
    """After a burst of concurrent writers with deletions, the idle builder leaves segments in
    document order where each holds more than ``ratio`` times all later ones (at most the log
    bound of them), no live document lost or doubled, rankings as one batch gives."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)  # the policy alone
    policy = indexer_module.MERGE_POLICY
    texts = _texts(3, N_DOCS)
    doomed = set(random.Random(4).sample(range(N_DOCS), N_DOCS // 10))
    async with Engine.open(None, analyzer="simple") as many, \
            Engine.open(None, analyzer="simple") as one:
        await _burst(many, texts, doomed)
        await one.put_documents([{"id": f"d{i}", "text": t} for i, t in enumerate(texts)
                                 if i not in doomed])
        indexer = many._indexer
        with trio.fail_after(120):  # slow without the JIT
            while indexer.snapshot.tail or indexer._pick() is not None:
                await trio.sleep(0.02)
        views = indexer.snapshot.segments
        sizes = [v.n_live for v in views]
        assert indexer.merges > 0 and sum(sizes) == N_DOCS - len(doomed)
        for k in range(1, len(sizes)):
            assert sum(sizes[k:]) * policy.ratio < sizes[k - 1]
        assert len(sizes) <= math.floor(math.log(N_DOCS) / math.log(policy.ratio + 1)) + 1
        firsts = [int(v.segment.docnums[0]) for v in views]
        lasts = [int(v.segment.docnums[-1]) for v in views]
        assert all(lasts[i] < firsts[i + 1] for i in range(len(views) - 1))
        live_ids = [i for v in views for i, alive in zip(v.segment.ids, v.live.tolist(), strict=True)
                    if alive]
        assert sorted(live_ids) == sorted(f"d{i}" for i in range(N_DOCS) if i not in doomed)
        for query in QUERIES:
            assert await many.search_documents(query, k=10) == \
                await one.search_documents(query, k=10)


async def test_a_burst_then_quiet_settles_into_one_segment_or_a_small_second(monkeypatch):
    """Once the writers stop, the idle builder consolidates: one segment, or (when what lies
    outside the largest is under ``CONSOLIDATE_FRACTION`` of it) the largest and one small
    segment; every live document once, rankings as one batch gives."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 0.05)
    texts = _texts(5, N_DOCS)
    async with Engine.open(None, analyzer="simple") as many, \
            Engine.open(None, analyzer="simple") as one:
        await _burst(many, texts, set())
        await one.put_documents([{"id": f"d{i}", "text": t} for i, t in enumerate(texts)])
        indexer = many._indexer
        with trio.fail_after(120):  # slow without the JIT
            while not indexer.settled:
                await trio.sleep(0.02)
        sizes = [v.n_live for v in indexer.snapshot.segments]
        assert sum(sizes) == N_DOCS
        assert len(sizes) == 1 or (
            len(sizes) == 2 and sizes[1] < indexer_module.CONSOLIDATE_FRACTION * sizes[0])
        for query in QUERIES:
            assert await many.search_documents(query, k=10) == \
                await one.search_documents(query, k=10)


class _MergeFirstTwo:
    """A merge policy that merges the first two segments, once."""

    def __init__(self) -> None:
        self.picked = False

    def pick(self, lives: list[int]) -> tuple[int, int] | None:
        if self.picked or len(lives) < 2:
            return None
        self.picked = True
        return 0, 2


def _hold_merges(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """Make every merge wait in its worker thread until ``release`` is set (60 s at most);
    ``merging`` is set once one waits. Returns (release, merging)."""
    release, merging = threading.Event(), threading.Event()
    real_merged = indexer_module.Indexer._merged

    def held_merge(self, *args):  # a worker thread
        merging.set()
        release.wait(60)
        return real_merged(self, *args)

    monkeypatch.setattr(indexer_module.Indexer, "_merged", held_merge)
    return release, merging


async def _two_segments_then_a_held_merge(engine: Engine, texts: list[str], size: int,
                                          merging: threading.Event) -> None:
    """Put ``texts[:2 * size]`` as two commits, each folded into a segment, then wait until
    the merge of the two (``_MergeFirstTwo``) is held by ``_hold_merges``."""
    indexer = engine._indexer
    for start in (0, size):
        await engine.put_documents([{"id": f"d{i}", "text": texts[i]}
                                    for i in range(start, start + size)])
        with trio.fail_after(120):
            while indexer.snapshot.tail:
                await trio.sleep(0.01)
    with trio.fail_after(120):
        while not merging.is_set():
            await trio.sleep(0.01)


async def test_folds_go_on_while_a_merge_runs(monkeypatch):
    """The builder folds new commits into segments while a merge is still running (a burst's
    tail does not wait for the merge), and the merge then lands around the segments folded
    meanwhile: every document once, rankings as one batch gives."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    monkeypatch.setattr(indexer_module, "MERGE_POLICY", _MergeFirstTwo())
    release, merging = _hold_merges(monkeypatch)
    texts = _texts(7, 900)
    async with Engine.open(None, analyzer="simple") as many, \
            Engine.open(None, analyzer="simple") as one:
        indexer = many._indexer
        try:
            await _two_segments_then_a_held_merge(many, texts, 300, merging)
            folds = indexer.folds
            await many.put_documents([{"id": f"d{i}", "text": texts[i]} for i in range(600, 900)])
            with trio.fail_after(120):  # folded while the merge is held
                while indexer.snapshot.tail:
                    await trio.sleep(0.01)
            assert indexer.folds > folds and indexer.merges == 0
            assert [v.n_live for v in indexer.snapshot.segments] == [300, 300, 300]
        finally:
            release.set()
        with trio.fail_after(120):
            while indexer.merges == 0:
                await trio.sleep(0.01)
        views = indexer.snapshot.segments
        assert [v.n_live for v in views] == [600, 300]
        live_ids = [i for v in views for i in v.segment.ids]
        assert sorted(live_ids) == sorted(f"d{i}" for i in range(900))
        await one.put_documents([{"id": f"d{i}", "text": t} for i, t in enumerate(texts)])
        for query in QUERIES:
            assert await many.search_documents(query, k=10) == \
                await one.search_documents(query, k=10)


async def test_consolidation_waits_for_writes_to_pause(monkeypatch):
    """While commits keep coming (closer together than ``CONSOLIDATE_IDLE_SECONDS``), the
    builder does not consolidate, even as folds keep waking its merge task; once they stop, it
    does."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 0.4)
    no_merges = _MergeFirstTwo()
    no_merges.picked = True  # no policy merges: consolidation alone
    monkeypatch.setattr(indexer_module, "MERGE_POLICY", no_merges)
    texts = _texts(9, 2000)
    async with Engine.open(None, analyzer="simple") as engine:
        indexer = engine._indexer
        for n in range(0, 2000, 200):  # each a fold of its own (>= FOLD_AT ... or idle)
            await engine.put_documents([{"id": f"d{i}", "text": texts[i]}
                                        for i in range(n, n + 200)])
            await trio.sleep(0.1)
        assert indexer.consolidations == 0
        assert len(indexer.snapshot.segments) + bool(indexer.snapshot.tail) > 1
        with trio.fail_after(120):
            while not indexer.settled:
                await trio.sleep(0.02)
        assert indexer.consolidations >= 1
        assert [v.n_live for v in indexer.snapshot.segments] == [2000]


async def test_while_a_merge_runs_folds_wait_for_a_larger_tail(monkeypatch):
    """While the merge task is busy, commits are folded once the tail holds
    ``FOLD_AT_MERGING`` documents (or after the idle time), not every ``FOLD_AT``: a burst
    beside a long merge leaves a few segments, not one per 512 documents; once the merge is
    done, the held tail is folded at once."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    monkeypatch.setattr(indexer_module, "FOLD_IDLE_SECONDS", 30.0)  # folds by size only here
    monkeypatch.setattr(indexer_module, "MERGE_POLICY", _MergeFirstTwo())
    release, merging = _hold_merges(monkeypatch)
    texts = _texts(11, 4200)
    async with Engine.open(None, analyzer="simple") as engine:
        indexer = engine._indexer
        try:
            # two segments of 600 (each at least FOLD_AT): a merge
            await _two_segments_then_a_held_merge(engine, texts, 600, merging)
            for start in range(1200, 4200, 100):  # 3,000 documents in commits of 100
                await engine.put_documents([{"id": f"d{i}", "text": texts[i]}
                                            for i in range(start, start + 100)])
            await trio.sleep(0.2)
            assert len(indexer.snapshot.tail) == 3000  # over FOLD_AT, under FOLD_AT_MERGING
            assert [v.n_live for v in indexer.snapshot.segments] == [600, 600]
        finally:
            release.set()
        with trio.fail_after(20):  # folded when the merge is done, not after the idle time
            while indexer.snapshot.tail or indexer.merges == 0:
                await trio.sleep(0.01)
        assert [v.n_live for v in indexer.snapshot.segments] == [1200, 3000]
