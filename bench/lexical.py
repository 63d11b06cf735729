"""How fast are hmsengine's lexical queries next to the fastest in-process peers, measured fairly?

One seeded Zipf corpus per size (documents of 10-60 pseudo-words over a 50,000-word vocabulary,
exponent 1.1): lower-case ASCII words that every engine's tokenizer keeps as they are, so all of
them index the same tokens (hmsengine ``analyzer="simple"``: no stemming, no stop words;
tantivy's ``whitespace`` tokenizer; PISA with ``stemmer="none"`` and ``stops="none"``; bm25s fed
the split words). BM25 with k1 = 1.2 and b = 0.75 everywhere. Two query mixes of 2-5 distinct
words: ``whole`` (words drawn from the whole Zipf distribution, so most queries hold a very
common word) and ``mid`` (words drawn uniformly from those in 0.1%-5% of the documents).

Engines, each timed one query per call, top 10, ids returned:

* hmsengine: ``await engine.search_documents(q, k=10)`` inside ``trio.run``, on a store on the
  repository's disk, in two states: ``ingest``, timed right after 128 concurrent writers put the
  documents one ``put_document`` each (durable, group-committed), without waiting for the index
  builder's merges; ``settled``, after the builder has folded, merged and consolidated (and
  written the consolidated segment).
* tantivy-py: an on-disk index (1 writer thread), ``searcher.search(parse_query(q), 10,
  count=False)`` (block-max pruning on; no counting of every match), ids read from an integer
  fast field (``fast_field_values``); ``ingest``: right after ``commit``; ``settled``: after
  ``wait_merging_threads``. ``tantivy_count`` is the same with ``count=True`` (its default, what
  this project's older benchmarks used), for the record.
* PISA (``pyterrier-pisa``): an on-disk index, block-max WAND, one query per call through its
  binding's ``retrieve`` with preallocated result arrays (no DataFrame); a static index (both
  states are the same index).
* bm25s: numba backend, ``method="lucene"``, ``retrieve([words], k=10, n_threads=1)``; static.

Each state runs ``--passes`` passes; in each pass every engine runs every query of both mixes
(engine order rotated per pass); each call is timed alone. Medians over passes of each pass's
q/s, p50 and p99; ratios compare medians of the same run. Correctness: each engine's top 10 is
compared with an exact float64 BM25 of its own formula (Lucene idf ``ln(1 + (N - df + 0.5) /
(df + 0.5))`` for hmsengine, tantivy and bm25s; PISA's ``max(1e-6, ln((N - df + 0.5) / (df +
0.5)))``), tie-aware: a returned document counts as right when its exact score is at least the
exact 10th best (relative tolerance 1e-6, for float32 scores); "exact" is the share of queries
with all of their top 10 right.

Build: documents/s from text until every document is searchable: hmsengine (after ``Engine.open``
of the empty store, timed apart) ``put_documents`` in
chunks of 10,000 on disk (each chunk fsynced) until the tail is folded and no merge is due;
tantivy until ``commit`` returns (fsynced); PISA until the index and its block-max data are
written (not fsynced); bm25s in memory. The 128-writer ingest rate is reported beside it.

Run: ``python bench/lexical.py`` (sizes 10k, 50k, 200k and 1M, each in its own process; about
20-40 minutes on the 2-core VM, most of it 1M), ``--sizes 10000,50000`` to choose, ``--quick``
for a smoke run. Writes bench/results/lexical.json (``--quick``: lexical-quick.json), updated
after every size.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import random
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
    _version,
    busy_warning,
    fmt_rate,
    fmt_ratio,
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

import hmsengine
from hmsengine import Engine
from hmsengine.engine import indexer as indexer_module

QUESTION = ("Lexical query speed (q/s, p50, p99) and index build rate of hmsengine next to "
            "tantivy-py (count=False), PISA (block-max WAND) and bm25s, same tokens, same BM25, "
            "right after concurrent ingest and on a settled store, 10k to 1M documents")
SEED = 20240611
K = 10
K1, B = 1.2, 0.75
CHUNK = 10_000
WRITERS = 128
DEFAULTS: dict[str, Any] = {"sizes": (10_000, 50_000, 200_000, 1_000_000), "vocab": 50_000,
                            "zipf": 1.1, "min_len": 10, "max_len": 60, "queries": 300,
                            "passes": 3}
QUICK: dict[str, Any] = {"sizes": (10_000,), "queries": 100, "passes": 2}
ENGINES = ("hmsengine", "tantivy", "pisa", "bm25s", "tantivy_count")
NAMES = {"hmsengine": "hmsengine search_documents", "tantivy": "tantivy-py count=False",
         "pisa": "PISA block-max WAND", "bm25s": "bm25s numba 1 thread",
         "tantivy_count": "tantivy-py count=True (old bench)"}
MIXES = ("whole", "mid")
STATES = ("ingest", "settled")
MID_BAND = (0.001, 0.05)  # document frequency band of the "mid" mix, as a share of the documents
TIE_TOLERANCE = 1e-6
WARMUP = 20  # untimed queries per engine and mix before the settled state's passes
TANTIVY_HEAP = 256_000_000
SETTLE_LIMIT_S = 1800
# The aims (q/s ratios of hmsengine in the ingest state; index build).
AIMS = (
    ("50k ingest: hmsengine >= 1.2x tantivy count=False", 50_000, "ingest", "tantivy", 1.2),
    ("50k ingest: hmsengine >= 2x bm25s", 50_000, "ingest", "bm25s", 2.0),
    ("200k ingest: hmsengine >= 1.2x tantivy count=False", 200_000, "ingest", "tantivy", 1.2),
    ("200k ingest: hmsengine >= 2x bm25s", 200_000, "ingest", "bm25s", 2.0),
    ("1M ingest: hmsengine >= 1.0x tantivy count=False", 1_000_000, "ingest", "tantivy", 1.0),
    ("stretch, 50k ingest: hmsengine >= 1.0x PISA", 50_000, "ingest", "pisa", 1.0),
)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- corpus, queries and the exact reference ------------------------------------------------------


def make_vocabulary(size: int, seed: int) -> list[str]:
    """``size`` distinct lower-case ASCII pseudo-words of 5-9 letters (kept as they are by every
    engine's tokenizer here)."""
    rng = random.Random(seed)
    consonants, vowels, finals = "bcdfghjklmnprstvwz", "aeiou", "kmntpx"
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        w = "".join(rng.choice(consonants) + rng.choice(vowels)
                    for _ in range(rng.randint(2, 4))) + rng.choice(finals)
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


class Corpus:
    """Texts, the postings of the exact reference, and the two query mixes."""

    def __init__(self, n: int, params: dict[str, Any], seed: int) -> None:
        self.vocab = make_vocabulary(params["vocab"], seed)
        v = len(self.vocab)
        rng = np.random.default_rng(seed + n)
        p = np.arange(1, v + 1, dtype=np.float64) ** -params["zipf"]
        self.cdf = np.cumsum(p / p.sum())
        self.cdf[-1] = 1.0
        lens = rng.integers(params["min_len"], params["max_len"] + 1, n)
        words = np.searchsorted(self.cdf, rng.random(int(lens.sum())), side="right").astype(np.int64)
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=starts[1:])
        arr = np.asarray(self.vocab, dtype=object)
        self.texts = [" ".join(arr[words[starts[i]:starts[i + 1]]]) for i in range(n)]
        self.n = n
        self.doc_len = lens.astype(np.float64)
        # Term -> (documents ascending, term frequency): the exact reference's postings.
        doc_of = np.repeat(np.arange(n, dtype=np.int64), lens)
        keys, tf = np.unique(words * n + doc_of, return_counts=True)
        term, doc = keys // n, keys % n
        self.offsets = np.zeros(v + 1, dtype=np.int64)
        np.cumsum(np.bincount(term, minlength=v), out=self.offsets[1:])
        self.post_doc, self.post_tf = doc, tf.astype(np.float64)
        self.df = np.diff(self.offsets)
        self.term_index = {w: i for i, w in enumerate(self.vocab)}
        self.norm = K1 * (1.0 - B + B * self.doc_len / self.doc_len.mean())
        self.queries = {"whole": self._whole(params["queries"], rng),
                        "mid": self._mid(params["queries"], rng)}

    def _whole(self, count: int, rng: np.random.Generator) -> list[str]:
        out = []
        while len(out) < count:
            m = int(rng.integers(2, 6))
            picked: list[int] = []
            while len(picked) < m:
                t = int(np.searchsorted(self.cdf, rng.random(), side="right"))
                if self.df[t] > 0 and t not in picked:
                    picked.append(t)
            out.append(" ".join(self.vocab[t] for t in picked))
        return out

    def _mid(self, count: int, rng: np.random.Generator) -> list[str]:
        lo, hi = MID_BAND[0] * self.n, MID_BAND[1] * self.n
        band = np.flatnonzero((self.df >= max(lo, 2)) & (self.df <= hi))
        return [" ".join(self.vocab[t] for t in rng.choice(band, int(rng.integers(2, 6)),
                                                           replace=False))
                for _ in range(count)]

    def exact_scores(self, query: str, formula: str) -> np.ndarray:
        """Float64 BM25 of every document for ``query`` (``formula``: "lucene" or "pisa")."""
        index = self.term_index
        norm = self.norm
        scores = np.zeros(self.n, dtype=np.float64)
        for w in query.split():
            t = index[w]
            df = float(self.df[t])
            if formula == "lucene":
                idf = math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))
            else:
                idf = max(1e-6, math.log((self.n - df + 0.5) / (df + 0.5)))
            lo, hi = self.offsets[t], self.offsets[t + 1]
            d, tf = self.post_doc[lo:hi], self.post_tf[lo:hi]
            scores[d] += idf * tf * (K1 + 1.0) / (tf + norm[d])
        return scores

    def describe(self) -> dict[str, Any]:
        facts: dict[str, Any] = {"documents": self.n, "vocabulary": len(self.vocab),
                                 "mean_doc_len_words": float(self.doc_len.mean()),
                                 "df_of_rank_1_word": int(self.df[0]),
                                 "mid_band_documents": [MID_BAND[0] * self.n, MID_BAND[1] * self.n]}
        index = self.term_index
        for mix, qs in self.queries.items():
            post = [int(sum(self.df[index[w]] for w in q.split())) for q in qs]
            top = [max(int(self.df[index[w]]) for w in q.split()) for q in qs]
            facts[mix] = {"queries": len(qs), "postings_median": float(np.median(post)),
                          "postings_p90": float(np.percentile(post, 90)),
                          "share_with_a_word_in_over_half_the_documents":
                              float(np.mean(np.asarray(top) > self.n / 2))}
        return facts


