"""One markdown renderer per benchmark: ``section_<name>(result) -> str`` (tables, aims, plots).

Contract: each renderer takes one parsed results file (see ``results.load_results``) and returns
the body of its section, without the heading or provenance line ``render`` adds. Missing fields
render as ``-`` or ``_(no rows)_``; a renderer may still raise on a file whose shape is wrong
(``render`` catches that and prints the error with the aims). ``SECTIONS`` maps a benchmark name
to its renderer; a name it lacks gets ``section_generic``. ``section_quality`` also takes
search.json, whose LoCoMo part it shows when quality.json has no per-method figures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .markdown import aims_table, divide_or_none, flat_table, fmt_num, fmt_ratio, markdown_table
from .plots import draw_ingest, draw_quality, draw_scale_growth, draw_scale_latency, save_plot
from .results import Result, lookup, quality_methods, quality_metric, scale_runs_by_size
from .speed import section_lexical, section_overhead

# -- scale -----------------------------------------------------------------------------------------


def _kib_as_gib(kib: Any) -> str:
    return fmt_num(kib / 2**20 if isinstance(kib, (int, float)) else None, ".2f")


def section_scale(res: Result) -> str:
    runs = scale_runs_by_size(res)
    out = [f"Facts loaded with `Memory.remember_many` in batches of "
           f"{fmt_num(lookup(res, 'parameters', 'batch'), ',')}; each step in a fresh process on "
           "the repository's disk. *open* = `Engine.open` + the memory index + one recall "
           "(until the first recall can be answered); *persisted*: with the index segments the "
           "last close wrote; *cold*: after deleting them (the open re-tokenizes every fact; the "
           "page cache is not dropped). Latencies: one query at a time, top 10, median over "
           "passes of each pass's percentile.\n"]
    rows = []
    for r in runs:
        b, lat, rss = r.get("build", {}), r.get("latency", {}), r.get("rss", {})
        rows.append([
            fmt_num(r.get("facts"), ","), fmt_num(b.get("ingest_seconds"), ",.1f"),
            fmt_num(b.get("ingest_facts_per_s"), ",.0f"),
            fmt_num(lookup(r, "disk", "allocated_bytes", default=0) / 2**20, ",.1f"),
            fmt_num(lookup(r, "open_cold", "open_seconds"), ".2f"),
            fmt_num(lookup(r, "open_persisted", "open_seconds"), ".2f"),
            fmt_num(lookup(lat, "recall", "p50_ms"), ".2f"),
            fmt_num(lookup(lat, "recall", "p99_ms"), ".2f"),
            fmt_num(lookup(lat, "search", "p50_ms"), ".2f"), _kib_as_gib(rss.get("after_open_kib")),
            _kib_as_gib(rss.get("after_queries_kib")), _kib_as_gib(rss.get("peak_kib")),
            _kib_as_gib(lookup(b, "rss_after_load", "vm_hwm_kib")),
            fmt_num(rss.get("bytes_per_fact_over_empty"), ",.0f")])
    out.append("Growth curve:\n")
    out.append(markdown_table(["facts", "ingest s", "facts/s", "disk MiB", "open cold s",
                               "open persisted s", "recall p50 ms", "recall p99 ms",
                               "search p50 ms", "RSS open GiB", "RSS after queries GiB",
                               "peak RSS GiB", "build peak RSS GiB (with the generator)",
                               "RSS bytes/fact over empty"], rows))
    rows = []
    for r in runs:
        p, c, d = r.get("open_persisted") or {}, r.get("open_cold") or {}, r.get("disk", {})
        rows.append([fmt_num(r.get("facts"), ","), fmt_num(p.get("engine_open_seconds"), ".2f"),
                     fmt_num(p.get("memory_index_seconds"), ".2f"),
                     fmt_num(p.get("open_cpu_seconds"), ".2f"),
                     fmt_num(c.get("engine_open_seconds"), ".2f"),
                     fmt_num(c.get("memory_index_seconds"), ".2f"),
                     fmt_num(c.get("close_seconds"), ".1f"),
                     fmt_num(lookup(r, "build", "settle_seconds"), ".1f"),
                     fmt_num(lookup(r, "build", "close_seconds"), ".1f"),
                     fmt_num(d.get("journal_bytes", 0) / 2**20, ",.1f"),
                     fmt_num(d.get("text_bytes", 0) / 2**20, ",.1f"),
                     fmt_num(d.get("index_bytes", 0) / 2**20, ",.1f")])
    out.append("\nWhere the open time and the disk go (seconds; MiB):\n")
    out.append(markdown_table(["facts", "persisted: Engine.open", "memory index",
                               "open CPU s (all threads)", "cold: Engine.open", "memory index",
                               "cold close (writes index)", "settle after load",
                               "close after load", "journal MiB", "text MiB", "index MiB"], rows))
    peers = sorted({p for r in runs for p in (r.get("peers") or {})})
    if peers:
        headers = ["facts", "hmsengine recall p50", "hmsengine search p50"]
        for p in peers:
            headers += [f"{p} p50", f"{p} p99", f"{p} p50 / hms search p50"]
        rows = []
        for r in runs:
            row = [fmt_num(r.get("facts"), ","),
                   fmt_num(lookup(r, "latency", "recall", "p50_ms"), ".3f"),
                   fmt_num(lookup(r, "latency", "search", "p50_ms"), ".3f")]
            for p in peers:
                q = lookup(r, "peers", p, "query") or {}
                row += [fmt_num(q.get("p50_ms"), ".3f"), fmt_num(q.get("p99_ms"), ".3f"),
                        fmt_ratio(q.get("p50_over_hmsengine_search"))]
            rows.append(row)
        out.append("\nQuery latency next to the peers (ms; same texts and queries; ratios of "
                   "p50s measured in the same run, below 1x: the peer is faster):\n")
        out.append(markdown_table(headers, rows))
        skipped = [f"{p} at {r.get('facts'):,}: {lookup(r, 'peers', p, 'skipped')}"
                   for r in runs for p in peers if lookup(r, "peers", p, "skipped")]
        budget = [f"{p} at {r.get('facts'):,} ({lookup(r, 'peers', p, 'query', 'queries')} "
                  "queries timed)" for r in runs for p in peers
                  if lookup(r, "peers", p, "query", "stopped_by_budget")]
        if skipped:
            out.append("\nSkipped: " + "; ".join(skipped) + ".\n")
        if budget:
            out.append("\nStopped by the per-peer query time budget: " + "; ".join(budget)
                       + ".\n")
    out.append("\n" + aims_table(res))
    if runs:
        out.append("\n" + save_plot("scale_query_latency", lambda f: draw_scale_latency(f, runs),
                                    res, "Query latency (p50) against corpus size"))
        out.append("\n" + save_plot("scale_growth", lambda f: draw_scale_growth(f, runs), res,
                                    "Open time, RSS and ingest rate against corpus size",
                                    size=(11, 4.2)))
    return "\n".join(out)


# -- search ----------------------------------------------------------------------------------------


def section_search(res: Result) -> str:
    out = []
    loc = res.get("locomo")
    if isinstance(loc, dict) and loc.get("systems"):
        out.append(f"(a) LoCoMo: {loc.get('questions', '?')} questions over "
                   f"{len(loc.get('conversations') or [])} conversations, evidence recall:\n")
        out.append(markdown_table(["engine", "tokenization", "recall@5", "recall@10", "nDCG@10"], [
            [s.get("engine", s.get("key", "?")), s.get("tokenization", ""),
             fmt_num(s.get("recall_at_5"), ".4f"), fmt_num(s.get("recall_at_10"), ".4f"),
             fmt_num(s.get("ndcg_at_10"), ".4f")] for s in loc["systems"]]))
    cos = res.get("cosine")
    if isinstance(cos, dict) and cos.get("medians"):
        out.append(f"\n(b) Cosine top 10 over {fmt_num(cos.get('rows'), ',')} x {cos.get('dim')} "
                   "float32 rows:\n")
        out.append(markdown_table(
            ["method", "queries/s", "p50 ms", "p99 ms", "q/s over best faiss"],
            [[name, fmt_num(m.get("qps"), ",.1f"),
              fmt_num(divide_or_none(m.get("p50_us"), 1e3), ".2f"),
              fmt_num(divide_or_none(m.get("p99_us"), 1e3), ".2f"),
              fmt_ratio(lookup(cos, "ratios", name, "qps_over_best_faiss"))]
             for name, m in cos["medians"].items()]))
    out.append("\n" + aims_table(res))
    return "\n".join(out)


# -- quality ---------------------------------------------------------------------------------------


def section_notes(res: Result) -> str:
    """A results file's ``notes`` (a list of sentences) as a bullet list."""
    notes = [n for n in res.get("notes") or [] if isinstance(n, str)]
    return ("\n".join(f"- {n}" for n in notes) + "\n") if notes else ""


