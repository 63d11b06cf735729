"""What does the memory API cost over plain document search, in latency and in resident memory?

The seed's "Measured cost" method, reproduced for hmsengine. Three store kinds, each built from
the same seeded synthetic texts (20-28 words, mean 24, drawn from a 10,000-pseudo-word Zipf
vocabulary) with the same ids, at 1,000, 10,000 and 100,000 facts:

- raw: plain documents, ``engine.put_documents`` (no metadata);
- memory: the same texts as facts, ``Memory(engine).remember_many`` (text and id only: no subject,
  entities, validity windows or supersession links, so recall can take its default path);
- history: the same texts as facts in subject groups of five (``subj-<group>``), each with one
  entity of 20, where in every group one fact is superseded (the next fact of the group lists it
  in ``supersedes``) and one is expired (valid from 30 days ago to 1 day ago): a fifth of the
  facts superseded, a fifth expired, three fifths current.

Every store kind at every size is built and measured in its own child process (this script with
``--child``), on the repository's disk (``bench/.tmp/``), loaded in batches of 5,000 (one
transaction each), then settled (0.5 s quiet, then until the index tail is folded and no merge is
pending). Then, in that same process:

1. RSS: ``VmRSS`` (and the peak, ``VmHWM``) from /proc/self/status after the load, the fold,
   dropping the inputs, ``gc.collect()`` and ``malloc_trim(0)``, before any query. A second child
   reopens the closed store and reads RSS again (memory and history kinds: after building the
   Memory index, as the first memory call does). A child that opens an empty store gives the
   baseline. Every RSS figure is the median of 3 such processes per store kind and size (repeats
   interleaved across kinds), each run with a fixed ``MALLOC_MMAP_THRESHOLD_`` (128 KiB): with
   glibc's default, a dynamic threshold that rises as large blocks are freed, the heap of
   identical processes kept 150-200 MB of free but fragmented memory, partly resident, so the
   same code measured anywhere from +6% to +15%; with the threshold fixed, large transient
   buffers are mapped and returned when freed, and the figures repeat within about a megabyte.
   Beside RSS each child reports glibc's own count of the bytes its allocations hold
   (``mallinfo2``: in use in the heap, and mapped; Python's small objects live in pymalloc's
   arenas, which it maps itself, so that count is not all of the process). The timed child
   below runs with the default allocator settings (a fixed threshold maps and unmaps every
   large query buffer) and its RSS is reported apart, for reference. The aim compares
   memory-store RSS with raw-store RSS at 100k facts, after load.
2. Latency: 400 queries (2-4 distinct words of a seeded random fact), 5 passes after one untimed
   warm-up pass. Within a pass every query runs every operation once, back to back, the order
   rotated from query to query and from pass to pass, so noise hits all operations alike. Each
   call is timed alone (``time.perf_counter`` around the ``await``). Operations: search =
   ``await engine.search_documents(q, k=10)``; recall = ``await memory.recall(q, k=10)``;
   on the history store also ``recall(q, k=10, subject=<the fact's subject>)`` (5 ids) and
   ``recall(q, k=10, entity=<the fact's entity>)`` (about 5% of the store).
3. Checks: on the raw and memory stores default recall must return exactly search's ranking
   (ids and float scores, every status "current") for every query of every timed pass; on the
   history store recall (every variant) must return the top 10 of search's candidates (k=100,
   filtered to the ids the filter allows) that the benchmark itself knows are current, with
   search's scores (checked once per query, in the warm-up pass).

Reported per store and operation: the median over passes of each pass's mean and of each pass's
median latency (microseconds per query), and the ratio to search_documents measured in the same
process. Aims: default recall at most 1.05x search with identical rankings on every compared
query; filtered recall at most 3x search; RSS of facts over plain documents at most +7.7% at
100k (the seed's figure; issue 28).

Run: ``python bench/memory_overhead.py`` (about 6-8 minutes on the 2-core VM), ``--quick`` for
a smoke run (1k and 10k facts, 100 queries x 3 passes, one RSS process each, under a minute). Writes
bench/results/memory_overhead.json (``--quick``: memory_overhead-quick.json).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # bench scripts run as files, not as a package
    RESULTS_DIR,
    busy_warning,
    fmt_ratio,
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
from hmsengine import Engine, Memory, RememberInput
from hmsengine.index.analyzer import get_analyzer

QUESTION = ("Latency of Memory.recall next to search_documents on the same store, and resident "
            "memory of facts next to plain documents, at 1k-100k facts")
SEED = 20240611
K = 10
BATCH = 5_000  # facts (and documents) per transaction
VOCAB = 10_000
ZIPF = 1.0
WORDS = (20, 28)  # words per text, inclusive: mean 24
QUERY_WORDS = (2, 4)
GROUP = 5  # facts per subject in the history store
N_ENTITIES = 20
DAY_MS = 86_400_000
KINDS = ("raw", "memory", "history")
OPS = {"raw": ("search", "recall"), "memory": ("search", "recall"),
       "history": ("search", "recall", "recall_subject", "recall_entity")}
OP_NAMES = {"search": "search_documents", "recall": "recall (default)",
            "recall_subject": "recall, subject filter", "recall_entity": "recall, entity filter"}
DEFAULTS = {"sizes": (1_000, 10_000, 100_000), "queries": 400, "passes": 5, "rss_repeats": 3}
QUICK = {"sizes": (1_000, 10_000), "queries": 100, "passes": 3, "rss_repeats": 1}
AIM_RECALL = 1.05
AIM_FILTERED = 3.0
AIM_RSS = 1.077  # the seed's +7.7% (issue 28; the first aim was +8%)
# The RSS children's glibc setting (see the module docstring, step 1).
RSS_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072"}
AIM_RSS_FACTS = 100_000
_ENTITIES = ("alice", "bob", "carmen", "dmitri", "emeka", "fatima", "grace", "hiro", "ines",
             "jonas", "kavya", "liam", "mei", "noah", "olga", "priya", "quentin", "rosa", "sven",
             "tariq")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the corpus ------------------------------------------------------------------------------------


def make_vocabulary(size: int, seed: int) -> list[str]:
    """``size`` distinct pseudo-words the standard analyzer keeps as they are (lower-case ASCII,
    not a stop word, unchanged by the stemmer)."""
    analyzer = get_analyzer("standard")
    rng = np.random.default_rng(seed)
    consonants, vowels, finals = "bcdfghjklmnprstvwz", "aeiou", "kmntpx"
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        syllables = int(rng.integers(2, 5))
        w = "".join(consonants[int(rng.integers(len(consonants)))] + vowels[int(rng.integers(5))]
                    for _ in range(syllables)) + finals[int(rng.integers(len(finals)))]
        if w not in seen:
            seen.add(w)
            if analyzer.tokenize(w) == [w]:
                words.append(w)
    return words


class Corpus:
    """Seeded texts, their history roles, subjects and entities, and the queries."""

    def __init__(self, n: int, n_queries: int, seed: int) -> None:
        vocab = make_vocabulary(VOCAB, seed)
        rng = np.random.default_rng(seed + n)
        ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
        p = ranks ** -ZIPF
        cdf = np.cumsum(p / p.sum())
        cdf[-1] = 1.0
        lens = rng.integers(WORDS[0], WORDS[1] + 1, n)
        words = np.searchsorted(cdf, rng.random(int(lens.sum())), side="right")
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=starts[1:])
        arr = np.asarray(vocab, dtype=object)
        self.n = n
        self.ids = [f"f{i:07d}" for i in range(n)]
        self.texts = [" ".join(arr[words[starts[i]:starts[i + 1]]]) for i in range(n)]
        self.mean_words = float(lens.mean())
        self.entity = rng.integers(0, N_ENTITIES, n)
        # history roles by position in the group of five: 0 superseded (by 1), 1 supersedes 0,
        # 2 expired, 3 and 4 plain.
        pos = np.arange(n) % GROUP
        self.superseded = (pos == 0) & (np.arange(n) + 1 < n)
        self.expired = pos == 2
        self.current = ~(self.superseded | self.expired)
        picks = rng.integers(0, n, n_queries)
        self.queries: list[dict[str, Any]] = []
        for f in picks:
            own = list(dict.fromkeys(arr[words[starts[f]:starts[f + 1]]]))
            m = min(len(own), int(rng.integers(QUERY_WORDS[0], QUERY_WORDS[1] + 1)))
            chosen = rng.choice(len(own), size=m, replace=False)
            self.queries.append({"text": " ".join(own[j] for j in sorted(chosen)),
                                 "fact": self.ids[f], "subject": self.subject(int(f)),
                                 "entity": _ENTITIES[int(self.entity[f])]})

    @staticmethod
    def subject(i: int) -> str:
        return f"subj-{i // GROUP:06d}"

    def facts(self, kind: str, lo: int, hi: int, now: int) -> list[RememberInput]:
        if kind == "memory":
            return [RememberInput(text=self.texts[i], id=self.ids[i]) for i in range(lo, hi)]
        out = []
        for i in range(lo, hi):
            extra: dict[str, Any] = {}
            if self.expired[i]:
                extra = {"valid_from": now - 30 * DAY_MS, "valid_to": now - DAY_MS}
            elif i % GROUP == 1:
                extra = {"supersedes": (self.ids[i - 1],)}
            out.append(RememberInput(text=self.texts[i], id=self.ids[i], subject=self.subject(i),
                                     entities=(_ENTITIES[int(self.entity[i])],), **extra))
        return out

    def documents(self, lo: int, hi: int) -> list[dict[str, Any]]:
        return [{"id": self.ids[i], "text": self.texts[i]} for i in range(lo, hi)]

    def describe(self) -> dict[str, Any]:
        return {"facts": self.n, "vocabulary": VOCAB, "zipf_exponent": ZIPF,
                "words_per_text": list(WORDS), "mean_words_per_text": self.mean_words,
                "mean_chars_per_text": sum(map(len, self.texts)) / max(1, self.n),
                "queries": len(self.queries), "query_words": list(QUERY_WORDS),
                "history": {"subject_group": GROUP, "entities": N_ENTITIES,
                            "superseded": int(self.superseded.sum()),
                            "expired": int(self.expired.sum()),
                            "current": int(self.current.sum())}}


# -- the child process -----------------------------------------------------------------------------


def _rss() -> dict[str, int | None]:
    """Resident and peak resident set size in KiB (/proc/self/status, else ru_maxrss), and
    malloc's own count of what it holds (``_malloc_in_use``)."""
    out: dict[str, int | None] = {"vm_rss_kib": None, "vm_hwm_kib": None}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    out["vm_rss_kib"] = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    out["vm_hwm_kib"] = int(line.split()[1])
    except OSError:
        pass
    out["ru_maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out.update(_malloc_in_use())
    out["mmap_threshold"] = os.environ.get("MALLOC_MMAP_THRESHOLD_")  # type: ignore[assignment]
    return out


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _malloc_in_use() -> dict[str, int | None]:
    """glibc's count (``mallinfo2``, glibc >= 2.33) of the bytes malloc holds: in use in its
    heaps (``uordblks``), free there (``fordblks``) and mapped for large blocks (``hblkhd``).
    None where it cannot be read. Python's pymalloc arenas are mapped by Python itself, so they
    are not counted."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return {"in_use_bytes": None, "free_bytes": None, "mapped_bytes": None}
    return {"in_use_bytes": int(info.uordblks), "free_bytes": int(info.fordblks),
            "mapped_bytes": int(info.hblkhd)}


def _release_freed_memory() -> None:
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


async def _settle(engine: Engine) -> float:
    """0.5 s of quiet, then until the tail is folded and no merge or consolidation is pending
    (engine/indexer.py: the builder merges segments once commits stop)."""
    start = time.perf_counter()
    await trio.sleep(0.5)
    indexer = engine._indexer  # as bench/search.py: the pending-merge check is internal
    deadline = time.monotonic() + 120
    while not indexer.settled:
        if time.monotonic() > deadline:
            raise RuntimeError("the index did not settle within 120 s")
        await trio.sleep(0.01)
    if engine.statistics().index_tail != 0:
        raise RuntimeError("index tail not folded")
    return time.perf_counter() - start


def _stats(engine: Engine) -> dict[str, Any]:
    s = engine.statistics()
    return {"documents": s.documents, "transactions": s.transactions,
            "index_segments": s.index_segments, "index_tail": s.index_tail,
            "index_merges": s.index_merges, "index_documents_loaded": s.index_documents_loaded,
            "index_documents_tokenized": s.index_documents_tokenized}


def _pass_summary(lat: list[float]) -> dict[str, float]:
    us = [x * 1e6 for x in lat]
    return {"mean_us": sum(us) / len(us), "median_us": statistics.median(us),
            "p90_us": float(np.percentile(us, 90)), "min_us": min(us), "max_us": max(us)}


def _ranking(hits: list[Any]) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in hits]


def _recall_ranking(hits: list[Any]) -> list[tuple[str, float]]:
    return [(h.fact.id, h.score) for h in hits]


async def _expected_history(engine: Engine, corpus: Corpus, q: dict[str, Any],
                            op: str) -> list[tuple[str, float]]:
    """What recall must return on the history store, from the benchmark's own roles: the top
    candidate_limit (100) of search among the ids the filter allows, the current ones, top 10."""
    ids = None
    if op == "recall_subject":
        first = int(q["fact"][1:]) // GROUP * GROUP
        ids = corpus.ids[first:min(first + GROUP, corpus.n)]
    elif op == "recall_entity":
        e = _ENTITIES.index(q["entity"])
        ids = [corpus.ids[i] for i in np.flatnonzero(corpus.entity == e)]
    hits = await engine.search_documents(q["text"], k=100, ids=ids)
    return [(h.id, h.score) for h in hits if corpus.current[int(h.id[1:])]][:K]


async def child_load(kind: str, n: int, store: Path, n_queries: int, passes: int,
                     seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind, "facts": n}
    corpus = Corpus(n, n_queries, seed)
    queries = corpus.queries
    out["corpus"] = corpus.describe()
    clock = time.perf_counter
    async with Engine.open(store) as engine:
        now = engine.now()
        start = clock()
        if kind == "raw":
            for lo in range(0, n, BATCH):
                await engine.put_documents(corpus.documents(lo, min(n, lo + BATCH)))
        else:
            writer = Memory(engine)
            for lo in range(0, n, BATCH):
                await writer.remember_many(corpus.facts(kind, lo, min(n, lo + BATCH), now))
            del writer
        out["load_seconds"] = clock() - start
        out["settle_seconds"] = await _settle(engine)
        out["statistics_after_load"] = _stats(engine)
        # Keep what the checks need; drop the inputs before reading RSS.
        current = corpus.current
        corpus.texts = []
        _release_freed_memory()
        out["rss_after_load"] = _rss()
        _log(f"    {kind:<8} {n:>7,} facts: loaded in {out['load_seconds']:.1f} s, RSS "
             f"{out['rss_after_load']['vm_rss_kib'] / 1024:.1f} MiB")
        if passes == 0:  # an RSS-only repeat
            return out

        memory = Memory(engine)
        ops = OPS[kind]
        calls = {
            "search": lambda q: engine.search_documents(q["text"], k=K),
            "recall": lambda q: memory.recall(q["text"], k=K),
            "recall_subject": lambda q: memory.recall(q["text"], k=K, subject=q["subject"]),
            "recall_entity": lambda q: memory.recall(q["text"], k=K, entity=q["entity"]),
        }
        # Warm-up pass, untimed: builds the memory index (raw store) and runs the history checks.
        checks = {op: {"compared": 0, "mismatches": 0, "examples": []} for op in ops
                  if op != "search"}
        returned = {op: 0 for op in ops}
        for q in queries:
            got = {op: await calls[op](q) for op in ops}
            if kind == "history":
                for op in ops[1:]:
                    want = await _expected_history(engine, corpus, q, op)
                    have = _recall_ranking(got[op])
                    bad = have != want or any(h.status != "current" for h in got[op])
                    _count(checks[op], bad, q, want, have)
        temporal = memory.index.is_temporal(memory.slot_policy)
        out["index_is_temporal"] = temporal
        passes_out: list[dict[str, Any]] = []
        for p in range(passes):
            _release_freed_memory()
            lat: dict[str, list[float]] = {op: [] for op in ops}
            for qi, q in enumerate(queries):
                r = (qi + p) % len(ops)
                got = {}
                for op in ops[r:] + ops[:r]:
                    call = calls[op]
                    t = clock()
                    got[op] = await call(q)
                    lat[op].append(clock() - t)
                for op in ops:
                    returned[op] += len(got[op])
                if kind != "history":  # default recall must be search, bit for bit
                    want, have = _ranking(got["search"]), _recall_ranking(got["recall"])
                    bad = have != want or any(h.status != "current" for h in got["recall"])
                    _count(checks["recall"], bad, q, want, have)
            passes_out.append({op: _pass_summary(v) for op, v in lat.items()})
            _log(f"    {kind:<8} {n:>7,} facts: pass {p + 1}/{passes}: " + ", ".join(
                f"{op} {passes_out[-1][op]['mean_us']:.0f} us" for op in ops))
        out["passes"] = passes_out
        out["checks"] = checks
        out["mean_results_per_query"] = {op: c / (passes * len(queries))
                                         for op, c in returned.items()}
        out["current_facts"] = int(current.sum()) if kind == "history" else n
        close_start = clock()
    out["close_seconds"] = clock() - close_start
    return out


def _count(check: dict[str, Any], bad: bool, q: dict[str, Any], want: Any, have: Any) -> None:
    check["compared"] += 1
    if bad:
        check["mismatches"] += 1
        if len(check["examples"]) < 3:
            check["examples"].append({"query": q["text"], "expected": want, "got": have})


async def child_reopen(kind: str, store: Path) -> dict[str, Any]:
    start = time.perf_counter()
    async with Engine.open(store) as engine:
        if kind in ("memory", "history", "empty"):
            memory = Memory(engine)
            _ = memory.index  # what the first memory call does: scan metadata, build the index
        opened = time.perf_counter() - start
        settle = await _settle(engine)
        _release_freed_memory()
        return {"kind": kind, "open_seconds": opened, "settle_seconds": settle,
                "statistics": _stats(engine), "rss": _rss()}


def run_child(args: argparse.Namespace) -> int:
    store = Path(args.store)
    if args.child == "load":
        result = trio.run(child_load, args.kind, args.facts, store, args.queries, args.passes,
                          args.seed)
    else:
        result = trio.run(child_reopen, args.kind, store)
    Path(args.child_out).write_text(json.dumps(result), encoding="utf-8")
    return 0


def _spawn(root: Path, mode: str, kind: str, n: int, store: Path, params: dict[str, Any],
           seed: int, passes: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = root / f"{mode}-{kind}-{n}.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode, "--kind", kind,
           "--facts", str(n), "--store", str(store), "--child-out", str(out),
           "--queries", str(params["queries"]), "--passes", str(passes), "--seed", str(seed)]
    subprocess.run(cmd, check=True, env={**os.environ, "PYTHONHASHSEED": "0", **(env or {})})
    return json.loads(out.read_text(encoding="utf-8"))


# -- summaries and report --------------------------------------------------------------------------


def summarize(res: dict[str, Any]) -> dict[str, Any]:
    """Per operation: the median over passes of the pass means and of the pass medians, and the
    ratio to search measured in the same process."""
    ops = list(res["passes"][0])
    out: dict[str, Any] = {}
    for op in ops:
        means = [p[op]["mean_us"] for p in res["passes"]]
        medians = [p[op]["median_us"] for p in res["passes"]]
        out[op] = {"mean_us": median(means), "median_us": median(medians),
                   "p90_us": median([p[op]["p90_us"] for p in res["passes"]])}
    for op in ops:
        out[op]["ratio_mean_over_search"] = ratio(out[op]["mean_us"], out["search"]["mean_us"])
        out[op]["ratio_median_over_search"] = ratio(out[op]["median_us"],
                                                    out["search"]["median_us"])
        out[op]["per_pass_ratio_mean"] = [ratio(p[op]["mean_us"], p["search"]["mean_us"])
                                          for p in res["passes"]]
    return out


def _mib(kib: int | None) -> str:
    return "-" if kib is None else f"{kib / 1024:,.1f}"


def _pct(r: float | None) -> str:
    return "-" if r is None else f"{(r - 1) * 100:+.1f}%"


def report(runs: dict[str, Any], baseline: dict[str, Any], params: dict[str, Any]) -> None:
    print()
    print(f"Latency per query, microseconds: medians over {params['passes']} interleaved passes "
          f"of {params['queries']} queries (each pass's mean, each pass's median); ratios to "
          "search_documents on the same store in the same process.")
    headers = ["store", "facts", "operation", "mean us", "median us", "p90 us", "mean / search",
               "median / search", "results/query", "mismatches"]
    rows = []
    for n_key, by_kind in runs.items():
        for kind in KINDS:
            r = by_kind[kind]
            s = r["summary"]
            for op in OPS[kind]:
                check = r["checks"].get(op)
                rows.append([
                    kind, f"{int(n_key):,}", OP_NAMES[op], f"{s[op]['mean_us']:,.1f}",
                    f"{s[op]['median_us']:,.1f}", f"{s[op]['p90_us']:,.1f}",
                    "" if op == "search" else fmt_ratio(s[op]["ratio_mean_over_search"]),
                    "" if op == "search" else fmt_ratio(s[op]["ratio_median_over_search"]),
                    f"{r['mean_results_per_query'][op]:.1f}",
                    "" if check is None else f"{check['mismatches']}/{check['compared']}",
                ])
    print_table(headers, rows)
    print("mismatches: raw and memory stores: recall's (id, score) list != search's, compared on "
          "every query of every timed pass; history store: recall != the top 10 current facts "
          "(by the benchmark's own roles) of search's 100 candidates among the allowed ids, "
          "checked once per query.")
    print()
    base = baseline["rss"]["vm_rss_kib"]
    print(f"Resident memory (VmRSS, MiB; medians of {params['rss_repeats']} processes per store "
          "kind, MALLOC_MMAP_THRESHOLD_=131072) after load + fold + gc + malloc_trim, and of a "
          f"fresh process that reopened the store. Empty store: {_mib(base)} MiB.")
    headers = ["facts", "raw", "memory", "history", "memory / raw", "history / raw",
               "memory - raw, bytes/fact", "malloc in use: memory - raw, bytes/fact",
               "reopened: raw", "memory", "history", "memory / raw"]
    rows = []
    for n_key, by_kind in runs.items():
        n = int(n_key)
        load = {k: by_kind[k]["rss_median_kib"]["after_load"] for k in KINDS}
        reopen = {k: by_kind[k]["rss_median_kib"]["reopened"] for k in KINDS}
        heap = {k: by_kind[k]["malloc_in_use_median_bytes"]["after_load"] for k in KINDS}
        heap_delta = "-" if None in (heap["memory"], heap["raw"]) else \
            f"{(heap['memory'] - heap['raw']) / n:,.0f}"
        rows.append([f"{n:,}", _mib(load["raw"]), _mib(load["memory"]), _mib(load["history"]),
                     _pct(ratio(load["memory"], load["raw"])),
                     _pct(ratio(load["history"], load["raw"])),
                     f"{(load['memory'] - load['raw']) * 1024 / n:,.0f}", heap_delta,
                     _mib(reopen["raw"]), _mib(reopen["memory"]), _mib(reopen["history"]),
                     _pct(ratio(reopen["memory"], reopen["raw"]))])
    print_table(headers, rows)


def aims(runs: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n_key, by_kind in runs.items():
        mem = by_kind["memory"]
        s = mem["summary"]["recall"]
        mism = mem["checks"]["recall"]["mismatches"]
        met = (s["ratio_mean_over_search"] <= AIM_RECALL
               and s["ratio_median_over_search"] <= AIM_RECALL and mism == 0)
        out.append({"aim": f"default recall <= {AIM_RECALL}x search (mean and median) with "
                           "identical rankings, memory store", "facts": int(n_key),
                    "ratio_mean": s["ratio_mean_over_search"],
                    "ratio_median": s["ratio_median_over_search"], "mismatches": mism,
                    "compared": mem["checks"]["recall"]["compared"], "threshold": AIM_RECALL,
                    "met": met})
        hist = by_kind["history"]["summary"]
        for op in ("recall_subject", "recall_entity"):
            h = hist[op]
            out.append({"aim": f"{OP_NAMES[op]} <= {AIM_FILTERED}x search (mean and median), "
                               "history store", "facts": int(n_key),
                        "ratio_mean": h["ratio_mean_over_search"],
                        "ratio_median": h["ratio_median_over_search"],
                        "mismatches": by_kind["history"]["checks"][op]["mismatches"],
                        "threshold": AIM_FILTERED,
                        "met": (h["ratio_mean_over_search"] <= AIM_FILTERED
                                and h["ratio_median_over_search"] <= AIM_FILTERED)})
    key = str(AIM_RSS_FACTS)
    if key in runs:
        k = runs[key]
        r = ratio(k["memory"]["rss_median_kib"]["after_load"],
                  k["raw"]["rss_median_kib"]["after_load"])
        r2 = ratio(k["memory"]["rss_median_kib"]["reopened"],
                   k["raw"]["rss_median_kib"]["reopened"])
        out.append({"aim": f"RSS of the memory store <= {AIM_RSS}x the raw store at "
                           f"{AIM_RSS_FACTS:,} facts (after load and fold)", "facts": AIM_RSS_FACTS,
                    "ratio": r, "ratio_reopened": r2, "threshold": AIM_RSS,
                    "met": r is not None and r <= AIM_RSS})
    else:
        out.append({"aim": f"RSS of the memory store <= {AIM_RSS}x the raw store at "
                           f"{AIM_RSS_FACTS:,} facts", "facts": AIM_RSS_FACTS, "met": None})
    print()
    for a in out:
        verdict = "not measured" if a["met"] is None else ("MET" if a["met"] else "MISSED")
        if a["met"] is None:
            detail = ""
        elif "ratio_mean" in a:
            detail = (f" (mean {a['ratio_mean']:.2f}x, median {a['ratio_median']:.2f}x"
                      + (f", {a['mismatches']}/{a['compared']} mismatching rankings"
                         if "compared" in a else "") + ")")
        else:
            detail = (f" ({_pct(a['ratio'])}; reopened store {_pct(a['ratio_reopened'])}; "
                      f"needs <= {_pct(a['threshold'])})")
        print(f"Aim at {a['facts']:,}: {a['aim']}: {verdict}{detail}")
    return out


# -- the run ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/memory_overhead.py",
        description="Memory.recall latency next to search_documents on the same store (raw "
                    "documents, plain facts, facts with history), and resident memory of each "
                    "store kind in its own process, at 1k, 10k and 100k facts. Prints tables and "
                    "writes bench/results/memory_overhead.json.")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1k and 10k facts, 100 queries x 3 passes; results to "
                             "memory_overhead-quick.json")
    parser.add_argument("--sizes", help="comma-separated fact counts (default 1000,10000,100000)")
    parser.add_argument("--queries", type=int, help=f"queries (default {DEFAULTS['queries']})")
    parser.add_argument("--passes", type=int,
                        help=f"timed passes over the queries (default {DEFAULTS['passes']})")
    parser.add_argument("--rss-repeats", type=int,
                        help="processes per store kind and size for RSS (the first also times; "
                             f"default {DEFAULTS['rss_repeats']}, 1 with --quick)")
    parser.add_argument("--seed", type=int, default=SEED, help="seed (default %(default)s)")
    parser.add_argument("--output", type=Path, default=None,
                        help="results JSON (default bench/results/memory_overhead.json)")
    # The child processes (one per store kind and size): not for direct use.
    parser.add_argument("--child", choices=("load", "reopen"), help=argparse.SUPPRESS)
    parser.add_argument("--kind", choices=(*KINDS, "empty"), help=argparse.SUPPRESS)
    parser.add_argument("--facts", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
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
    for name in ("queries", "passes", "rss_repeats"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    if (not params["sizes"] or min(params["sizes"]) < GROUP or params["queries"] < 1
            or params["passes"] < 1 or params["rss_repeats"] < 1):
        parser.error(f"--sizes must be >= {GROUP}; --queries, --passes, --rss-repeats positive")
    output = args.output or RESULTS_DIR / ("memory_overhead-quick.json" if args.quick
                                           else "memory_overhead.json")

    started = time.perf_counter()
    runs: dict[str, Any] = {}
    with scratch_root() as root:
        facts = machine_facts(root)
        facts["source"]["package_path"] = str(Path(hmsengine.__file__).resolve().parent)
        warning = busy_warning()
        if warning:
            _log(warning)
        _log("baseline: an empty store in its own process")
        empty = root / "empty"
        empty.mkdir()
        baseline = _spawn(root, "reopen", "empty", 0, empty / "store", params, args.seed, 0,
                          RSS_ENV)
        for n in params["sizes"]:
            by_kind: dict[str, Any] = {}
            _log(f"{n:,} facts: one timed process per store kind (default malloc settings)")
            for kind in KINDS:
                store = root / f"{kind}-{n}-timed"
                store.mkdir()
                res = _spawn(root, "load", kind, n, store / "store", params, args.seed,
                             params["passes"])
                shutil.rmtree(store, ignore_errors=True)
                res["summary"] = summarize(res)
                res["rss_after_load_default_malloc"] = res.pop("rss_after_load")
                res["rss_runs"] = []
                by_kind[kind] = res
            for rep in range(params["rss_repeats"]):
                _log(f"{n:,} facts: RSS, one process per store kind (repeat {rep + 1}, "
                     f"MALLOC_MMAP_THRESHOLD_={RSS_ENV['MALLOC_MMAP_THRESHOLD_']})")
                for kind in KINDS:  # interleaved: every kind once, then again
                    store = root / f"{kind}-{n}-{rep}"
                    store.mkdir()
                    res = _spawn(root, "load", kind, n, store / "store", params, args.seed, 0,
                                 RSS_ENV)
                    reopened = _spawn(root, "reopen", kind, n, store / "store", params,
                                      args.seed, 0, RSS_ENV)
                    shutil.rmtree(store, ignore_errors=True)
                    by_kind[kind]["rss_runs"].append({
                        "after_load": res["rss_after_load"], "reopened": reopened["rss"],
                        "load_seconds": res["load_seconds"],
                        "reopen_open_seconds": reopened["open_seconds"],
                        "reopen_statistics": reopened["statistics"]})
            for kind in KINDS:
                rr = by_kind[kind]["rss_runs"]
                by_kind[kind]["rss_median_kib"] = {
                    "after_load": median([r["after_load"]["vm_rss_kib"] for r in rr]),
                    "reopened": median([r["reopened"]["vm_rss_kib"] for r in rr])}
                by_kind[kind]["malloc_in_use_median_bytes"] = {
                    "after_load": median([r["after_load"]["in_use_bytes"] for r in rr]),
                    "reopened": median([r["reopened"]["in_use_bytes"] for r in rr])}
            runs[str(n)] = by_kind
    report(runs, baseline, params)
    aim_results = aims(runs)
    elapsed = time.perf_counter() - started
    method = (
        "One child process per store kind and size. Latencies: per-call perf_counter, "
        f"{params['queries']} queries x {params['passes']} timed passes after an untimed warm-up "
        "pass; in every pass each query runs every operation back to back in an order rotated "
        "per query and per pass (interleaved). Reported: the median over passes of each pass's "
        "mean and of each pass's median (us per query); ratios to search_documents are of those "
        "figures, measured in the same process on the same store. RSS: VmRSS after load, fold, "
        "gc.collect and malloc_trim(0), before any query; reopened: a fresh process that opened "
        "the closed store (and built the memory index for fact stores); medians over "
        f"{params['rss_repeats']} processes per store kind and size, repeats interleaved, each "
        "run with MALLOC_MMAP_THRESHOLD_=131072 (a fixed glibc mmap threshold, so the figure "
        "does not depend on one process's heap fragmentation), apart from the timed process "
        "(default malloc settings; its RSS is rss_after_load_default_malloc). Beside RSS, "
        "glibc's mallinfo2 in-use bytes (pymalloc's arenas excluded).")
    payload = {
        "benchmark": "memory_overhead",
        "question": QUESTION,
        "date": now_iso(),
        "method": method,
        "machine": facts,
        "rss_method": {"malloc_env": RSS_ENV, "statistic": "median VmRSS (KiB) of the RSS "
                       "processes; malloc_in_use_median_bytes: glibc mallinfo2 uordblks"},
        "parameters": {"sizes": list(params["sizes"]), "queries": params["queries"],
                       "passes": params["passes"], "rss_repeats": params["rss_repeats"],
                       "quick": args.quick, "seed": args.seed,
                       "k": K, "candidate_limit": 100, "batch": BATCH, "vocabulary": VOCAB,
                       "zipf_exponent": ZIPF, "words_per_text": list(WORDS),
                       "query_words": list(QUERY_WORDS), "subject_group": GROUP,
                       "entities": N_ENTITIES, "store": "on disk (bench/.tmp)",
                       "operations": {k: list(v) for k, v in OPS.items()}},
        "baseline_empty_store": baseline,
        "runs": runs,
        "aims": aim_results,
        "load_average_at_end": load_average(),
        "wall_seconds": round(elapsed, 1),
    }
    path = write_results(output, payload)
    print(f"\nWrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path} "
          f"({elapsed:.0f} s).")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
