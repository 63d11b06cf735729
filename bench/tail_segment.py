"""What an unfolded tail costs the queries right after a burst (issue 21).

Question: a snapshot whose tail is not folded yet tokenizes that tail into a query-time segment
on its first search (``Snapshot.tail_view``), and every later search of the same snapshot
reuses it. How long does that build take at 1k-8k tail documents, and what does a query pay for
visiting it, next to the same documents folded into a segment and next to the store without
them?

Method: one in-memory store of ``--base`` documents of bench/lexical.py's corpus (pseudo-words,
Zipf 1.1, 10-60 words), settled into one segment and timed; then for each tail size, with
folding held (``FOLD_AT`` and ``FOLD_IDLE_SECONDS`` raised), that many more documents in one
``put_documents``: the build of the tail's segment is timed once, then the mid-frequency mix of
lexical.py (``--queries``, ``--passes`` passes) as ``search_documents(q, k=10)``, the median
per query of the first pass (a new snapshot's memos start empty) and of the later ones; then
the tail is folded (the builder woken with the usual settings) and the same queries timed
again; then the tail documents are deleted and the store settles again. One process, one state
after the other; compare the ratios.

Usage: ``python bench/tail_segment.py [--base 50000] [--tails 1000,2000,4000,8000]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, load_average, machine_facts, median, now_iso, write_results
from lexical import DEFAULTS, SEED, Corpus

from hmsengine import Engine
from hmsengine.engine import indexer as indexer_module

QUESTION = "What an unfolded tail costs the queries right after a burst (the query-time segment)"


async def _settle(engine: Engine) -> None:
    indexer = engine._indexer
    await trio.sleep(0.6)  # the idle consolidation starts after 0.5 s without a commit
    while not indexer.settled:
        await trio.sleep(0.005)


async def _p50_us(engine: Engine, queries: list[str], passes: int) -> tuple[float, float]:
    """Median us per query over the first pass (the snapshot's memos start empty) and over
    the later passes (memos filled)."""
    times: list[list[float]] = []
    for _ in range(passes):
        times.append([])
        for q in queries:
            t = time.perf_counter()
            await engine.search_documents(q, k=10)
            times[-1].append(time.perf_counter() - t)
    later = [x for pass_ in times[1:] for x in pass_]
    return median(times[0]) * 1e6, median(later) * 1e6


async def measure(base: int, tails: list[int], n_queries: int, passes: int) -> list[dict[str, Any]]:
    params = dict(DEFAULTS, queries=n_queries)
    corpus = Corpus(base + max(tails), params, SEED)
    queries = corpus.queries["mid"]
    rows = []
    async with Engine.open(None, analyzer="simple") as engine:
        indexer = engine._indexer
        for lo in range(0, base, 10_000):
            await engine.put_documents([{"id": f"d{n}", "text": corpus.texts[n]}
                                        for n in range(lo, min(lo + 10_000, base))])
        await _settle(engine)
        for q in queries[:20]:  # first calls (kernel dispatch), untimed
            await engine.search_documents(q, k=10)
        fold_at, idle = indexer_module.FOLD_AT, indexer_module.FOLD_IDLE_SECONDS
        for size in tails:
            settled = await _p50_us(engine, queries, passes)
            indexer_module.FOLD_AT, indexer_module.FOLD_IDLE_SECONDS = 10**9, 3600.0
            await engine.put_documents([{"id": f"d{n}", "text": corpus.texts[n]}
                                        for n in range(base, base + size)])
            snap = indexer.snapshot
            assert len(snap.tail) == size
            t = time.perf_counter()
            snap.tail_view()
            build_ms = (time.perf_counter() - t) * 1e3
            tail = await _p50_us(engine, queries, passes)
            assert indexer.snapshot is snap  # no fold, no merge landed while timing
            indexer_module.FOLD_AT, indexer_module.FOLD_IDLE_SECONDS = fold_at, idle
            indexer._wake.set()
            while indexer.snapshot.tail:
                await trio.sleep(0.005)
            segments = len(indexer.snapshot.segments)
            folded = await _p50_us(engine, queries, passes)
            rows.append({"tail": size, "build_ms": build_ms, "segments_when_folded": segments,
                         "p50_us": {"settled": settled, "tail": tail, "folded": folded},
                         "p50_us_order": ["first pass (memos empty)", "later passes"]})
            print(f"tail {size:>5}: build {build_ms:5.1f} ms once per snapshot; p50 us first pass / "
                  f"later: settled {settled[0]:.1f}/{settled[1]:.1f}, with the tail "
                  f"{tail[0]:.1f}/{tail[1]:.1f}, folded ({segments} segments) "
                  f"{folded[0]:.1f}/{folded[1]:.1f}", file=sys.stderr, flush=True)
            await engine.transact(deletes=[f"d{n}" for n in range(base, base + size)])
            await _settle(engine)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=QUESTION)
    parser.add_argument("--base", type=int, default=50_000)
    parser.add_argument("--tails", default="1000,2000,4000,8000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "tail_segment.json")
    args = parser.parse_args(argv)
    started = now_iso()
    load_before = load_average()
    rows = trio.run(measure, args.base, [int(s) for s in args.tails.split(",")],
                    args.queries, args.passes)
    write_results(args.output, {"question": QUESTION, "started": started,
                                "machine": machine_facts(), "load_before": load_before,
                                "load_after": load_average(), "base_documents": args.base,
                                "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