def section_tables(res: Result) -> str:
    """A results file's own ``tables`` ([{"title", "columns", "rows"}]), as they are."""
    out = []
    for t in res.get("tables") or []:
        if isinstance(t, dict) and t.get("columns") and isinstance(t.get("rows"), list):
            out.append(f"**{t.get('title', '')}**\n")
            out.append(markdown_table([str(c) for c in t["columns"]],
                                      [[str(c) for c in row] for row in t["rows"]]))
    return "\n".join(out)


def section_quality(res: Result, fallback: Result | None) -> str:
    if res.get("tables"):
        return section_tables(res) + "\n" + aims_table(res) + "\n" + section_notes(res)
    methods = quality_methods(res)
    out = []
    source = res
    if not methods and fallback is not None:
        loc = lookup(fallback, "locomo", "systems") or []
        methods = {f"{s.get('engine')} ({s.get('tokenization')})": s for s in loc}
        source = fallback
        out.append("_quality.json has no `methods`; shown instead: the LoCoMo part of "
                   "search.json (BM25 engines only)._\n")
    if not methods:
        out.append("_No per-method figures in quality.json._\n")
        return "\n".join(out) + "\n" + aims_table(res)
    metrics = ("recall@5", "recall@10", "ndcg@10")
    extra = sorted({k for m in methods.values() for k, v in m.items()
                    if k not in metrics and k.replace("_at_", "@") not in metrics
                    and isinstance(v, (int, float)) and not isinstance(v, bool)})[:4]
    rows = [[name, str(m.get("kind", "")),
             *(fmt_num(quality_metric(m, k), ".4f") for k in metrics),
             *(fmt_num(m.get(k), ",.4g") for k in extra)] for name, m in methods.items()]
    for key in ("dataset", "questions", "corpus"):
        if isinstance(res.get(key), (str, int)):
            out.append(f"{key}: {res[key]}\n")
    out.append(markdown_table(["method", "kind", *metrics, *extra], rows))
    acceptance = res.get("acceptance")
    if isinstance(acceptance, dict):
        out.append("\nAcceptance figures recorded by the script:\n")
        out.append(flat_table(acceptance))
    out.append("\n" + aims_table(res))
    out.append("\n" + save_plot("quality_per_method", lambda f: draw_quality(f, methods), source,
                                "Retrieval quality per method"))
    return "\n".join(out)


