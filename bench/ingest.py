"""How many durable writes per second does hmsengine take, next to SQLite, on this machine?

Configurations, each measured for hmsengine and SQLite one after the other in the same run:

- N concurrent writers (default 1, 8, 32, 128), one document per transaction. hmsengine: N trio
  tasks, each calling ``await engine.put_document(...)`` in a loop; a put is durable (fsynced,
  group-committed) when it returns. SQLite (stdlib ``sqlite3``, ``journal_mode=WAL``,
  ``synchronous=FULL``): N threads, each running ``INSERT ...`` then ``commit()`` in a loop
  (the sqlite3 module opens the transaction itself), in two variants: every thread with its own
  connection and a busy timeout, and the same connections serialized by one lock. The better of
  the two is the SQLite figure.
- A batch: ``put_documents`` with ``--batch-size`` documents per call (one transaction, one fsync)
  against SQLite ``executemany`` of as many rows in one transaction.

Every measurement uses a fresh store in a new directory on the repository's disk (not tmpfs),
writes a fixed number of unique ids with seeded 100-300 character texts prepared beforehand, and
times only the writing (opening and closing are outside the clock). Repeats are interleaved
(every configuration once, then again) so drift on this shared machine hits both engines alike.

Run: ``python bench/ingest.py`` (about 2-3 minutes), ``--quick`` for a smoke run of seconds.
Writes bench/results/ingest.json (``--quick``: ingest-quick.json) with every raw run.
"""

from __future__ import annotations

import argparse
import gc
import sqlite3
import sys
import threading
import time
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

QUESTION = ("Durable puts/s of hmsengine vs SQLite (WAL, synchronous=FULL) at 1-128 concurrent "
            "writers and in batches")
DEFAULT_WRITERS = (1, 8, 32, 128)
DEFAULT_BATCH = 1000
SEED = 20240611
SQLITE_BUSY_TIMEOUT_S = 60.0
# Writes per measurement at the defaults, sized for ~1-4 s each on this 2-core VM (measured
# here: hmsengine ~2k puts/s alone, 8k-20k with 32 writers, 17k-50k docs/s in batches; SQLite
# 5k-7k commits/s, ~0.9k with contending connections). Rounded up to a multiple of the writers.
HMS_WRITES = {1: 4_000, 8: 16_000, 32: 32_000, 128: 40_000}
# Contending connections fall to ~0.9k commits/s (busy-handler sleeps): fewer writes for them.
SQLITE_OWN_WRITES = {1: 10_000, 8: 5_000, 32: 2_048, 128: 2_560}
SQLITE_LOCKED_WRITES = {8: 8_000, 32: 8_000, 128: 8_000}
BATCH_DOCS = 60_000
QUICK_DIVISOR = 20
# The project's aims: (configuration writers, minimum ratio hmsengine/SQLite).
AIMS = (
    ("32 concurrent writers: hmsengine >= 5x SQLite's durable commits/s", 32, 5.0),
    ("a single writer: hmsengine >= 0.7x SQLite's durable commits/s", 1, 0.7),
)


