"""What the general query path costs: filters, a k above the plain lane's, beside a busy thread.

Question: most searches take the plain-BM25 lane (no filter, k <= 10); the others take the
general path (``build_query``, ``prepare``, ``run``), inline for small work or in a worker
thread. What does a search with an ids filter, a metadata filter or k=50 cost next to a plain
one, and what happens to each when another Python thread is busy (a merge, the writer encoding
a batch, the application's own work), which takes the GIL whenever a kernel gives it away?

Method: one in-memory store of ``--documents`` documents of bench/lexical.py's corpus
(pseudo-words, Zipf 1.1, ``analyzer="simple"``), each with ``{"g": n % 4}`` as metadata, put
in chunks of 10,000 and settled into one segment; the mid-frequency mix of lexical.py as
``search_documents(q, ...)`` in four kinds: plain (k=10), ``ids=`` a frozenset of every 7th id
(resolved once per snapshot, then cached), ``metadata={"g": 1}`` (a quarter of the store;
resolved once per snapshot, then cached), the same filter resolved anew for each call (what
the first such search after a write pays: the bench clears the snapshot's filter memo before
each call), and k=50; a warm pass, then one timed pass per kind, first alone, then
with a daemon thread running a pure-Python loop. p50, p90 and p99 per kind and state. One
process; compare ratios and same-hour A/Bs (``PYTHONPATH`` pointing at another checkout).

Usage: ``python bench/general_path.py [--documents 50000]``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, nearest_rank, write_timed
from lexical import DEFAULTS, SEED, Corpus, _settle

from hmsengine import Engine

QUESTION = "What the general query path costs (filters, k=50), alone and beside a busy thread"


async def measure(n: int) -> dict[str, Any]:
    corpus = Corpus(n, dict(DEFAULTS), SEED)
    texts = corpus.texts
    queries = corpus.queries["mid"]
    stop = threading.Event()

    def busy() -> None:
        x = 0
        while not stop.is_set():
            for i in range(1000):
                x += i  # pure Python: holds the GIL but for the interpreter's switches

    out: dict[str, Any] = {"documents": n, "kinds": {}}
    async with Engine.open(None, analyzer="simple") as engine:
        for lo in range(0, n, 10_000):
            await engine.put_documents([{"id": f"d{i}", "text": texts[i], "metadata": {"g": i % 4}}
                                        for i in range(lo, min(n, lo + 10_000))])
        await _settle(engine, consolidated=True)
        subset = frozenset(f"d{i}" for i in range(0, n, 7))
        kinds: dict[str, dict[str, Any]] = {
            "plain": {"k": 10}, "ids": {"k": 10, "ids": subset},
            "metadata": {"k": 10, "metadata": {"g": 1}},
            "metadata, first on a snapshot": {"k": 10, "metadata": {"g": 1}}, "k50": {"k": 50}}
        for options in kinds.values():
            for q in queries:
                await engine.search_documents(q, **options)
        for state in ("alone", "busy thread"):
            thread = None
            if state == "busy thread":
                thread = threading.Thread(target=busy, daemon=True)
                thread.start()
            for name, options in kinds.items():
                lat = []
                fresh = name.endswith("first on a snapshot")
                for q in queries:
                    if fresh:
                        engine._indexer.snapshot.memo("filters").clear()
                    t = time.perf_counter()
                    await engine.search_documents(q, **options)
                    lat.append(time.perf_counter() - t)
                row = {f"p{int(p * 100)}_us": nearest_rank(lat, p) * 1e6 for p in (0.5, 0.9, 0.99)}
                out["kinds"].setdefault(name, {})[state] = row
                print(f"{state:>11} {name:>29}: p50 {row['p50_us']:8.1f} us  p90 "
                      f"{row['p90_us']:8.1f} us  p99 {row['p99_us']:8.1f} us",
                      file=sys.stderr, flush=True)
            if thread is not None:
                stop.set()
                thread.join()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=QUESTION)
    parser.add_argument("--documents", type=int, default=50_000)
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "general_path.json")
    args = parser.parse_args(argv)

    def run() -> dict[str, Any]:
        result = trio.run(measure, args.documents)
        return {**result, "tables": [_table(result, args.documents)]}

    write_timed(args.output, QUESTION, run)
    return 0


def _table(result: dict[str, Any], documents: int) -> dict[str, Any]:
    states = ("alone", "busy thread")
    rows = [[name, *(" / ".join(f"{by_state[st][p]:.0f}" for p in ("p50_us", "p90_us", "p99_us"))
                     for st in states)] for name, by_state in result["kinds"].items()]
    return {"title": f"search_documents at {documents:,} documents, us (p50 / p90 / p99)",
            "columns": ["kind", *states], "rows": rows}


if __name__ == "__main__":
    raise SystemExit(main())
