"""Where does a query's time go between ``search_documents`` and the kernel, and what do the
layers around it (memory recall, a fresh process, vectors) add?

Parts (``--parts``, all by default), on the Zipf corpus of ``bench/lexical.py`` (``analyzer=
"simple"``, its two query mixes), one store on the repository's disk per size, settled:

* ``breakdown``: per-query microseconds of each stage of ``search_documents``, each stage timed
  alone over every query (``time.perf_counter_ns``; median per query over ``--passes``): the
  async call and its checks, query analysis, building the ``Query`` (validation, snapshot,
  term counting), ``prepare`` (term memo, idf, estimated work), the lexical step split into its
  set-up (buffers, ``avgdl``, norms, scratch), the numba dispatch (the same kernel called with no
  terms) and the kernel itself, the ``Scored`` tuples, ids from document numbers, the tombstone
  check and the ``Hit`` values. The staged path is checked to return ``search_documents``'s exact
  ids and scores. Those are the general path's stages; the plain queries of these mixes take
  the plain-BM25 lane (``index/lane.py``), timed in parts too, each beside ``search_documents``
  on the same query (so that both read its postings in the same cache state): ``lane.plain_top``,
  its kernel call and numba's dispatch of it, and by per-query difference its set-up and ids,
  and what ``search_documents`` adds around it (an engine without the lane skips these). Also:
  the share of queries sent to a worker thread (estimated work above ``INLINE_WORK``), the cost
  of one trio checkpoint and one ``trio.to_thread`` round trip, and a cProfile of the real call
  (top functions by own time).
* ``memory``: ``Memory.recall(q, k=10)`` (default options) next to ``search_documents`` on the
  same store of facts, per-query medians: on queries seen before (a warm-up pass, then
  interleaved passes) and on queries never seen before (fresh disjoint query sets for each call,
  swapped in a second round).
* ``coldstart``: in fresh processes, ``import hmsengine``, ``Engine.open`` of the existing store
  (persisted segments) and the first and second ``search_documents`` (numba's on-disk cache in
  use; the JSON says where it is).
* ``vector``: stores of the same documents with 384-dim unit vectors, one the size of an
  agent's memory (``vector_small``, 5,000 documents: its vector queries run inline) and one of
  50,000 (they go to a worker thread): ``search_documents`` with an embedding only, and fused
  with BM25, against the cosine kernel called directly on one thread, the engine's scan (split
  between threads above ``INLINE_WORK``: ``index/vectorscan.py``) called directly, and the
  general path's steps; the overheads are over the engine's scan. The same calls are timed
  again each in a stream of its own kind (``in_a_row_p50_us``: a program asking vector queries
  one after another), where above every query's calls of each kind alternate.
* ``cosine``: ``cosine_topk`` over 1,000,000 x 384 float32 rows against faiss ``IndexFlatIP``
  with one thread (``--cosine-rows``).

Run: ``python bench/overhead.py`` (~2-5 minutes on the 2-core VM), ``--quick`` for a smoke run.
Writes bench/results/overhead.json (``--quick``: overhead-quick.json).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import json
import os
import pstats
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # bench scripts run as files, not as a package
    RESULTS_DIR,
    _version,
    busy_warning,
    fresh_dir,
    load_average,
    machine_facts,
    median,
    now_iso,
    print_table,
    ratio,
    scratch_root,
    write_results,
)
from lean_path import LeanPlan
from lexical import DEFAULTS as LEX_DEFAULTS
from lexical import MIXES, Corpus, _settle

import hmsengine
from hmsengine import Engine, Memory
from hmsengine.engine import readers
from hmsengine.engine.values import Hit
from hmsengine.index import search as executor
from hmsengine.index import vectorscan
from hmsengine.kernels.cosine import cosine_topk, l2_normalise, l2_normalise_rows
from hmsengine.kernels.pruning import DENSE_RATIO, PRUNE_MIN_POSTINGS, bm25_segment_topk
from hmsengine.kernels.topk import topk_finish

try:  # the scan through int8 codes (absent from engines before it)
    from hmsengine.kernels.quantized import quantize_rows, quantized_topk
except ImportError:  # pragma: no cover - an older engine on PYTHONPATH
    quantize_rows = quantized_topk = None

try:  # the plain-BM25 lane (absent from engines before it, which this script also times)
    from hmsengine.index import lane
    from hmsengine.kernels import lane as lane_kernel
    from hmsengine.kernels.lane import bm25_lane_topk
    lane.lane_plan  # noqa: B018 - the one-call lane (an older engine has a call per view)
    lane_kernel.term_records  # noqa: B018 - its terms as one buffer (an older one: two arrays)
except (ImportError, AttributeError):  # pragma: no cover - an older engine on PYTHONPATH
    lane = None

QUESTION = ("Per-query cost of search_documents stage by stage down to the kernel; recall, "
            "first-query-after-open, vector and hybrid overheads; cosine 1M x 384 vs faiss")
SEED = 20240611
K = 10
DEFAULTS: dict[str, Any] = {"sizes": (50_000, 200_000), "queries": 300, "passes": 5,
                            "cosine_rows": 1_000_000, "dim": 384, "vector_docs": 50_000,
                            "vector_small_docs": 5_000, "cold_repeats": 3}
QUICK: dict[str, Any] = {"sizes": (10_000,), "queries": 100, "passes": 2, "cosine_rows": 50_000,
                         "vector_docs": 5_000, "vector_small_docs": 1_000, "cold_repeats": 1}
PARTS = ("breakdown", "memory", "coldstart", "vector", "cosine")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _corpus(n: int, queries: int, seed: int) -> Corpus:
    params = {**LEX_DEFAULTS, "queries": queries}
    return Corpus(n, params, seed)


async def _put_all(engine: Engine, corpus: Corpus, vectors: np.ndarray | None = None) -> None:
    for lo in range(0, corpus.n, 10_000):
        hi = min(lo + 10_000, corpus.n)
        items = [{"id": f"d{n}", "text": corpus.texts[n]} for n in range(lo, hi)]
        if vectors is not None:
            for item, n in zip(items, range(lo, hi), strict=True):
                item["embedding"] = vectors[n]
        await engine.put_documents(items)
    await _settle(engine, consolidated=True)


# -- breakdown --------------------------------------------------------------------------------------


def _stage_loop(fn: Callable[[Any], Any], inputs: list[Any]) -> list[float]:
    """Microseconds of ``fn(x)`` for each input, timed alone."""
    clock = time.perf_counter_ns
    out = []
    for x in inputs:
        t = clock()
        fn(x)
        out.append((clock() - t) / 1000)
    return out


def _kernel_args(snap: Any, q: executor.Query, p: executor.Prepared) -> list[tuple[Any, ...]]:
    """The arguments ``executor._lexical`` passes to the kernel, view by view (largest first)."""
    avgdl = snap.avgdl
    top_s = np.empty(q.k, dtype=np.float64)
    top_d = np.empty(q.k, dtype=np.int64)
    top_n = np.zeros(1, dtype=np.int64)
    out = []
    for i in snap.views_by_size():
        view = snap.views[i]
        seg = view.segment
        acc, seen, touched = executor._scratch(view.live.shape[0])
        t = seg.terms
        out.append((t.offsets, t.doc_ids, t.values, view.norms(avgdl), p.local_terms[i], p.weights,
                    view.live, view.n_live < view.live.shape[0], seg.docnums, top_s, top_d, top_n,
                    acc, seen, touched, PRUNE_MIN_POSTINGS, DENSE_RATIO))
    return out


_NO_TERMS = np.empty(0, dtype=np.int32)
_NO_WEIGHTS = np.empty(0, dtype=np.float64)


def _dispatch_only(args: list[tuple[Any, ...]]) -> None:
    # The same call with no terms: the kernel returns at once, so this is numba's dispatch cost
    # (unboxing 17 arguments) per view, plus the finish call.
    args[0][11][0] = 0
    for a in args:
        bm25_segment_topk(*a[:4], _NO_TERMS, _NO_WEIGHTS, *a[6:])
    topk_finish(args[0][9], args[0][10], 0)


STAGES = ("open check + build_query (validation, snapshot, analysis, term counting, Query)",
          "prepare (term memo, idf, work estimate, Prepared)",
          "lexical set-up (buffers, avgdl, norms, scratch, kernel arguments)",
          "kernel calls (bm25_segment_topk per view + topk_finish, numba dispatch included)",
          "Scored tuples from the kernel's arrays",
          "ids from document numbers (snap.ids_of)",
          "tombstone check",
          "Hit values")


def _staged(engine: Engine, snap: Any, text: str, opts: dict[str, Any],
            tombstones: Any) -> tuple[list[int], list[Hit]]:
    """``search_documents``'s inline path step by step (engine/readers.py, index/search.py), with
    a ``perf_counter_ns`` stamp between steps: the nanoseconds of each of ``STAGES``."""
    c = time.perf_counter_ns
    t0 = c()
    engine._check_open()
    q = readers.build_query(engine._indexer, text, **opts)
    assert q is not None
    t1 = c()
    p = executor.prepare(snap, q)
    t2 = c()
    args = _kernel_args(snap, q, p)  # executor._lexical's set-up
    t3 = c()
    top_s, top_d, top_n = args[0][9], args[0][10], args[0][11]
    for a in args:
        bm25_segment_topk(*a)
    n = int(top_n[0])
    topk_finish(top_s, top_d, n)
    t4 = c()
    scored = [executor.Scored(doc, sc, sc, None) for sc, doc in
              zip(top_s[:n].tolist(), top_d[:n].tolist(), strict=True)]
    t5 = c()
    ids = snap.ids_of([x.docnum for x in scored])
    t6 = c()
    if tombstones and not tombstones.isdisjoint(ids):
        raise RuntimeError("the breakdown store has no deletions")
    t7 = c()
    hits = [Hit(id=i, score=x.score, lexical=x.lexical, semantic=x.semantic)
            for i, x in zip(ids, scored, strict=True)]
    t8 = c()
    return [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t8 - t7], hits


def _lane_kernel_args(snap: Any, terms: list[str],
                      buffers: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``lane.plain_top``'s kernel arguments for analyzed ``terms`` (one call over every view,
    through the snapshot's lane table), and the same with no terms (for numba's dispatch cost
    alone). ``buffers``: the top-k arrays and scratch every query shares (``_lane_buffers``), as
    the lane's own calls share theirs: scratch of its own per query would be cold memory (at
    200k documents, 2.6 MB a query never touched before)."""
    memo = snap.memo("terms")
    pairs = sorted(Counter(terms).items())
    infos = lane.term_infos(snap, memo, [t for t, _ in pairs])
    rows = [info[0] for info in infos]
    weights = np.array([info[2] * m for info, (_, m) in zip(infos, pairs, strict=True)],
                       dtype=np.float64)
    matrix = np.array(rows, dtype=np.int32).reshape(len(rows), len(snap.views))
    terms = lane_kernel.term_records(weights, matrix)
    none = lane_kernel.term_records(_NO_WEIGHTS, np.empty((0, len(snap.views)), dtype=np.int32))
    table = buffers[0]
    return (table, terms, *buffers[1:]), (table, none, *buffers[1:])


