"""How fast does hmsengine cut Markdown and load it as episodes, next to the hotmemory package?

The reference is hotmemory 0.1.0 (PyPI), whose loader implements the same chunking rules (seed
002) over an in-process store of Python dicts (``MemoryStore``: no durability, no index). Both
run in this process on the same seeded synthetic Markdown post-mortems (a title, key-value
bullets, prose sections, a timeline pipe table of 5-80 rows, a fenced log excerpt with blank
lines and ``#`` lines, a remediation list; some prose sections longer than a chunk), at
``chunk_chars=2000``:

1. Chunking, MB/s of Markdown (UTF-8 bytes): ``hmsengine.chunk_markdown(text)`` against
   ``hotmemory._chunks.chunk_document(text, 2000)`` (the function its ``Memory.load`` calls),
   over every document, in alternation. The outputs are checked equal first.
2. Load, chunks/s, no extractor: ``await memory.load(name, text)`` per document into a fresh
   store, against ``hotmemory.Memory(MemoryStore()).load(name, text, scope, extractor)`` with its
   extraction step replaced by one that returns no fact (hotmemory has no load without an
   extractor; its extraction would otherwise run a recall, which needs an embedder). hmsengine is
   measured with ``Engine.open(None)`` (in memory, the comparison) and, for information,
   ``Engine.open(dir)`` on the repository's disk, where each chunk is a durable (fsynced)
   transaction. Then a second load of the same documents, which writes nothing (the reload row).

Repeats are interleaved (every configuration once, then again); figures are medians. Only the
chunking or the loading is timed: opening and closing stores, and generating the documents, are
outside the clock.

Run: ``python bench/load.py`` (about 15 s on the 2-core VM), ``--quick`` for a smoke run of
seconds. Writes bench/results/load.json (``--quick``: load-quick.json) with every raw run.
Needs ``pip install hotmemory==0.1.0`` (the test extra has it).
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # bench scripts run as files, not as a package
    METHOD_NOTE,
    RESULTS_DIR,
    _version,
    busy_warning,
    fmt_rate,
    fmt_ratio,
    fresh_dir,
    load_average,
    machine_facts,
    make_texts,
    median,
    now_iso,
    print_table,
    ratio,
    scratch_root,
    write_results,
)

import hmsengine
from hmsengine import Engine, Memory, chunk_markdown

QUESTION = ("Markdown chunking MB/s and load chunks/s (no extractor) of hmsengine next to the "
            "hotmemory package's in-process store, on the same documents")
SEED = 20261009
CHUNK_CHARS = 2000
DEFAULT_DOCS = 300
QUICK_DOCS = 30
SCOPE = ("bench",)


# -- documents -------------------------------------------------------------------------------------


def make_documents(count: int, seed: int) -> list[tuple[str, str]]:
    """(name, Markdown) of ``count`` synthetic post-mortems, the same for a seed."""
    rng = random.Random(seed)
    sentences = make_texts(4000, seed=seed, min_chars=80, max_chars=220)
    docs = []
    for n in range(count):
        def prose(paragraphs: int) -> str:
            return "\n\n".join(" ".join(rng.sample(sentences, rng.randint(1, 4)))
                               for _ in range(paragraphs))
        rows = [f"| {h:02d}:{m:02d} | {rng.choice(sentences)[:70]} |"
                for h, m in sorted((rng.randint(0, 23), rng.randint(0, 59))
                                   for _ in range(rng.randint(5, 80)))]
        log = "\n".join(rng.choice([f"# step {i}", "", f"kubectl get pods -n ns{i}",
                                    f"error: code {rng.randint(1, 999)}"]) for i in range(30))
        parts = [
            f"# 20{rng.randint(20, 25)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}: incident {n}",
            "- Component: svc-" + str(rng.randint(1, 40)),
            "- Failure class: " + rng.choice(["disk full", "node group cannot grow",
                                              "expired certificate", "pool exhausted"]),
            "- Specific cause: " + rng.choice(sentences),
            "## Summary", prose(rng.randint(1, 3)),
            "## Timeline", "| Time (UTC) | Event |\n|---|---|\n" + "\n".join(rows),
            "## Logs", f"```text\n{log}\n```",
            "## Root cause", prose(rng.randint(1, 12)),
            "### Contributing factors", "\n".join(f"- {rng.choice(sentences)}"
                                                 for _ in range(rng.randint(2, 25))),
            "## Remediation", "\n".join(f"- {rng.choice(sentences)}" for _ in range(rng.randint(2, 8))),
        ]
        docs.append((f"pm-{n:04d}", "\n\n".join(parts) + "\n"))
    return docs


# -- measurements ------------------------------------------------------------------------------------


def chunk_hms(docs: list[tuple[str, str]]) -> dict[str, Any]:
    start = time.perf_counter()
    chunks = sum(len(chunk_markdown(text, chunk_chars=CHUNK_CHARS)) for _, text in docs)
    return _rate(time.perf_counter() - start, docs, chunks)


def chunk_hot(docs: list[tuple[str, str]]) -> dict[str, Any]:
    from hotmemory._chunks import chunk_document

    start = time.perf_counter()
    chunks = sum(len(chunk_document(text, CHUNK_CHARS)) for _, text in docs)
    return _rate(time.perf_counter() - start, docs, chunks)


def _rate(seconds: float, docs: list[tuple[str, str]], chunks: int) -> dict[str, Any]:
    size = sum(len(text.encode("utf-8")) for _, text in docs)
    return {"seconds": seconds, "bytes": size, "chunks": chunks,
            "mb_per_s": size / seconds / 1e6, "chunks_per_s": chunks / seconds}


def load_hms(docs: list[tuple[str, str]], path: Path | None) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async with Engine.open(None if path is None else str(path)) as engine:
            memory = Memory(engine)
            await memory.load("warm", "# warm\n\nup")  # first-call costs (index, JIT) off the clock
            timings = []
            for _ in range(2):  # the first load writes, the second finds every chunk unchanged
                start = time.perf_counter()
                chunks = 0
                for name, text in docs:
                    chunks += len((await memory.load(name, text, chunk_chars=CHUNK_CHARS)).episodes)
                timings.append((time.perf_counter() - start, chunks))
            return _load_run(timings, engine.statistics().fsyncs)

    return trio.run(run)


def load_hot(docs: list[tuple[str, str]]) -> dict[str, Any]:
    import hotmemory

    class NoExtraction(hotmemory.Memory):  # type: ignore[misc]
        """hotmemory's Memory whose extraction step returns no fact (see the module docstring)."""

        def _extract(self, *args: Any, **kwargs: Any) -> list[str]:
            return []

    memory = NoExtraction(hotmemory.MemoryStore())
    timings = []
    for _ in range(2):
        start = time.perf_counter()
        chunks = 0
        for name, text in docs:
            episodes, _ = memory.load(name, text, SCOPE, lambda *a: [], chunk_chars=CHUNK_CHARS)
            chunks += len(episodes)
        timings.append((time.perf_counter() - start, chunks))
    return _load_run(timings, None)


