"""Helpers shared by the benchmark scripts: machine facts, scratch directories, medians, tables,
seeded texts and JSON results.

Every benchmark answers one question, prints a table of medians of repeated runs, and writes
everything it measured (the raw runs too) to ``bench/results/<name>.json``. Comparisons with
other engines are ratios of figures measured in the same run, on the same disk.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

# The benchmarks measure the lexical paths (and compare them with lexical peers) unless they say
# otherwise: a Memory over a new store would otherwise embed every fact with the bundled model
# whenever the embed extra is installed (it is, in the bench extra). quality.py and
# hybrid_cost.py, which measure the default (hybrid) configuration, remove this before they run.
os.environ.setdefault("HMS_EMBEDDER", "none")

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
# Scratch stores live on the repository's own disk (never tmpfs): fsync costs are what we measure.
SCRATCH_PARENT = BENCH_DIR / ".tmp"

METHOD_NOTE = (
    "Figures are medians of repeated runs; comparisons are ratios of medians measured in the "
    "same run, on the same disk, one configuration at a time."
)


# -- machine facts -------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _filesystem(path: Path) -> dict[str, Any]:
    """The mount that holds ``path`` (device, type, options), from /proc/self/mounts if present."""
    facts: dict[str, Any] = {"path": str(path)}
    try:
        real = os.path.realpath(path)
        best = ("", "", "", "")
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                device, mount_point, fs_type, options = line.split()[:4]
                inside = real == mount_point or real.startswith(mount_point.rstrip("/") + "/")
                if inside and len(mount_point) >= len(best[1]):
                    best = (device, mount_point, fs_type, options)
        if best[1]:
            facts.update(device=best[0], mount_point=best[1], type=best[2], options=best[3])
    except OSError:
        pass
    return facts


def machine_facts(scratch: Path | None = None) -> dict[str, Any]:
    """What a reader needs to judge the figures: hardware, software versions, the disk used."""
    facts: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": _cpu_model(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "versions": {
            "hmsengine": _version("hmsengine"),
            "trio": _version("trio"),
            "numpy": _version("numpy"),
            "numba": _version("numba"),
            "zstandard": _version("zstandard"),
            "sqlite": sqlite3.sqlite_version,
        },
    }
    if scratch is not None:
        facts["scratch_filesystem"] = _filesystem(scratch)
    facts["load_average_at_start"] = load_average()
    facts["source"] = source_state()
    return facts


def load_average() -> list[float] | None:
    """1, 5 and 15 minute load averages: other work on this shared 2-core machine skews figures."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def busy_warning() -> str | None:
    """A warning if the machine already looks busy (1-minute load above a third of the CPUs)."""
    load = load_average()
    cpus = os.cpu_count() or 1
    if load is not None and load[0] > cpus / 3:
        return (f"warning: load average {load[0]:.2f} on {cpus} CPUs before the run; other work "
                "skews these figures (the ratios less than the absolute rates)")
    return None


def source_state() -> dict[str, Any]:
    """The commit measured and whether the package had uncommitted changes."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                                  timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    status = git("status", "--porcelain", "--", "hmsengine")
    return {"commit": git("rev-parse", "HEAD"),
            "package_modified": None if status is None else bool(status)}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


# -- scratch directories ---------------------------------------------------------------------------


@contextlib.contextmanager
def scratch_root() -> Iterator[Path]:
    """A temporary directory on the repository's disk, removed afterwards (with ``bench/.tmp``
    itself if nothing else is in it). Refuses tmpfs, where fsync costs nothing."""
    SCRATCH_PARENT.mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="run-", dir=SCRATCH_PARENT))
    try:
        fs = _filesystem(root)
        if fs.get("type") in ("tmpfs", "ramfs"):
            raise SystemExit(f"scratch directory {root} is on {fs['type']}: durability figures "
                             "would be meaningless; run from a checkout on a real disk")
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
        with contextlib.suppress(OSError):
            SCRATCH_PARENT.rmdir()  # only succeeds when empty (another run may be using it)


@contextlib.contextmanager
def fresh_dir(root: Path, name: str) -> Iterator[Path]:
    """A new, empty directory under ``root`` for one measurement, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=name + "-", dir=root))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# -- statistics and printing -----------------------------------------------------------------------


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def fmt_rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, file: Any = None) -> None:
    """A GitHub-flavoured markdown table, columns padded; the first column left-aligned."""
    out = file or sys.stdout
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        padded = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in pairs]
        return "| " + " | ".join(padded) + " |"

    print(line(headers), file=out)
    rule = (("-" * (w + 1) + ":") if i else ("-" * (w + 2)) for i, w in enumerate(widths))
    print("|" + "|".join(rule) + "|", file=out)
    for row in rows:
        print(line(row), file=out)