def _lane_buffers(snap: Any) -> tuple[Any, ...]:
    """The lane table of ``snap`` with one set of top-k arrays and scratch for every query."""
    top = (np.empty(K, dtype=np.float64), np.empty(K, dtype=np.int64), np.empty(K, dtype=np.int64))
    table, most, _ = lane.lane_plan(snap)
    return (table, *top, *lane.scratch(most))


def _lane_kernel(args: tuple[Any, ...]) -> int:
    count: int = bm25_lane_topk(*args)[0]
    return count


LANE_PARTS = ("lane.plain_top alone (analyzed terms given)",
              "lane kernel call alone (bm25_lane_topk over every view, arguments made beforehand)",
              "lane numba dispatch alone (the same calls with no terms)")
LANE_SET_UP = ("lane set-up and ids (plain_top - kernel calls: canonical terms, memo, weights, "
               "work check, term matrix, buffers, ids from the segments)")
LANE_AROUND = ("around the lane (search_documents - plain_top - analysis: the async call, checks, "
               "validation, tombstone check, Hit values)")
LANE_TOTAL = "await search_documents, timed beside the lane's parts"
LANE_NOT_KERNEL = "search_documents - the lane's kernel call, per query"
_LANE_STEPS = ("search", "analysis", "top", "kernel", "dispatch")


