"""The report's PNG figures (matplotlib, Agg backend) and where they are written.

Contract: ``save_plot`` draws one figure with a ``draw_*`` function, stamps the machine, run date
and method note on it, writes ``<name>.png`` under ``destination["plots"]`` (``main`` points it at
``<results>/plots``) and returns the markdown that embeds it, with a path relative to
``destination["report_dir"]``. A figure that cannot be drawn (incomplete data) never raises: the
markdown says why instead, so the tables still render. matplotlib is imported only when a plot
is drawn. The ``draw_*`` functions take the figure and data already extracted from the results.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import BENCH_DIR, RESULTS_DIR

from .results import MEDIANS, Result, lookup, machine_line, provenance_caption, quality_metric

# Where this rendering writes its plots and where the report lives (set by report.main).
destination: dict[str, Path] = {"plots": RESULTS_DIR / "plots", "report_dir": BENCH_DIR}


def save_plot(name: str, draw: Callable[[Any], None], res: Result, title: str,
              size: tuple[float, float] = (7.5, 4.8)) -> str:
    """Draw a figure with ``draw(fig)``, stamp machine/date/method on it, save, return markdown."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots = destination["plots"]
    plots.mkdir(parents=True, exist_ok=True)
    fig = plt.figure(figsize=size)
    path = plots / f"{name}.png"
    try:
        draw(fig)
        fig.suptitle(title, fontsize=11)
        fig.text(0.01, 0.01, f"{machine_line(res)}\nrun {res.get('date', '?')}; {MEDIANS}",
                 fontsize=6.5, color="0.35", va="bottom")
        fig.tight_layout(rect=(0, 0.07, 1, 0.95))
        fig.savefig(path, dpi=110)
    except Exception as exc:  # incomplete data (e.g. log scale, no value): keep the tables
        return f"_Plot {name!r} not drawn: {type(exc).__name__}: {exc}._\n"
    finally:
        plt.close(fig)
    rel = os.path.relpath(path, destination["report_dir"]).replace(os.sep, "/")
    return f"![{title}]({rel})\n\n_{title}. {provenance_caption(res)}_\n"


# -- one draw function per figure ------------------------------------------------------------------


def _log_log(ax: Any, ylabel: str, *, legend_size: int) -> None:
    """Both axes logarithmic against the store's fact count, a grid and a legend."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("facts in the store")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend_size)


def draw_scale_latency(fig: Any, runs: list[Result]) -> None:
    """Query latency p50 of hmsengine and each peer against facts (log-log)."""
    ax = fig.add_subplot(1, 1, 1)
    series: dict[str, list[tuple[float, float]]] = {}
    for r in runs:
        n = r.get("facts")
        for name, label in (("recall", "hmsengine Memory.recall"),
                            ("search", "hmsengine search_documents")):
            v = lookup(r, "latency", name, "p50_ms")
            if v:
                series.setdefault(label, []).append((n, v))
        for p, peer in (r.get("peers") or {}).items():
            v = lookup(peer, "query", "p50_ms")
            if v:
                series.setdefault(p, []).append((n, v))
    for label, pts in series.items():
        style = "-o" if label.startswith("hmsengine") else "--s"
        ax.plot([x for x, _ in pts], [y for _, y in pts], style, label=label, markersize=4)
    _log_log(ax, "query latency p50, ms (one query at a time, top 10)", legend_size=8)


def draw_scale_growth(fig: Any, runs: list[Result]) -> None:
    """Three panels against facts: open time, RSS, ingest rate."""
    ns = [r.get("facts") for r in runs]
    ax = fig.add_subplot(1, 3, 1)
    for key, label in (("open_persisted", "persisted segments"), ("open_cold", "cold (rebuild)")):
        pts = [(n, lookup(r, key, "open_seconds")) for n, r in zip(ns, runs, strict=True)]
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
        pts = [(n, lookup(r, "rss", key)) for n, r in zip(ns, runs, strict=True)]
        pts = [(n, v / 2**20) for n, v in pts if v]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", label=label, markersize=4)
    ax.axhline(3, color="0.5", linestyle=":", label="target at 1M: 3 GiB")
    ax.set_xscale("log")
    ax.set_xlabel("facts")
    ax.set_ylabel("RSS, GiB")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax = fig.add_subplot(1, 3, 3)
    pts = [(n, lookup(r, "build", "ingest_facts_per_s")) for n, r in zip(ns, runs, strict=True)]
    pts = [(n, v) for n, v in pts if v]
    ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", markersize=4)
    ax.set_xscale("log")
    ax.set_xlabel("facts")
    ax.set_ylabel("remember_many facts/s (batches of 5,000)")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)


def draw_quality(fig: Any, methods: dict[str, dict[str, Any]]) -> None:
    """Horizontal bars of recall@5, recall@10 and nDCG@10 per method."""
    ax = fig.add_subplot(1, 1, 1)
    metrics = ("recall@5", "recall@10", "ndcg@10")
    names = list(methods)
    width = 0.8 / len(metrics)
    for i, metric in enumerate(metrics):
        vals = [quality_metric(methods[n], metric) or 0.0 for n in names]
        ax.barh([j + i * width for j in range(len(names))], vals, height=width, label=metric)
    ax.set_yticks([j + width for j in range(len(names))])
    ax.set_yticklabels([n if len(n) < 48 else n[:45] + "..." for n in names], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("score")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)


def draw_ingest(fig: Any, configs: list[Result]) -> None:
    """Durable writes/s against concurrent writers, hmsengine beside SQLite."""
    ax = fig.add_subplot(1, 1, 1)
    writers = [c for c in configs if c.get("kind") == "writers"]
    xs = [c.get("writers") for c in writers]
    ax.plot(xs, [lookup(c, "hmsengine", "median_puts_per_s") for c in writers], "-o",
            label="hmsengine put_document (group commit)")
    ax.plot(xs, [c.get("sqlite_best_median_commits_per_s") for c in writers], "--s",
            label="SQLite WAL, synchronous=FULL (best variant)")
    for c in configs:
        if c.get("kind") == "batch":
            v = lookup(c, "hmsengine", "median_puts_per_s")
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


def draw_memory(fig: Any, series: dict[str, list[tuple[int, float]]]) -> None:
    """RSS bytes per fact over an empty store against facts (log-log)."""
    ax = fig.add_subplot(1, 1, 1)
    for label, pts in series.items():
        ax.plot([p[0] for p in pts], [max(p[1], 1.0) for p in pts],
                "-o" if label.startswith("scale") else "--s", label=label, markersize=4)
    _log_log(ax, "RSS over an empty store, bytes per fact", legend_size=7)


