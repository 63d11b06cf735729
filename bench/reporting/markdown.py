"""Markdown building blocks: number formatting, tables and the aims table.

Contract: nothing here raises on missing or mistyped data. ``fmt_num`` renders anything that
is not a real number (bools and NaN included) as ``-``; ``markdown_table`` renders an empty row
list as ``_(no rows)_``; ``aims_table`` is empty when the results record no aims.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

from _common import print_table

from .results import Result


def fmt_num(value: Any, fmt: str = ",.2f", suffix: str = "") -> str:
    """``value`` formatted with ``fmt`` plus ``suffix``; ``-`` for anything that is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:{fmt}}{suffix}"


def fmt_ratio(value: Any) -> str:
    """A ratio as ``1.23x`` (``-`` when absent)."""
    return fmt_num(value, ".2f", "x")


def divide_or_none(a: Any, b: float) -> float | None:
    """``a / b`` when ``a`` is a number, else None (which ``fmt_num`` renders as ``-``)."""
    return a / b if isinstance(a, (int, float)) else None


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A pipe table (via ``_common.print_table``), or ``_(no rows)_`` when there are none."""
    if not rows:
        return "_(no rows)_\n"
    buf = io.StringIO()
    print_table(list(headers), [list(r) for r in rows], file=buf)
    return buf.getvalue()


def flat_table(obj: Any, limit: int = 60) -> str:
    """A two-column table of the scalars in a nested dict (dotted keys, at most ``limit`` rows)."""
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
            rows.append([prefix, fmt_num(o, ",.4g")])
        elif isinstance(o, str) and len(o) < 80:
            rows.append([prefix, o])

    walk(obj, "", 0)
    return markdown_table(["figure", "value"], rows)


# The verdict column's words (aims_overview counts them).
MET, MISSED, NOT_MEASURED = "met", "**missed**", "not measured"


def _verdict(met: Any) -> str:
    return NOT_MEASURED if met is None else (MET if met else MISSED)


def aim_rows(res: Result) -> list[list[str]]:
    """The benchmark's own pass/fail lines (``aims`` or ``targets``): ``[aim, measured,
    threshold, verdict]`` each, as ``aims_table`` shows them."""
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
        if a.get("mix"):  # lexical.json checks each aim on each query mix: say which row is which
            name = f"{name} ({a['mix']} mix)"
        value = a.get("ratio", a.get("value", a.get("ratio_mean")))
        limit = a.get("threshold", a.get("limit"))
        unit = a.get("unit", "x" if "ratio" in a or "ratio_mean" in a else "")
        rows.append([name, fmt_num(value, ".3f", f" {unit}".rstrip()),
                     fmt_num(limit, ".3g", f" {unit}".rstrip()), _verdict(a.get("met"))])
    return rows


def aims_table(res: Result) -> str:
    """The benchmark's own pass/fail lines (``aims`` or ``targets``), as a table."""
    rows = aim_rows(res)
    if not rows:
        return ""
    return "Aims checked by the script:\n\n" + markdown_table(
        ["aim", "measured", "threshold", "verdict"], rows)
