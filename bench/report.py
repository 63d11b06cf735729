"""Render bench/REPORT.md from every bench/results/<name>.json (the ``-quick`` runs excluded).

One section per benchmark, with its tables and, where the question calls for one, a PNG plot
under bench/results/plots/ (``<results>/plots``; matplotlib, Agg backend): query latency against corpus size
(scale.json), ingest rate against concurrency (ingest.json), memory per fact (memory_overhead.json
and scale.json), quality per method (quality.json, else the LoCoMo part of search.json). A
missing or unreadable results file is reported in its section; the report is still written.

Run: ``python bench/report.py`` (what ``make bench`` runs last; a second or two).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH_DIR, METHOD_NOTE, RESULTS_DIR, now_iso, print_table

# The benchmarks `make bench` runs, in the report's order; any other results file comes after.
ORDER = ("scale", "search", "quality", "ingest", "memory_overhead", "temporal", "purge", "load",
         "server", "portability")
PLOTS_DIR = RESULTS_DIR / "plots"
# Where this rendering writes its plots and where the report lives (set by main).
_where = {"plots": PLOTS_DIR, "report_dir": BENCH_DIR}
MEDIANS = "times are medians of repeated runs; ratios measured in the same run"

Result = dict[str, Any]


# -- helpers ---------------------------------------------------------------------------------------


def _get(obj: Any, *path: Any, default: Any = None) -> Any:
    for key in path:
        try:
            obj = obj[key]
        except (KeyError, IndexError, TypeError):
            return default
    return obj


def _num(value: Any, fmt: str = ",.2f", suffix: str = "") -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:{fmt}}{suffix}"


def _x(value: Any) -> str:
    return _num(value, ".2f", "x")


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    if not rows:
        return "_(no rows)_\n"
    buf = io.StringIO()
    print_table(list(headers), [list(r) for r in rows], file=buf)
    return buf.getvalue()


def _machine_line(res: Result) -> str:
    m = res.get("machine") or {}
    cpu = m.get("processor") or m.get("machine") or "unknown CPU"
    return (f"{cpu}, {m.get('cpu_count', '?')} vCPUs, {m.get('platform', '?')}, "
            f"Python {m.get('python', '?')}")


def _caption(res: Result) -> str:
    return f"Machine: {_machine_line(res)}. Run {res.get('date', '?')}; {MEDIANS}."


def _verdict(met: Any) -> str:
    return "not measured" if met is None else ("met" if met else "**missed**")


def _aims(res: Result) -> str:
    """The benchmark's own pass/fail lines (``aims`` or ``targets``), as a table."""
    items = res.get("aims") or res.get("targets") or []
    if isinstance(items, dict):
        items = [{"aim": k, **(v if isinstance(v, dict) else {"value": v})}
                 for k, v in items.items()]
    rows = []
    for a in items:
        if not isinstance(a, dict):
            continue
        name = a.get("aim") or a.get("target") or a.get("name") or "?"
        if a.get("facts") and str(a["facts"]) not in name:
            name = f"{name} ({a['facts']:,} facts)" if isinstance(a["facts"], int) else name
        value = a.get("ratio", a.get("value", a.get("ratio_mean")))
        limit = a.get("threshold", a.get("limit"))
        unit = a.get("unit", "x" if "ratio" in a or "ratio_mean" in a else "")
        rows.append([name, _num(value, ".3f", f" {unit}".rstrip()),
                     _num(limit, ".3g", f" {unit}".rstrip()), _verdict(a.get("met"))])
    if not rows:
        return ""
    return "Aims checked by the script:\n\n" + _table(["aim", "measured", "threshold", "verdict"],
                                                      rows)