def _load_run(timings: list[tuple[float, int]], fsyncs: int | None) -> dict[str, Any]:
    (first, chunks), (second, again) = timings
    assert chunks == again
    return {"chunks": chunks, "load_seconds": first, "load_chunks_per_s": chunks / first,
            "reload_seconds": second, "reload_chunks_per_s": chunks / second, "fsyncs": fsyncs}


# -- the run -------------------------------------------------------------------------------------------


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


CONFIGS = ("chunk_hmsengine", "chunk_hotmemory", "load_hmsengine_memory", "load_hotmemory",
           "load_hmsengine_disk")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/load.py",
        description="Markdown chunking MB/s and Memory.load chunks/s (no extractor) of hmsengine "
                    "next to the hotmemory package's in-process store, same documents, same run. "
                    "Prints a table of medians and writes bench/results/load.json.")
    parser.add_argument("--quick", action="store_true",
                        help=f"a smoke run: {QUICK_DOCS} documents, one repeat, results to "
                             "load-quick.json")
    parser.add_argument("--docs", type=int, default=None,
                        help=f"synthetic post-mortems (default {DEFAULT_DOCS}; {QUICK_DOCS} with --quick)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="measurements per configuration (default 3; 1 with --quick)")
    parser.add_argument("--seed", type=int, default=SEED, help="document seed (default %(default)s)")
    parser.add_argument("--output", type=Path, default=None,
                        help="results JSON (default bench/results/load.json)")
    args = parser.parse_args(argv)
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    count = args.docs if args.docs is not None else (QUICK_DOCS if args.quick else DEFAULT_DOCS)
    if repeats < 1 or count < 1:
        parser.error("--repeats and --docs must be positive")
    try:
        from hotmemory._chunks import chunk_document
    except ImportError:
        parser.error("needs the hotmemory package: pip install hotmemory==0.1.0")
    output = args.output or RESULTS_DIR / ("load-quick.json" if args.quick else "load.json")

    docs = make_documents(count, args.seed)
    mismatched = [name for name, text in docs
                  if chunk_markdown(text, chunk_chars=CHUNK_CHARS) != chunk_document(text, CHUNK_CHARS)]
    if mismatched:
        raise SystemExit(f"chunks differ from hotmemory's on {len(mismatched)} documents, "
                         f"e.g. {mismatched[0]}")
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGS}
    started = time.perf_counter()
    with scratch_root() as root:
        facts = machine_facts(root)
        facts["versions"]["hotmemory"] = _version("hotmemory")
        facts["source"]["package_path"] = str(Path(hmsengine.__file__).resolve().parent)
        warning = busy_warning()
        if warning:
            _log(warning)
        chunk_hms(docs[:3])  # warm-up, not recorded
        chunk_hot(docs[:3])
        for rep in range(repeats):
            _log(f"repeat {rep + 1}/{repeats}")
            for name in CONFIGS:
                gc.collect()
                if name == "chunk_hmsengine":
                    run = chunk_hms(docs)
                elif name == "chunk_hotmemory":
                    run = chunk_hot(docs)
                elif name == "load_hmsengine_memory":
                    run = load_hms(docs, None)
                elif name == "load_hotmemory":
                    run = load_hot(docs)
                else:
                    with fresh_dir(root, "hms") as path:
                        run = load_hms(docs, path)
                runs[name].append(run)
                rate = run.get("mb_per_s")
                _log(f"  {name:<22} " + (f"{rate:6.2f} MB/s" if rate is not None else
                                         f"{run['load_chunks_per_s']:8,.0f} chunks/s, reload "
                                         f"{run['reload_chunks_per_s']:8,.0f} chunks/s"))
    elapsed = time.perf_counter() - started

    med = {name: {key: median([r[key] for r in rs]) for key in rs[0]
                  if isinstance(rs[0][key], (int, float)) and rs[0][key] is not None}
           for name, rs in runs.items()}
    summary = {
        "chunking_mb_per_s": {"hmsengine": med["chunk_hmsengine"]["mb_per_s"],
                              "hotmemory": med["chunk_hotmemory"]["mb_per_s"]},
        "load_chunks_per_s": {"hmsengine_in_memory": med["load_hmsengine_memory"]["load_chunks_per_s"],
                              "hmsengine_on_disk": med["load_hmsengine_disk"]["load_chunks_per_s"],
                              "hotmemory": med["load_hotmemory"]["load_chunks_per_s"]},
        "reload_chunks_per_s": {
            "hmsengine_in_memory": med["load_hmsengine_memory"]["reload_chunks_per_s"],
            "hmsengine_on_disk": med["load_hmsengine_disk"]["reload_chunks_per_s"],
            "hotmemory": med["load_hotmemory"]["reload_chunks_per_s"]},
    }
    summary["ratios_hmsengine_over_hotmemory"] = {
        "chunking": ratio(summary["chunking_mb_per_s"]["hmsengine"],
                          summary["chunking_mb_per_s"]["hotmemory"]),
        "load_in_memory": ratio(summary["load_chunks_per_s"]["hmsengine_in_memory"],
                                summary["load_chunks_per_s"]["hotmemory"]),
        "reload_in_memory": ratio(summary["reload_chunks_per_s"]["hmsengine_in_memory"],
                                  summary["reload_chunks_per_s"]["hotmemory"]),
    }
    ratios = summary["ratios_hmsengine_over_hotmemory"]
    print()
    print(f"{count} documents, {med['chunk_hmsengine']['bytes'] / 1e6:.2f} MB, "
          f"{int(med['chunk_hmsengine']['chunks'])} chunks at chunk_chars={CHUNK_CHARS}; "
          f"medians of {repeats} repeat{'s' if repeats > 1 else ''}.")
    print_table(["measurement", "hmsengine", "hotmemory", "hmsengine/hotmemory"], [
        ["chunking, MB/s", f"{summary['chunking_mb_per_s']['hmsengine']:.2f}",
         f"{summary['chunking_mb_per_s']['hotmemory']:.2f}", fmt_ratio(ratios["chunking"])],
        ["load, chunks/s (in memory)", fmt_rate(summary["load_chunks_per_s"]["hmsengine_in_memory"]),
         fmt_rate(summary["load_chunks_per_s"]["hotmemory"]), fmt_ratio(ratios["load_in_memory"])],
        ["reload unchanged, chunks/s", fmt_rate(summary["reload_chunks_per_s"]["hmsengine_in_memory"]),
         fmt_rate(summary["reload_chunks_per_s"]["hotmemory"]), fmt_ratio(ratios["reload_in_memory"])],
        ["load, chunks/s (on disk, durable)", fmt_rate(summary["load_chunks_per_s"]["hmsengine_on_disk"]),
         "-", "-"],
    ])
    print()
    print("hotmemory: MemoryStore (Python dicts, not durable), extraction step replaced by one that")
    print("returns no fact. hmsengine on disk: one fsynced transaction per chunk.")
    print(METHOD_NOTE)

    payload = {
        "benchmark": "load",
        "question": QUESTION,
        "date": now_iso(),
        "method": METHOD_NOTE + " Only chunking or loading is timed; repeats are interleaved; "
                  "each load run uses a fresh store.",
        "machine": facts,
        "parameters": {
            "documents": count, "repeats": repeats, "quick": args.quick, "seed": args.seed,
            "chunk_chars": CHUNK_CHARS,
            "bytes": med["chunk_hmsengine"]["bytes"], "chunks": med["chunk_hmsengine"]["chunks"],
            "hmsengine": "chunk_markdown(text); Memory(Engine.open(None or dir)).load(name, text) "
                         "per document, no extractor",
            "hotmemory": "hotmemory._chunks.chunk_document(text, 2000); "
                         "Memory(MemoryStore()).load(name, text, scope, extractor) with "
                         "Memory._extract returning no fact",
        },
        "summary": summary,
        "runs": runs,
        "load_average_at_end": load_average(),
        "wall_seconds": round(elapsed, 1),
    }
    path = write_results(output, payload)
    print(f"\nWrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path} "
          f"({elapsed:.0f} s).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
