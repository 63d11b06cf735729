"""The whole report: the preamble (method, machines, one provenance row per benchmark), the
contents, then one section per benchmark in ``ORDER`` and any other results file after them.

After the provenance table, every benchmark's aims in one table (``aims_overview``) and, when
given, the notes on what bounds the missed ones (bench/results/aims.notes.md).

Contract: ``render(results, expected)`` returns the markdown of bench/REPORT.md and never raises
for bad data: a benchmark in ``expected`` without results gets a "No results" line saying how to
produce them, and a section whose renderer raises shows the error and the benchmark's aims. It
writes the plots as a side effect (see ``plots.destination``). The "Rendered" line carries the
current time, so two renders differ in that line only.
"""

from __future__ import annotations

from collections.abc import Sequence

from _common import METHOD_NOTE, now_iso

from .markdown import MET, MISSED, aim_rows, aims_table, divide_or_none, fmt_num, markdown_table
from .plots import draw_memory, save_plot
from .results import Result, lookup, machine_line, memory_per_fact_series, wall_seconds
from .sections import SECTIONS, section_generic, section_memory_overhead, section_quality

# The benchmarks `make bench` runs, in the report's order; any other results file comes after.
ORDER = ("lexical", "overhead", "write_then_search", "general_path", "scale", "search", "quality",
         "hybrid_cost", "ingest", "memory_overhead", "temporal", "purge", "load", "server",
         "portability")
TITLES = {"lexical": "Lexical query speed next to tantivy, PISA and bm25s",
          "overhead": "Per-query cost breakdown, recall, cold start, vectors",
          "scale": "Scale: 1k to 1M facts", "search": "Search quality and cosine speed",
          "quality": "Retrieval quality per method", "ingest": "Durable ingest",
          "hybrid_cost": "What hybrid recall costs",
          "memory_overhead": "Memory API overhead and memory per fact",
          "temporal": "Temporal correctness", "purge": "Delete, purge and encryption",
          "load": "Markdown chunking and loading", "server": "HTTP server",
          "portability": "Export, import and snapshots",
          "write_then_search": "A search right after a write",
          "right_after": "Queries beside the index builder right after a burst",
          "general_path": "Filtered and large-k searches, alone and beside a busy thread"}