# -- ingest ----------------------------------------------------------------------------------------


def section_ingest(res: Result) -> str:
    configs = [c for c in res.get("configurations") or [] if isinstance(c, dict)]
    rows = [[c.get("name", "?"), fmt_num(lookup(c, "hmsengine", "median_puts_per_s"), ",.0f"),
             fmt_num(lookup(c, "hmsengine", "median_transactions_per_fsync"), ".1f"),
             f"{fmt_num(c.get('sqlite_best_median_commits_per_s'), ',.0f')} "
             f"({c.get('sqlite_best_variant', '-')})",
             fmt_ratio(c.get("ratio_hmsengine_over_sqlite"))] for c in configs]
    out = ["Durable writes per second (each acknowledged write fsynced), medians of repeats:\n",
           markdown_table(["configuration", "hmsengine puts/s", "transactions per fsync",
                           "SQLite commits/s (best variant)", "hmsengine / SQLite"], rows),
           "\n" + aims_table(res)]
    writers = [c for c in configs if c.get("kind") == "writers"]
    if writers:
        out.append("\n" + save_plot("ingest_concurrency", lambda f: draw_ingest(f, configs), res,
                                    "Durable ingest rate against concurrent writers"))
    return "\n".join(out)


# -- memory overhead -------------------------------------------------------------------------------