# -- results ---------------------------------------------------------------------------------------


def write_results(path: Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` as indented JSON, atomically (a temp file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


# -- seeded texts ----------------------------------------------------------------------------------

_NAMES = ("Alice", "Bob", "Carmen", "Dmitri", "Emeka", "Fatima", "Grace", "Hiro", "Ines", "Jonas",
          "Kavya", "Liam", "Mei", "Noah", "Olga", "Priya", "Quentin", "Rosa", "Sven", "Tariq")
_PLACES = ("Berlin", "Lisbon", "the office", "the gym", "Osaka", "the lake house", "Nairobi",
           "the library", "Toronto", "her parents' place", "the climbing hall", "Lyon", "Seattle")
_VERBS = ("mentioned", "said", "wrote", "decided", "promised", "remembered", "noticed", "agreed",
          "complained", "explained", "suggested", "confirmed")
_CLAUSES = (
    "that the quarterly report is due on Friday",
    "that the new espresso machine keeps leaking",
    "to move the team meeting to Tuesday afternoon",
    "that the flight to {place} was delayed by two hours",
    "that {other} prefers tea over coffee in the morning",
    "to start training for a half marathon in the spring",
    "that the database migration needs another review",
    "that the dog has a vet appointment next week",
    "to read the book {other} recommended about urban gardening",
    "that the rent in {place} went up again this year",
    "to learn Portuguese before the trip to {place}",
    "that the printer on the third floor is broken",
    "that {other} is allergic to peanuts and shellfish",
    "to cancel the streaming subscription nobody uses",
    "that the kids' school play is on the 14th",
    "that the budget for the offsite was approved",
)
_TAILS = ("last week", "yesterday", "during lunch", "on the phone", "in a long email",
          "over dinner", "this morning", "at the standup", "before leaving", "in passing")


def make_texts(count: int, *, seed: int, min_chars: int = 100, max_chars: int = 300) -> list[str]:
    """``count`` short memory-like texts (``min_chars``..``max_chars``), the same for a seed."""
    rng = random.Random(seed)
    texts: list[str] = []
    for _ in range(count):
        target = rng.randint(min_chars, max_chars)
        parts: list[str] = []
        length = 0
        while length < target:
            who, other = rng.sample(_NAMES, 2)
            clause = rng.choice(_CLAUSES).format(place=rng.choice(_PLACES), other=other)
            sentence = f"{who} {rng.choice(_VERBS)} {clause} {rng.choice(_TAILS)}."
            parts.append(sentence)
            length += len(sentence) + 1
        text = " ".join(parts)
        if len(text) > max_chars:
            text = text[:max_chars].rsplit(" ", 1)[0].rstrip(",") + "."
        texts.append(text)
    return texts


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values`` by nearest rank: a value that was measured."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def write_timed(path: Path, question: str, run: Callable[[], dict[str, Any]]) -> Path:
    """Run ``run()`` and write its results to ``path`` with the question, the start time
    (``date``), the wall seconds, the machine and the load average before and after."""
    started = now_iso()
    clock = time.perf_counter()
    load_before = load_average()
    payload = run()
    return write_results(path, {"question": question, "date": started,
                                "wall_seconds": round(time.perf_counter() - clock, 1),
                                "machine": machine_facts(), "load_before": load_before,
                                "load_after": load_average(), **payload})