def acceptable(corpus: Corpus, queries: list[str], formula: str) -> list[tuple[int, set[int]]]:
    """Per query: how many documents a right top 10 holds (``m``: 10, or fewer matches) and the
    documents that may be among them (the exact top ``m`` and any tied with the ``m``-th within
    the tolerance)."""
    out = []
    for q in queries:
        s = corpus.exact_scores(q, formula)
        m = min(K, int(np.count_nonzero(s > 0)))
        if m == 0:
            out.append((0, set()))
            continue
        bar = np.partition(s, s.size - m)[s.size - m]
        out.append((m, set(np.flatnonzero(s >= bar - TIE_TOLERANCE * bar).tolist())))
    return out


def agreement(reference: list[tuple[int, set[int]]], answers: list[list[int]]) -> dict[str, float]:
    """Tie-aware top-10 agreement of ``answers`` with the exact ranking (``acceptable``)."""
    rates = []
    for (m, ok), got in zip(reference, answers, strict=True):
        if m == 0:
            rates.append(0.0 if got else 1.0)
            continue
        right = sum(1 for d in got[:K] if d in ok)
        rates.append(min(right, m) / m)
    return {"mean_rate": float(np.mean(rates)),
            "queries_exact": float(np.mean([r == 1.0 for r in rates]))}