def section_memory_overhead(res: Result) -> str:
    runs = res.get("runs") or {}
    rows = []
    for n, by_kind in runs.items():
        for kind, r in (by_kind or {}).items():
            for op, s in (r.get("summary") or {}).items():
                rows.append([kind, fmt_num(int(n), ","), op, fmt_num(s.get("mean_us"), ",.1f"),
                             fmt_num(s.get("median_us"), ",.1f"),
                             "" if op == "search" else fmt_ratio(s.get("ratio_mean_over_search")),
                             "" if op == "search"
                             else fmt_ratio(s.get("ratio_median_over_search"))])
    out = ["Latency per query (microseconds), ratios to `search_documents` on the same store in "
           "the same process:\n",
           markdown_table(["store", "facts", "operation", "mean us", "median us",
                           "mean / search", "median / search"], rows)]
    base = lookup(res, "baseline_empty_store", "rss", "vm_rss_kib")
    rows = []
    for n, by_kind in runs.items():
        cells = [fmt_num(int(n), ",")]
        for kind in ("raw", "memory", "history"):
            kib = lookup(by_kind, kind, "rss_median_kib", "after_load")
            cells.append(fmt_num(divide_or_none(kib, 1024), ",.1f"))
            cells.append(fmt_num((kib - base) * 1024 / int(n)
                                 if isinstance(kib, (int, float)) and base else None, ",.0f"))
        rows.append(cells)
    out.append(f"\nResident memory after load (MiB, medians of processes) and bytes per fact "
               f"over the empty store ({fmt_num(divide_or_none(base, 1024), ',.1f')} MiB):\n")
    out.append(markdown_table(["facts", "raw MiB", "raw B/fact", "memory MiB", "memory B/fact",
                               "history MiB", "history B/fact"], rows))
    out.append("\n" + aims_table(res))
    return "\n".join(out)


# -- purge, load, server, temporal, generic --------------------------------------------------------


def section_purge(res: Result) -> str:
    rows = []
    for st in res.get("stores") or []:
        for mode in ("plain", "encrypted"):
            m = lookup(st, mode, "medians") or {}
            rows.append([fmt_num(st.get("documents"), ","), mode,
                         fmt_num(m.get("search_qps"), ",.0f"), fmt_num(m.get("delete_ms"), ".3f"),
                         fmt_num(m.get("delete_sync_ms"), ".3f"),
                         fmt_num(m.get("purge_seconds"), ".2f"),
                         fmt_num(m.get("purge_mb_per_s"), ".1f"),
                         fmt_num(m.get("open_seconds"), ".2f")])
    out = [markdown_table(["documents", "mode", "search q/s", "delete ms", "delete + sync ms",
                           "purge s", "purge MB/s", "open s"], rows)]
    rows = []
    for st in res.get("stores") or []:
        for op, r in (st.get("encrypted_vs_plain") or {}).items():
            rows.append([fmt_num(st.get("documents"), ","), op,
                         fmt_ratio(r.get("median_paired_time_ratio")),
                         fmt_ratio(r.get("time_ratio_of_medians")),
                         fmt_ratio(r.get("cpu_ratio_of_medians"))])
    for kind, r in (res.get("ingest") or {}).items():
        r = r.get("encrypted_vs_plain") or {}
        rows.append(["ingest", kind, fmt_ratio(r.get("median_paired_time_ratio")),
                     fmt_ratio(r.get("time_ratio_of_medians")),
                     fmt_ratio(r.get("cpu_ratio_of_medians"))])
    out.append("\nEncryption's cost, encrypted time over plain time (same run, paired):\n")
    out.append(markdown_table(["store", "operation", "median paired ratio", "ratio of medians",
                               "CPU ratio"], rows))
    out.append("\n" + aims_table(res))
    return "\n".join(out)


