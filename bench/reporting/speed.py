"""The query-speed sections: ``lexical.json`` (hmsengine next to tantivy-py, PISA and bm25s) and
``overhead.json`` (the per-query cost breakdown, recall, cold start, vectors, cosine vs faiss).

Contract as ``sections``: each renderer takes one parsed results file and returns the body of
its section; missing fields render as ``-``.
"""

from __future__ import annotations

from typing import Any

from .markdown import aims_table, fmt_num, fmt_ratio, markdown_table
from .results import Result, lookup

ENGINES = ("hmsengine", "tantivy", "pisa", "bm25s", "tantivy_count")
NAMES = {"hmsengine": "hmsengine", "tantivy": "tantivy count=False", "pisa": "PISA (BMW)",
         "bm25s": "bm25s", "tantivy_count": "tantivy count=True"}
STATES = {"ingest": "right after 128 concurrent writers put the documents (no wait for merges)",
          "settled": "on a settled store (merged and consolidated; peers warmed up)"}
MIXES = ("whole", "mid")


def _sizes(res: Result) -> list[dict[str, Any]]:
    sizes = res.get("sizes") or {}
    return [v for _, v in sorted(sizes.items(), key=lambda kv: int(kv[0]))
            if isinstance(v, dict)]


def _qps_cell(med: dict[str, Any], engine: str, mix: str) -> str:
    m = lookup(med, engine, mix) or {}
    return (f"{fmt_num(m.get('qps'), ',.0f')} ({fmt_num(m.get('p50_us'), ',.0f')} / "
            f"{fmt_num(m.get('p99_us'), ',.0f')})")


def section_lexical(res: Result) -> str:
    runs = _sizes(res)
    out = ["Same pseudo-word tokens and BM25 (k1 1.2, b 0.75) for every engine; one query per "
           "call, top 10, ids returned; cells are **q/s (p50 / p99 us)**, medians over passes; "
           "ratios are hmsengine's q/s over the peer's, measured in the same process. Mixes: "
           "*whole* = 2-5 distinct words drawn from the whole Zipf distribution; *mid* = 2-5 "
           "words of mid document frequency (0.1%-5% of the documents).\n"]
    for state, when in STATES.items():
        rows = []
        for r in runs:
            med = lookup(r, "states", state, "medians") or {}
            for mix in MIXES:
                rat = lookup(r, "ratios", state, mix) or {}
                rows.append([fmt_num(r.get("documents"), ","), mix,
                             *(_qps_cell(med, e, mix) for e in ENGINES),
                             *(fmt_ratio(rat.get(e)) for e in ENGINES[1:])])
        out.append(f"\nQueries, {state}: {when}.\n")
        out.append(markdown_table(["documents", "mix", *(NAMES[e] for e in ENGINES),
                                   *(f"hms / {NAMES[e]}" for e in ENGINES[1:])], rows))
    rows = []
    for r in runs:
        segs = lookup(r, "states", "ingest", "hms_segments") or []
        rows.append([fmt_num(r.get("documents"), ","),
                     ", ".join(str(s.get("segments_before")) + (
                         f" ({s['started_after_burst_s']:.1f} s)"
                         if s.get("started_after_burst_s") is not None else "")
                               for s in segs) or "-",
                     fmt_num(lookup(r, "states", "ingest", "tantivy_segments"), ","),
                     fmt_num(r.get("hms_settle_seconds"), ".1f"),
                     fmt_num(r.get("tantivy_merge_wait_seconds"), ".1f")])
    out.append("\nSegments queried in the ingest state (hmsengine per timed pass and mix, before "
               "its tail, and when the pass started after the burst; tantivy after commit), and "
               "the wait to settle:\n")
    out.append(markdown_table(["documents", "hmsengine segments per pass", "tantivy segments",
                               "hms settle s", "tantivy merge wait s"], rows))
    rows = []
    for r in runs:
        for mix in MIXES:
            row = [fmt_num(r.get("documents"), ","), mix]
            for e in ENGINES:
                a = lookup(r, "agreement", "settled", e, mix) or {}
                row.append(f"{fmt_num(a.get('mean_rate'), '.4f')} / "
                           f"{fmt_num(a.get('queries_exact'), '.3f')}")
            rows.append(row)
    out.append("\nTop-10 agreement with an exact float64 BM25 of each engine's own formula "
               "(tie-aware; mean share of right documents / share of queries with all ten "
               "right), settled state. tantivy stores document lengths in one byte (lossy "
               "above 40 tokens), so its ranks differ from the exact ones near the cut:\n")
    out.append(markdown_table(["documents", "mix", *(NAMES[e] for e in ENGINES)], rows))
    rows = []
    for r in runs:
        b = r.get("builds") or {}
        rows.append([fmt_num(r.get("documents"), ","),
                     *(fmt_num(lookup(b, e, "docs_per_s"), ",.0f")
                       for e in ("hmsengine", "tantivy", "pisa", "bm25s")),
                     fmt_num(lookup(r, "ingest_128_writers", "docs_per_s"), ",.0f"),
                     fmt_ratio(_div(lookup(b, "hmsengine", "docs_per_s"),
                                    lookup(b, "tantivy", "docs_per_s")))])
    out.append("\nIndex build, documents/s until searchable (hmsengine: `put_documents` in chunks "
               "of 10,000, durable; tantivy: 1 writer thread, until `commit`, durable; PISA: on "
               "disk, not fsynced; bm25s: in memory), and hmsengine's rate with 128 concurrent "
               "single-document writers:\n")
    out.append(markdown_table(["documents", "hmsengine", "tantivy", "PISA", "bm25s",
                               "hms 128 writers", "hms / tantivy build"], rows))
    out.append("\n" + aims_table(res))
    return "\n".join(out)