def _rounded(count: int, multiple: int) -> int:
    return max(multiple, -(-count // multiple) * multiple)


def _writes_for(table: dict[int, int], writers: int, quick: bool) -> int:
    base = table.get(writers) or table[min(table, key=lambda w: abs(w - writers))]
    return _rounded(base // QUICK_DIVISOR if quick else base, writers)


# -- hmsengine -------------------------------------------------------------------------------------


def _hms_stats(engine: Engine) -> dict[str, int]:
    s = engine.statistics()
    return {"transactions": s.transactions, "commits": s.commits, "fsyncs": s.fsyncs,
            "writes": s.writes, "bytes_written": s.bytes_written, "documents": s.documents}


def _hms_run(result: dict[str, Any], before: dict[str, int], after: dict[str, int],
             writes: int, seconds: float) -> dict[str, Any]:
    counted = ("transactions", "commits", "fsyncs", "writes", "bytes_written")
    delta = {k: after[k] - before[k] for k in counted}
    if after["documents"] != before["documents"] + writes:
        raise RuntimeError(f"hmsengine stored {after['documents']} documents, expected {writes}")
    if delta["writes"] != writes:
        raise RuntimeError(f"hmsengine counted {delta['writes']} writes, expected {writes}")
    result.update(
        seconds=seconds, puts_per_s=writes / seconds, **delta,
        fsyncs_per_transaction=delta["fsyncs"] / delta["transactions"],
        transactions_per_fsync=delta["transactions"] / delta["fsyncs"],
    )
    return result


def hms_writers(path: Path, ids: list[str], texts: list[str], writers: int) -> dict[str, Any]:
    """``writers`` trio tasks, each putting its own slice of the documents one at a time."""
    per = len(ids) // writers
    result: dict[str, Any] = {"writers": writers}

    async def main() -> None:
        async with Engine.open(path / "store") as engine:
            async def writer(k: int) -> None:
                put = engine.put_document
                for i in range(k * per, (k + 1) * per):
                    await put(ids[i], texts[i])

            before = _hms_stats(engine)
            start = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for k in range(writers):
                    nursery.start_soon(writer, k)
            seconds = time.perf_counter() - start
            _hms_run(result, before, _hms_stats(engine), per * writers, seconds)

    trio.run(main)
    return result


def hms_batch(path: Path, ids: list[str], texts: list[str], batch: int) -> dict[str, Any]:
    """One task calling ``put_documents`` with ``batch`` documents per call."""
    calls = [[{"id": ids[i], "text": texts[i]} for i in range(j, min(j + batch, len(ids)))]
             for j in range(0, len(ids), batch)]
    result: dict[str, Any] = {"batch_size": batch, "calls": len(calls)}

    async def main() -> None:
        async with Engine.open(path / "store") as engine:
            before = _hms_stats(engine)
            start = time.perf_counter()
            for items in calls:
                await engine.put_documents(items)
            seconds = time.perf_counter() - start
            _hms_run(result, before, _hms_stats(engine), len(ids), seconds)

    trio.run(main)
    return result


# -- SQLite ----------------------------------------------------------------------------------------

SQLITE_SCHEMA = "CREATE TABLE documents (id TEXT PRIMARY KEY, text TEXT NOT NULL)"
SQLITE_INSERT = "INSERT INTO documents (id, text) VALUES (?, ?)"


def _sqlite_connect(db: Path) -> sqlite3.Connection:
    # The default isolation level: the module opens a (deferred) transaction before the INSERT;
    # commit() ends it. ``timeout`` is the busy timeout. synchronous is a per-connection setting.
    conn = sqlite3.connect(db, timeout=SQLITE_BUSY_TIMEOUT_S, check_same_thread=False)
    conn.execute("PRAGMA synchronous=FULL")
    if conn.execute("PRAGMA synchronous").fetchone()[0] != 2:
        raise RuntimeError("SQLite refused synchronous=FULL")
    return conn


def _sqlite_create(path: Path) -> Path:
    db = path / "bench.sqlite"
    conn = sqlite3.connect(db, isolation_level=None)
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if mode.lower() != "wal":
        raise RuntimeError(f"SQLite refused WAL mode (got {mode!r})")
    conn.execute(SQLITE_SCHEMA)
    conn.close()
    return db


def _sqlite_count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])
    finally:
        conn.close()


def sqlite_threads(path: Path, ids: list[str], texts: list[str], threads: int,
                   serialized: bool) -> dict[str, Any]:
    """``threads`` threads, each its own connection, one row per transaction; optionally every
    transaction taken under one shared lock (so SQLite never sees a busy writer)."""
    db = _sqlite_create(path)
    per = len(ids) // threads
    conns = [_sqlite_connect(db) for _ in range(threads)]
    lock = threading.Lock()
    ready = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        conn = conns[k]
        execute, commit = conn.execute, conn.commit
        try:
            ready.wait()
            for i in range(k * per, (k + 1) * per):
                if serialized:
                    with lock:
                        execute(SQLITE_INSERT, (ids[i], texts[i]))
                        commit()
                else:
                    execute(SQLITE_INSERT, (ids[i], texts[i]))
                    commit()
        except BaseException as exc:
            errors.append(exc)

    pool = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(threads)]
    for t in pool:
        t.start()
    ready.wait()
    start = time.perf_counter()
    for t in pool:
        t.join()
    seconds = time.perf_counter() - start
    for conn in conns:
        conn.close()
    if errors:
        raise RuntimeError(f"SQLite writer failed: {errors[0]!r}") from errors[0]
    writes = per * threads
    if _sqlite_count(db) != writes:
        raise RuntimeError("SQLite row count does not match the writes")
    return {"threads": threads, "serialized_by_lock": serialized, "writes": writes,
            "seconds": seconds, "commits_per_s": writes / seconds}


def sqlite_batch(path: Path, ids: list[str], texts: list[str], batch: int) -> dict[str, Any]:
    """``executemany`` of ``batch`` rows per transaction, one connection."""
    db = _sqlite_create(path)
    chunks = [list(zip(ids[j:j + batch], texts[j:j + batch], strict=True))
              for j in range(0, len(ids), batch)]
    conn = _sqlite_connect(db)
    start = time.perf_counter()
    for rows in chunks:
        conn.executemany(SQLITE_INSERT, rows)
        conn.commit()
    seconds = time.perf_counter() - start
    conn.close()
    if _sqlite_count(db) != len(ids):
        raise RuntimeError("SQLite row count does not match the writes")
    return {"batch_size": batch, "transactions": len(chunks), "writes": len(ids),
            "seconds": seconds, "commits_per_s": len(ids) / seconds}


