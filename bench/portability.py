"""How fast are hmsengine's export, import, snapshot and restore at 100k facts, next to hotmem's
own snapshot and hydrate of the same records in the same run?

The records: ``make_texts`` facts (100-300 characters), each with a subject (one of 2,000), a
``valid_from``, an importance and a small metadata object, remembered through ``remember_many``
in batches of 5,000 into a template store (not timed). Every repeat then measures, on fresh
directories on the repository's disk:

- hmsengine ``export_jsonl`` to ``.jsonl`` and to ``.jsonl.gz`` (reading the store, writing,
  fsync, rename);
- hmsengine ``import_jsonl`` of the ``.jsonl.gz`` into a new empty store (parse, validate, one
  transaction, fsync; the store closed before the clock stops, so its checkpoint counts);
- hmsengine ``snapshot`` (``hmsengine-v2``) and ``restore`` of it into a new empty store
  (restore verifies every checksum before writing);
- hotmem 0.2.6 ``hotmem.snapshot.snapshot`` of a hotmem store holding the same records (a v2
  directory) and ``hotmem.snapshot.hydrate`` of that directory into a new empty hotmem store.
  The hotmem store is filled by hydrating our ``hotmem-v2`` snapshot of the template (not timed).

Rates are records per second, medians of the repeats; the comparisons are ratios of medians
measured in this run (hmsengine rate / hotmem rate: above 1 means hmsengine is faster).

Run: ``python bench/portability.py`` (about 5 minutes on a 2-core VM), ``--quick`` for a smoke
run. Writes bench/results/portability.json (``--quick``: portability-quick.json).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # bench scripts run as files, not as a package
    METHOD_NOTE,
    RESULTS_DIR,
    busy_warning,
    fmt_rate,
    fmt_ratio,
    fresh_dir,
    machine_facts,
    make_texts,
    median,
    now_iso,
    print_table,
    ratio,
    scratch_root,
    source_state,
    write_results,
)

from hmsengine import Engine, RememberInput

HOTMEM_VERSION = "0.2.6"
T0 = 1_700_000_000_000


def inputs(count: int, seed: int) -> list[RememberInput]:
    rng = random.Random(seed)
    texts = make_texts(count, seed=seed)
    return [RememberInput(text=t, subject=f"user-{rng.randrange(2000)}/note",
                          valid_from=T0 + rng.randrange(10**10), importance=round(rng.random(), 3),
                          metadata={"n": i, "tag": rng.choice(("work", "home", "travel"))})
            for i, t in enumerate(texts)]


async def build_template(path: Path, count: int, seed: int) -> None:
    async with Engine.open(path) as engine:
        memory = engine.memory()
        items = inputs(count, seed)
        for start in range(0, count, 5000):
            await memory.remember_many(items[start:start + 5000])


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


async def _export(store: Path, out: Path) -> None:
    async with Engine.open(store) as engine:
        await engine.export_jsonl(out)


async def _into_new(store: Path, source: Path, how: str) -> Any:
    async with Engine.open(store) as engine:
        if how == "import":
            return await engine.import_jsonl(source)
        return await engine.restore(source)


async def _snapshot(store: Path, out: Path, fmt: str) -> None:
    async with Engine.open(store) as engine:
        await engine.snapshot(out, format=fmt)


@contextlib.contextmanager
def quiet_hotmem() -> Iterator[None]:
    """hotmem logs a JSON line per record to stderr: send it to /dev/null while timing."""
    import logging

    saved = sys.stderr
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    with open(os.devnull, "w") as devnull:
        sys.stderr = devnull
        try:
            yield
        finally:
            sys.stderr = saved
            logging.disable(previous)


def hotmem_unavailable() -> str | None:
    try:
        import importlib.metadata

        version = importlib.metadata.version("hotmem")
    except Exception:
        return f"hotmem is not installed (pip install hotmem=={HOTMEM_VERSION})"
    if version != HOTMEM_VERSION:
        return f"hotmem {version} is installed; this benchmark is defined for {HOTMEM_VERSION}"
    return None


def run(count: int, repeats: int, seed: int) -> dict[str, Any]:
    for name in ("HOTMEM_EMBEDDER", "HOTMEM_EMBEDDER_MODEL_PATH", "HOTMEM_RERANKER"):
        os.environ.pop(name, None)
    skipped = hotmem_unavailable()
    runs: dict[str, list[float]] = {k: [] for k in (
        "export_jsonl", "export_jsonl_gz", "import_jsonl_gz", "snapshot", "restore",
        "hotmem_snapshot", "hotmem_hydrate")}
    sizes: dict[str, int] = {}
    with scratch_root() as root:
        template = root / "template"
        build_s, _ = timed(lambda: trio.run(build_template, template, count, seed))
        print(f"template: {count:,} facts remembered in {build_s:.1f} s", file=sys.stderr)
        hotmem_db_path = root / "hotmem-template.sqlite"
        if skipped is None:
            from hotmem.db import MemoryDB
            from hotmem.snapshot import hydrate

            with fresh_dir(root, "hm-src") as src:
                trio.run(_snapshot, template, src / "snap", "hotmem-v2")
                db = MemoryDB(hotmem_db_path)
                try:
                    with quiet_hotmem():
                        fill_s, result = timed(lambda: hydrate(db, src / "snap"))
                finally:
                    db.close()
                print(f"hotmem template: {result.loaded:,} records hydrated in {fill_s:.1f} s",
                      file=sys.stderr)
        for repeat in range(repeats):
            with fresh_dir(root, "run") as work:
                t, _ = timed(lambda: trio.run(_export, template, work / "all.jsonl"))
                runs["export_jsonl"].append(t)
                t, _ = timed(lambda: trio.run(_export, template, work / "all.jsonl.gz"))
                runs["export_jsonl_gz"].append(t)
                sizes["jsonl"] = (work / "all.jsonl").stat().st_size
                sizes["jsonl_gz"] = (work / "all.jsonl.gz").stat().st_size
                t, report = timed(lambda: trio.run(_into_new, work / "imported", work / "all.jsonl.gz",
                                                   "import"))
                assert report.added == count, report
                runs["import_jsonl_gz"].append(t)
                t, _ = timed(lambda: trio.run(_snapshot, template, work / "snap", "hmsengine-v2"))
                runs["snapshot"].append(t)
                t, report = timed(lambda: trio.run(_into_new, work / "restored", work / "snap",
                                                   "restore"))
                assert report.added == count, report
                runs["restore"].append(t)
                if skipped is None:
                    from hotmem.db import MemoryDB
                    from hotmem.snapshot import hydrate, snapshot

                    with quiet_hotmem():
                        db = MemoryDB(hotmem_db_path)
                        try:
                            t, _ = timed(lambda: snapshot(db, work / "hm-snap"))  # noqa: B023
                        finally:
                            db.close()
                        runs["hotmem_snapshot"].append(t)
                        db = MemoryDB(work / "hm-target.sqlite")
                        try:
                            t, result = timed(lambda: hydrate(db, work / "hm-snap"))  # noqa: B023
                        finally:
                            db.close()
                    assert result.loaded == count, result
                    runs["hotmem_hydrate"].append(t)
            print(f"repeat {repeat + 1}/{repeats} done", file=sys.stderr)
    rates = {k: (count / median(v) if v else None) for k, v in runs.items()}  # type: ignore[operator]
    return {"count": count, "repeats": repeats, "seed": seed, "template_build_s": build_s,
            "runs_s": runs, "rates_per_s": rates, "file_bytes": sizes, "hotmem_skipped": skipped,
            "ratios": {
                "snapshot_vs_hotmem_snapshot": ratio(rates["snapshot"], rates["hotmem_snapshot"]),
                "restore_vs_hotmem_hydrate": ratio(rates["restore"], rates["hotmem_hydrate"]),
                "export_gz_vs_hotmem_snapshot": ratio(rates["export_jsonl_gz"], rates["hotmem_snapshot"]),
                "import_gz_vs_hotmem_hydrate": ratio(rates["import_jsonl_gz"], rates["hotmem_hydrate"]),
            }}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="2,000 facts, one repeat")
    args = parser.parse_args()
    count, repeats = (2000, 1) if args.quick else (args.count, args.repeats)
    warning = busy_warning()
    if warning:
        print(warning, file=sys.stderr)
    result = run(count, repeats, args.seed)
    rates = result["rates_per_s"]
    print(f"\nPortability at {count:,} facts (records/s, median of {repeats}; {METHOD_NOTE})\n")
    rows = [
        ["export .jsonl", fmt_rate(rates["export_jsonl"]), "", ""],
        ["export .jsonl.gz", fmt_rate(rates["export_jsonl_gz"]), "", ""],
        ["import .jsonl.gz (new store)", fmt_rate(rates["import_jsonl_gz"]), "", ""],
        ["snapshot", fmt_rate(rates["snapshot"]), fmt_rate(rates["hotmem_snapshot"]),
         fmt_ratio(result["ratios"]["snapshot_vs_hotmem_snapshot"])],
        ["restore / hydrate (new store)", fmt_rate(rates["restore"]), fmt_rate(rates["hotmem_hydrate"]),
         fmt_ratio(result["ratios"]["restore_vs_hotmem_hydrate"])],
    ]
    print_table(["operation", "hmsengine", f"hotmem {HOTMEM_VERSION}", "ratio"], rows)
    if result["hotmem_skipped"]:
        print(f"\nhotmem skipped: {result['hotmem_skipped']}")
    payload = {"benchmark": "portability", "date": now_iso(), "machine": machine_facts(),
               "source": source_state(), "method": METHOD_NOTE, "load_warning": warning, **result}
    name = "portability-quick.json" if args.quick else "portability.json"
    print(f"\nwrote {write_results(RESULTS_DIR / name, payload)}")


if __name__ == "__main__":
    main()