async def lane_breakdown(engine: Engine, snap: Any, queries: list[str],
                         passes: int) -> dict[str, Any]:
    """The plain lane (``search_documents``'s path for these queries) in parts: for each query,
    one untimed ``search_documents`` (its postings then in cache), then ``search_documents``,
    its analysis, ``lane.plain_top``, the lane's kernel call and numba's dispatch of it, timed
    back to back in an order rotated query by query, so that every part finds the query's data
    in the same (warm) state; the set-up and what surrounds the lane are the per-query
    differences, medians over queries and ``passes``.

    Timed in separate loops instead (each part over every query in turn), the differences
    mixed cache states: at 200k documents "around the lane" read 17.6 us where the paired,
    warm difference is a third of it (overhead.notes.md)."""
    analyzer = engine._indexer.analyzer
    analyzed = [analyzer.query_terms(q) for q in queries]
    work = readers.INLINE_WORK
    buffers = _lane_buffers(snap)
    kargs = [_lane_kernel_args(snap, t, buffers) for t in analyzed]
    clock = time.perf_counter_ns
    samples: dict[str, list[float]] = {name: [] for name in
                                       (LANE_TOTAL, *LANE_PARTS, LANE_SET_UP, LANE_AROUND,
                                        LANE_NOT_KERNEL)}
    search = engine.search_documents
    for p in range(passes):
        for i, text in enumerate(queries):
            terms, (with_terms, no_terms) = analyzed[i], kargs[i]
            ns: dict[str, int] = {}
            await search(text, k=K)  # untimed: every part below reads warm postings
            turn = (i + p) % len(_LANE_STEPS)
            for step in _LANE_STEPS[turn:] + _LANE_STEPS[:turn]:
                t = clock()
                if step == "search":
                    await search(text, k=K)
                elif step == "analysis":
                    analyzer.query_terms(text)
                elif step == "top":
                    lane.plain_top(snap, terms, K, work)
                elif step == "kernel":
                    _lane_kernel(with_terms)
                else:
                    _lane_kernel(no_terms)
                ns[step] = clock() - t
            us = {k: v / 1000 for k, v in ns.items()}
            samples[LANE_TOTAL].append(us["search"])
            samples[LANE_PARTS[0]].append(us["top"])
            samples[LANE_PARTS[1]].append(us["kernel"])
            samples[LANE_PARTS[2]].append(us["dispatch"])
            samples[LANE_SET_UP].append(us["top"] - us["kernel"])
            samples[LANE_AROUND].append(us["search"] - us["top"] - us["analysis"])
            samples[LANE_NOT_KERNEL].append(us["search"] - us["kernel"])
    return {name: float(np.median(v)) for name, v in samples.items()}


