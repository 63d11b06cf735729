"""Seeded concurrent runs: readers, writers, deletes and a compaction (with or without purge)
at once. Every read equals the state of some committed revision no older than the revision
acknowledged before the read began, and one reader never goes back in time; purged documents
never show again. Each run is short (milliseconds), so documents stay in the index's tail:
deletions inside folded segments are exercised by the persistence and snapshot-isolation tests."""

from __future__ import annotations

import os
import random

import trio
from reliability_host import report

from hmsengine import Engine
from hmsengine.engine.values import DeleteOp

RUNS = int(os.environ.get("HMS_CONCURRENCY_RUNS", "500"))
IDS = [f"k{i}" for i in range(6)]


async def one_run(seed: int) -> tuple[int, int]:
    """Returns (reads checked, violations) for one seeded run."""
    rng = random.Random(seed)
    ops_by_revision: dict[int, tuple[str, str | None]] = {}
    reads: list[tuple[int, int, str, str, object]] = []  # (reader, floor, kind, key, observed)
    async with Engine.open(None, analyzer="simple") as engine:

        async def writer(w: int) -> None:
            for step in range(6):
                doc_id = rng.choice(IDS)
                if rng.random() < 0.3:
                    (result,) = await engine._submit([DeleteOp(id=doc_id)])
                    if result.existed:
                        ops_by_revision[result.revision] = (doc_id, None)
                else:
                    text = f"word{rng.randrange(3)} run{seed} w{w} s{step}"
                    put = await engine.put_document(doc_id, text)
                    ops_by_revision[put.revision] = (doc_id, text)
                await trio.sleep(0)

        writers_done = trio.Event()

        async def read_once(r: int) -> None:
            floor = engine.revision
            if rng.random() < 0.5:
                doc_id = rng.choice(IDS)
                doc = await engine.get_document(doc_id)
                reads.append((r, floor, "get", doc_id, None if doc is None else doc.text))
            else:
                word = f"word{rng.randrange(3)}"
                hits = await engine.search_documents(word, k=100)
                reads.append((r, floor, "search", word, frozenset(h.id for h in hits)))

        async def reader(r: int) -> None:
            # Read while the writers write, then a last round once they are done (floor = the
            # final revision: the reads must show exactly the final state).
            for _ in range(40):  # bounded: readers must not spin through the whole run
                if writers_done.is_set():
                    break
                await read_once(r)
                await trio.sleep(0)
            await writers_done.wait()
            for _ in range(3):
                await read_once(r)

        async def compactor() -> None:
            await trio.sleep(0)
            await engine.compact(purge=rng.random() < 0.5)

        async def writers() -> None:
            async with trio.open_nursery() as inner:
                for w in range(3):
                    inner.start_soon(writer, w)
            writers_done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(writers)
            for r in range(3):
                nursery.start_soon(reader, r)
            nursery.start_soon(compactor)
        final = engine.revision
    # The state at every revision, replayed from the acknowledged operations.
    assert sorted(ops_by_revision) == list(range(1, final + 1)), "every revision is known"
    states = [{}]
    for rev in range(1, final + 1):
        state = dict(states[-1])
        doc_id, text = ops_by_revision[rev]
        if text is None:
            state.pop(doc_id, None)
        else:
            state[doc_id] = text
        states.append(state)

    def matches(rev: int, kind: str, key: str, observed: object) -> bool:
        state = states[rev]
        if kind == "get":
            return state.get(key) == observed
        return frozenset(i for i, t in state.items() if key in t.split()) == observed

    violations = 0
    last: dict[int, int] = {}
    for reader_id, floor, kind, key, observed in reads:
        start = max(floor, last.get(reader_id, 0))
        found = next((rev for rev in range(start, final + 1) if matches(rev, kind, key, observed)), None)
        if found is None:
            violations += 1
        else:
            last[reader_id] = found
    return len(reads), violations


async def test_concurrent_reads_see_committed_revisions():
    """RUNS seeded runs: 0 reads that match no committed revision at or after their floor."""
    total_reads = total_violations = 0
    for seed in range(RUNS):
        reads, violations = await one_run(seed)
        total_reads += reads
        total_violations += violations
    report(f"concurrency: {RUNS} seeded runs, {total_reads} reads checked, "
           f"{total_violations} violations")
    assert total_violations == 0
