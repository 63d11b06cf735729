"""Render bench/REPORT.md from every bench/results/<name>.json (the ``-quick`` runs excluded).

One section per benchmark, with its tables and, where the question calls for one, a PNG plot
under bench/results/plots/ (``<results>/plots``; matplotlib, Agg backend): query latency against corpus size
(scale.json), ingest rate against concurrency (ingest.json), memory per fact (memory_overhead.json
and scale.json), quality per method (quality.json, else the LoCoMo part of search.json). A
missing or unreadable results file is reported in its section; the report is still written.
Before the sections, every benchmark's aims in one table and ``<results>/aims.notes.md`` (what
bounds the missed ones), when it exists.

Run: ``python bench/report.py`` (what ``make bench`` runs last; a second or two).

This file is the command line only; the rendering lives in ``bench/reporting/``: ``results``
(loading the JSON, its shapes, provenance lines), ``markdown`` (number formatting, tables, aims),
``plots`` (the figures), ``sections`` (one renderer per benchmark) and ``render`` (the report).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH_DIR, RESULTS_DIR
from reporting import plots
from reporting.render import ORDER, render
from reporting.results import load_results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/report.py", description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS_DIR,
                        help="folder of results JSON (default bench/results)")
    parser.add_argument("--output", type=Path, default=BENCH_DIR / "REPORT.md",
                        help="the report (default bench/REPORT.md)")
    args = parser.parse_args(argv)
    plots.destination["plots"] = args.results.resolve() / "plots"
    plots.destination["report_dir"] = args.output.resolve().parent
    notes = args.results / "aims.notes.md"
    text = render(load_results(args.results), ORDER,
                  notes.read_text(encoding="utf-8") if notes.exists() else None)
    args.output.write_text(text, encoding="utf-8")
    print(f"Wrote {args.output} and plots under {plots.destination['plots']}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