async def breakdown(engine: Engine, corpus: Corpus, passes: int) -> dict[str, Any]:
    """Each query through ``search_documents`` and through ``_staged`` back to back (order
    alternating), every pass; medians per stage over all of them."""
    indexer = engine._indexer
    snap = indexer.snapshot
    analyzer = indexer.analyzer
    tombstones = indexer._core.table.tombstones
    opts = {"k": K, "embedding": None, "ids": None, "metadata": None, "semantic": None,
            "lexical_weight": 1.0, "semantic_weight": 1.0}
    out: dict[str, Any] = {"segments": len(snap.views)}
    clock = time.perf_counter_ns
    for mix in MIXES:
        queries = corpus.queries[mix]
        lean = LeanPlan(snap, analyzer, K)
        same = lean_same = threaded = 0
        for text in queries:  # both paths must be the real one: same ids and scores
            hits = [(h.id, h.score, h.lexical) for h in await engine.search_documents(text, k=K)]
            same += hits == [(h.id, h.score, h.lexical)
                             for h in _staged(engine, snap, text, opts, tombstones)[1]]
            lean_same += hits == [(h.id, h.score, h.lexical) for h in lean.search(text)]
            q = readers.build_query(indexer, text, **opts)
            threaded += q is not None and executor.prepare(snap, q).work > readers.INLINE_WORK
        samples: dict[str, list[float]] = {name: [] for name in STAGES}
        totals: dict[str, list[float]] = {"await search_documents": [], "staged path": [],
                                          "lean reference path, same kernel": []}
        for p in range(passes):
            for i, text in enumerate(queries):
                staged_first = (i + p) % 2 == 0
                if staged_first:
                    parts, _ = _staged(engine, snap, text, opts, tombstones)
                t = clock()
                await engine.search_documents(text, k=K)
                totals["await search_documents"].append((clock() - t) / 1000)
                if not staged_first:
                    parts, _ = _staged(engine, snap, text, opts, tombstones)
                for name, ns in zip(STAGES, parts, strict=True):
                    samples[name].append(ns / 1000)
                totals["staged path"].append(sum(parts) / 1000)
                t = clock()
                lean.search(text)
                totals["lean reference path, same kernel"].append((clock() - t) / 1000)
        med = {name: float(np.median(v)) for name, v in samples.items()}
        tot = {name: float(np.median(v)) for name, v in totals.items()}
        kargs = [_kernel_args(snap, q, executor.prepare(snap, q)) for q in
                 (readers.build_query(indexer, text, **opts) for text in queries) if q is not None]
        alone = {"query analysis alone (analyzer.query_terms)":
                 float(np.median(_stage_loop(analyzer.query_terms, queries))),
                 "numba dispatch alone (the kernel calls with no terms)":
                 float(np.median(_stage_loop(_dispatch_only, kargs)))}
        kernel = med[STAGES[3]]
        out[mix] = {"stages_us": med, "totals_us": tot, "alone_us": alone,
                    "async_and_readers_us": tot["await search_documents"] - tot["staged path"],
                    "not_kernel_us": tot["await search_documents"] - kernel,
                    "not_kernel_share": 1 - kernel / tot["await search_documents"],
                    "same_as_search_documents": same, "lean_same_as_search_documents": lean_same,
                    "queries": len(queries), "queries_sent_to_a_thread": threaded}
        if lane is not None:
            out[mix]["lane_us"] = await lane_breakdown(engine, snap, queries, passes)
            # Paired per query (lane_breakdown): the kernel call and search_documents in the
            # same cache state.
            lane_us = out[mix]["lane_us"]
            out[mix]["not_kernel_us"] = lane_us[LANE_NOT_KERNEL]
            out[mix]["not_kernel_share"] = lane_us[LANE_NOT_KERNEL] / lane_us[LANE_TOTAL]
    out["trio_checkpoint_us"] = await _checkpoint_cost()
    out["to_thread_round_trip_us"] = await _thread_cost()
    out["cprofile"] = await _profile(engine, corpus.queries["mid"])
    return out


async def _checkpoint_cost() -> float:
    clock = time.perf_counter_ns
    lat = []
    for _ in range(2000):
        t = clock()
        await trio.lowlevel.checkpoint()
        lat.append((clock() - t) / 1000)
    return float(np.median(lat))


async def _thread_cost() -> float:
    clock = time.perf_counter_ns
    lat = []
    for _ in range(300):
        t = clock()
        await trio.to_thread.run_sync(int)
        lat.append((clock() - t) / 1000)
    return float(np.median(lat))


async def _profile(engine: Engine, queries: list[str]) -> list[dict[str, Any]]:
    prof = cProfile.Profile()
    search = engine.search_documents
    prof.enable()
    for _ in range(3):
        for q in queries:
            await search(q, k=K)
    prof.disable()
    stats = pstats.Stats(prof)
    calls = 3 * len(queries)
    rows = []
    for (filename, line, name), (_, ncalls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(filename).name}:{line}({name})", "calls_per_query":
                     ncalls / calls, "own_us_per_query": tottime / calls * 1e6,
                     "cumulative_us_per_query": cumtime / calls * 1e6})
    rows.sort(key=lambda r: -r["own_us_per_query"])
    return rows[:25]


# -- memory recall ----------------------------------------------------------------------------------