# -- engines: each gives a callable ``query text -> list of document numbers`` --------------------


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def _summary(lat: list[float], total: float) -> dict[str, Any]:
    return {"queries": len(lat), "qps": len(lat) / total, "p50_us": _pct(lat, 50) * 1e6,
            "p99_us": _pct(lat, 99) * 1e6, "mean_us": sum(lat) / len(lat) * 1e6}


def build_tantivy(corpus: Corpus, path: Path) -> tuple[Any, dict[str, Any]]:
    import tantivy

    gc.collect()
    start = time.perf_counter()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("text", stored=False, tokenizer_name="whitespace")
    sb.add_integer_field("n", stored=False, fast=True, indexed=False)
    index = tantivy.Index(sb.build(), path=str(path))
    writer = index.writer(TANTIVY_HEAP, 1)
    document, add = tantivy.Document, writer.add_document
    for n, text in enumerate(corpus.texts):
        add(document(text=text, n=n))
    writer.commit()
    index.reload()
    seconds = time.perf_counter() - start
    return (index, writer), {"seconds": seconds, "docs_per_s": corpus.n / seconds,
                             "segments_after_commit": index.searcher().num_segments,
                             "writer_threads": 1, "durable": True}


def tantivy_query(index: Any, count: bool) -> Callable[[str], list[int]]:
    searcher = index.searcher()
    parse, search, ids = index.parse_query, searcher.search, searcher.fast_field_values

    def one(q: str) -> list[int]:
        hits = search(parse(q, ["text"]), K, count=count).hits
        return ids("n", [a for _, a in hits])  # type: ignore[no-any-return]

    return one


