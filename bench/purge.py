"""What do delete, delete-plus-sync and purge cost in hmsengine, and what does encryption at rest
cost on ingest and search, on this machine?

Every figure is measured for a plain store and for an encrypted one (``key=`` 32 raw bytes, so no
key derivation inside the clock) in the same run, repeats interleaved, the order of the two modes
alternating from one repeat to the next:

- Ingest: durable puts/s with 32 concurrent trio tasks each calling ``put_document`` in a loop,
  and ``put_documents`` in batches of 1,000 documents (one transaction, one fsync per call).
  Fresh store per measurement; only the writing is timed.
- Per store size (default 10,000 and 100,000 documents): a template store is built once per mode
  (``put_documents`` of 10,000, the index settled after each call so both modes get the same
  segment layout, then closed), and every repeat opens a fresh copy of it and measures, in this
  order (so the deletes run on the quiet, just-purged store, the index builder idle):
  1. search: queries/s one query at a time, ``await engine.search_documents(q, k=10)``, queries
     of 2-4 distinct words drawn (seeded) from the corpus vocabulary;
  2. purge: 1% of the documents are deleted (32 concurrent tasks, not timed), then
     ``compact(purge=True)`` is timed: it writes a new generation, switches ``CURRENT``, and
     overwrites every file of the old generation with zeros, fsyncs and unlinks it. Reported in
     seconds and as MB/s of the store's on-disk size before the purge;
  3. delete: ``delete_document(id)`` of existing documents one at a time (median per delete):
     the delete is journaled and fsynced, and the text record is zeroed in place, not synced;
  4. delete + sync: ``delete_document(id)`` followed by ``await engine.sync()``: fsync
     ``documents.text`` (making the zeroing durable), then append and fsync a checkpoint frame in
     the journal, through the writer actor. It is what ``forget`` runs before it returns, and
     what close, compaction and every 64 MiB of unsynced text run.
- Once, for information: creating and reopening a small store with a passphrase (Argon2id).

Encryption's overhead is a ratio of time measured in the same run (plain rate / encrypted rate,
or encrypted ms / plain ms: 1.25x = encrypted takes 25% longer), given three ways: of the two
modes' medians; the median over repeats of each repeat's pair of runs, which ran back to back and
so shared the machine's load (the aims are judged on this one); and of the process CPU time (all
threads) spent in the timed section, which other work on the machine disturbs far less than wall
time. The aims: at most 1.3x on ingest, at most 1.1x on search (100k store).

Run: ``python bench/purge.py`` (about 3-5 minutes on a 2-core VM), ``--quick`` for a smoke run
(about 10 seconds). Writes bench/results/purge.json (``--quick``: purge-quick.json).
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import shutil
import sys
import time
from collections.abc import Sequence
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
from hmsengine import Engine
from hmsengine.index.analyzer import get_analyzer

QUESTION = ("Cost of delete_document, delete + text sync, and compact(purge=True) at 10k and 100k "
            "documents, plain and encrypted; encryption's overhead on durable ingest and on search")
SEED = 20240611
MODES = ("plain", "encrypted")
SIZES = (10_000, 100_000)
QUICK_SIZES = (2_000, 10_000)
TEXT_CHARS = (150, 300)
CHUNK = 10_000  # documents per put_documents call when building a store (the engine's limit)
WRITERS = 32
WRITER_PUTS = 40_000  # ~2-5 s at 32 writers (5k-20k durable puts/s on this shared VM)
BATCH_SIZE = 1_000
BATCH_DOCS = 50_000
DELETES = 200
QUERIES = 1_000
WARMUP_QUERIES = 50
PURGE_FRACTION = 0.01
DELETE_TASKS = 32
QUICK_DIVISOR = 10
PASSPHRASE = "correct horse battery staple"
AIM_INGEST = 1.3
AIM_SEARCH = 1.1
MB = 1_000_000


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _pct(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of a non-empty sequence."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _lat(values: Sequence[float]) -> dict[str, Any]:
    """Latency summary in milliseconds."""
    return {"count": len(values), "median_ms": _pct(values, 50) * 1e3,
            "p90_ms": _pct(values, 90) * 1e3, "mean_ms": sum(values) / len(values) * 1e3}


def _store_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _stats(engine: Engine) -> dict[str, int]:
    s = engine.statistics()
    return {"fsyncs": s.fsyncs, "commits": s.commits, "checkpoints": s.checkpoints,
            "records_zeroed": s.records_zeroed, "bytes_written": s.bytes_written,
            "documents": s.documents}


def _delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in after}


async def _settle(engine: Engine) -> None:
    """Wait until the index tail is folded and no merge or consolidation is pending (the
    index-builder is idle)."""
    indexer = engine._indexer
    while not indexer.settled:
        await trio.sleep(0.002)


def _layout(engine: Engine) -> list[int]:
    """Documents per index segment: search speed depends on it."""
    snap = engine._indexer.snapshot
    return [v.segment.n_docs for v in snap.segments] + ([len(snap.tail)] if snap.tail else [])


def _ids(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i:08d}" for i in range(count)]


# -- ingest ----------------------------------------------------------------------------------------


def ingest_writers(path: Path, key: bytes | None, ids: list[str], texts: list[str],
                   writers: int) -> dict[str, Any]:
    per = len(ids) // writers
    out: dict[str, Any] = {"writers": writers, "puts": per * writers}

    async def main() -> None:
        async with Engine.open(path / "store", key=key) as engine:
            async def writer(k: int) -> None:
                put = engine.put_document
                for i in range(k * per, (k + 1) * per):
                    await put(ids[i], texts[i])

            before = _stats(engine)
            cpu = time.process_time()
            start = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for k in range(writers):
                    nursery.start_soon(writer, k)
            seconds = time.perf_counter() - start
            cpu = time.process_time() - cpu
            d = _delta(_stats(engine), before)
            if d["documents"] != per * writers:
                raise RuntimeError(f"stored {d['documents']} documents, expected {per * writers}")
            out.update(seconds=seconds, puts_per_s=per * writers / seconds, fsyncs=d["fsyncs"],
                       commits=d["commits"], cpu_seconds=cpu,
                       cpu_us_per_doc=cpu / (per * writers) * 1e6)
            closing = time.perf_counter()
        out["close_seconds"] = time.perf_counter() - closing

    trio.run(main)
    return out


def ingest_batch(path: Path, key: bytes | None, ids: list[str], texts: list[str],
                 batch: int) -> dict[str, Any]:
    calls = [[{"id": ids[i], "text": texts[i]} for i in range(j, min(j + batch, len(ids)))]
             for j in range(0, len(ids), batch)]
    out: dict[str, Any] = {"batch_size": batch, "calls": len(calls), "documents": len(ids)}

    async def main() -> None:
        async with Engine.open(path / "store", key=key) as engine:
            before = _stats(engine)
            cpu = time.process_time()
            start = time.perf_counter()
            for items in calls:
                await engine.put_documents(items)
            seconds = time.perf_counter() - start
            cpu = time.process_time() - cpu
            d = _delta(_stats(engine), before)
            if d["documents"] != len(ids):
                raise RuntimeError(f"stored {d['documents']} documents, expected {len(ids)}")
            out.update(seconds=seconds, docs_per_s=len(ids) / seconds, fsyncs=d["fsyncs"],
                       cpu_seconds=cpu, cpu_us_per_doc=cpu / len(ids) * 1e6)
            closing = time.perf_counter()
        out["close_seconds"] = time.perf_counter() - closing

    trio.run(main)
    return out


# -- stores of N documents -------------------------------------------------------------------------


def build_template(path: Path, key: bytes | None, ids: list[str],
                   texts: list[str]) -> dict[str, Any]:
    """A store of ``len(ids)`` documents, index settled, closed (not a measurement)."""
    out: dict[str, Any] = {}

    async def main() -> None:
        clock = time.perf_counter
        start = clock()
        async with Engine.open(path, key=key) as engine:
            puts = 0.0
            for j in range(0, len(ids), CHUNK):
                t = clock()
                await engine.put_documents([{"id": ids[i], "text": texts[i]}
                                            for i in range(j, min(j + CHUNK, len(ids)))])
                puts += clock() - t
                # Settling after every chunk makes the index layout (segments, merges) the same
                # for both modes; left to race the writer it differs, and so would search speed.
                await _settle(engine)
            settled = clock()
            out["index_layout"] = _layout(engine)
        out.update(put_seconds=puts, build_seconds=settled - start,
                   close_seconds=clock() - settled, bytes=_store_bytes(path))

    trio.run(main)
    return out


def measure_store(path: Path, key: bytes | None, queries: list[str], purge_ids: list[str],
                  delete_ids: list[str], sync_ids: list[str]) -> dict[str, Any]:
    """One repeat on a fresh copy of a template store: search, purge, delete, delete + sync."""
    out: dict[str, Any] = {}

    async def main() -> None:
        clock = time.perf_counter
        start = clock()
        async with Engine.open(path, key=key) as engine:
            out["open_seconds"] = clock() - start
            await _settle(engine)
            out["index_layout"] = _layout(engine)

            # 1. search, one query at a time
            search = engine.search_documents
            for q in queries[:WARMUP_QUERIES]:
                await search(q, k=10)
            timed = queries[WARMUP_QUERIES:]
            lat = []
            hits = 0
            cpu = time.process_time()
            t0 = clock()
            for q in timed:
                t = clock()
                hits += len(await search(q, k=10))
                lat.append(clock() - t)
            total = clock() - t0
            cpu = time.process_time() - cpu
            out["search"] = {"queries": len(timed), "seconds": total,
                             "qps": len(timed) / total, "p50_us": _pct(lat, 50) * 1e6,
                             "cpu_us_per_query": cpu / len(timed) * 1e6,
                             "p90_us": _pct(lat, 90) * 1e6, "hits": hits}

            # 2. purge after deleting 1% of the documents (the deletes are not timed)
            async def deleter(k: int) -> None:
                for i in range(k, len(purge_ids), DELETE_TASKS):
                    if not await engine.delete_document(purge_ids[i]):
                        raise RuntimeError(f"{purge_ids[i]} was not there to delete")

            async with trio.open_nursery() as nursery:
                for k in range(DELETE_TASKS):
                    nursery.start_soon(deleter, k)
            size = _store_bytes(path)
            gc.collect()
            cpu = time.process_time()
            t = clock()
            report = await engine.compact(purge=True)
            seconds = clock() - t
            cpu = time.process_time() - cpu
            out["purge"] = {
                "deleted_before": len(purge_ids), "seconds": seconds, "cpu_seconds": cpu,
                "store_bytes_before": size, "store_bytes_after": _store_bytes(path),
                "mb_per_s": size / MB / seconds,
                "report": {"generation": report.generation, "documents": report.documents,
                           "bytes_before": report.bytes_before, "bytes_after": report.bytes_after,
                           "purged": report.purged,
                           "generations_removed": list(report.generations_removed)},
            }
            await _settle(engine)

            # 3. delete, one at a time
            before = _stats(engine)
            lat = []
            cpu = time.process_time()
            for doc_id in delete_ids:
                t = clock()
                existed = await engine.delete_document(doc_id)
                lat.append(clock() - t)
                if not existed:
                    raise RuntimeError(f"{doc_id} was not there to delete")
            cpu = time.process_time() - cpu
            d = _delta(_stats(engine), before)
            out["delete"] = {**_lat(lat), "fsyncs_per_delete": d["fsyncs"] / len(delete_ids),
                             "cpu_us_per_delete": cpu / len(delete_ids) * 1e6,
                             "records_zeroed": d["records_zeroed"],
                             "checkpoints": d["checkpoints"]}

            # 4. delete, then engine.sync(): the text segment fsync + a checkpoint frame
            before = _stats(engine)
            lat = []
            cpu = time.process_time()
            for doc_id in sync_ids:
                t = clock()
                existed = await engine.delete_document(doc_id)
                await engine.sync()
                lat.append(clock() - t)
                if not existed:
                    raise RuntimeError(f"{doc_id} was not there to delete")
            cpu = time.process_time() - cpu
            d = _delta(_stats(engine), before)
            out["delete_sync"] = {**_lat(lat), "fsyncs_per_delete": d["fsyncs"] / len(sync_ids),
                                  "cpu_us_per_delete": cpu / len(sync_ids) * 1e6,
                                  "checkpoints": d["checkpoints"]}
            closing = clock()
        out["close_seconds"] = time.perf_counter() - closing

    trio.run(main)
    return out


def passphrase_open(path: Path, texts: list[str]) -> dict[str, Any]:
    """Create a small store with a passphrase, then reopen it: Argon2id each time."""
    out: dict[str, Any] = {"documents": 1_000}

    async def create() -> None:
        t = time.perf_counter()
        async with Engine.open(path, key=PASSPHRASE) as engine:
            out["create_open_seconds"] = time.perf_counter() - t
            await engine.put_documents([{"id": f"p{i}", "text": texts[i]} for i in range(1_000)])

    async def reopen() -> None:
        t = time.perf_counter()
        async with Engine.open(path, key=PASSPHRASE) as engine:
            out["reopen_seconds"] = time.perf_counter() - t
            if engine.statistics().documents != 1_000:
                raise RuntimeError("the passphrase store lost documents")

    trio.run(create)
    trio.run(reopen)
    return out


# -- the run ---------------------------------------------------------------------------------------


def make_queries(texts: list[str], count: int, seed: int) -> tuple[list[str], int]:
    """``count`` queries of 2-4 distinct corpus words the analyzer keeps (no stop words)."""
    analyzer = get_analyzer("standard")
    words = sorted({w for t in texts[:20_000] for w in re.findall(r"[A-Za-z']+", t)})
    vocab = [w for w in words if analyzer.tokenize(w)]
    rng = random.Random(seed)
    return [" ".join(rng.sample(vocab, rng.randint(2, 4))) for _ in range(count)], len(vocab)


def compare(plain: list[dict[str, Any]], encrypted: list[dict[str, Any]], path: tuple[str, ...],
            *, rate: bool, cpu: tuple[str, ...] | None) -> dict[str, Any]:
    """Encrypted vs plain for one figure (``path`` into each run; ``rate`` if higher is faster):
    medians, the ratio of time of the medians, the ratios of time of each repeat's pair of runs
    (adjacent in time, so they shared the machine's load) and their median, and the ratio of
    process CPU time (all threads) of the medians."""

    def get(run: dict[str, Any], keys: tuple[str, ...]) -> float:
        for k in keys:
            run = run[k]
        return float(run)  # type: ignore[arg-type]

    def time_ratio(p: float | None, e: float | None) -> float | None:
        return ratio(p, e) if rate else ratio(e, p)

    p = [get(r, path) for r in plain]
    e = [get(r, path) for r in encrypted]
    paired = [time_ratio(a, b) for a, b in zip(p, e, strict=True)]
    out: dict[str, Any] = {
        "plain": median(p), "encrypted": median(e),
        "time_ratio_of_medians": time_ratio(median(p), median(e)),
        "paired_time_ratios": paired,
        "median_paired_time_ratio": median([x for x in paired if x is not None]),
    }
    if cpu is not None:
        out["cpu_ratio_of_medians"] = ratio(median([get(r, cpu) for r in encrypted]),
                                            median([get(r, cpu) for r in plain]))
    return out


def _order(rep: int) -> tuple[str, ...]:
    return MODES if rep % 2 == 0 else MODES[::-1]


def run_ingest(root: Path, keys: dict[str, bytes | None], texts: list[str], repeats: int,
               writer_puts: int, batch_docs: int) -> dict[str, Any]:
    res: dict[str, Any] = {
        "writers": {"writers": WRITERS, "puts": writer_puts, **{m: {"runs": []} for m in MODES}},
        "batch": {"batch_size": BATCH_SIZE, "documents": batch_docs,
                  **{m: {"runs": []} for m in MODES}},
    }
    for rep in range(repeats):
        for mode in _order(rep):
            gc.collect()
            with fresh_dir(root, f"ingest-{mode}") as path:
                run = ingest_writers(path, keys[mode], _ids(f"w{rep}", writer_puts),
                                     texts[:writer_puts], WRITERS)
            res["writers"][mode]["runs"].append(run)
            gc.collect()
            with fresh_dir(root, f"batch-{mode}") as path:
                brun = ingest_batch(path, keys[mode], _ids(f"b{rep}", batch_docs),
                                    texts[:batch_docs], BATCH_SIZE)
            res["batch"][mode]["runs"].append(brun)
            _log(f"  ingest {mode:<9} {WRITERS} writers {fmt_rate(run['puts_per_s']):>7} puts/s | "
                 f"batches of {BATCH_SIZE} {fmt_rate(brun['docs_per_s']):>7} docs/s")
    for key, field in (("writers", "puts_per_s"), ("batch", "docs_per_s")):
        block = res[key]
        for mode in MODES:
            block[mode][f"median_{field}"] = median([r[field] for r in block[mode]["runs"]])
        block["encrypted_vs_plain"] = compare(block["plain"]["runs"], block["encrypted"]["runs"],
                                              (field,), rate=True, cpu=("cpu_us_per_doc",))
    return res


def run_size(root: Path, keys: dict[str, bytes | None], n: int, texts: list[str],
             queries: list[str], repeats: int, deletes: int, seed: int) -> dict[str, Any]:
    ids = _ids("d", n)
    rng = random.Random(seed + n)
    purge_count = max(1, round(n * PURGE_FRACTION))
    chosen = rng.sample(ids, purge_count + 2 * deletes)
    purge_ids = chosen[:purge_count]
    delete_ids = chosen[purge_count:purge_count + deletes]
    sync_ids = chosen[purge_count + deletes:]
    res: dict[str, Any] = {"documents": n, "purge_deletes": purge_count, "deletes": deletes,
                           **{m: {"template": None, "runs": []} for m in MODES}}
    templates: dict[str, Path] = {}
    with fresh_dir(root, f"templates-{n}") as tdir:
        for mode in MODES:
            gc.collect()
            templates[mode] = tdir / mode
            res[mode]["template"] = build_template(templates[mode], keys[mode], ids, texts[:n])
            t = res[mode]["template"]
            _log(f"  {n:,} {mode}: template built ({t['put_seconds']:.1f} s puts, "
                 f"{t['build_seconds']:.1f} s with indexing, {t['bytes'] / MB:.0f} MB, "
                 f"index segments {t['index_layout']})")
        for rep in range(repeats):
            for mode in _order(rep):
                gc.collect()
                with fresh_dir(root, f"copy-{mode}") as path:
                    store = path / "store"
                    shutil.copytree(templates[mode], store)
                    run = measure_store(store, keys[mode], queries, purge_ids, delete_ids, sync_ids)
                res[mode]["runs"].append(run)
                _log(f"  {n:,} {mode:<9} search {fmt_rate(run['search']['qps']):>6} q/s | purge "
                     f"{run['purge']['seconds']:.2f} s | delete {run['delete']['median_ms']:.2f} ms"
                     f" | delete+sync {run['delete_sync']['median_ms']:.2f} ms")
    layouts = {m: res[m]["template"]["index_layout"] for m in MODES}
    res["same_index_layout"] = len({tuple(v) for v in layouts.values()}) == 1
    if not res["same_index_layout"]:
        _log(f"  warning: the index layouts differ between modes ({layouts}): search speeds "
             "are not comparable")
    for mode in MODES:
        runs = res[mode]["runs"]
        res[mode]["medians"] = {
            "search_qps": median([r["search"]["qps"] for r in runs]),
            "search_p50_us": median([r["search"]["p50_us"] for r in runs]),
            "delete_ms": median([r["delete"]["median_ms"] for r in runs]),
            "delete_p90_ms": median([r["delete"]["p90_ms"] for r in runs]),
            "delete_fsyncs": median([r["delete"]["fsyncs_per_delete"] for r in runs]),
            "delete_sync_ms": median([r["delete_sync"]["median_ms"] for r in runs]),
            "delete_sync_p90_ms": median([r["delete_sync"]["p90_ms"] for r in runs]),
            "delete_sync_fsyncs": median([r["delete_sync"]["fsyncs_per_delete"] for r in runs]),
            "purge_seconds": median([r["purge"]["seconds"] for r in runs]),
            "purge_mb_per_s": median([r["purge"]["mb_per_s"] for r in runs]),
            "store_mb_before_purge": median([r["purge"]["store_bytes_before"] / MB for r in runs]),
            "store_mb_after_purge": median([r["purge"]["store_bytes_after"] / MB for r in runs]),
            "open_seconds": median([r["open_seconds"] for r in runs]),
        }
    p, e = res["plain"]["runs"], res["encrypted"]["runs"]
    res["encrypted_vs_plain"] = {
        "search": compare(p, e, ("search", "qps"), rate=True,
                          cpu=("search", "cpu_us_per_query")),
        "delete": compare(p, e, ("delete", "median_ms"), rate=False,
                          cpu=("delete", "cpu_us_per_delete")),
        "delete_sync": compare(p, e, ("delete_sync", "median_ms"), rate=False,
                               cpu=("delete_sync", "cpu_us_per_delete")),
        "purge": compare(p, e, ("purge", "seconds"), rate=False, cpu=("purge", "cpu_seconds")),
    }
    return res


def report(ingest: dict[str, Any], sizes: list[dict[str, Any]], repeats: int,
           passphrase: dict[str, Any]) -> list[dict[str, Any]]:
    print()
    print(f"Delete and purge, medians of {repeats} repeat{'s' if repeats > 1 else ''} "
          "(per-delete figures: the median of each run's per-delete median).")
    headers = ["store", "delete (ms)", "fsyncs/delete", "delete + sync (ms)", "purge 1% (s)",
               "store before (MB)", "after (MB)", "purge MB/s"]
    rows = []
    for s in sizes:
        for mode in MODES:
            m = s[mode]["medians"]
            rows.append([f"{s['documents']:,} {mode}", f"{m['delete_ms']:.2f}",
                         f"{m['delete_fsyncs']:.2f}", f"{m['delete_sync_ms']:.2f}",
                         f"{m['purge_seconds']:.2f}", f"{m['store_mb_before_purge']:.1f}",
                         f"{m['store_mb_after_purge']:.1f}", f"{m['purge_mb_per_s']:.1f}"])
    print_table(headers, rows)
    print()
    print("delete: delete_document(id), one at a time (journaled + fsynced; the text record is "
          "zeroed in place, not synced).")
    print("delete + sync: delete_document(id), then engine.sync() (text segment fsync + checkpoint): "
          "what makes the zeroing durable, as forget does.")
    print(f"purge: compact(purge=True) after deleting {PURGE_FRACTION:.0%} of the documents; "
          "MB/s of the store's on-disk size before it (journal, text, index segments).")

    print()
    print("Encryption's overhead (32 raw key bytes, AES-256-GCM), same run. Ratios are of time, "
          "encrypted / plain:")
    print("of the medians; the median of each repeat's pair of runs (adjacent in time, so the "
          "aims use it); of process CPU time.")
    headers = ["measurement", "plain", "encrypted", "ratio of medians", "paired ratio",
               "CPU ratio", "aim"]
    w, b = ingest["writers"], ingest["batch"]

    def row(name: str, c: dict[str, Any], fmt: str, aim: str) -> list[str]:
        value = (fmt_rate if fmt == "rate" else (lambda v: f"{v:.2f}"))
        return [name, value(c["plain"]), value(c["encrypted"]), fmt_ratio(c["time_ratio_of_medians"]),
                fmt_ratio(c["median_paired_time_ratio"]), fmt_ratio(c.get("cpu_ratio_of_medians")),
                aim]

    rows = [row(f"durable puts/s, {WRITERS} writers", w["encrypted_vs_plain"], "rate",
                f"<= {AIM_INGEST}x"),
            row(f"docs/s, put_documents of {BATCH_SIZE:,}", b["encrypted_vs_plain"], "rate",
                f"<= {AIM_INGEST}x")]
    largest = max(sizes, key=lambda s: s["documents"])
    for s in sizes:
        rows.append(row(f"search q/s, {s['documents']:,} docs", s["encrypted_vs_plain"]["search"],
                        "rate", f"<= {AIM_SEARCH}x" if s is largest else "-"))
    for s in sizes:
        c, n = s["encrypted_vs_plain"], f"{s['documents']:,}"
        rows += [row(f"delete ms, {n} docs", c["delete"], "ms", "-"),
                 row(f"delete + sync ms, {n} docs", c["delete_sync"], "ms", "-"),
                 row(f"purge s, {n} docs", c["purge"], "s", "-")]
    print_table(headers, rows)
    print()
    print("Passphrase (Argon2id) for information: creating a store "
          f"{passphrase['create_open_seconds']:.2f} s, reopening it "
          f"{passphrase['reopen_seconds']:.2f} s (raw keys skip this).")
    print(METHOD_NOTE)
    print()
    aims = []
    for text, c, threshold in (
        (f"ingest, {WRITERS} concurrent writers: encrypted time <= {AIM_INGEST}x plain",
         w["encrypted_vs_plain"], AIM_INGEST),
        (f"ingest, put_documents of {BATCH_SIZE:,}: encrypted time <= {AIM_INGEST}x plain",
         b["encrypted_vs_plain"], AIM_INGEST),
        (f"search, {largest['documents']:,} documents: encrypted time <= {AIM_SEARCH}x plain",
         largest["encrypted_vs_plain"]["search"], AIM_SEARCH),
    ):
        measured = c["median_paired_time_ratio"]
        met = None if measured is None else measured <= threshold
        aims.append({"aim": text, "threshold": threshold, "ratio": measured,
                     "ratio_basis": "median of the per-repeat paired ratios of time",
                     "time_ratio_of_medians": c["time_ratio_of_medians"],
                     "cpu_ratio_of_medians": c.get("cpu_ratio_of_medians"), "met": met})
        verdict = "not measured" if met is None else ("MET" if met else "MISSED")
        print(f"Aim: {text}: {verdict}"
              + ("" if measured is None else
                 f" (paired {measured:.2f}x; of medians {c['time_ratio_of_medians']:.2f}x; "
                 f"CPU {c['cpu_ratio_of_medians']:.2f}x)"))
    return aims


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/purge.py",
        description="Cost of delete, delete + sync and compact(purge=True) at 10k and 100k "
                    "documents, plain and encrypted, and encryption's overhead on durable ingest "
                    "and on search, measured in the same run. Prints tables of medians and writes "
                    "every raw measurement to bench/results/purge.json.",
    )
    parser.add_argument("--repeats", type=int, default=None,
                        help="measurements per configuration and mode (default 5; 1 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help=f"a smoke run: stores of {QUICK_SIZES[0]:,} and {QUICK_SIZES[1]:,} "
                             f"documents, {QUICK_DIVISOR}x fewer writes and deletes, one repeat, "
                             "results to purge-quick.json")
    parser.add_argument("--sizes", default=None,
                        help="comma-separated store sizes in documents "
                             f"(default {','.join(map(str, SIZES))})")
    parser.add_argument("--seed", type=int, default=SEED,
                        help="text, query and key seed (default %(default)s)")
    parser.add_argument("--output", type=Path, default=None,
                        help="results JSON (default bench/results/purge.json)")
    args = parser.parse_args(argv)
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 5)
    sizes = ([int(s) for s in args.sizes.split(",") if s.strip()] if args.sizes
             else list(QUICK_SIZES if args.quick else SIZES))
    if repeats < 1 or any(s < 100 for s in sizes):
        parser.error("--repeats must be positive and every size at least 100")
    div = QUICK_DIVISOR if args.quick else 1
    writer_puts = -(-WRITER_PUTS // div // WRITERS) * WRITERS
    batch_docs = -(-BATCH_DOCS // div // BATCH_SIZE) * BATCH_SIZE
    deletes = DELETES // div
    queries_n = QUERIES // div
    for n in sizes:
        if max(1, round(n * PURGE_FRACTION)) + 2 * deletes > n:
            parser.error(f"size {n} is too small for {deletes} + {deletes} deletes and the purge")
    output = args.output or RESULTS_DIR / ("purge-quick.json" if args.quick else "purge.json")

    key_rng = random.Random(args.seed)
    keys: dict[str, bytes | None] = {"plain": None, "encrypted": key_rng.randbytes(32)}
    texts = make_texts(max(*sizes, writer_puts, batch_docs, 1_000), seed=args.seed,
                       min_chars=TEXT_CHARS[0], max_chars=TEXT_CHARS[1])
    queries, vocab_size = make_queries(texts, queries_n + WARMUP_QUERIES, args.seed)
    started = time.perf_counter()
    with scratch_root() as root:
        facts = machine_facts(root)
        facts["source"]["package_path"] = str(Path(hmsengine.__file__).resolve().parent)
        warning = busy_warning()
        if warning:
            _log(warning)
        # Warm-up, not recorded: imports, numba kernels, first open of each mode, the cipher.
        for mode in MODES:
            with fresh_dir(root, "warm") as path:
                ingest_batch(path, keys[mode], _ids("warm", 500), texts[:500], 100)
        with fresh_dir(root, "passphrase") as path:
            passphrase = passphrase_open(path / "store", texts)
        _log("ingest")
        ingest = run_ingest(root, keys, texts, repeats, writer_puts, batch_docs)
        size_results = []
        for n in sizes:
            _log(f"stores of {n:,} documents")
            size_results.append(run_size(root, keys, n, texts, queries, repeats, deletes,
                                         args.seed))
    aims = report(ingest, size_results, repeats, passphrase)
    elapsed = time.perf_counter() - started

    lengths = [len(t) for t in texts]
    payload = {
        "benchmark": "purge",
        "question": QUESTION,
        "date": now_iso(),
        "method": METHOD_NOTE + " Encrypted/plain ratios are ratios of time (plain rate / "
                  "encrypted rate, or encrypted ms / plain ms) from medians of the same run; the "
                  "order of the two modes alternates between repeats. Only the measured call is "
                  "timed; every store-size repeat runs on a fresh copy of a template store.",
        "machine": facts,
        "parameters": {
            "repeats": repeats, "quick": args.quick, "seed": args.seed, "sizes": sizes,
            "text_chars": {"min": min(lengths), "max": max(lengths),
                           "mean": round(sum(lengths) / len(lengths), 1)},
            "encryption": "key = 32 raw bytes (AES-256-GCM; no key derivation in timed loops)",
            "ingest": {"writers": WRITERS, "writer_puts": writer_puts, "batch_size": BATCH_SIZE,
                       "batch_documents": batch_docs},
            "search": {"queries": queries_n, "warmup_queries": WARMUP_QUERIES, "k": 10,
                       "terms": [2, 4], "vocabulary_words": vocab_size,
                       "call": "await engine.search_documents(q, k=10), one at a time"},
            "deletes": deletes, "purge_fraction": PURGE_FRACTION,
            "purge_delete_tasks": DELETE_TASKS,
            "order_per_repeat": "open a copy; search; delete 1% (untimed) then compact(purge=True);"
                                " delete x deletes; delete + engine.sync() x deletes",
            "delete_sync": "await engine.delete_document(id); await engine.sync() (fsync "
                           "documents.text, then append + fsync a journal checkpoint frame)",
            "aims": {"ingest_time_ratio_max": AIM_INGEST, "search_time_ratio_max": AIM_SEARCH},
        },
        "passphrase_open": passphrase,
        "ingest": ingest,
        "stores": size_results,
        "aims": aims,
        "load_average_at_end": load_average(),
        "wall_seconds": round(elapsed, 1),
    }
    path = write_results(output, payload)
    print(f"\nWrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path} "
          f"({elapsed:.0f} s).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