def render(results: dict[str, Result | str], expected: Sequence[str],
           aims_notes: str | None = None) -> str:
    """bench/REPORT.md's text from ``load_results``'s mapping; ``expected`` names come first;
    ``aims_notes``: markdown on the missed aims, shown under the aims overview."""
    good = {k: v for k, v in results.items() if isinstance(v, dict)}
    names = [*expected, *(k for k in results if k not in expected)]
    lines = ["# hmsengine benchmark report", "",
             f"Rendered {now_iso()} by `bench/report.py` from `bench/results/*.json` "
             "(`make bench` runs every benchmark, then this script).", "",
             f"**Method.** {METHOD_NOTE} Every plot is stamped with the machine, the run's date "
             "and this note; absolute rates on this shared 2-core VM drift by 10-30% between "
             "runs, so quote the ratios.", ""]
    machines = {machine_line(v) for v in good.values() if v.get("machine")}
    lines.append("**Machine" + ("s" if len(machines) > 1 else "") + ".** "
                 + ("; ".join(sorted(machines)) or "unknown") + ".")
    lines.append("")
    rows = []
    total = 0.0
    for name in names:
        res = results.get(name)
        if isinstance(res, dict):
            wall = wall_seconds(res)
            total += wall if isinstance(wall, (int, float)) else 0.0
            params = res.get("parameters") or {}
            sizes = params.get("sizes") or params.get("docs") or params.get("writers") or ""
            rows.append([name, str(res.get("date", "?")), fmt_num(divide_or_none(wall, 60), ".1f"),
                         str(lookup(res, "machine", "load_average_at_start", default="-")),
                         "yes" if params.get("quick") else "no",
                         str(sizes) if sizes else "",
                         str(lookup(res, "machine", "source", "commit", default="?"))[:10]])
        else:
            rows.append([name, "missing" if res is None else str(res), "-", "-", "-", "", ""])
    lines.append(markdown_table(["benchmark", "run (UTC)", "minutes", "load average at start",
                                 "quick", "sizes", "commit"], rows))
    lines.append(f"Sum of the benchmarks' wall times: {total / 60:.1f} minutes (`make bench` runs "
                 "them one after the other; its budget on the 2-core VM is 90 minutes). A commit "
                 "or date that differs between rows means the results come from separate runs.\n")
    lines.append(aims_overview(good, names, aims_notes))
    lines.append("## Contents\n")
    lines.append("- [Aims at a glance](#aims)")
    lines.extend(f"- [{TITLES.get(n, n)}](#{section_anchor(n)})" for n in names)
    lines.append("")
    for name in names:
        res = results.get(name)
        lines.append(f'<a id="{section_anchor(name)}"></a>\n\n## {TITLES.get(name, name)} '
                     f"(`bench/{name}.py`)\n")
        if not isinstance(res, dict):
            why = "missing" if res is None else res
            lines.append(f"_No results: `bench/results/{name}.json` is {why}. Run "
                         f"`.venv/bin/python bench/{name}.py`, then `bench/report.py`._\n")
            if name == "quality" and "search" in good:
                lines.append(section_quality({}, good["search"]))
            continue
        lines.append(f"_{res.get('question', '')}_\n")
        minutes = fmt_num(divide_or_none(wall_seconds(res), 60), ".1f")
        lines.append(f"Run {res.get('date', '?')}, {minutes}"
                     f" minutes; machine: {machine_line(res)}.\n")
        try:
            if name == "quality":
                body = section_quality(res, good.get("search"))
            elif name == "memory_overhead":
                body = section_memory_overhead(res)
                series = memory_per_fact_series(res, good.get("scale"))
                if series:
                    body += "\n" + save_plot("memory_per_fact",
                                             lambda f, s=series: draw_memory(f, s), res,
                                             "Memory per fact (RSS over an empty store)")
            else:
                body = SECTIONS.get(name, section_generic)(res)
        except Exception as exc:  # a malformed results file must not sink the report
            body = (f"_Could not render this section: {type(exc).__name__}: {exc}._\n\n"
                    + aims_table(res))
        lines.append(body)
        if isinstance(res.get("_notes"), str):
            lines.append(f"\n**Reading these figures** (`bench/results/{name}.notes.md`).\n\n"
                         f"{res['_notes']}\n")
        if res.get("method"):
            lines.append(f"\n<details><summary>Method</summary>\n\n{res['method']}\n\n</details>\n")
    if "memory_overhead" not in good and "scale" in good:
        series = memory_per_fact_series(None, good["scale"])
        if series:
            lines.append(save_plot("memory_per_fact", lambda f, s=series: draw_memory(f, s),
                                   good["scale"], "Memory per fact (RSS over an empty store)"))
    return "\n".join(lines).rstrip() + "\n"


def aims_overview(results: dict[str, Result], names: Sequence[str],
                  notes: str | None) -> str:
    """Every benchmark's aims (its own pass/fail lines) in one table, benchmark by benchmark in
    the report's order, then ``notes`` (what bounds the missed ones)."""
    rows = []
    for name in names:
        res = results.get(name)
        if res is None:
            continue
        for aim, measured, threshold, verdict in aim_rows(res):
            link = f"[{name}](#{section_anchor(name)})"
            rows.append([link, aim, measured, threshold, verdict, str(res.get("date", "?"))[:10]])
    missed = sum(1 for r in rows if r[4] == MISSED)
    met = sum(1 for r in rows if r[4] == MET)
    out = ['<a id="aims"></a>\n\n## Aims at a glance\n',
           f"Every aim the benchmarks check, as their last runs measured it: {met} met, {missed} "
           "missed, the rest not measured. Ratios come from one run each; the sections below "
           "give the runs' spread.\n"]
    out.append(markdown_table(["benchmark", "aim", "measured", "threshold", "verdict", "run"],
                              rows) if rows else "_No benchmark records aims._\n")
    if notes:
        out.append("\n**What bounds the missed aims** (`bench/results/aims.notes.md`).\n\n"
                   + notes.strip() + "\n")
    return "\n".join(out) + "\n"


def section_anchor(name: str) -> str:
    """The HTML id of a benchmark's section (the contents links to it)."""
    return "bench-" + name.replace("_", "-")