@contextlib.contextmanager
def _quiet_native_output() -> Any:
    """File descriptors 1 and 2 to /dev/null (PISA's C++ side logs and draws progress bars)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def build_pisa(corpus: Corpus, path: Path) -> tuple[Callable[[str], list[int]], dict[str, Any]]:
    import pyterrier_pisa
    from pyterrier_pisa import _pisathon

    with contextlib.suppress(AttributeError):  # not in every build of the binding
        _pisathon.log_level(0)
    gc.collect()
    start = time.perf_counter()
    with _quiet_native_output():
        index = pyterrier_pisa.PisaIndex(str(path), stemmer="none", stops="none", threads=1)
        index.indexer(text_field="text").index(
            {"docno": str(n), "text": t} for n, t in enumerate(corpus.texts))
        retriever = index.bm25(k1=K1, b=B, num_results=K, threads=1)  # builds block-max data
    seconds = time.perf_counter() - start
    ctx = retriever._ctxt
    qidx, docnos = np.empty(K, np.int32), np.empty(K, dtype=object)
    ranks, scores = np.empty(K, np.int32), np.empty(K, np.float32)
    retrieve = _pisathon.retrieve

    def one(q: str) -> list[int]:
        n = retrieve(ctx, "block_max_wand", [(0, q)], k=K, threads=1, query_weighted=0,
                     pretokenised=False, result_qidxs=qidx, result_docnos=docnos,
                     result_ranks=ranks, result_scores=scores)
        return [int(d) for d in docnos[:n]]

    return one, {"seconds": seconds, "docs_per_s": corpus.n / seconds, "durable": False,
                 "algorithm": "block_max_wand", "encoding": index.index_encoding.value}


def build_bm25s(corpus: Corpus) -> tuple[Callable[[str], list[int]], dict[str, Any]]:
    import bm25s

    gc.collect()
    start = time.perf_counter()
    retriever = bm25s.BM25(backend="numba", method="lucene", k1=K1, b=B)
    retriever.index([t.split() for t in corpus.texts], show_progress=False)
    seconds = time.perf_counter() - start
    retrieve = retriever.retrieve

    def one(q: str) -> list[int]:
        docs, scores = retrieve([q.split()], k=K, n_threads=1, show_progress=False)
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    return one, {"seconds": seconds, "docs_per_s": corpus.n / seconds, "durable": False}


async def _settle(engine: Engine, *, consolidated: bool) -> None:
    """Wait until the tail is folded and no merge is due; ``consolidated``: also until the idle
    consolidation is done and its segment written (the persist that follows a consolidation
    takes ~0.5 s at 50k and more beyond, on the second vCPU: settled passes timed beside it
    would time the builder too; tantivy's settled state likewise waits for its merges)."""
    indexer = engine._indexer  # the pending-merge check is internal, as in bench/search.py
    deadline = time.monotonic() + SETTLE_LIMIT_S
    if consolidated:
        await trio.sleep(0.6)  # the builder consolidates once commits stop for 0.5 s
    while indexer.snapshot.tail or indexer._pick() is not None or (
            consolidated and not indexer.settled) or (
            consolidated and indexer._persistent
            and indexer._unpersisted_documents() >= indexer_module.PERSIST_AT):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the index did not settle within {SETTLE_LIMIT_S} s")
        await trio.sleep(0.005)


async def hms_bulk_build(corpus: Corpus, path: Path) -> dict[str, Any]:
    """put_documents in chunks of 10,000 on disk, until every document is searchable and folded."""
    gc.collect()
    opening = time.perf_counter()
    async with Engine.open(path, analyzer="simple") as engine:
        # The open and the kernel warm-up are timed apart, as before the open stopped waiting
        # for the warm-up: a first search waits for it.
        await engine.search_documents("warm up", k=1)
        start = time.perf_counter()
        for lo in range(0, corpus.n, CHUNK):
            await engine.put_documents([{"id": f"d{n}", "text": corpus.texts[n]}
                                        for n in range(lo, min(lo + CHUNK, corpus.n))])
        written = time.perf_counter()
        await _settle(engine, consolidated=False)
        seconds = time.perf_counter() - start
        closing = time.perf_counter()
    return {"seconds": seconds, "docs_per_s": corpus.n / seconds, "durable": True,
            "open_seconds": start - opening, "put_seconds": written - start,
            "fold_wait_seconds": start + seconds - written,
            "close_seconds": time.perf_counter() - closing}


async def hms_concurrent_ingest(engine: Engine, corpus: Corpus) -> dict[str, Any]:
    """128 writers, each putting one document per call until all are in."""
    next_doc = 0
    texts = corpus.texts

    async def writer() -> None:
        nonlocal next_doc
        put = engine.put_document
        while next_doc < corpus.n:
            n = next_doc
            next_doc += 1
            await put(f"d{n}", texts[n])

    gc.collect()
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(WRITERS):
            nursery.start_soon(writer)
    seconds = time.perf_counter() - start
    s = engine.statistics()
    return {"seconds": seconds, "docs_per_s": corpus.n / seconds, "writers": WRITERS,
            "transactions": s.transactions, "fsyncs": s.fsyncs,
            "segments_at_end": s.index_segments, "tail_at_end": s.index_tail,
            # Live documents per segment, oldest first: what the merge policy left (lexical.notes.md).
            "segment_sizes_at_end": [v.n_live for v in engine._indexer.snapshot.segments],
            "folds": engine._indexer.folds, "merges": engine._indexer.merges,
            "merged_documents": getattr(engine._indexer, "merged_documents", None)}


# -- one size, in its own process -----------------------------------------------------------------


async def measure_size(n: int, params: dict[str, Any], seed: int, root: Path) -> dict[str, Any]:
    clock = time.perf_counter
    t0 = clock()
    corpus = Corpus(n, params, seed)
    out: dict[str, Any] = {"documents": n, "corpus": corpus.describe(),
                           "corpus_seconds": clock() - t0, "builds": {}}
    _log(f"  corpus {clock() - t0:.1f} s; building the peers")
    builds = out["builds"]
    tantivy_index, builds["tantivy"] = build_tantivy(corpus, _mkdir(root / "tantivy"))
    pisa_one, builds["pisa"] = build_pisa(corpus, root / "pisa")
    bm25s_one, builds["bm25s"] = build_bm25s(corpus)
    for one in (pisa_one, bm25s_one):  # first calls (allocations, numba dispatch), untimed
        for q in corpus.queries["whole"][:WARMUP]:
            one(q)
    builds["hmsengine"] = await hms_bulk_build(corpus, root / "hms-bulk")
    for name, b in builds.items():
        _log(f"    build {name:<10} {fmt_rate(b['docs_per_s']):>9} docs/s ({b['seconds']:.1f} s)")
    states: dict[str, Any] = {}
    async with Engine.open(root / "hms", analyzer="simple") as engine:
        out["ingest_128_writers"] = await hms_concurrent_ingest(engine, corpus)
        burst_end = clock()
        _log(f"    hmsengine 128 writers: {fmt_rate(out['ingest_128_writers']['docs_per_s'])} "
             f"docs/s durable, {out['ingest_128_writers']['segments_at_end']} segments at the end")
        index, writer = tantivy_index
        for state in STATES:
            if state == "settled":
                t = clock()
                await _settle(engine, consolidated=True)
                out["hms_settle_seconds"] = clock() - t
                t = clock()
                writer.wait_merging_threads()
                index.reload()
                out["tantivy_merge_wait_seconds"] = clock() - t
            calls: dict[str, Any] = {"hmsengine": _hms_query(engine),
                                     "tantivy": tantivy_query(index, False),
                                     "tantivy_count": tantivy_query(index, True),
                                     "pisa": pisa_one, "bm25s": bm25s_one}
            if state == "settled":  # steady state: every engine warmed up, untimed
                for e, call in calls.items():
                    for mix in MIXES:
                        for q in corpus.queries[mix][:WARMUP]:
                            await call(q) if e == "hmsengine" else call(q)
            states[state] = await run_passes(calls, corpus, params["passes"], engine,
                                             since=burst_end if state == "ingest" else None)
            states[state]["tantivy_segments"] = index.searcher().num_segments
            report_state(n, state, states[state])
    out["states"] = states
    reference = {(mix, formula): acceptable(corpus, corpus.queries[mix], formula)
                 for mix in MIXES for formula in ("lucene", "pisa")}
    out["agreement"] = {}
    for state in STATES:
        answers = states[state].pop("answers")
        out["agreement"][state] = {
            e: {mix: agreement(reference[mix, "pisa" if e == "pisa" else "lucene"],
                               answers[e][mix]) for mix in MIXES} for e in ENGINES}
    out["ratios"] = {state: {mix: {e: ratio(states[state]["medians"]["hmsengine"][mix]["qps"],
                                            states[state]["medians"][e][mix]["qps"])
                                   for e in ENGINES[1:]} for mix in MIXES} for state in STATES}
    out["seconds"] = clock() - t0
    return out


def _hms_query(engine: Engine) -> Callable[[str], Any]:
    search = engine.search_documents

    async def one(q: str) -> list[int]:
        return [int(h.id[1:]) for h in await search(q, k=K)]

    return one


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


async def run_passes(calls: dict[str, Any], corpus: Corpus, passes: int, engine: Engine, *,
                     since: float | None = None) -> dict[str, Any]:
    """``passes`` passes, engine order rotated per pass; each query timed alone. ``since``: the
    ``perf_counter`` time the burst ended (each hmsengine pass records when it started after
    it: the peers' calls keep the event loop, so hmsengine's index builder lands nothing
    while they run, lexical.notes.md)."""
    clock = time.perf_counter
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {e: {m: [] for m in MIXES} for e in ENGINES}
    answers: dict[str, dict[str, list[list[int]]]] = {e: {} for e in ENGINES}
    hms_segments: list[dict[str, Any]] = []
    for p in range(passes):
        order = ENGINES[p % len(ENGINES):] + ENGINES[:p % len(ENGINES)]
        for e in order:
            call = calls[e]
            is_async = e == "hmsengine"
            for mix in MIXES:
                queries = corpus.queries[mix]
                if e == "hmsengine":
                    before = engine.statistics().index_segments
                gc.collect()
                lat, got = [], []
                start = clock()
                for q in queries:
                    t = clock()
                    r = await call(q) if is_async else call(q)
                    lat.append(clock() - t)
                    got.append(r)
                runs[e][mix].append(_summary(lat, clock() - start))
                answers[e][mix] = got
                if e == "hmsengine":
                    hms_segments.append({"pass": p, "mix": mix, "segments_before": before,
                                         "segments_after": engine.statistics().index_segments,
                                         "started_after_burst_s": None if since is None
                                         else round(start - since, 3)})
    medians = {e: {m: {k: median([r[k] for r in runs[e][m]]) for k in ("qps", "p50_us", "p99_us")}
                   for m in MIXES} for e in ENGINES}
    return {"runs": runs, "medians": medians, "hms_segments": hms_segments, "answers": answers}


def report_state(n: int, state: str, res: dict[str, Any]) -> None:
    med = res["medians"]
    parts = []
    for e in ENGINES:
        parts.append(f"{e} " + "/".join(f"{fmt_rate(med[e][m]['qps'])}" for m in MIXES))
    _log(f"    {state:<8} q/s (whole/mid): " + ", ".join(parts) + f"; hms segments "
         f"{[s['segments_before'] for s in res['hms_segments']]}")


def run_child(args: argparse.Namespace) -> int:
    params = json.loads(args.params)
    root = Path(args.root)
    result = trio.run(measure_size, args.documents, params, args.seed, root)
    Path(args.child_out).write_text(json.dumps(result), encoding="utf-8")
    return 0


# -- the parent ------------------------------------------------------------------------------------


def _spawn(root: Path, n: int, params: dict[str, Any], seed: int) -> dict[str, Any]:
    out = root / f"child-{n}.json"
    with fresh_dir(root, f"size-{n}") as work:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--documents", str(n),
               "--params", json.dumps(params), "--seed", str(seed), "--root", str(work),
               "--child-out", str(out)]
        subprocess.run(cmd, check=True)
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    out.unlink()
    return result


