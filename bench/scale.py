"""How does hmsengine behave from a thousand to a million facts?

One seeded corpus (the generator of ``bench/memory_overhead.py``: texts of 20-28 words drawn from
a 10,000-pseudo-word Zipf vocabulary, s=1.0; queries of 2-4 distinct words of a random fact), at
1,000, 10,000, 100,000 and 1,000,000 facts. For every size, each step in its own process:

1. build: ``Engine.open(dir)`` on the repository's disk, ``Memory(engine).remember_many`` in
   batches of 5,000 facts (one transaction each, as a user would load them), then settle (the
   index tail folded, no merge pending), then close (which persists the index segments). Timed:
   ingest (the ``remember_many`` calls), settle, close; RSS at the end of the load.
2. store size: bytes on disk of the store directory (``du``: allocated blocks) and per part
   (journal, text records, persisted index segments).
3. open with persisted segments (``--open-repeats`` fresh processes): ``Engine.open`` until its
   ``async with`` is entered (recovery, kernel warm-up, loading the persisted segments), then
   ``Memory(engine).index`` (what the first memory call builds: the fact metadata index), then one
   recall. "open" is the sum: the time until the first recall can be answered. RSS (``VmRSS``)
   after it. The first process also runs the queries: one untimed warm-up pass, then
   ``--passes`` timed passes over the queries, each query running ``memory.recall(q, k=10)`` and
   ``engine.search_documents(q, k=10)`` back to back (order alternating), each call timed alone;
   p50 and p99 per pass, the median over passes reported; RSS (``VmRSS`` and the peak ``VmHWM``)
   after the queries.
4. cold open (``--cold-repeats`` fresh processes): the same, after deleting the persisted index
   (``<generation>/index/``), so the open re-reads and re-tokenizes every fact. Its close writes
   the segments again (timed apart). The OS page cache is not dropped (that needs root): "cold"
   means "no persisted index", not "nothing cached".
Targets checked at 1,000,000 facts (the scale issue's acceptance): open with persisted segments
under 5 s, recall p50 under 20 ms, RSS under 3 GB (the larger of RSS after open and after the
queries); and the query-speed issue's tighter aims for the same figures: the open until the
first recall under 2 s, recall p50 under 0.5 ms.

Lexical query speed next to tantivy-py, PISA and bm25s, 10k to 1M documents, is
``bench/lexical.py``'s question (same tokens, same BM25, block-max pruning left on).

Run: ``python bench/scale.py`` (about 2 minutes on the 2-core VM, most of it the 1M size; it
took ~12 before the write path and the open got faster),
``--quick`` for a smoke run (1k and 10k, ~1 minute), ``--sizes 1000,100000``. Writes
bench/results/scale.json (``--quick``: scale-quick.json), updated after every size.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # bench scripts run as files, not as a package
    RESULTS_DIR,
    busy_warning,
    load_average,
    machine_facts,
    median,
    now_iso,
    print_table,
    ratio,
    scratch_root,
    write_results,
)
from memory_overhead import Corpus, _release_freed_memory, _rss

import hmsengine
from hmsengine import Engine, Memory

QUESTION = ("Ingest time, store size, open time (cold and with persisted index segments), RSS and "
            "recall latency of hmsengine from 1k to 1M facts")
SEED = 20240611
K = 10
BATCH = 5_000
DEFAULTS: dict[str, Any] = {"sizes": (1_000, 10_000, 100_000, 1_000_000), "queries": 300,
                            "passes": 3, "open_repeats": 3, "cold_repeats": 1}
QUICK: dict[str, Any] = {"sizes": (1_000, 10_000), "queries": 100, "passes": 2, "open_repeats": 2,
                         "cold_repeats": 1}
TARGET_FACTS = 1_000_000
TARGETS = {"open_persisted_s": 5.0, "recall_p50_ms": 20.0, "rss_gib": 3.0}
# The query-speed issue's aims for the same two figures (issue 21).
SPEED_AIMS = {"open_persisted_s": 2.0, "recall_p50_ms": 0.5}
SETTLE_LIMIT_S = 900


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def _lat_summary(lat: list[float]) -> dict[str, Any]:
    ms = [x * 1e3 for x in lat]
    return {"queries": len(ms), "p50_ms": _pct(ms, 50), "p99_ms": _pct(ms, 99),
            "mean_ms": sum(ms) / len(ms), "max_ms": max(ms)}


# -- children --------------------------------------------------------------------------------------


async def _settle(engine: Engine) -> float:
    """0.5 s of quiet, then until the index tail is folded and no merge or consolidation is
    pending (engine/indexer.py: the builder merges segments once commits stop)."""
    start = time.perf_counter()
    await trio.sleep(0.5)
    indexer = engine._indexer  # as bench/search.py: the pending-merge check is internal
    deadline = time.monotonic() + SETTLE_LIMIT_S
    while not indexer.settled:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the index did not settle within {SETTLE_LIMIT_S} s")
        await trio.sleep(0.01)
    return time.perf_counter() - start


def _stats(engine: Engine) -> dict[str, Any]:
    s = engine.statistics()
    return {"documents": s.documents, "transactions": s.transactions,
            "index_segments": s.index_segments, "index_tail": s.index_tail,
            "index_merges": s.index_merges, "index_documents_loaded": s.index_documents_loaded,
            "index_documents_tokenized": s.index_documents_tokenized,
            "index_segments_rejected": s.index_segments_rejected}


async def child_build(n: int, store: Path, n_queries: int, seed: int,
                      queries_out: Path) -> dict[str, Any]:
    clock = time.perf_counter
    start = clock()
    corpus = Corpus(n, n_queries, seed)
    out: dict[str, Any] = {"facts": n, "corpus": corpus.describe(),
                           "corpus_seconds": clock() - start}
    queries_out.write_text(json.dumps([q["text"] for q in corpus.queries]), encoding="utf-8")
    batches: list[float] = []
    async with Engine.open(store) as engine:
        memory = Memory(engine)
        start = clock()
        for lo in range(0, n, BATCH):
            facts = corpus.facts("memory", lo, min(n, lo + BATCH), 0)
            t = clock()
            await memory.remember_many(facts)
            batches.append(clock() - t)
        out["ingest_seconds"] = clock() - start
        out["ingest_call_seconds"] = sum(batches)
        out["ingest_facts_per_s"] = n / out["ingest_seconds"]
        # Per batch (5,000 facts), to see whether writes slow down as the store grows.
        out["batch_seconds"] = [round(b, 4) for b in batches]
        out["settle_seconds"] = await _settle(engine)
        out["statistics"] = _stats(engine)
        corpus.texts = []
        _release_freed_memory()
        out["rss_after_load"] = _rss()
        close_start = clock()
    out["close_seconds"] = clock() - close_start
    return out


async def child_open(store: Path, queries: list[str], passes: int) -> dict[str, Any]:
    clock = time.perf_counter
    out: dict[str, Any] = {}
    cpu = time.process_time  # every thread of this process: steadier than wall time under load
    cpu_start = cpu()
    start = clock()
    async with Engine.open(store) as engine:
        engine_open, engine_cpu = clock(), cpu()
        memory = Memory(engine)
        _ = memory.index  # what the first memory call does: scan the facts' metadata
        index_built, index_cpu = clock(), cpu()
        await memory.recall(queries[0] if queries else "x", k=K)
        ready = clock()
        out.update(open_cpu_seconds=cpu() - cpu_start,
                   engine_open_cpu_seconds=engine_cpu - cpu_start,
                   memory_index_cpu_seconds=index_cpu - engine_cpu)
        out.update(engine_open_seconds=engine_open - start,
                   memory_index_seconds=index_built - engine_open,
                   first_recall_seconds=ready - index_built, open_seconds=ready - start,
                   statistics_at_open=_stats(engine))
        _release_freed_memory()
        out["rss_after_open"] = _rss()
        if passes:
            calls: dict[str, Callable[[str], Any]] = {
                "recall": lambda q: memory.recall(q, k=K),
                "search": lambda q: engine.search_documents(q, k=K)}
            names = list(calls)
            returned = {name: 0 for name in names}
            for q in queries:  # warm-up, untimed
                for name in names:
                    await calls[name](q)
            runs: list[dict[str, Any]] = []
            for p in range(passes):
                lat: dict[str, list[float]] = {name: [] for name in names}
                for qi, q in enumerate(queries):
                    order = names if (qi + p) % 2 == 0 else names[::-1]
                    for name in order:
                        t = clock()
                        hits = await calls[name](q)
                        lat[name].append(clock() - t)
                        returned[name] += len(hits)
                runs.append({name: _lat_summary(v) for name, v in lat.items()})
                _log(f"      pass {p + 1}/{passes}: " + ", ".join(
                    f"{name} p50 {runs[-1][name]['p50_ms']:.2f} ms" for name in names))
            out["passes"] = runs
            out["mean_results_per_query"] = {name: c / (passes * len(queries))
                                             for name, c in returned.items()}
            _release_freed_memory()
            out["rss_after_queries"] = _rss()
        close_start = clock()
    out["close_seconds"] = clock() - close_start
    return out


def run_child(args: argparse.Namespace) -> int:
    store = Path(args.store) if args.store else Path()
    if args.child == "build":
        result = trio.run(child_build, args.facts, store, args.queries, args.seed,
                          Path(args.queries_file))
    else:
        queries = json.loads(Path(args.queries_file).read_text(encoding="utf-8"))
        result = trio.run(child_open, store, queries, args.passes)
    Path(args.child_out).write_text(json.dumps(result), encoding="utf-8")
    return 0


# -- the parent ------------------------------------------------------------------------------------


def _spawn(root: Path, mode: str, extra: list[str]) -> dict[str, Any]:
    out = root / f"child-{mode}.json"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode,
           "--child-out", str(out), *extra]
    subprocess.run(cmd, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def _write_queries(root: Path, queries: list[str]) -> Path:
    path = root / "queries-empty.json"
    path.write_text(json.dumps(queries), encoding="utf-8")
    return path


def _disk_usage(store: Path) -> dict[str, int]:
    """Allocated bytes (what ``du`` counts) and apparent bytes, in all and per part."""
    parts = {"journal": 0, "text": 0, "index": 0, "other": 0}
    allocated = apparent = 0
    for dirpath, _dirs, files in os.walk(store):
        for name in files:
            st = os.stat(os.path.join(dirpath, name))
            allocated += st.st_blocks * 512
            apparent += st.st_size
            if "index" in Path(dirpath).parts[len(store.parts):]:
                parts["index"] += st.st_size
            elif name == "journal.log":
                parts["journal"] += st.st_size
            elif name == "documents.text":
                parts["text"] += st.st_size
            else:
                parts["other"] += st.st_size
    return {"allocated_bytes": allocated, "apparent_bytes": apparent,
            **{f"{k}_bytes": v for k, v in parts.items()}}


def _drop_persisted_index(store: Path) -> int:
    """Delete every generation's persisted index; returns how many folders were removed."""
    removed = 0
    for index in store.glob("gen-*/index"):
        shutil.rmtree(index)
        removed += 1
    return removed


