"""What a search costs right after a write (issue 21): an agent's loop of remember, then recall.

Question: every commit publishes a new snapshot, and the first search of a snapshot pays for
what the snapshot derives once: the length norms of every segment (the average length moved),
the query-time segment of the unfolded tail, the term memo. How long is a search right after a
write of one document, and of ten, next to a search on a settled store, and how does that grow
with the store?

Method: one in-memory store of ``--base`` documents of bench/lexical.py's corpus (pseudo-words,
Zipf 1.1, 10-60 words, ``analyzer="simple"``), put in chunks of 10,000 and settled into one
segment; the mid-frequency mix of lexical.py timed as ``search_documents(q, k=10)`` (the
settled p50, a pass after a warm pass). Then ``--rounds`` rounds of: ``put_documents`` of
``burst`` new documents (1, then 10), then one search timed (the next query of the mix), with
the builder folding the tail as it does (``FOLD_AT`` 512, 50 ms idle): the tail each search
met is recorded. p50 and p90 of those searches, and their ratio to the settled p50. One
process; compare ratios and same-hour A/Bs (``PYTHONPATH`` pointing at another checkout).

Usage: ``python bench/write_then_search.py [--bases 50000,200000] [--rounds 400]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, nearest_rank, write_timed
from lexical import DEFAULTS, SEED, Corpus, _settle

from hmsengine import Engine

QUESTION = "What a search costs right after a write (remember, then recall)"
BURSTS = (1, 10)


async def measure(base: int, rounds: int) -> dict[str, Any]:
    extra = rounds * sum(BURSTS)
    corpus = Corpus(base + extra, dict(DEFAULTS), SEED)
    texts = corpus.texts
    queries = corpus.queries["mid"]
    async with Engine.open(None, analyzer="simple") as engine:
        for lo in range(0, base, 10_000):
            await engine.put_documents([{"id": f"d{n}", "text": texts[n]}
                                        for n in range(lo, min(base, lo + 10_000))])
        await _settle(engine, consolidated=True)
        for q in queries:
            await engine.search_documents(q, k=10)
        lat = []
        for q in queries:
            t = time.perf_counter()
            await engine.search_documents(q, k=10)
            lat.append(time.perf_counter() - t)
        settled = statistics.median(lat) * 1e6
        out: dict[str, Any] = {"base": base, "settled_p50_us": settled, "bursts": {}}
        next_doc = base
        for burst in BURSTS:
            lat, tails = [], []
            for r in range(rounds):
                await engine.put_documents([{"id": f"d{n}", "text": texts[n]}
                                            for n in range(next_doc, next_doc + burst)])
                next_doc += burst
                tails.append(len(engine._indexer.snapshot.tail))
                q = queries[r % len(queries)]
                t = time.perf_counter()
                await engine.search_documents(q, k=10)
                lat.append(time.perf_counter() - t)
            p50, p90 = nearest_rank(lat, 0.5) * 1e6, nearest_rank(lat, 0.9) * 1e6
            out["bursts"][str(burst)] = {
                "p50_us": p50, "p90_us": p90, "max_us": max(lat) * 1e6,
                "p50_over_settled": p50 / settled, "tail_median": statistics.median(tails),
                "tail_max": max(tails)}
            print(f"base {base}: write {burst:>2} then search p50 {p50:7.0f} us p90 {p90:7.0f} us "
                  f"({p50 / settled:5.1f}x the settled {settled:.0f} us), tail median "
                  f"{statistics.median(tails):.0f}", file=sys.stderr, flush=True)
            await _settle(engine, consolidated=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=QUESTION)
    parser.add_argument("--bases", default="50000,200000")
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "write_then_search.json")
    args = parser.parse_args(argv)

    def run() -> dict[str, Any]:
        runs = [trio.run(measure, int(b), args.rounds) for b in args.bases.split(",")]
        return {"runs": runs, "tables": [_table(runs)]}

    write_timed(args.output, QUESTION, run)
    return 0


def _table(runs: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [[f"{r['base']:,}", f"{r['settled_p50_us']:.0f}",
             *(f"{r['bursts'][str(b)]['p50_us']:.0f} / {r['bursts'][str(b)]['p90_us']:.0f} "
               f"({r['bursts'][str(b)]['p50_over_settled']:.1f}x; tail "
               f"{r['bursts'][str(b)]['tail_median']:.0f})" for b in BURSTS)] for r in runs]
    return {"title": "search right after a write, us (p50 / p90; p50 over the settled p50; "
                     "median tail documents the search met)",
            "columns": ["documents", "settled p50", *(f"after a {b}-document put" for b in BURSTS)],
            "rows": rows}


if __name__ == "__main__":
    raise SystemExit(main())
