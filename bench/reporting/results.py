"""Loading bench/results/*.json, reading its shapes, and the provenance lines of the report.

Contract: nothing here raises on missing or mistyped data. ``load_results`` maps an unreadable
or non-object file to a string saying why (the report prints it in that benchmark's section) and
skips the ``-quick`` runs; ``lookup`` returns its default for any absent key or index; the shape
readers (``scale_runs_by_size``, ``quality_methods``, ``memory_per_fact_series``) accept every
layout the benchmark scripts have written and return empty containers when there is nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Result = dict[str, Any]

MEDIANS = "times are medians of repeated runs; ratios measured in the same run"


def load_results(results_dir: Path) -> dict[str, Result | str]:
    """name -> parsed JSON, or an error string for an unreadable file. A ``<name>.notes.md`` beside
    a results file is kept under the ``_notes`` key (markdown the report shows with it)."""
    out: dict[str, Result | str] = {}
    for path in sorted(results_dir.glob("*.json")):
        if path.stem.endswith("-quick"):
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            out[path.stem] = data if isinstance(data, dict) else "not a JSON object"
            notes = path.with_name(path.stem + ".notes.md")
            if isinstance(data, dict) and notes.exists():
                # A reader's notes on these figures (what they show, what bounds an aim),
                # written by whoever ran them; the report prints them under the section.
                data["_notes"] = notes.read_text(encoding="utf-8").strip()
        except (OSError, ValueError) as exc:
            out[path.stem] = f"unreadable ({exc})"
    return out


def lookup(obj: Any, *path: Any, default: Any = None) -> Any:
    """``obj[path[0]][path[1]]...``, or ``default`` where any step is missing or not indexable."""
    for key in path:
        try:
            obj = obj[key]
        except (KeyError, IndexError, TypeError):
            return default
    return obj


# -- provenance ------------------------------------------------------------------------------------


def machine_line(res: Result) -> str:
    """One line naming the CPU, vCPU count, platform and Python the run recorded."""
    m = res.get("machine") or {}
    cpu = m.get("processor") or m.get("machine") or "unknown CPU"
    return (f"{cpu}, {m.get('cpu_count', '?')} vCPUs, {m.get('platform', '?')}, "
            f"Python {m.get('python', '?')}")


def provenance_caption(res: Result) -> str:
    """The caption under a plot: machine, run date and the method note."""
    return f"Machine: {machine_line(res)}. Run {res.get('date', '?')}; {MEDIANS}."


def wall_seconds(res: Result) -> float | None:
    """The run's wall seconds (``wall_seconds``, else the parts a script recorded)."""
    wall = res.get("wall_seconds")
    if isinstance(wall, (int, float)):
        return float(wall)
    parts = [v for k, v in res.items() if k.endswith("_seconds") and isinstance(v, (int, float))]
    return float(sum(parts)) if parts else None


# -- shapes of particular results files ------------------------------------------------------------


def scale_runs_by_size(res: Result) -> list[Result]:
    """scale.json's per-size runs, smallest corpus first."""
    return sorted((r for r in (res.get("runs") or {}).values() if isinstance(r, dict)),
                  key=lambda r: r.get("facts", 0))


def quality_methods(res: Result) -> dict[str, dict[str, Any]]:
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


def quality_metric(m: dict[str, Any], name: str) -> Any:
    """A method's ``recall@10``-style figure, also found under its ``recall_at_10`` spelling."""
    return m.get(name, m.get(name.replace("@", "_at_")))


def memory_per_fact_series(mo: Result | None,
                           scale: Result | None) -> dict[str, list[tuple[int, float]]]:
    """{series label: [(facts, RSS bytes per fact over an empty store)]} from memory_overhead.json
    and scale.json (either may be None); each series sorted by facts."""
    series: dict[str, list[tuple[int, float]]] = {}
    if mo:
        base = lookup(mo, "baseline_empty_store", "rss", "vm_rss_kib")
        for n, by_kind in (mo.get("runs") or {}).items():
            for kind in ("raw", "memory", "history"):
                kib = lookup(by_kind, kind, "rss_median_kib", "after_load")
                if isinstance(kib, (int, float)) and base:
                    label = f"memory_overhead: {kind} store, after load"
                    series.setdefault(label, []).append((int(n), (kib - base) * 1024 / int(n)))
    if scale:
        sized = [r for r in scale_runs_by_size(scale) if lookup(r, "rss", "after_open_kib")]
        if sized and not any(lookup(r, "rss", "bytes_per_fact_over_empty") for r in sized):
            # An older scale.json without the empty-store baseline: the marginal cost per fact
            # over its smallest store instead.
            first = sized[0]
            for r in sized[1:]:
                extra = r["rss"]["after_open_kib"] - first["rss"]["after_open_kib"]
                series.setdefault(f"scale: facts, reopened, over the {first['facts']:,}-fact "
                                  "store", []).append(
                    (r["facts"], extra * 1024 / (r["facts"] - first["facts"])))
        for r in scale_runs_by_size(scale):
            v = lookup(r, "rss", "bytes_per_fact_over_empty")
            if v:
                series.setdefault("scale: facts, reopened (after open)", []).append(
                    (r["facts"], v))
            q = lookup(r, "rss", "after_queries_kib")
            e = lookup(r, "rss", "empty_store_kib")
            if q and e:
                series.setdefault("scale: facts, reopened (after queries)", []).append(
                    (r["facts"], (q - e) * 1024 / r["facts"]))
    return {k: sorted(v) for k, v in series.items()}