def report(sizes: dict[str, Any]) -> None:
    for state in STATES:
        print()
        when = "right after 128 concurrent writers" if state == "ingest" else "settled store"
        print(f"Queries/s, {state} ({when}); top 10, one query per call; medians over passes:")
        headers = ["documents", "mix"] + [NAMES[e] for e in ENGINES] + [
            f"hms / {e}" for e in ENGINES[1:]]
        rows = []
        for r in sizes.values():
            for mix in MIXES:
                med = r["states"][state]["medians"]
                rows.append([f"{r['documents']:,}", mix]
                            + [f"{fmt_rate(med[e][mix]['qps'])} ({med[e][mix]['p50_us']:.0f} us)"
                               for e in ENGINES]
                            + [fmt_ratio(r["ratios"][state][mix][e]) for e in ENGINES[1:]])
        print_table(headers, rows)
    print()
    print("Index build docs/s (hmsengine durable, put_documents in chunks of 10,000):")
    rows = []
    for r in sizes.values():
        b = r["builds"]
        rows.append([f"{r['documents']:,}"] + [fmt_rate(b[e]["docs_per_s"]) for e in
                                                ("hmsengine", "tantivy", "pisa", "bm25s")]
                    + [fmt_rate(r["ingest_128_writers"]["docs_per_s"]),
                       fmt_ratio(ratio(b["hmsengine"]["docs_per_s"], b["tantivy"]["docs_per_s"]))])
    print_table(["documents", "hmsengine", "tantivy", "PISA", "bm25s", "hms 128 writers",
                 "hms / tantivy"], rows)