def _summarize_opens(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("open_seconds", "engine_open_seconds", "memory_index_seconds", "first_recall_seconds",
            "close_seconds", "open_cpu_seconds", "engine_open_cpu_seconds",
            "memory_index_cpu_seconds")
    out: dict[str, Any] = {k: median([r[k] for r in runs if k in r]) for k in keys}
    out["rss_after_open_kib"] = median([r["rss_after_open"]["vm_rss_kib"] for r in runs])
    return out


def run_size(n: int, root: Path, params: dict[str, Any], seed: int,
             empty_kib: int | None) -> dict[str, Any]:
    store = root / f"store-{n}"
    qfile = root / f"queries-{n}.json"
    common = ["--facts", str(n), "--queries", str(params["queries"]), "--seed", str(seed)]
    _log(f"{n:,} facts: build (remember_many, batches of {BATCH:,})")
    build = _spawn(root, "build", [*common, "--store", str(store), "--queries-file", str(qfile)])
    _log(f"    ingest {build['ingest_seconds']:.1f} s ({build['ingest_facts_per_s']:,.0f} "
         f"facts/s), settle {build['settle_seconds']:.1f} s, close {build['close_seconds']:.1f} s")
    disk = _disk_usage(store)
    _log(f"    store on disk: {disk['allocated_bytes'] / 2**20:,.1f} MiB")
    res: dict[str, Any] = {"facts": n, "build": build, "disk": disk}
    persisted: list[dict[str, Any]] = []
    for rep in range(params["open_repeats"]):
        passes = params["passes"] if rep == 0 else 0
        r = _spawn(root, "open", ["--store", str(store), "--queries-file", str(qfile),
                                  "--passes", str(passes)])
        persisted.append(r)
        _log(f"    open with persisted segments ({rep + 1}/{params['open_repeats']}): "
             f"{r['open_seconds']:.2f} s (engine {r['engine_open_seconds']:.2f} s, memory index "
             f"{r['memory_index_seconds']:.2f} s; CPU {r['open_cpu_seconds']:.2f} s), "
             f"RSS {r['rss_after_open']['vm_rss_kib'] / 1024:,.0f} MiB")
    cold: list[dict[str, Any]] = []
    for rep in range(params["cold_repeats"]):
        removed = _drop_persisted_index(store)
        r = _spawn(root, "open", ["--store", str(store), "--queries-file", str(qfile),
                                  "--passes", "0"])
        r["index_folders_removed"] = removed
        cold.append(r)
        _log(f"    cold open, no persisted index ({rep + 1}/{params['cold_repeats']}): "
             f"{r['open_seconds']:.2f} s (engine {r['engine_open_seconds']:.2f} s), close (writes "
             f"the segments) {r['close_seconds']:.1f} s")
    res["open_persisted_runs"] = persisted
    res["open_cold_runs"] = cold
    res["open_persisted"] = _summarize_opens(persisted)
    res["open_cold"] = _summarize_opens(cold) if cold else None
    timed = persisted[0]
    res["latency"] = {
        name: {"p50_ms": median([p[name]["p50_ms"] for p in timed["passes"]]),
               "p99_ms": median([p[name]["p99_ms"] for p in timed["passes"]]),
               "mean_ms": median([p[name]["mean_ms"] for p in timed["passes"]])}
        for name in ("recall", "search")}
    res["latency"]["recall_over_search_p50"] = ratio(res["latency"]["recall"]["p50_ms"],
                                                     res["latency"]["search"]["p50_ms"])
    rss_q = timed["rss_after_queries"]
    res["rss"] = {"after_load_kib": build["rss_after_load"]["vm_rss_kib"],
                  "after_open_kib": res["open_persisted"]["rss_after_open_kib"],
                  "after_queries_kib": rss_q["vm_rss_kib"], "peak_kib": rss_q["vm_hwm_kib"],
                  "cold_after_open_kib": (res["open_cold"] or {}).get("rss_after_open_kib")}
    res["rss"]["bytes_per_fact_after_open"] = res["rss"]["after_open_kib"] * 1024 / n
    res["rss"]["empty_store_kib"] = empty_kib
    if empty_kib is not None:
        res["rss"]["bytes_per_fact_over_empty"] = (
            (res["rss"]["after_open_kib"] - empty_kib) * 1024 / n)
    shutil.rmtree(store, ignore_errors=True)
    qfile.unlink(missing_ok=True)
    return res


def _gib(kib: float | None) -> str:
    return "-" if kib is None else f"{kib / 2**20:.2f}"


def report(runs: dict[str, Any]) -> None:
    print()
    print("Growth curve (medians; open = Engine.open + Memory index + first recall, in a fresh "
          "process; latency: median over passes of each pass's percentile):")
    headers = ["facts", "ingest s", "facts/s", "disk MiB", "open cold s", "open persisted s",
               "recall p50 ms", "recall p99 ms", "search p50 ms", "RSS open GiB",
               "RSS queries GiB", "bytes/fact over empty"]
    rows = []
    for r in runs.values():
        cold = r["open_cold"]
        rows.append([
            f"{r['facts']:,}", f"{r['build']['ingest_seconds']:.1f}",
            f"{r['build']['ingest_facts_per_s']:,.0f}",
            f"{r['disk']['allocated_bytes'] / 2**20:,.1f}",
            "-" if cold is None else f"{cold['open_seconds']:.2f}",
            f"{r['open_persisted']['open_seconds']:.2f}",
            f"{r['latency']['recall']['p50_ms']:.2f}", f"{r['latency']['recall']['p99_ms']:.2f}",
            f"{r['latency']['search']['p50_ms']:.2f}", _gib(r["rss"]["after_open_kib"]),
            _gib(r["rss"]["after_queries_kib"]), f"{r['rss'].get('bytes_per_fact_over_empty') or 0:,.0f}"])
    print_table(headers, rows)


def targets(runs: dict[str, Any]) -> list[dict[str, Any]]:
    r = runs.get(str(TARGET_FACTS))
    out: list[dict[str, Any]] = []
    if r is None:
        return [{"target": f"{TARGET_FACTS:,} facts not measured in this run", "met": None}]
    rss_kib = max(r["rss"]["after_open_kib"], r["rss"]["after_queries_kib"])
    checks = (
        (f"open with persisted segments < {TARGETS['open_persisted_s']} s",
         r["open_persisted"]["open_seconds"], TARGETS["open_persisted_s"], "s"),
        (f"recall p50 < {TARGETS['recall_p50_ms']} ms", r["latency"]["recall"]["p50_ms"],
         TARGETS["recall_p50_ms"], "ms"),
        (f"RSS < {TARGETS['rss_gib']} GiB (after open and after queries)", rss_kib / 2**20,
         TARGETS["rss_gib"], "GiB"),
        (f"speed aim: open with persisted segments until the first recall < "
         f"{SPEED_AIMS['open_persisted_s']} s", r["open_persisted"]["open_seconds"],
         SPEED_AIMS["open_persisted_s"], "s"),
        (f"speed aim: recall p50 < {SPEED_AIMS['recall_p50_ms']} ms",
         r["latency"]["recall"]["p50_ms"], SPEED_AIMS["recall_p50_ms"], "ms"),
    )
    print()
    for name, value, limit, unit in checks:
        met = value < limit
        out.append({"target": name, "facts": TARGET_FACTS, "value": value, "limit": limit,
                    "unit": unit, "met": met})
        print(f"Target at {TARGET_FACTS:,} facts: {name}: {'MET' if met else 'MISSED'} "
              f"({value:.2f} {unit})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/scale.py",
        description="hmsengine from 1k to 1M facts: ingest, store size, open (cold and with "
                    "persisted segments), RSS and recall latency. "
                    "Writes bench/results/scale.json.")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1k and 10k facts; results to scale-quick.json")
    parser.add_argument("--sizes", help="comma-separated fact counts (default 1000,10000,"
                                        "100000,1000000)")
    parser.add_argument("--queries", type=int, help=f"queries (default {DEFAULTS['queries']})")
    parser.add_argument("--passes", type=int, help=f"timed passes (default {DEFAULTS['passes']})")
    parser.add_argument("--open-repeats", type=int,
                        help=f"opens with persisted segments (default {DEFAULTS['open_repeats']})")
    parser.add_argument("--cold-repeats", type=int,
                        help=f"opens without them (default {DEFAULTS['cold_repeats']})")
    parser.add_argument("--seed", type=int, default=SEED, help="seed (default %(default)s)")
    parser.add_argument("--output", type=Path, default=None,
                        help="results JSON (default bench/results/scale.json)")
    # The child processes: not for direct use.
    parser.add_argument("--child", choices=("build", "open"), help=argparse.SUPPRESS)
    parser.add_argument("--facts", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--queries-file", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return run_child(args)

    params: dict[str, Any] = dict(DEFAULTS)
    if args.quick:
        params.update(QUICK)
    if args.sizes:
        try:
            params["sizes"] = tuple(int(x) for x in args.sizes.split(",") if x.strip())
        except ValueError:
            parser.error("--sizes: expected comma-separated integers")
    for name in ("queries", "passes", "open_repeats", "cold_repeats"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    if (not params["sizes"] or min(params["sizes"]) < 5 or params["queries"] < 1
            or params["passes"] < 1 or params["open_repeats"] < 1 or params["cold_repeats"] < 0):
        parser.error("sizes >= 5, queries, passes, open repeats positive")
    output = args.output or RESULTS_DIR / ("scale-quick.json" if args.quick else "scale.json")

    started = time.perf_counter()
    runs: dict[str, Any] = {}
    with scratch_root() as root:
        facts = machine_facts(root)
        facts["source"]["package_path"] = str(Path(hmsengine.__file__).resolve().parent)
        warning = busy_warning()
        if warning:
            _log(warning)
        payload: dict[str, Any] = {
            "benchmark": "scale", "question": QUESTION, "date": now_iso(),
            "method": (
                "Every step in a fresh process on the repository's disk. build: Memory."
                f"remember_many in batches of {BATCH:,}, then settle, then close (persists the "
                "index). open = Engine.open + Memory(engine).index + one recall; persisted: with "
                "the index segments the close wrote (medians of "
                f"{params['open_repeats']} processes); cold: after deleting them (medians of "
                f"{params['cold_repeats']}). Latency: one untimed pass, then {params['passes']} "
                f"timed passes over {params['queries']} queries, recall(q, k=10) and "
                "search_documents(q, k=10) back to back in alternating order, each call timed "
                "alone; the median over passes of each pass's p50 and p99. RSS: VmRSS after "
                "gc.collect and malloc_trim(0); peak: VmHWM."),
            "machine": facts,
            "parameters": {**{k: list(v) if isinstance(v, tuple) else v
                              for k, v in params.items()},
                           "quick": args.quick, "seed": args.seed, "k": K, "batch": BATCH,
                           "store": "on disk (bench/.tmp)", "targets": TARGETS,
                           "speed_aims": SPEED_AIMS,
                           "target_facts": TARGET_FACTS},
            "runs": runs,
        }
        _log("baseline: open an empty store in its own process")
        empty = _spawn(root, "open", ["--store", str(root / "empty"), "--queries-file",
                                      str(_write_queries(root, ["x"])), "--passes", "0"])
        payload["empty_store"] = empty
        empty_kib = empty["rss_after_open"]["vm_rss_kib"]
        for n in params["sizes"]:
            runs[str(n)] = run_size(n, root, params, args.seed, empty_kib)
            payload["wall_seconds"] = round(time.perf_counter() - started, 1)
            write_results(output, payload)  # partial results survive an interrupted run
    report(runs)
    payload["targets"] = targets(runs)
    payload["load_average_at_end"] = load_average()
    payload["wall_seconds"] = round(time.perf_counter() - started, 1)
    path = write_results(output, payload)
    print(f"\nWrote {path} ({payload['wall_seconds']:.0f} s).")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