def _div(a: Any, b: Any) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
        return a / b
    return None


def section_overhead(res: Result) -> str:
    out = []
    for n, b in sorted((res.get("breakdown") or {}).items(), key=lambda kv: int(kv[0])):
        rows = []
        laned = bool(lookup(b, "mid", "lane_us"))  # search_documents takes the plain lane
        for group, prefix in (("totals_us", ""), ("stages_us", "- "), ("alone_us", "  "),
                              ("lane_us", "  ")):
            for name in lookup(b, "mid", group) or {}:
                rows.append([prefix + name, *(fmt_num(lookup(b, mix, group, name), ",.1f")
                                              for mix in MIXES)])
        for key, label, fmt in (
                *(() if laned else (
                    ("async_and_readers_us", "the async call and readers' dispatch "
                                             "(search_documents - staged path)", ",.1f"),)),
                ("not_kernel_us", "everything but the kernel calls of the path search_documents "
                                  "takes", ",.1f"),
                ("not_kernel_share", "share of search_documents that is not the kernel", ".2f"),
                ("queries_sent_to_a_thread", "queries sent to a worker thread", ",.0f"),
                ("same_as_search_documents", "queries where the staged path = search_documents",
                 ",.0f"),
                ("lean_same_as_search_documents", "queries where the lean path = search_documents",
                 ",.0f"),
                ("queries", "queries", ",.0f")):
            rows.append([label, *(fmt_num(lookup(b, mix, key), fmt) for mix in MIXES)])
        out.append(f"\nPer-query cost of `search_documents` at {int(n):,} documents "
                   f"({b.get('segments')} segment(s), settled), median us per query. Each query "
                   "runs through `search_documents` and through the same steps with a "
                   "`perf_counter_ns` stamp between them (`- ` rows, the staged path; its "
                   "ids and scores checked equal), order alternating; indented rows were timed "
                   "alone" + ("; plain queries take the plain-BM25 lane (`index/lane.py`), "
                              "not the staged general path: the `lane` rows are its parts, "
                              "each timed beside `search_documents` on the same query with its "
                              "postings warm (set-up, around the lane and the last row by "
                              "per-query difference; `not the kernel` is that last row)"
                              if laned else "") +
                   ". One trio checkpoint costs "
                   f"{fmt_num(b.get('trio_checkpoint_us'), '.1f')} us and a `trio.to_thread` "
                   f"round trip {fmt_num(b.get('to_thread_round_trip_us'), ',.0f')} us here:\n")
        out.append(markdown_table(["stage", *(f"{m} mix us" for m in MIXES)], rows))
        prof = b.get("cprofile") or []
        if prof:
            out.append(f"\ncProfile of `search_documents` at {int(n):,} (mid mix), the top "
                       "functions by own time (us per query; profiling inflates small calls):\n")
            out.append(markdown_table(["function", "calls/query", "own us", "cumulative us"], [
                [p.get("function", "?"), fmt_num(p.get("calls_per_query"), ".1f"),
                 fmt_num(p.get("own_us_per_query"), ".1f"),
                 fmt_num(p.get("cumulative_us_per_query"), ".1f")] for p in prof[:12]]))
    mem = res.get("memory")
    if isinstance(mem, dict):
        rows = [[mix, fmt_num(lookup(mem, mix, "seen_p50_us", "search"), ",.1f"),
                 fmt_num(lookup(mem, mix, "seen_p50_us", "recall"), ",.1f"),
                 fmt_ratio(lookup(mem, mix, "seen_recall_over_search")),
                 fmt_num(lookup(mem, mix, "unseen_p50_us", "search"), ",.1f"),
                 fmt_num(lookup(mem, mix, "unseen_p50_us", "recall"), ",.1f"),
                 fmt_ratio(lookup(mem, mix, "unseen_recall_over_search"))] for mix in MIXES]
        out.append(f"\n`Memory.recall` (default options) next to `search_documents` on "
                   f"{fmt_num(mem.get('facts'), ',')} facts, p50 us (aims: <= 1.05x seen, "
                   "<= 1.15x never seen):\n")
        out.append(markdown_table(["mix", "search seen", "recall seen", "ratio",
                                   "search never seen", "recall never seen", "ratio"], rows))
    cold = res.get("coldstart")
    if isinstance(cold, dict):
        m = cold.get("medians") or {}
        out.append(f"\nA fresh process on the existing {fmt_num(cold.get('documents'), ',')}-"
                   "document store (medians of "
                   f"{len(cold.get('runs') or [])}; numba cache: {cold.get('numba_cache_dir')}; "
                   "aim: first query after open < 1 s):\n")
        out.append(markdown_table(["import s", "Engine.open s", "first query s",
                                   "second query s", "open to first answer s"],
                                  [[fmt_num(m.get(k), ".3f") for k in
                                    ("import_s", "open_s", "first_query_s", "second_query_s",
                                     "open_to_first_answer_s")]]))
    for vec in (res.get("vector_small"), res.get("vector")):
        if not isinstance(vec, dict):
            continue
        rows = [[k, fmt_num(v, ",.1f")] for k, v in (vec.get("p50_us") or {}).items()]
        rows.append(["overhead of a vector query over its kernel",
                     fmt_num(vec.get("vector_overhead_us"), ",.1f")])
        rows.append(["overhead of a fused query over its kernel and the lexical query",
                     fmt_num(vec.get("fused_overhead_us"), ",.1f")])
        out.append(f"\nVector and hybrid queries on {fmt_num(vec.get('documents'), ',')} "
                   f"documents with {vec.get('dim')}-dim embeddings ({vec.get('segments')} "
                   "segment(s)), p50 us:\n")
        out.append(markdown_table(["call", "p50 us"], rows))
    cos = res.get("cosine")
    if isinstance(cos, dict):
        out.append(f"\nCosine top 10 over {fmt_num(cos.get('rows'), ',')} x {cos.get('dim')} "
                   "float32, one query at a time (aim: within 1.2x of faiss 1 thread):\n")
        agree = cos.get("top10_agreement_with_exact") or {}
        out.append(markdown_table(["method", "queries/s", "top-10 agreement with exact"], [
            [k, fmt_num(v, ",.1f"), fmt_num(agree.get(k), ".3f")]
            for k, v in (cos.get("qps") or {}).items()]
            + [["hmsengine cosine_topk / faiss IndexFlatIP", fmt_ratio(cos.get("hms_over_faiss")),
                ""],
               ["hmsengine through int8 codes / faiss IndexFlatIP",
                fmt_ratio(cos.get("hms_codes_over_faiss_flat")), ""],
               ["hmsengine through int8 codes / faiss SQ8 + refine",
                fmt_ratio(cos.get("hms_codes_over_faiss_sq8_refine")), ""]]))
        if cos.get("codes_scores_equal_to_cosine_topk") is not None:
            out.append(f"\nScores through the codes equal to `cosine_topk`'s, bit for bit: "
                       f"{cos.get('codes_scores_equal_to_cosine_topk')}; seconds to make the "
                       f"codes: " + ", ".join(f"{k} {fmt_num(v, '.1f')}" for k, v in
                                               (cos.get("seconds_to_make_codes") or {}).items())
                       + ".\n")
    out.append("\n" + aims_table(res))
    return "\n".join(out)