def aims(sizes: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    print()
    for text, n, state, peer, threshold in AIMS:
        r = sizes.get(str(n))
        for mix in MIXES:
            value = None if r is None else r["ratios"][state][mix][peer]
            met = None if value is None else value >= threshold
            out.append({"aim": text, "mix": mix, "ratio": value, "threshold": threshold,
                        "met": met})
            print(f"Aim: {text} ({mix} mix): " + ("not measured" if value is None else
                  f"{'MET' if met else 'MISSED'} ({value:.2f}x)"))
    for r in sizes.values():
        value = ratio(r["builds"]["hmsengine"]["docs_per_s"], r["builds"]["tantivy"]["docs_per_s"])
        out.append({"aim": f"{r['documents']:,}: index build >= 1.0x tantivy (durable)",
                    "ratio": value, "threshold": 1.0, "met": value is not None and value >= 1.0})
        print(f"Aim: {r['documents']:,} index build >= 1.0x tantivy: "
              f"{'MET' if out[-1]['met'] else 'MISSED'} ({fmt_ratio(value)})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/lexical.py", description=QUESTION)
    parser.add_argument("--quick", action="store_true", help="smoke run: 10k documents only")
    parser.add_argument("--sizes", help="comma-separated document counts "
                                        "(default 10000,50000,200000,1000000)")
    parser.add_argument("--queries", type=int, help="queries per mix (default 300)")
    parser.add_argument("--passes", type=int, help="timed passes per state (default 3)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--documents", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--params", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return run_child(args)
    params = dict(DEFAULTS)
    if args.quick:
        params.update(QUICK)
    if args.sizes:
        params["sizes"] = tuple(int(x) for x in args.sizes.split(",") if x.strip())
    for name in ("queries", "passes"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    if min(params["sizes"]) < 1000 or params["queries"] < 1 or params["passes"] < 1:
        parser.error("sizes >= 1000; queries and passes positive")
    output = args.output or RESULTS_DIR / ("lexical-quick.json" if args.quick else "lexical.json")
    started = time.perf_counter()
    sizes: dict[str, Any] = {}
    with scratch_root() as root:
        facts = machine_facts(root)
        facts["source"]["package_path"] = str(Path(hmsengine.__file__).resolve().parent)
        facts["versions"].update({p: _version(p) for p in
                                  ("bm25s", "tantivy", "pyterrier-pisa", "faiss-cpu")})
        warning = busy_warning()
        if warning:
            _log(warning)
        payload: dict[str, Any] = {
            "benchmark": "lexical", "question": QUESTION, "date": now_iso(),
            "method": __doc__.split("\n\n", 1)[1].replace("\n", " "), "machine": facts,
            "parameters": {**{k: list(v) if isinstance(v, tuple) else v
                              for k, v in params.items()}, "seed": args.seed, "k": K, "k1": K1,
                           "b": B, "writers": WRITERS, "chunk": CHUNK, "mid_band": MID_BAND,
                           "quick": args.quick},
            "sizes": sizes,
        }
        for n in params["sizes"]:
            _log(f"{n:,} documents")
            sizes[str(n)] = _spawn(root, n, {k: v for k, v in params.items() if k != "sizes"},
                                   args.seed)
            sizes[str(n)]["load_average_after"] = load_average()
            payload["wall_seconds"] = round(time.perf_counter() - started, 1)
            write_results(output, payload)
    report(sizes)
    payload["aims"] = aims(sizes)
    payload["load_average_at_end"] = load_average()
    payload["wall_seconds"] = round(time.perf_counter() - started, 1)
    path = write_results(output, payload)
    print(f"\nWrote {path} ({payload['wall_seconds']:.0f} s).")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