# -- the run ---------------------------------------------------------------------------------------


def _ids(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i:08d}" for i in range(count)]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _plan(writers: list[int], batch: int, quick: bool) -> list[dict[str, Any]]:
    configs: list[dict[str, Any]] = []
    for n in writers:
        configs.append({
            "name": f"{n} writer{'s' if n > 1 else ''}", "kind": "writers", "writers": n,
            "hmsengine_writes": _writes_for(HMS_WRITES, n, quick),
            "sqlite_writes": {"own_connections": _writes_for(SQLITE_OWN_WRITES, n, quick),
                              **({"serialized_by_lock": _writes_for(SQLITE_LOCKED_WRITES, n, quick)}
                                 if n > 1 else {})},
            "sqlite_variants": ["own_connections"] + (["serialized_by_lock"] if n > 1 else []),
        })
    docs = _rounded(BATCH_DOCS // QUICK_DIVISOR if quick else BATCH_DOCS, batch)
    configs.append({"name": f"batch of {batch}", "kind": "batch", "batch_size": batch,
                    "hmsengine_writes": docs, "sqlite_writes": {"executemany": docs},
                    "sqlite_variants": ["executemany"]})
    return configs


def _measure_once(config: dict[str, Any], root: Path, texts: list[str], rep: int) -> None:
    hms_n = config["hmsengine_writes"]
    gc.collect()
    with fresh_dir(root, "hms") as path:
        ids = _ids(f"h{rep}", hms_n)
        if config["kind"] == "batch":
            run = hms_batch(path, ids, texts[:hms_n], config["batch_size"])
        else:
            run = hms_writers(path, ids, texts[:hms_n], config["writers"])
    config["hmsengine"]["runs"].append(run)
    line = (f"  {config['name']:<14} hmsengine {fmt_rate(run['puts_per_s']):>8} puts/s "
            f"({run['transactions_per_fsync']:.1f} txn/fsync)")
    for variant in config["sqlite_variants"]:
        gc.collect()
        sql_n = config["sqlite_writes"][variant]
        with fresh_dir(root, "sqlite") as path:
            ids = _ids(f"s{rep}", sql_n)
            if variant == "executemany":
                srun = sqlite_batch(path, ids, texts[:sql_n], config["batch_size"])
            else:
                srun = sqlite_threads(path, ids, texts[:sql_n], config["writers"],
                                      variant == "serialized_by_lock")
        config["sqlite"][variant]["runs"].append(srun)
        line += f" | SQLite {variant} {fmt_rate(srun['commits_per_s'])}/s"
    _log(line)


def _summarize(config: dict[str, Any]) -> None:
    hms = config["hmsengine"]
    runs = hms["runs"]
    hms["median_puts_per_s"] = median([r["puts_per_s"] for r in runs])
    hms["median_fsyncs_per_transaction"] = median([r["fsyncs_per_transaction"] for r in runs])
    hms["median_transactions_per_fsync"] = median([r["transactions_per_fsync"] for r in runs])
    best_name, best = None, None
    for variant, data in config["sqlite"].items():
        data["median_commits_per_s"] = median([r["commits_per_s"] for r in data["runs"]])
        if best is None or data["median_commits_per_s"] > best:
            best_name, best = variant, data["median_commits_per_s"]
    config["sqlite_best_variant"] = best_name
    config["sqlite_best_median_commits_per_s"] = best
    config["ratio_hmsengine_over_sqlite"] = ratio(hms["median_puts_per_s"], best)


def _report(configs: list[dict[str, Any]], repeats: int) -> list[dict[str, Any]]:
    headers = ["configuration", "hmsengine puts/s", "txn/fsync", "fsyncs/txn", "SQLite own conns",
               "SQLite locked", "SQLite commits/s (best)", "hmsengine/SQLite"]
    rows = []
    for c in configs:
        sq = c["sqlite"]
        own = sq.get("own_connections", sq.get("executemany", {})).get("median_commits_per_s")
        locked = sq.get("serialized_by_lock", {}).get("median_commits_per_s")
        rows.append([
            c["name"], fmt_rate(c["hmsengine"]["median_puts_per_s"]),
            f"{c['hmsengine']['median_transactions_per_fsync']:.1f}",
            f"{c['hmsengine']['median_fsyncs_per_transaction']:.3f}",
            fmt_rate(own), fmt_rate(locked), fmt_rate(c["sqlite_best_median_commits_per_s"]),
            fmt_ratio(c["ratio_hmsengine_over_sqlite"]),
        ])
    print()
    print(f"Durable writes per second, medians of {repeats} repeat{'s' if repeats > 1 else ''}.")
    print_table(headers, rows)
    print()
    print("SQLite: WAL, synchronous=FULL, one row per transaction (INSERT, then COMMIT);")
    print("'own conns' = one connection per thread with a busy timeout, 'locked' = the same")
    print("connections serialized by one lock; the better median is the SQLite figure. Batch row:")
    print("put_documents vs executemany, documents (rows) per second, one transaction per call.")
    print(METHOD_NOTE)
    print()
    aims = []
    by_writers = {c.get("writers"): c for c in configs if c["kind"] == "writers"}
    for text, writers, threshold in AIMS:
        measured = by_writers.get(writers)
        r = None if measured is None else measured["ratio_hmsengine_over_sqlite"]
        met = None if r is None else r >= threshold
        aims.append({"aim": text, "writers": writers, "threshold": threshold, "ratio": r,
                     "met": met})
        verdict = "not measured" if met is None else ("MET" if met else "MISSED")
        print(f"Aim: {text}: {verdict}" + ("" if r is None else f" (measured {r:.2f}x)"))
    return aims


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/ingest.py",
        description="Durable puts/s of hmsengine next to SQLite (WAL, synchronous=FULL), same run, "
                    "same disk: concurrent writers and batches. Prints a table of medians and "
                    "writes every raw measurement to bench/results/ingest.json.",
    )
    parser.add_argument("--repeats", type=int, default=None,
                        help="measurements per configuration and engine "
                             "(default 3; 1 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help=f"a smoke run: {QUICK_DIVISOR}x fewer writes, one repeat, "
                             "results to ingest-quick.json")
    parser.add_argument("--writers", default=",".join(map(str, DEFAULT_WRITERS)),
                        help="comma-separated concurrent writer counts (default %(default)s)")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH,
                        help="documents per put_documents / executemany call (default %(default)s)")
    parser.add_argument("--seed", type=int, default=SEED,
                        help="text generator seed (default %(default)s)")
    parser.add_argument("--output", type=Path, default=None,
                        help="results JSON (default bench/results/ingest.json)")
    args = parser.parse_args(argv)
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    writers = [int(w) for w in args.writers.split(",") if w.strip()]
    if repeats < 1 or args.batch_size < 1 or any(w < 1 for w in writers):
        parser.error("--repeats, --batch-size and every --writers value must be positive")
    output = args.output or RESULTS_DIR / ("ingest-quick.json" if args.quick else "ingest.json")

    configs = _plan(writers, args.batch_size, args.quick)
    for c in configs:
        c["hmsengine"] = {"runs": []}
        c["sqlite"] = {v: {"runs": []} for v in c["sqlite_variants"]}
    most = max(max(c["hmsengine_writes"], *c["sqlite_writes"].values()) for c in configs)
    texts = make_texts(most, seed=args.seed)
    started = time.perf_counter()
    with scratch_root() as root:
        facts = machine_facts(root)
        facts["source"]["package_path"] = str(Path(hmsengine.__file__).resolve().parent)
        warning = busy_warning()
        if warning:
            _log(warning)
        # Warm-up, not recorded: imports, first open, page cache, SQLite's library.
        with fresh_dir(root, "warm") as path:
            hms_writers(path, _ids("w", 200), texts[:200], 1)
        with fresh_dir(root, "warm") as path:
            sqlite_threads(path, _ids("w", 200), texts[:200], 1, False)
        for rep in range(repeats):
            _log(f"repeat {rep + 1}/{repeats}")
            for c in configs:
                _measure_once(c, root, texts, rep)
    for c in configs:
        _summarize(c)
    aims = _report(configs, repeats)
    elapsed = time.perf_counter() - started

    lengths = [len(t) for t in texts]
    payload = {
        "benchmark": "ingest",
        "question": QUESTION,
        "date": now_iso(),
        "method": METHOD_NOTE + " Only the writing is timed; each measurement uses a fresh store "
                  "in a new directory on the repository's disk; repeats are interleaved.",
        "machine": facts,
        "parameters": {
            "repeats": repeats, "quick": args.quick, "seed": args.seed, "writers": writers,
            "batch_size": args.batch_size,
            "text_chars": {"min": min(lengths), "max": max(lengths),
                           "mean": round(sum(lengths) / len(lengths), 1)},
            "hmsengine": "Engine.open(path); put_document(id, text) in each task; "
                         "put_documents(list of {id, text}) per batch call",
            "sqlite": {"journal_mode": "WAL", "synchronous": "FULL",
                       "busy_timeout_s": SQLITE_BUSY_TIMEOUT_S, "schema": SQLITE_SCHEMA,
                       "per_row": "execute(INSERT INTO documents (id, text) VALUES (?, ?)); "
                                  "commit()  (sqlite3 issues the BEGIN)",
                       "batch": "executemany(INSERT ...) of batch_size rows; commit()"},
        },
        "configurations": [{k: v for k, v in c.items()} for c in configs],
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