async def memory_part(path: Path, n: int, queries: int, passes: int, seed: int) -> dict[str, Any]:
    corpus = _corpus(n, queries * 5, seed)
    out: dict[str, Any] = {"facts": n}
    async with Engine.open(path, analyzer="simple") as engine:
        memory = Memory(engine)
        for lo in range(0, n, 5000):
            await memory.remember_many([{"id": f"d{i}", "text": corpus.texts[i]}
                                        for i in range(lo, min(lo + 5000, n))])
        await _settle(engine, consolidated=True)
        calls = {"recall": lambda q: memory.recall(q, k=K),
                 "search": lambda q: engine.search_documents(q, k=K)}
        clock = time.perf_counter_ns
        for mix in MIXES:
            qs = corpus.queries[mix]
            seen_set = qs[:queries]
            for q in seen_set:  # warm-up: every query seen once by both calls
                for call in calls.values():
                    await call(q)
            seen: dict[str, list[float]] = {"recall": [], "search": []}
            for p in range(passes):
                for i, q in enumerate(seen_set):
                    order = ("recall", "search") if (i + p) % 2 == 0 else ("search", "recall")
                    for name in order:
                        t = clock()
                        await calls[name](q)
                        seen[name].append((clock() - t) / 1000)
            unseen: dict[str, list[float]] = {"recall": [], "search": []}
            fresh = [qs[queries * j:queries * (j + 1)] for j in range(1, 5)]
            for round_, (a, b) in enumerate(((fresh[0], fresh[1]), (fresh[3], fresh[2]))):
                sets = {"recall": a, "search": b}
                for i in range(queries):
                    order = ("recall", "search") if (i + round_) % 2 == 0 else ("search", "recall")
                    for name in order:
                        t = clock()
                        await calls[name](sets[name][i])
                        unseen[name].append((clock() - t) / 1000)
            out[mix] = {
                "seen_p50_us": {k: float(np.median(v)) for k, v in seen.items()},
                "unseen_p50_us": {k: float(np.median(v)) for k, v in unseen.items()},
                "seen_recall_over_search": ratio(float(np.median(seen["recall"])),
                                                 float(np.median(seen["search"]))),
                "unseen_recall_over_search": ratio(float(np.median(unseen["recall"])),
                                                   float(np.median(unseen["search"]))),
            }
            _log(f"    memory {mix}: recall/search seen {out[mix]['seen_recall_over_search']:.2f}x,"
                 f" never seen {out[mix]['unseen_recall_over_search']:.2f}x")
    return out


# -- cold start ------------------------------------------------------------------------------------

_COLD_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import trio
import hmsengine
from hmsengine import Engine
imported = time.perf_counter()
async def main():
    t = time.perf_counter()
    async with Engine.open(sys.argv[1], analyzer="simple") as engine:
        opened = time.perf_counter()
        await engine.search_documents(sys.argv[2], k=10)
        first = time.perf_counter()
        await engine.search_documents(sys.argv[3], k=10)
        second = time.perf_counter()
    return {"import_s": imported - t0, "open_s": opened - t, "first_query_s": first - opened,
            "second_query_s": second - first, "open_to_first_answer_s": first - t}