def _plot(name: str, draw: Callable[[Any], None], res: Result, title: str,
          size: tuple[float, float] = (7.5, 4.8)) -> str:
    """Draw a figure with ``draw(fig)``, stamp machine/date/method on it, save, return markdown."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots = _where["plots"]
    plots.mkdir(parents=True, exist_ok=True)
    fig = plt.figure(figsize=size)
    path = plots / f"{name}.png"
    try:
        draw(fig)
        fig.suptitle(title, fontsize=11)
        fig.text(0.01, 0.01, f"{_machine_line(res)}\nrun {res.get('date', '?')}; {MEDIANS}",
                 fontsize=6.5, color="0.35", va="bottom")
        fig.tight_layout(rect=(0, 0.07, 1, 0.95))
        fig.savefig(path, dpi=110)
    except Exception as exc:  # incomplete data (e.g. log scale, no value): keep the tables
        return f"_Plot {name!r} not drawn: {type(exc).__name__}: {exc}._\n"
    finally:
        plt.close(fig)
    rel = os.path.relpath(path, _where["report_dir"]).replace(os.sep, "/")
    return f"![{title}]({rel})\n\n_{title}. {_caption(res)}_\n"


# -- scale -----------------------------------------------------------------------------------------


def _scale_sizes(res: Result) -> list[Result]:
    return sorted((r for r in (res.get("runs") or {}).values() if isinstance(r, dict)),
                  key=lambda r: r.get("facts", 0))


def _gib(kib: Any) -> str:
    return _num(kib / 2**20 if isinstance(kib, (int, float)) else None, ".2f")


def section_scale(res: Result) -> str:
    runs = _scale_sizes(res)
    out = [f"Facts loaded with `Memory.remember_many` in batches of "
           f"{_num(_get(res, 'parameters', 'batch'), ',')}; each step in a fresh process on "
           "the repository's disk. *open* = `Engine.open` + the memory index + one recall "
           "(until the first recall can be answered); *persisted*: with the index segments the "
           "last close wrote; *cold*: after deleting them (the open re-tokenizes every fact; the "
           "page cache is not dropped). Latencies: one query at a time, top 10, median over "
           "passes of each pass's percentile.\n"]
    rows = []
    for r in runs:
        b, lat, rss = r.get("build", {}), r.get("latency", {}), r.get("rss", {})
        rows.append([
            _num(r.get("facts"), ","), _num(b.get("ingest_seconds"), ",.1f"),
            _num(b.get("ingest_facts_per_s"), ",.0f"),
            _num(_get(r, "disk", "allocated_bytes", default=0) / 2**20, ",.1f"),
            _num(_get(r, "open_cold", "open_seconds"), ".2f"),
            _num(_get(r, "open_persisted", "open_seconds"), ".2f"),
            _num(_get(lat, "recall", "p50_ms"), ".2f"), _num(_get(lat, "recall", "p99_ms"), ".2f"),
            _num(_get(lat, "search", "p50_ms"), ".2f"), _gib(rss.get("after_open_kib")),
            _gib(rss.get("after_queries_kib")), _gib(rss.get("peak_kib")),
            _gib(_get(b, "rss_after_load", "vm_hwm_kib")),
            _num(rss.get("bytes_per_fact_over_empty"), ",.0f")])
    out.append("Growth curve:\n")
    out.append(_table(["facts", "ingest s", "facts/s", "disk MiB", "open cold s",
                       "open persisted s", "recall p50 ms", "recall p99 ms", "search p50 ms",
                       "RSS open GiB", "RSS after queries GiB", "peak RSS GiB",
                       "build peak RSS GiB (with the generator)",
                       "RSS bytes/fact over empty"], rows))
    rows = []
    for r in runs:
        p, c, d = r.get("open_persisted") or {}, r.get("open_cold") or {}, r.get("disk", {})
        rows.append([_num(r.get("facts"), ","), _num(p.get("engine_open_seconds"), ".2f"),
                     _num(p.get("memory_index_seconds"), ".2f"),
                     _num(p.get("open_cpu_seconds"), ".2f"),
                     _num(c.get("engine_open_seconds"), ".2f"),
                     _num(c.get("memory_index_seconds"), ".2f"),
                     _num(c.get("close_seconds"), ".1f"),
                     _num(_get(r, "build", "settle_seconds"), ".1f"),
                     _num(_get(r, "build", "close_seconds"), ".1f"),
                     _num(d.get("journal_bytes", 0) / 2**20, ",.1f"),
                     _num(d.get("text_bytes", 0) / 2**20, ",.1f"),
                     _num(d.get("index_bytes", 0) / 2**20, ",.1f")])
    out.append("\nWhere the open time and the disk go (seconds; MiB):\n")
    out.append(_table(["facts", "persisted: Engine.open", "memory index", "open CPU s (all threads)",
                       "cold: Engine.open",
                       "memory index", "cold close (writes index)", "settle after load",
                       "close after load", "journal MiB", "text MiB", "index MiB"], rows))
    peers = sorted({p for r in runs for p in (r.get("peers") or {})})
    if peers:
        headers = ["facts", "hmsengine recall p50", "hmsengine search p50"]
        for p in peers:
            headers += [f"{p} p50", f"{p} p99", f"{p} p50 / hms search p50"]
        rows = []
        for r in runs:
            row = [_num(r.get("facts"), ","), _num(_get(r, "latency", "recall", "p50_ms"), ".3f"),
                   _num(_get(r, "latency", "search", "p50_ms"), ".3f")]
            for p in peers:
                q = _get(r, "peers", p, "query") or {}
                row += [_num(q.get("p50_ms"), ".3f"), _num(q.get("p99_ms"), ".3f"),
                        _x(q.get("p50_over_hmsengine_search"))]
            rows.append(row)
        out.append("\nQuery latency next to the peers (ms; same texts and queries; ratios of "
                   "p50s measured in the same run, below 1x: the peer is faster):\n")
        out.append(_table(headers, rows))
        skipped = [f"{p} at {r.get('facts'):,}: {_get(r, 'peers', p, 'skipped')}"
                   for r in runs for p in peers if _get(r, "peers", p, "skipped")]
        budget = [f"{p} at {r.get('facts'):,} ({_get(r, 'peers', p, 'query', 'queries')} "
                  "queries timed)" for r in runs for p in peers
                  if _get(r, "peers", p, "query", "stopped_by_budget")]
        if skipped:
            out.append("\nSkipped: " + "; ".join(skipped) + ".\n")
        if budget:
            out.append("\nStopped by the per-peer query time budget: " + "; ".join(budget)
                       + ".\n")
    out.append("\n" + _aims(res))
    if runs:
        out.append("\n" + _plot("scale_query_latency", lambda f: _draw_scale_latency(f, runs),
                                res, "Query latency (p50) against corpus size"))
        out.append("\n" + _plot("scale_growth", lambda f: _draw_scale_growth(f, runs), res,
                                "Open time, RSS and ingest rate against corpus size",
                                size=(11, 4.2)))
    return "\n".join(out)


def _draw_scale_latency(fig: Any, runs: list[Result]) -> None:
    ax = fig.add_subplot(1, 1, 1)
    series: dict[str, list[tuple[float, float]]] = {}
    for r in runs:
        n = r.get("facts")
        for name, label in (("recall", "hmsengine Memory.recall"),
                            ("search", "hmsengine search_documents")):
            v = _get(r, "latency", name, "p50_ms")
            if v:
                series.setdefault(label, []).append((n, v))
        for p, peer in (r.get("peers") or {}).items():
            v = _get(peer, "query", "p50_ms")
            if v:
                series.setdefault(p, []).append((n, v))
    for label, pts in series.items():
        style = "-o" if label.startswith("hmsengine") else "--s"
        ax.plot([x for x, _ in pts], [y for _, y in pts], style, label=label, markersize=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("facts in the store")
    ax.set_ylabel("query latency p50, ms (one query at a time, top 10)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def _draw_scale_growth(fig: Any, runs: list[Result]) -> None:
    ns = [r.get("facts") for r in runs]
    ax = fig.add_subplot(1, 3, 1)
    for key, label in (("open_persisted", "persisted segments"), ("open_cold", "cold (rebuild)")):
        pts = [(n, _get(r, key, "open_seconds")) for n, r in zip(ns, runs, strict=True)]
        pts = [(n, v) for n, v in pts if v]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", label=label, markersize=4)
    ax.axhline(5, color="0.5", linestyle=":", label="target at 1M: 5 s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("facts")
    ax.set_ylabel("open until first recall, s")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax = fig.add_subplot(1, 3, 2)
    for key, label in (("after_open_kib", "after open"), ("after_queries_kib", "after queries"),
                       ("peak_kib", "peak (VmHWM)")):
        pts = [(n, _get(r, "rss", key)) for n, r in zip(ns, runs, strict=True)]
        pts = [(n, v / 2**20) for n, v in pts if v]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", label=label, markersize=4)
    ax.axhline(3, color="0.5", linestyle=":", label="target at 1M: 3 GiB")
    ax.set_xscale("log")
    ax.set_xlabel("facts")
    ax.set_ylabel("RSS, GiB")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax = fig.add_subplot(1, 3, 3)
    pts = [(n, _get(r, "build", "ingest_facts_per_s")) for n, r in zip(ns, runs, strict=True)]
    pts = [(n, v) for n, v in pts if v]
    ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", markersize=4)
    ax.set_xscale("log")
    ax.set_xlabel("facts")
    ax.set_ylabel("remember_many facts/s (batches of 5,000)")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)


# -- search ----------------------------------------------------------------------------------------


def section_search(res: Result) -> str:
    out = []
    loc = res.get("locomo")
    if isinstance(loc, dict) and loc.get("systems"):
        out.append(f"(a) LoCoMo: {loc.get('questions', '?')} questions over "
                   f"{len(loc.get('conversations') or [])} conversations, evidence recall:\n")
        out.append(_table(["engine", "tokenization", "recall@5", "recall@10", "nDCG@10"], [
            [s.get("engine", s.get("key", "?")), s.get("tokenization", ""),
             _num(s.get("recall_at_5"), ".4f"), _num(s.get("recall_at_10"), ".4f"),
             _num(s.get("ndcg_at_10"), ".4f")] for s in loc["systems"]]))
    lex = res.get("lexical")
    if isinstance(lex, dict) and lex.get("medians"):
        corpus = lex.get("corpus") or {}
        out.append(f"\n(b) Lexical speed, {_num(corpus.get('documents'), ',')} Zipf documents, "
                   f"{corpus.get('queries', '?')} queries, one at a time, top 10:\n")
        rows = []
        for name, m in lex["medians"].items():
            rat = _get(lex, "ratios", name) or {}
            rows.append([name, _num(m.get("build_docs_per_s"), ",.0f"), _num(m.get("qps"), ",.0f"),
                         _num(_div(m.get("p50_us"), 1e3), ".3f"),
                         _num(_div(m.get("p99_us"), 1e3), ".3f"),
                         _x(rat.get("qps_hmsengine_over_peer")),
                         _x(rat.get("build_hmsengine_over_peer"))])
        out.append(_table(["engine", "build docs/s", "queries/s", "p50 ms", "p99 ms",
                           "hmsengine q/s over peer", "hmsengine build over peer"], rows))
    cos = res.get("cosine")
    if isinstance(cos, dict) and cos.get("medians"):
        out.append(f"\n(c) Cosine top 10 over {_num(cos.get('rows'), ',')} x {cos.get('dim')} "
                   "float32 rows:\n")
        out.append(_table(["method", "queries/s", "p50 ms", "p99 ms", "q/s over best faiss"], [
            [name, _num(m.get("qps"), ",.1f"), _num(_div(m.get("p50_us"), 1e3), ".2f"),
             _num(_div(m.get("p99_us"), 1e3), ".2f"),
             _x(_get(cos, "ratios", name, "qps_over_best_faiss"))]
            for name, m in cos["medians"].items()]))
    out.append("\n" + _aims(res))
    return "\n".join(out)


def _div(a: Any, b: float) -> float | None:
    return a / b if isinstance(a, (int, float)) else None


# -- quality ---------------------------------------------------------------------------------------


def _quality_methods(res: Result) -> dict[str, dict[str, Any]]:
    """{method: {"recall@5", "recall@10", "ndcg@10", ...}} from either shape quality.json has
    had: ``methods`` (a dict or list), or ``results`` (a list of {method, all, held_out})."""
    results = res.get("results")
    if isinstance(results, list) and "methods" not in res:
        out: dict[str, dict[str, Any]] = {}
        for i, r in enumerate(results):
            if not isinstance(r, dict):
                continue
            name = str(r.get("method", r.get("key", i)))
            scores = dict(r.get("all") or {})
            held = r.get("held_out") or {}
            for k in ("recall_at_10", "ndcg_at_10"):
                if k in held:
                    scores[f"held-out {k.replace('_at_', '@')}"] = held[k]
            if r.get("kind"):
                scores["kind"] = r["kind"]
            out[name] = scores
        return out
    methods = res.get("methods")
    if isinstance(methods, dict):
        return {str(k): v for k, v in methods.items() if isinstance(v, dict)}
    if isinstance(methods, list):
        return {str(m.get("name", m.get("method", i))): m for i, m in enumerate(methods)
                if isinstance(m, dict)}
    return {}


def _metric(m: dict[str, Any], name: str) -> Any:
    return m.get(name, m.get(name.replace("@", "_at_")))


def section_quality(res: Result, fallback: Result | None) -> str:
    methods = _quality_methods(res)
    out = []
    source = res
    if not methods and fallback is not None:
        loc = _get(fallback, "locomo", "systems") or []
        methods = {f"{s.get('engine')} ({s.get('tokenization')})": s for s in loc}
        source = fallback
        out.append("_quality.json has no `methods`; shown instead: the LoCoMo part of "
                   "search.json (BM25 engines only)._\n")
    if not methods:
        out.append("_No per-method figures in quality.json._\n")
        return "\n".join(out) + "\n" + _aims(res)
    metrics = ("recall@5", "recall@10", "ndcg@10")
    extra = sorted({k for m in methods.values() for k, v in m.items()
                    if k not in metrics and k.replace("_at_", "@") not in metrics
                    and isinstance(v, (int, float)) and not isinstance(v, bool)})[:4]
    rows = [[name, str(m.get("kind", "")), *(_num(_metric(m, k), ".4f") for k in metrics),
             *(_num(m.get(k), ",.4g") for k in extra)] for name, m in methods.items()]
    for key in ("dataset", "questions", "corpus"):
        if isinstance(res.get(key), (str, int)):
            out.append(f"{key}: {res[key]}\n")
    out.append(_table(["method", "kind", *metrics, *extra], rows))
    acceptance = res.get("acceptance")
    if isinstance(acceptance, dict):
        out.append("\nAcceptance figures recorded by the script:\n")
        out.append(_flat_table(acceptance))
    out.append("\n" + _aims(res))
    out.append("\n" + _plot("quality_per_method", lambda f: _draw_quality(f, methods), source,
                            "Retrieval quality per method"))
    return "\n".join(out)


def _draw_quality(fig: Any, methods: dict[str, dict[str, Any]]) -> None:
    ax = fig.add_subplot(1, 1, 1)
    metrics = ("recall@5", "recall@10", "ndcg@10")
    names = list(methods)
    width = 0.8 / len(metrics)
    for i, metric in enumerate(metrics):
        vals = [_metric(methods[n], metric) or 0.0 for n in names]
        ax.barh([j + i * width for j in range(len(names))], vals, height=width, label=metric)
    ax.set_yticks([j + width for j in range(len(names))])
    ax.set_yticklabels([n if len(n) < 48 else n[:45] + "..." for n in names], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("score")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)


# -- ingest ----------------------------------------------------------------------------------------


def section_ingest(res: Result) -> str:
    configs = [c for c in res.get("configurations") or [] if isinstance(c, dict)]
    rows = [[c.get("name", "?"), _num(_get(c, "hmsengine", "median_puts_per_s"), ",.0f"),
             _num(_get(c, "hmsengine", "median_transactions_per_fsync"), ".1f"),
             f"{_num(c.get('sqlite_best_median_commits_per_s'), ',.0f')} "
             f"({c.get('sqlite_best_variant', '-')})",
             _x(c.get("ratio_hmsengine_over_sqlite"))] for c in configs]
    out = ["Durable writes per second (each acknowledged write fsynced), medians of repeats:\n",
           _table(["configuration", "hmsengine puts/s", "transactions per fsync",
                   "SQLite commits/s (best variant)", "hmsengine / SQLite"], rows),
           "\n" + _aims(res)]
    writers = [c for c in configs if c.get("kind") == "writers"]
    if writers:
        out.append("\n" + _plot("ingest_concurrency", lambda f: _draw_ingest(f, configs), res,
                                "Durable ingest rate against concurrent writers"))
    return "\n".join(out)


def _draw_ingest(fig: Any, configs: list[Result]) -> None:
    ax = fig.add_subplot(1, 1, 1)
    writers = [c for c in configs if c.get("kind") == "writers"]
    xs = [c.get("writers") for c in writers]
    ax.plot(xs, [_get(c, "hmsengine", "median_puts_per_s") for c in writers], "-o",
            label="hmsengine put_document (group commit)")
    ax.plot(xs, [c.get("sqlite_best_median_commits_per_s") for c in writers], "--s",
            label="SQLite WAL, synchronous=FULL (best variant)")
    for c in configs:
        if c.get("kind") == "batch":
            v = _get(c, "hmsengine", "median_puts_per_s")
            if v:
                ax.axhline(v, color="0.5", linestyle=":",
                           label=f"hmsengine put_documents, {c.get('name')}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_xlabel("concurrent writers")
    ax.set_ylabel("durable writes/s")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


# -- memory overhead -------------------------------------------------------------------------------


def section_memory_overhead(res: Result) -> str:
    runs = res.get("runs") or {}
    rows = []
    for n, by_kind in runs.items():
        for kind, r in (by_kind or {}).items():
            for op, s in (r.get("summary") or {}).items():
                rows.append([kind, _num(int(n), ","), op, _num(s.get("mean_us"), ",.1f"),
                             _num(s.get("median_us"), ",.1f"),
                             "" if op == "search" else _x(s.get("ratio_mean_over_search")),
                             "" if op == "search" else _x(s.get("ratio_median_over_search"))])
    out = ["Latency per query (microseconds), ratios to `search_documents` on the same store in "
           "the same process:\n",
           _table(["store", "facts", "operation", "mean us", "median us", "mean / search",
                   "median / search"], rows)]
    base = _get(res, "baseline_empty_store", "rss", "vm_rss_kib")
    rows = []
    for n, by_kind in runs.items():
        cells = [_num(int(n), ",")]
        for kind in ("raw", "memory", "history"):
            kib = _get(by_kind, kind, "rss_median_kib", "after_load")
            cells.append(_num(_div(kib, 1024), ",.1f"))
            cells.append(_num((kib - base) * 1024 / int(n)
                              if isinstance(kib, (int, float)) and base else None, ",.0f"))
        rows.append(cells)
    out.append(f"\nResident memory after load (MiB, medians of processes) and bytes per fact "
               f"over the empty store ({_num(_div(base, 1024), ',.1f')} MiB):\n")
    out.append(_table(["facts", "raw MiB", "raw B/fact", "memory MiB", "memory B/fact",
                       "history MiB", "history B/fact"], rows))
    out.append("\n" + _aims(res))
    return "\n".join(out)


def _memory_series(mo: Result | None, scale: Result | None) -> dict[str, list[tuple[int, float]]]:
    series: dict[str, list[tuple[int, float]]] = {}
    if mo:
        base = _get(mo, "baseline_empty_store", "rss", "vm_rss_kib")
        for n, by_kind in (mo.get("runs") or {}).items():
            for kind in ("raw", "memory", "history"):
                kib = _get(by_kind, kind, "rss_median_kib", "after_load")
                if isinstance(kib, (int, float)) and base:
                    label = f"memory_overhead: {kind} store, after load"
                    series.setdefault(label, []).append((int(n), (kib - base) * 1024 / int(n)))
    if scale:
        sized = [r for r in _scale_sizes(scale) if _get(r, "rss", "after_open_kib")]
        if sized and not any(_get(r, "rss", "bytes_per_fact_over_empty") for r in sized):
            # An older scale.json without the empty-store baseline: the marginal cost per fact
            # over its smallest store instead.
            first = sized[0]
            for r in sized[1:]:
                extra = r["rss"]["after_open_kib"] - first["rss"]["after_open_kib"]
                series.setdefault(f"scale: facts, reopened, over the {first['facts']:,}-fact "
                                  "store", []).append(
                    (r["facts"], extra * 1024 / (r["facts"] - first["facts"])))
        for r in _scale_sizes(scale):
            v = _get(r, "rss", "bytes_per_fact_over_empty")
            if v:
                series.setdefault("scale: facts, reopened (after open)", []).append(
                    (r["facts"], v))
            q = _get(r, "rss", "after_queries_kib")
            e = _get(r, "rss", "empty_store_kib")
            if q and e:
                series.setdefault("scale: facts, reopened (after queries)", []).append(
                    (r["facts"], (q - e) * 1024 / r["facts"]))
    return {k: sorted(v) for k, v in series.items()}


def _draw_memory(fig: Any, series: dict[str, list[tuple[int, float]]]) -> None:
    ax = fig.add_subplot(1, 1, 1)
    for label, pts in series.items():
        ax.plot([p[0] for p in pts], [max(p[1], 1.0) for p in pts],
                "-o" if label.startswith("scale") else "--s", label=label, markersize=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("facts in the store")
    ax.set_ylabel("RSS over an empty store, bytes per fact")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


# -- purge, load, server, generic ------------------------------------------------------------------


def section_purge(res: Result) -> str:
    rows = []
    for st in res.get("stores") or []:
        for mode in ("plain", "encrypted"):
            m = _get(st, mode, "medians") or {}
            rows.append([_num(st.get("documents"), ","), mode, _num(m.get("search_qps"), ",.0f"),
                         _num(m.get("delete_ms"), ".3f"), _num(m.get("delete_sync_ms"), ".3f"),
                         _num(m.get("purge_seconds"), ".2f"), _num(m.get("purge_mb_per_s"), ".1f"),
                         _num(m.get("open_seconds"), ".2f")])
    out = [_table(["documents", "mode", "search q/s", "delete ms", "delete + sync ms",
                   "purge s", "purge MB/s", "open s"], rows)]
    rows = []
    for st in res.get("stores") or []:
        for op, r in (st.get("encrypted_vs_plain") or {}).items():
            rows.append([_num(st.get("documents"), ","), op, _x(r.get("median_paired_time_ratio")),
                         _x(r.get("time_ratio_of_medians")), _x(r.get("cpu_ratio_of_medians"))])
    for kind, r in (res.get("ingest") or {}).items():
        r = r.get("encrypted_vs_plain") or {}
        rows.append(["ingest", kind, _x(r.get("median_paired_time_ratio")),
                     _x(r.get("time_ratio_of_medians")), _x(r.get("cpu_ratio_of_medians"))])
    out.append("\nEncryption's cost, encrypted time over plain time (same run, paired):\n")
    out.append(_table(["store", "operation", "median paired ratio", "ratio of medians",
                       "CPU ratio"], rows))
    out.append("\n" + _aims(res))
    return "\n".join(out)


def section_load(res: Result) -> str:
    s = res.get("summary") or {}
    rows = []
    for key, label in (("chunking_mb_per_s", "chunking, MB/s"),
                       ("load_chunks_per_s", "load, chunks/s"),
                       ("reload_chunks_per_s", "unchanged reload, chunks/s")):
        for engine, v in (s.get(key) or {}).items():
            rows.append([label, engine, _num(v, ",.1f")])
    out = [_table(["measurement", "engine", "median"], rows)]
    rat = s.get("ratios_hmsengine_over_hotmemory") or {}
    if rat:
        out.append("\nhmsengine over hotmemory (same run): "
                   + ", ".join(f"{k} {_x(v)}" for k, v in rat.items()) + ".\n")
    out.append("\n" + _aims(res))
    return "\n".join(out)


def section_server(res: Result) -> str:
    med = res.get("medians") or {}
    keys = ("requests_per_s", "p50_ms", "p99_ms", "remember_p50_ms", "recall_p50_ms", "errors")
    rows = [[k, *(_num(_get(med, e, k), ",.2f") for e in med)] for k in keys]
    out = [_table(["figure", *med], rows)]
    if res.get("hotmem_skipped"):
        out.append(f"\nhotmem skipped: {res['hotmem_skipped']}\n")
    ratio = res.get("hmsengine_over_hotmem_requests_per_s")
    if ratio:
        out.append(f"\nhmsengine over hotmem, requests/s (same run): {_x(ratio)}.\n")
    out.append("\n" + _aims(res))
    return "\n".join(out)


def _flat_table(obj: Any, limit: int = 60) -> str:
    rows: list[list[str]] = []

    def walk(o: Any, prefix: str, depth: int) -> None:
        if len(rows) >= limit:
            return
        if isinstance(o, dict) and depth < 4:
            for k, v in o.items():
                walk(v, f"{prefix}.{k}" if prefix else str(k), depth + 1)
        elif isinstance(o, bool):
            rows.append([prefix, "yes" if o else "no"])
        elif isinstance(o, (int, float)):
            rows.append([prefix, _num(o, ",.4g")])
        elif isinstance(o, str) and len(o) < 80:
            rows.append([prefix, o])

    walk(obj, "", 0)
    return _table(["figure", "value"], rows)


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
            row += [_num(_get(r, q, "accuracy"), ".4f"), _num(_get(r, q, "exact_accuracy"), ".4f"),
                    _num(_get(r, q, "n"), ",")]
        rows.append(row)
    out = ["Answers checked against the workload's ground truth:\n",
           _table(["system", "true at t: accuracy", "exact", "questions",
                   "believed at K: accuracy", "exact", "questions"], rows)]
    if "hmsengine_100_percent" in res:
        out.append(f"\nhmsengine at 100%: {'yes' if res['hmsengine_100_percent'] else '**no**'}.\n")
    if res.get("hotmemory_skipped"):
        out.append(f"\nhotmemory skipped: {res['hotmemory_skipped']}\n")
    out.append("\n" + _aims(res))
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
            rows.append([prefix, _num(obj, ",.4g")])

    for key in ("summary", "medians", "results", "ratios"):
        if key in res:
            walk(res[key], key, 0)
    out = [_table(["figure", "value"], rows)] if rows else []
    out.append("\n" + _aims(res))
    return "\n".join(out)


SECTIONS: dict[str, Callable[[Result], str]] = {
    "scale": section_scale, "search": section_search, "ingest": section_ingest,
    "memory_overhead": section_memory_overhead, "purge": section_purge, "load": section_load,
    "server": section_server, "temporal": section_temporal,
}
TITLES = {"scale": "Scale: 1k to 1M facts", "search": "Search quality and speed",
          "quality": "Retrieval quality per method", "ingest": "Durable ingest",
          "memory_overhead": "Memory API overhead and memory per fact",
          "temporal": "Temporal correctness", "purge": "Delete, purge and encryption",
          "load": "Markdown chunking and loading", "server": "HTTP server",
          "portability": "Export, import and snapshots"}


# -- the report ------------------------------------------------------------------------------------


def load_results(results_dir: Path) -> dict[str, Result | str]:
    """name -> parsed JSON, or an error string for an unreadable file."""
    out: dict[str, Result | str] = {}
    for path in sorted(results_dir.glob("*.json")):
        if path.stem.endswith("-quick"):
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            out[path.stem] = data if isinstance(data, dict) else "not a JSON object"
        except (OSError, ValueError) as exc:
            out[path.stem] = f"unreadable ({exc})"
    return out


def render(results: dict[str, Result | str], expected: Sequence[str]) -> str:
    good = {k: v for k, v in results.items() if isinstance(v, dict)}
    names = [*expected, *(k for k in results if k not in expected)]
    lines = ["# hmsengine benchmark report", "",
             f"Rendered {now_iso()} by `bench/report.py` from `bench/results/*.json` "
             "(`make bench` runs every benchmark, then this script).", "",
             f"**Method.** {METHOD_NOTE} Every plot is stamped with the machine, the run's date "
             "and this note; absolute rates on this shared 2-core VM drift by 10-30% between "
             "runs, so quote the ratios.", ""]
    machines = {_machine_line(v) for v in good.values() if v.get("machine")}
    lines.append("**Machine" + ("s" if len(machines) > 1 else "") + ".** "
                 + ("; ".join(sorted(machines)) or "unknown") + ".")
    lines.append("")
    rows = []
    total = 0.0
    for name in names:
        res = results.get(name)
        if isinstance(res, dict):
            wall = _wall(res)
            total += wall if isinstance(wall, (int, float)) else 0.0
            params = res.get("parameters") or {}
            sizes = params.get("sizes") or params.get("docs") or params.get("writers") or ""
            rows.append([name, str(res.get("date", "?")), _num(_div(wall, 60), ".1f"),
                         str(_get(res, "machine", "load_average_at_start", default="-")),
                         "yes" if params.get("quick") else "no",
                         str(sizes) if sizes else "",
                         str(_get(res, "machine", "source", "commit", default="?"))[:10]])
        else:
            rows.append([name, "missing" if res is None else str(res), "-", "-", "-", "", ""])
    lines.append(_table(["benchmark", "run (UTC)", "minutes", "load average at start", "quick",
                         "sizes", "commit"], rows))
    lines.append(f"Sum of the benchmarks' wall times: {total / 60:.1f} minutes (`make bench` runs "
                 "them one after the other; its budget on the 2-core VM is 45 minutes). A commit "
                 "or date that differs between rows means the results come from separate runs.\n")
    lines.append("## Contents\n")
    lines.extend(f"- [{TITLES.get(n, n)}](#{_anchor(n)})" for n in names)
    lines.append("")
    for name in names:
        res = results.get(name)
        lines.append(f'<a id="{_anchor(name)}"></a>\n\n## {TITLES.get(name, name)} '
                     f"(`bench/{name}.py`)\n")
        if not isinstance(res, dict):
            why = "missing" if res is None else res
            lines.append(f"_No results: `bench/results/{name}.json` is {why}. Run "
                         f"`.venv/bin/python bench/{name}.py`, then `bench/report.py`._\n")
            if name == "quality" and "search" in good:
                lines.append(section_quality({}, good["search"]))
            continue
        lines.append(f"_{res.get('question', '')}_\n")
        lines.append(f"Run {res.get('date', '?')}, {_num(_div(_wall(res), 60), '.1f')}"
                     f" minutes; machine: {_machine_line(res)}.\n")
        try:
            if name == "quality":
                body = section_quality(res, good.get("search"))
            elif name == "memory_overhead":
                body = section_memory_overhead(res)
                series = _memory_series(res, good.get("scale"))
                if series:
                    body += "\n" + _plot("memory_per_fact", lambda f, s=series: _draw_memory(f, s), res,
                                         "Memory per fact (RSS over an empty store)")
            else:
                body = SECTIONS.get(name, section_generic)(res)
        except Exception as exc:  # a malformed results file must not sink the report
            body = f"_Could not render this section: {type(exc).__name__}: {exc}._\n\n" + _aims(res)
        lines.append(body)
        if res.get("method"):
            lines.append(f"\n<details><summary>Method</summary>\n\n{res['method']}\n\n</details>\n")
    if "memory_overhead" not in good and "scale" in good:
        series = _memory_series(None, good["scale"])
        if series:
            lines.append(_plot("memory_per_fact", lambda f, s=series: _draw_memory(f, s), good["scale"],
                               "Memory per fact (RSS over an empty store)"))
    return "\n".join(lines).rstrip() + "\n"


def _wall(res: Result) -> float | None:
    """The run's wall seconds (``wall_seconds``, else the parts a script recorded)."""
    wall = res.get("wall_seconds")
    if isinstance(wall, (int, float)):
        return float(wall)
    parts = [v for k, v in res.items() if k.endswith("_seconds") and isinstance(v, (int, float))]
    return float(sum(parts)) if parts else None


def _anchor(name: str) -> str:
    return "bench-" + name.replace("_", "-")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/report.py", description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS_DIR,
                        help="folder of results JSON (default bench/results)")
    parser.add_argument("--output", type=Path, default=BENCH_DIR / "REPORT.md",
                        help="the report (default bench/REPORT.md)")
    args = parser.parse_args(argv)
    _where["plots"] = args.results.resolve() / "plots"
    _where["report_dir"] = args.output.resolve().parent
    text = render(load_results(args.results), ORDER)
    args.output.write_text(text, encoding="utf-8")
    print(f"Wrote {args.output} and plots under {_where['plots']}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