def section_load(res: Result) -> str:
    s = res.get("summary") or {}
    rows = []
    for key, label in (("chunking_mb_per_s", "chunking, MB/s"),
                       ("load_chunks_per_s", "load, chunks/s"),
                       ("reload_chunks_per_s", "unchanged reload, chunks/s")):
        for engine, v in (s.get(key) or {}).items():
            rows.append([label, engine, fmt_num(v, ",.1f")])
    out = [markdown_table(["measurement", "engine", "median"], rows)]
    rat = s.get("ratios_hmsengine_over_hotmemory") or {}
    if rat:
        out.append("\nhmsengine over hotmemory (same run): "
                   + ", ".join(f"{k} {fmt_ratio(v)}" for k, v in rat.items()) + ".\n")
    out.append("\n" + aims_table(res))
    return "\n".join(out)


def section_server(res: Result) -> str:
    med = res.get("medians") or {}
    keys = ("requests_per_s", "p50_ms", "p99_ms", "remember_p50_ms", "recall_p50_ms", "errors")
    rows = [[k, *(fmt_num(lookup(med, e, k), ",.2f") for e in med)] for k in keys]
    out = [markdown_table(["figure", *med], rows)]
    if res.get("hotmem_skipped"):
        out.append(f"\nhotmem skipped: {res['hotmem_skipped']}\n")
    ratio = res.get("hmsengine_over_hotmem_requests_per_s")
    if ratio:
        out.append(f"\nhmsengine over hotmem, requests/s (same run): {fmt_ratio(ratio)}.\n")
    out.append("\n" + aims_table(res))
    return "\n".join(out)


def section_temporal(res: Result) -> str:
    results = res.get("results")
    if not isinstance(results, dict):
        return section_generic(res)
    rows = []
    for key, r in results.items():
        if not isinstance(r, dict):
            continue
        row = [str(r.get("name", key))]
        for q in ("true_at", "believed_at"):
            row += [fmt_num(lookup(r, q, "accuracy"), ".4f"),
                    fmt_num(lookup(r, q, "exact_accuracy"), ".4f"), fmt_num(lookup(r, q, "n"), ",")]
        rows.append(row)
    out = ["Answers checked against the workload's ground truth:\n",
           markdown_table(["system", "true at t: accuracy", "exact", "questions",
                           "believed at K: accuracy", "exact", "questions"], rows)]
    if "hmsengine_100_percent" in res:
        verdict = "yes" if res["hmsengine_100_percent"] else "**no**"
        out.append(f"\nhmsengine at 100%: {verdict}.\n")
    if res.get("hotmemory_skipped"):
        out.append(f"\nhotmemory skipped: {res['hotmemory_skipped']}\n")
    out.append("\n" + aims_table(res))
    return "\n".join(out)


def section_generic(res: Result) -> str:
    """Any other benchmark: its scalar medians/summary figures and its aims."""
    rows: list[list[str]] = []

    def walk(obj: Any, prefix: str, depth: int) -> None:
        if len(rows) >= 60:
            return
        if isinstance(obj, dict) and depth < 4:
            for k, v in obj.items():
                walk(v, f"{prefix}.{k}" if prefix else str(k), depth + 1)
        elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
            rows.append([prefix, fmt_num(obj, ",.4g")])

    for key in ("summary", "medians", "results", "ratios"):
        if key in res:
            walk(res[key], key, 0)
    out = [markdown_table(["figure", "value"], rows)] if rows else []
    tables = section_tables(res)
    if tables:
        out.append(tables)
    out.append("\n" + aims_table(res))
    out.append("\n" + section_notes(res))
    return "\n".join(out)


SECTIONS: dict[str, Callable[[Result], str]] = {
    "scale": section_scale, "search": section_search, "ingest": section_ingest,
    "memory_overhead": section_memory_overhead, "purge": section_purge, "load": section_load,
    "server": section_server, "temporal": section_temporal, "lexical": section_lexical,
    "overhead": section_overhead,
}
