"""What the index builder's work right after a burst of writes costs the queries beside it.

Question: right after 128 concurrent writers put a store's documents, the index builder folds
the tail, persists the new segments, merges them and consolidates them into one, in worker
threads, while queries run on the event loop. ``bench/lexical.py``'s "right after" passes
(issue 21's aims) are timed in that window. How much slower is a query there than on the
settled store, when in the window, and what stalls it?

Method: per trial, a fresh on-disk store (``analyzer="simple"``) gets bench/lexical.py's corpus
(``--documents``, default 50,000 and 200,000) from 128 writers, one ``put_document`` each, exactly as
lexical.py's ingest state; then, with nothing awaited in between, the mid-frequency mix of
lexical.py runs one query at a time (``search_documents(q, k=10)``, cycling over its 300
queries) for ``--seconds`` (3). Each query is timed alone, with the number of index segments
it met. A query that took over ``STALL_MS`` (1 ms, 25-55x a settled query) records, for each
other thread, the innermost hmsengine function it was in as the query ended: most often the
work that held the GIL (a thread that runs Python code keeps it until it blocks or until the
waiting thread has waited ``sys.getswitchinterval()``, 5 ms), else work that had the other
vCPU. Then the store settles (one segment), and
three passes of the same queries, timed by the same loop, give the settled q/s, p50 and mean
(the median pass) and each query's settled time (its fastest). Per window of
the seconds after the burst: q/s, p50, p99 and max, and the *stalled time*: the sum, over the
queries above ``STALL_MS``, of their time beyond their settled time. ``gc.collect()`` runs
after the burst, untimed, as lexical.py does before each pass.

Usage: ``python bench/right_after.py [--documents 50000,200000] [--trials 3] [--seconds 3]``; writes
bench/results/right_after.json. A same-hour A/B: run it with ``PYTHONPATH`` on the other
checkout.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, fresh_dir, nearest_rank, scratch_root, write_timed
from lexical import DEFAULTS, SEED, Corpus, _settle, hms_concurrent_ingest

from hmsengine import Engine

QUESTION = "What the index builder's work right after a burst costs the queries beside it"
STALL_MS = 1.0
WINDOWS = ((0.0, 0.25), (0.25, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, 3.0))
SETTLED_PASSES = 3


def _culprits() -> list[str]:
    """For each thread but this one, the innermost hmsengine function it is in (or "-")."""
    here = threading.get_ident()
    found = []
    for ident, frame in sys._current_frames().items():
        if ident == here:
            continue
        f: Any = frame
        while f is not None and "hmsengine" not in f.f_code.co_filename:
            f = f.f_back
        if f is not None:
            module = f.f_code.co_filename.rsplit("hmsengine/", 1)[-1].removesuffix(".py")
            found.append(f"{module.replace('/', '.')}.{f.f_code.co_name}")
    return found


async def trial(corpus: Corpus, root: Path, seconds: float) -> dict[str, Any]:
    queries = corpus.queries["mid"]
    async with Engine.open(root, analyzer="simple") as engine:
        await engine.search_documents("warm up", k=1)
        ingest = await hms_concurrent_ingest(engine, corpus)
        gc.collect()
        search, indexer = engine.search_documents, engine._indexer
        clock = time.perf_counter
        records: list[tuple[float, float, int, int]] = []
        blamed: Counter[str] = Counter()
        stall = STALL_MS / 1e3
        start = clock()
        i = 0
        while (t := clock()) - start < seconds:
            n = i % len(queries)
            await search(queries[n], k=10)
            took = clock() - t
            records.append((t - start, took, n, len(indexer.snapshot.segments)))
            if took > stall:
                blamed.update(_culprits())
            i += 1
        await _settle(engine, consolidated=True)
        # The same loop, bookkeeping included, so that its q/s compares with the windows'.
        settled = [float("inf")] * len(queries)
        passes = []
        for _ in range(SETTLED_PASSES):
            done: list[tuple[float, float, int, int]] = []
            begin = clock()
            for n, q in enumerate(queries):
                t = clock()
                await search(q, k=10)
                took = clock() - t
                done.append((t - begin, took, n, len(indexer.snapshot.segments)))
                settled[n] = min(settled[n], took)
            lat = [r[1] for r in done]
            passes.append({"qps": len(done) / (clock() - begin),
                           "mean_us": statistics.fmean(lat) * 1e6,
                           "p50_us": nearest_rank(lat, 0.5) * 1e6})
        segments_settled = len(indexer.snapshot.segments)
    def stalled_ms(rows: list[tuple[float, float, int, int]]) -> float:
        """Time beyond their settled time of the ``rows`` (queries) that took over STALL_MS."""
        return sum(r[1] - settled[r[2]] for r in rows if r[1] > stall) * 1e3

    windows = []
    for lo, hi in WINDOWS:
        inside = [r for r in records if lo <= r[0] < hi]
        if not inside:
            continue
        lat = [r[1] for r in inside]
        windows.append({
            "from_s": lo, "to_s": hi, "queries": len(inside), "qps": len(inside) / (hi - lo),
            "p50_us": nearest_rank(lat, 0.5) * 1e6, "p99_us": nearest_rank(lat, 0.99) * 1e6,
            "max_us": max(lat) * 1e6, "stalls": sum(1 for x in lat if x > stall),
            "stalled_ms": stalled_ms(inside),
            "segments": [min(r[3] for r in inside), max(r[3] for r in inside)]})
    first = [r for r in records if r[0] < 1.0]
    return {"ingest_docs_per_s": ingest["docs_per_s"], "tail_at_end": ingest["tail_at_end"],
            "segments_at_end": ingest["segments_at_end"], "windows": windows,
            "first_second": {"queries": len(first),
                             "mean_us": statistics.fmean(r[1] for r in first) * 1e6,
                             "stalled_ms": stalled_ms(first)},
            "settled": {"qps": statistics.median(p["qps"] for p in passes),
                        "mean_us": statistics.median(p["mean_us"] for p in passes),
                        "p50_us": statistics.median(p["p50_us"] for p in passes),
                        "fastest_mean_us": statistics.fmean(settled) * 1e6,
                        "segments": segments_settled, "passes": passes},
            "blamed": dict(blamed.most_common(12))}


async def measure(documents: int, trials: int, seconds: float) -> dict[str, Any]:
    corpus = Corpus(documents, dict(DEFAULTS), SEED)
    runs = []
    with scratch_root() as root:
        for t in range(trials):
            with fresh_dir(root, f"trial-{t}") as work:
                r = await trial(corpus, work, seconds)
            runs.append(r)
            fs = r["first_second"]
            print(f"{documents:,} trial {t}: first second mean {fs['mean_us']:.1f} us "
                  f"(settled {r['settled']['mean_us']:.1f}), stalled {fs['stalled_ms']:.1f} ms; "
                  + "; ".join(f"{w['from_s']}-{w['to_s']} s {w['qps']:,.0f} q/s p50 "
                              f"{w['p50_us']:.0f} max {w['max_us']:,.0f} us stalled "
                              f"{w['stalled_ms']:.1f} ms" for w in r["windows"]),
                  file=sys.stderr, flush=True)
    return {"documents": documents, "trials": runs}


def _table(run: dict[str, Any]) -> dict[str, Any]:
    rows = []
    for lo, hi in WINDOWS:
        ws = [w for r in run["trials"] for w in r["windows"] if w["from_s"] == lo]
        if not ws:
            continue
        rows.append([f"{lo:g}-{hi:g} s",
                     " / ".join(f"{w['qps']:,.0f}" for w in ws),
                     " / ".join(f"{w['p50_us']:.0f}" for w in ws),
                     " / ".join(f"{w['max_us'] / 1e3:.1f}" for w in ws),
                     " / ".join(str(w["stalls"]) for w in ws),
                     " / ".join(f"{w['stalled_ms']:.1f}" for w in ws),
                     " / ".join(f"{w['segments'][0]}-{w['segments'][1]}" for w in ws)])
    settled = " / ".join(f"{r['settled']['qps']:,.0f}" for r in run["trials"])
    rows.append([f"settled (median of {SETTLED_PASSES} passes)", settled,
                 " / ".join(f"{r['settled']['p50_us']:.0f}" for r in run["trials"]),
                 "", "", "", " / ".join(str(r["settled"]["segments"]) for r in run["trials"])])
    return {"title": f"{run['documents']:,} documents: mid-mix queries after a burst of 128 "
                     "writers, per window (one value per trial)",
            "columns": ["seconds after the burst", "q/s", "p50 us", "max ms",
                        f"queries over {STALL_MS:g} ms", "stalled ms", "segments"],
            "rows": rows}


def _blame_table(run: dict[str, Any]) -> dict[str, Any]:
    total: Counter[str] = Counter()
    for r in run["trials"]:
        total.update(r["blamed"])
    return {"title": f"{run['documents']:,} documents: where the other threads were when a query "
                     f"took over {STALL_MS:g} ms (all trials)",
            "columns": ["function", "stalled queries"],
            "rows": [[name, str(count)] for name, count in total.most_common(12)]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=QUESTION)
    parser.add_argument("--documents", default="50000,200000")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "right_after.json")
    args = parser.parse_args(argv)

    def run() -> dict[str, Any]:
        runs = [trio.run(measure, int(n), args.trials, args.seconds)
                for n in args.documents.split(",")]
        return {"runs": runs, "stall_ms": STALL_MS,
                "tables": [t for r in runs for t in (_table(r), _blame_table(r))]}

    write_timed(args.output, QUESTION, run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