print(json.dumps(trio.run(main)))
"""


def coldstart(path: Path, corpus: Corpus, repeats: int) -> dict[str, Any]:
    runs = []
    for i in range(repeats):
        done = subprocess.run([sys.executable, "-c", _COLD_CHILD, str(path),
                               corpus.queries["mid"][i], corpus.queries["mid"][i + 1]],
                              capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    keys = runs[0].keys()
    import numba.core.config as nconfig
    return {"runs": runs, "medians": {k: median([r[k] for r in runs]) for k in keys},
            "numba_cache_dir": nconfig.CACHE_DIR or "beside the kernels (__pycache__)"}


# -- vectors ---------------------------------------------------------------------------------------


SCAN_10 = "the engine's scan alone (depth 10; vectorscan.cosine_rows: through the int8 codes, " \
    "split between threads above INLINE_WORK)"
SCAN_100 = "the engine's scan alone (depth 100, as fused)"
VECTOR_STEPS = ("vector only, step: build_query (validation, normalising the vector)",
                "vector only, step: prepare",
                "vector only, step: run inline (the cosine top 2k, or the top 100 on "
                "near-ties, then RRF over the candidates with their exact scores)",
                "vector only, step: the same run through trio.to_thread (as the engine does "
                "above INLINE_WORK)")


IN_A_ROW_VECTOR = "vector only: search_documents('', embedding=v), queries in a row"
IN_A_ROW_FUSED = "fused: search_documents(q, embedding=v), queries in a row"
IN_A_ROW_LEXICAL = "lexical only: search_documents(q), queries in a row"
IN_A_ROW_SCAN_10 = "the engine's scan alone (depth 10), queries in a row"
IN_A_ROW_SCAN_100 = "the engine's scan alone (depth 100), queries in a row"
# What each stream calls: search_documents without text, with text and vector, with text only,
# or the engine's scan alone.
IN_A_ROW = {IN_A_ROW_VECTOR: "vector", IN_A_ROW_SCAN_10: "scan", IN_A_ROW_FUSED: "fused",
            IN_A_ROW_SCAN_100: "scan", IN_A_ROW_LEXICAL: "lexical"}


def _engine_scan(views: list[Any], v: np.ndarray, depth: int, inline: bool) -> None:
    """The engine's cosine scan of ``views`` alone, as a query runs it: on the calling thread
    when ``inline``, else split between threads, through each segment's int8 codes when it has
    them (``index/vectorscan.py``)."""
    for view in views:
        seg = view.segment
        codes = getattr(seg, "vector_codes_if_built", None)
        vectorscan.cosine_rows(seg.embeddings, v, view.live, seg.has_embedding, depth, inline,
                               *([codes] if codes else []))


async def _vector_steps(engine: Engine, snap: Any, v: np.ndarray) -> list[int]:
    """Nanoseconds of each of ``VECTOR_STEPS`` for one vector-only query."""
    c = time.perf_counter_ns
    opts = {"k": K, "ids": None, "metadata": None, "semantic": None, "lexical_weight": 1.0,
            "semantic_weight": 1.0}
    t0 = c()
    q = readers.build_query(engine._indexer, "", embedding=v, **opts)
    assert q is not None
    t1 = c()
    p = executor.prepare(snap, q)
    t2 = c()
    executor.run(snap, q, p)
    t3 = c()
    await trio.to_thread.run_sync(executor.run, snap, q, p)
    return [t1 - t0, t2 - t1, t3 - t2, c() - t3]


async def vector_part(path: Path, corpus: Corpus, dim: int, passes: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed + 7)
    vectors = l2_normalise_rows(rng.standard_normal((corpus.n, dim), dtype=np.float32))
    qvecs = [l2_normalise(rng.standard_normal(dim, dtype=np.float32))
             for _ in corpus.queries["mid"]]
    out: dict[str, Any] = {"documents": corpus.n, "dim": dim}
    async with Engine.open(path, analyzer="simple") as engine:
        await _put_all(engine, corpus, vectors)
        snap = engine._indexer.snapshot
        seg_views = [v for v in snap.views if v.segment.embeddings is not None]
        # As the engine scans: on the event loop's thread below INLINE_WORK, else split
        # between threads (index/vectorscan.py; timed here without the thread hop), through the
        # rows' int8 codes where the segment has them (made when the builder landed it).
        coded = [getattr(v.segment, "vector_codes_if_built", None) is not None for v in seg_views]
        inline = sum(v.segment.embeddings.size // (getattr(vectorscan, "CODES_COST_RATIO", 1) if c
                                                    else 1)
                     for v, c in zip(seg_views, coded, strict=True)) \
            // executor.VECTOR_ENTRIES_PER_WORK <= readers.INLINE_WORK
        texts = corpus.queries["mid"]
        clock = time.perf_counter_ns
        lat: dict[str, list[float]] = {"vector only: search_documents('', embedding=v)": [],
                                       "fused: search_documents(q, embedding=v)": [],
                                       "lexical only: search_documents(q)": [],
                                       "cosine kernel alone (depth 10)": [],
                                       "cosine kernel alone (depth 100, as fused)": [],
                                       SCAN_10: [], SCAN_100: []}
        for i in range(len(texts)):  # warm-up
            await engine.search_documents(texts[i], k=K, embedding=qvecs[i])
        for _ in range(passes):
            for text, v in zip(texts, qvecs, strict=True):
                for name, q, options in (
                        ("vector only: search_documents('', embedding=v)", "", {"embedding": v}),
                        ("fused: search_documents(q, embedding=v)", text, {"embedding": v}),
                        ("lexical only: search_documents(q)", text, {})):
                    t = clock()
                    await engine.search_documents(q, k=K, **options)
                    lat[name].append((clock() - t) / 1000)
                for depth, name in ((K, "cosine kernel alone (depth 10)"),
                                    (100, "cosine kernel alone (depth 100, as fused)")):
                    t = clock()
                    for view in seg_views:
                        cosine_topk(view.segment.embeddings, v, view.live, depth)
                    lat[name].append((clock() - t) / 1000)
                for depth, name in ((K, SCAN_10), (100, SCAN_100)):
                    t = clock()
                    _engine_scan(seg_views, v, depth, inline)
                    lat[name].append((clock() - t) / 1000)
                for name, ns in zip(VECTOR_STEPS, await _vector_steps(engine, snap, v),
                                    strict=True):
                    lat.setdefault(name, []).append(ns / 1000)
        out["segments"] = len(seg_views)
        out["segments_with_int8_codes"] = sum(coded)
        out["p50_us"] = {k: float(np.median(x)) for k, x in lat.items()}
        # The same calls each in a stream of its own kind (as a program that asks vector
        # queries in a row runs them): above, every query's calls of each kind alternate, and
        # each starts with the caches the previous kind left (overhead.notes.md).
        in_a_row: dict[str, list[float]] = {k: [] for k in IN_A_ROW}
        for _ in range(passes):
            for name, make in IN_A_ROW.items():
                for text, v in zip(texts, qvecs, strict=True):
                    t = clock()
                    if make == "scan":
                        _engine_scan(seg_views, v, K if name == IN_A_ROW_SCAN_10 else 100, inline)
                    else:
                        await engine.search_documents("" if make == "vector" else text, k=K,
                                                      **({} if make == "lexical"
                                                         else {"embedding": v}))
                    in_a_row[name].append((clock() - t) / 1000)
        out["in_a_row_p50_us"] = {k: float(np.median(x)) for k, x in in_a_row.items()}
    p = out["p50_us"]
    r = out["in_a_row_p50_us"]
    out["vector_overhead_in_a_row_us"] = r[IN_A_ROW_VECTOR] - r[IN_A_ROW_SCAN_10]
    out["fused_overhead_in_a_row_us"] = (r[IN_A_ROW_FUSED] - r[IN_A_ROW_SCAN_100]
                                         - r[IN_A_ROW_LEXICAL])
    out["vector_overhead_us"] = (p["vector only: search_documents('', embedding=v)"]
                                 - p[SCAN_10])
    out["fused_overhead_us"] = (p["fused: search_documents(q, embedding=v)"]
                                - p[SCAN_100] - p["lexical only: search_documents(q)"])
    out["scan_threads"] = 1 if inline else vectorscan.scan_threads()
    return out


def cosine_part(rows: int, dim: int, repeats: int, seed: int) -> dict[str, Any]:
    import faiss

    rng = np.random.default_rng(seed + 1)
    matrix = np.empty((rows, dim), dtype=np.float32)
    for lo in range(0, rows, 100_000):
        hi = min(rows, lo + 100_000)
        matrix[lo:hi] = l2_normalise_rows(rng.standard_normal((hi - lo, dim), dtype=np.float32))
    queries = [l2_normalise(rng.standard_normal(dim, dtype=np.float32)) for _ in range(20)]
    allowed = np.ones(rows, dtype=np.uint8)
    index = faiss.IndexFlatIP(dim)
    index.add(matrix)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    # The same job through 8-bit codes, each the way its users run it: hmsengine's exact scan
    # (every row bounded by its codes, the rows that can reach the top 10 scored from float32:
    # the same answer as cosine_topk, checked below) and faiss's scalar quantizer with its flat
    # refinement of the best 10 x K by the codes (approximate: its agreement is reported).
    fns = {"hmsengine cosine_topk": lambda q: cosine_topk(matrix, q, allowed, K)[1],
           "faiss IndexFlatIP 1 thread": lambda q: index.search(q[None, :], K)[1][0]}
    made: dict[str, float] = {}
    codes_equal = None
    if quantize_rows is not None:
        started = time.perf_counter()
        codes = quantize_rows(matrix)
        made["hmsengine quantize_rows"] = time.perf_counter() - started
        sq8 = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit,
                                         faiss.METRIC_INNER_PRODUCT)
        refined = faiss.IndexRefineFlat(sq8)
        started = time.perf_counter()
        refined.train(matrix)
        refined.add(matrix)
        made["faiss train and add (IndexRefineFlat of SQ8)"] = time.perf_counter() - started
        refined.k_factor = 10
        fns[CODES_HMS] = lambda q: quantized_topk(codes, matrix, q, allowed, allowed, K)[1]
        fns[CODES_FAISS] = lambda q: refined.search(q[None, :], K)[1][0]
        codes_equal = all(
            quantized_topk(codes, matrix, q, allowed, allowed, K)[0].tobytes()
            == cosine_topk(matrix, q, allowed, K)[0].tobytes() for q in queries)
    exact = [fns["hmsengine cosine_topk"](q) for q in queries]
    agreement = {name: float(np.mean([len(set(fn(q).tolist()) & set(e.tolist())) / K
                                      for q, e in zip(queries, exact, strict=True)]))
                 for name, fn in fns.items()}
    runs: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            gc.collect()
            start = time.perf_counter()
            for q in queries:
                fn(q)
            runs[name].append(len(queries) / (time.perf_counter() - start))
    faiss.omp_set_num_threads(threads)
    qps = {k: median(v) for k, v in runs.items()}
    return {"rows": rows, "dim": dim, "queries": len(queries), "qps_runs": runs, "qps": qps,
            "hms_over_faiss": ratio(qps["hmsengine cosine_topk"],
                                    qps["faiss IndexFlatIP 1 thread"]),
            "hms_codes_over_faiss_flat": ratio(qps.get(CODES_HMS),
                                               qps["faiss IndexFlatIP 1 thread"]),
            "hms_codes_over_faiss_sq8_refine": ratio(qps.get(CODES_HMS), qps.get(CODES_FAISS)),
            "top10_agreement_with_exact": agreement,
            "top10_agreement": agreement["faiss IndexFlatIP 1 thread"],
            "codes_scores_equal_to_cosine_topk": codes_equal, "seconds_to_make_codes": made}


CODES_HMS = "hmsengine exact scan through int8 codes (quantized_topk), 1 thread"
CODES_FAISS = "faiss IndexRefineFlat(IndexScalarQuantizer 8 bit), k_factor 10, 1 thread"


# -- the run ---------------------------------------------------------------------------------------


async def run_all(params: dict[str, Any], parts: set[str], root: Path, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if parts & {"breakdown", "coldstart"}:
        out["breakdown"] = {}
        for n in params["sizes"]:
            corpus = _corpus(n, params["queries"], seed)
            store = root / f"store-{n}"
            async with Engine.open(store, analyzer="simple") as engine:
                await _put_all(engine, corpus)
                if "breakdown" in parts:
                    _log(f"  breakdown at {n:,}")
                    out["breakdown"][str(n)] = await breakdown(engine, corpus, params["passes"])
                    report_breakdown(n, out["breakdown"][str(n)])
            if "coldstart" in parts and n == params["sizes"][0]:
                out["coldstart"] = {"documents": n, **coldstart(store, corpus,
                                                               params["cold_repeats"])}
                _log(f"  cold start: {out['coldstart']['medians']}")
    if "memory" in parts:
        _log("  memory recall")
        with fresh_dir(root, "memory") as path:
            out["memory"] = await memory_part(path / "s", params["sizes"][0], params["queries"],
                                              params["passes"], seed)
    if "vector" in parts:
        # A store the size of an agent's memory (its vector queries run inline) and a larger
        # one (they run in a worker thread: readers.INLINE_WORK).
        for key, docs in (("vector_small", params["vector_small_docs"]),
                          ("vector", params["vector_docs"])):
            _log(f"  vectors at {docs:,}")
            corpus = _corpus(docs, params["queries"], seed)
            with fresh_dir(root, key) as path:
                out[key] = await vector_part(path / "s", corpus, params["dim"], params["passes"],
                                             seed)
            _log(f"  vector p50 us: {out[key]['p50_us']}")
    if "cosine" in parts:
        _log("  cosine vs faiss")
        out["cosine"] = cosine_part(params["cosine_rows"], params["dim"], 3, seed)
        _log(f"  cosine: {out['cosine']['qps']}")
    return out


def report_breakdown(n: int, res: dict[str, Any]) -> None:
    print()
    print(f"Per-query cost of search_documents at {n:,} documents ({res['segments']} segment(s)), "
          "median us per query:")
    rows = []
    for group in ("totals_us", "stages_us", "alone_us", "lane_us"):
        for name in res["mid"].get(group, ()):
            rows.append([name, *(f"{res[mix][group][name]:,.1f}" for mix in MIXES)])
    rows.append(["not the kernel (search_documents - the kernel calls of its path)",
                 *(f"{res[mix]['not_kernel_us']:,.1f}" for mix in MIXES)])
    print_table(["stage", *(f"{m} mix us" for m in MIXES)], rows)


def aims(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's aims this script measures, each with its verdict (None: not measured)."""
    mem = results.get("memory") or {}
    cold = (results.get("coldstart") or {}).get("medians") or {}
    cos = results.get("cosine") or {}
    checks: list[tuple[str, Any, float, str, bool]] = []
    for mix in MIXES:
        checks.append((f"recall <= 1.05x search_documents, queries seen before ({mix} mix)",
                       (mem.get(mix) or {}).get("seen_recall_over_search"), 1.05, "x", False))
        checks.append((f"recall <= 1.15x search_documents, queries never seen ({mix} mix)",
                       (mem.get(mix) or {}).get("unseen_recall_over_search"), 1.15, "x", False))
    checks.append(("fresh process: Engine.open of an existing store to the first answer < 1 s",
                   cold.get("open_to_first_answer_s"), 1.0, "s", False))
    checks.append(("fresh process: the first query after Engine.open < 1 s",
                   cold.get("first_query_s"), 1.0, "s", False))
    # The engine's exact cosine top k is the scan through the rows' int8 codes (the same rows
    # and scores as cosine_topk, checked in the run); an engine without the codes, its kernel.
    engine_scan = cos.get("hms_codes_over_faiss_flat") \
        if cos.get("codes_scores_equal_to_cosine_topk") else None
    checks.append(("cosine top 10 at 1M x 384 within 1.2x of faiss IndexFlatIP 1 thread (q/s "
                   "ratio >= 1/1.2; the engine's exact scan, "
                   + ("through the int8 codes)" if engine_scan is not None else "cosine_topk)"),
                   engine_scan if engine_scan is not None else cos.get("hms_over_faiss"),
                   1 / 1.2, "x", True))
    out = []
    print()
    for text, value, limit, unit, at_least in checks:
        met = None if value is None else (value >= limit if at_least else value <= limit)
        out.append({"aim": text, "value": value, "limit": limit, "unit": unit, "met": met})
        print(f"Aim: {text}: " + ("not measured" if met is None else
                                  f"{'MET' if met else 'MISSED'} ({value:.3f} {unit})"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/overhead.py", description=QUESTION)
    parser.add_argument("--quick", action="store_true", help="smoke run at 10k documents")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="comma-separated subset of " + ",".join(PARTS))
    parser.add_argument("--sizes", help="documents for the breakdown (default 50000,200000); the "
                                        "first also for memory and cold start")
    parser.add_argument("--cosine-rows", type=int, help="rows of the cosine part (default 1M)")
    parser.add_argument("--passes", type=int)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    params = dict(DEFAULTS)
    if args.quick:
        params.update(QUICK)
    if args.sizes:
        params["sizes"] = tuple(int(x) for x in args.sizes.split(","))
    if args.cosine_rows:
        params["cosine_rows"] = args.cosine_rows
    if args.passes:
        params["passes"] = args.passes
    parts = {p for p in args.parts.split(",") if p}
    if parts - set(PARTS):
        parser.error("--parts: expected a subset of " + ",".join(PARTS))
    output = args.output or RESULTS_DIR / ("overhead-quick.json" if args.quick else "overhead.json")
    started = time.perf_counter()
    with scratch_root() as root:
        facts = machine_facts(root)
        facts["source"]["package_path"] = str(Path(hmsengine.__file__).resolve().parent)
        facts["versions"].update({p: _version(p) for p in ("faiss-cpu",)})
        facts["numba_cache_dir_env"] = os.environ.get("NUMBA_CACHE_DIR")
        warning = busy_warning()
        if warning:
            _log(warning)
        results = trio.run(run_all, params, parts, root, args.seed)
    payload = {"benchmark": "overhead", "question": QUESTION, "date": now_iso(),
               "method": __doc__.split("\n\n", 1)[1].replace("\n", " "), "machine": facts,
               "parameters": {**{k: list(v) if isinstance(v, tuple) else v
                                 for k, v in params.items()}, "parts": sorted(parts),
                              "seed": args.seed, "quick": args.quick},
               **results, "load_average_at_end": load_average(),
               "wall_seconds": round(time.perf_counter() - started, 1)}
    payload["aims"] = aims(results)
    path = write_results(output, payload)
    print(f"\nWrote {path} ({payload['wall_seconds']:.0f} s).")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
