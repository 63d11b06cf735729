"""What does continuous replication to S3 cost, and how fast does a store come back from it?

Three measurements against moto's S3 server, run in a process of its own on 127.0.0.1 (the
only S3 server reachable here; it shares the machine's 2 cores with the engine, so the figures
include its CPU, which a real S3 endpoint would not take from the writer):

1. Ingest at 32 concurrent writers (one ``put_document`` per transaction, texts of 100-300
   characters): puts/s with ``replicate_to`` off and on, interleaved repeats in alternating
   order, medians; the ratio
   on/off (aim: at least 0.90, i.e. at most 10% slower).
2. The replication lag under that load: the shipper's p99 over the batches it shipped (the age
   of each durable batch when its object was in the bucket), and the highest lag sampled every
   50 ms during the run (bound: 1 s).
3. Restore: a store of ``--facts`` facts (``Memory.remember_many`` in batches of 5,000, written
   without replication), then opened with replication so it ships (the initial sync, timed),
   then ``hms restore``'s function into a new directory (timed: download, verify, replay,
   rebuild, open with re-indexing and close), then an open of the restored store and a first
   recall (timed: "restored and answering"). Aim: 1M facts in under 60 s.

Run: ``python bench/replication.py`` (1M facts: ~6 minutes here), ``--quick`` for a smoke run,
``--facts N`` for another size. Writes bench/results/replication.json (``--quick``:
replication-quick.json).
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # bench scripts run as files, not as a package
    RESULTS_DIR,
    fresh_dir,
    machine_facts,
    make_texts,
    median,
    now_iso,
    print_table,
    ratio,
    scratch_root,
    write_results,
)

from hmsengine import Engine, RememberInput
from hmsengine.engine import restore_from_bucket
from hmsengine.replication.options import Replication, parse_target

SEED = 20261204
WRITERS = 32
MOTO = ("import sys, time; from moto.server import ThreadedMotoServer as T; "
        "s = T(ip_address='127.0.0.1', port=int(sys.argv[1]), verbose=False); s.start(); "
        "print('up', flush=True); time.sleep(10**6)")


def start_moto() -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", MOTO, str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"up"
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "bench",
           "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1"}
    os.environ.update(env)
    return proc, env


def make_bucket(name: str) -> str:
    import boto3

    boto3.client("s3").create_bucket(Bucket=name)
    return name


def ingest(path: Path, texts: list[str], replicate: str | None, moto_pid: int) -> dict[str, Any]:
    """32 writers, one put per transaction; puts/s, the lag figures when replicating, and the
    CPU seconds of this process and of the S3 server while the writers ran (moto shares this
    machine's 2 cores with the writers; a real endpoint would not, so the engine's own CPU per
    put is the shipper's cost without the server's)."""
    lags: list[float] = []

    async def main() -> dict[str, Any]:
        options = Replication(target=parse_target(replicate)) if replicate else None
        async with Engine.open(path, replicate_to=options) as engine:
            per = len(texts) // WRITERS

            async def writer(k: int) -> None:
                for i in range(k * per, (k + 1) * per):
                    await engine.put_document(f"d{i}", texts[i])

            async def sample(scope: trio.CancelScope) -> None:
                with scope:
                    while True:
                        lags.append(engine.statistics().replication_lag_ms)
                        await trio.sleep(0.05)

            sampler = trio.CancelScope()
            gc.collect()
            started, cpu, moto = time.perf_counter(), time.process_time(), cpu_seconds(moto_pid)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sample, sampler)  # in both modes, so both carry its cost
                async with trio.open_nursery() as writers:
                    for k in range(WRITERS):
                        writers.start_soon(writer, k)
                elapsed = time.perf_counter() - started
                used, moto_used = time.process_time() - cpu, cpu_seconds(moto_pid) - moto
                sampler.cancel()
            stats = engine.statistics()
            return {"puts": per * WRITERS, "seconds": elapsed, "puts_per_s": per * WRITERS / elapsed,
                    "lag_p99_ms": stats.replication_lag_p99_ms if replicate else None,
                    "lag_max_sampled_ms": max(lags) if replicate and lags else None,
                    "objects": stats.replication_objects, "fsyncs": stats.fsyncs,
                    "engine_cpu_us_per_put": used / (per * WRITERS) * 1e6,
                    "s3_server_cpu_seconds": moto_used}

    return trio.run(main)


def build_facts(path: Path, count: int) -> float:
    texts = make_texts(count, seed=SEED + 1)

    async def main() -> float:
        started = time.perf_counter()
        async with Engine.open(path) as engine:
            memory = engine.memory()
            for start in range(0, count, 5000):
                await memory.remember_many([RememberInput(text=t, subject=f"s{(start + i) % 997}")
                                            for i, t in enumerate(texts[start:start + 5000])])
        return time.perf_counter() - started

    return trio.run(main)


def initial_sync(path: Path, url: str) -> float:
    async def main() -> float:
        started = time.perf_counter()
        options = Replication(target=parse_target(url), close_timeout=600)
        async with Engine.open(path, replicate_to=options) as engine:
            while engine.statistics().replication_pending_bytes:
                await trio.sleep(0.1)
        # Leaving the block shipped the index persisted at close, before the lease was released.
        return time.perf_counter() - started

    return trio.run(main)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (the S3 server's), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def restore_and_answer(url: str, dest: Path, moto_pid: int) -> dict[str, Any]:
    """Wall seconds, and CPU seconds of this process and of the S3 server: on this shared
    machine the CPU figures say what the restore costs whatever else runs beside it."""
    async def main() -> dict[str, Any]:
        load = list(os.getloadavg())
        started, cpu, moto = time.perf_counter(), time.process_time(), cpu_seconds(moto_pid)
        reports = await restore_from_bucket(url, dest)
        restored, restored_cpu = time.perf_counter() - started, time.process_time() - cpu
        async with Engine.open(dest) as engine:
            opened, opened_cpu = time.perf_counter() - started, time.process_time() - cpu
            hits = await engine.memory().recall("quarterly report due Friday", k=10)
            answering = time.perf_counter() - started
            stats = engine.statistics()
            return {"restore_seconds": restored, "opened_seconds": opened,
                    "restored_and_answering_seconds": answering,
                    "restore_cpu_seconds": restored_cpu, "opened_cpu_seconds": opened_cpu,
                    "restored_and_answering_cpu_seconds": time.process_time() - cpu,
                    "s3_server_cpu_seconds": cpu_seconds(moto_pid) - moto,
                    "documents": stats.documents, "first_recall_hits": len(hits),
                    "index_documents_loaded": stats.index_documents_loaded,
                    "index_documents_tokenized": stats.index_documents_tokenized,
                    "index_files": reports[0].index_files, "index_note": reports[0].index_note,
                    "objects": reports[0].objects, "bucket_bytes": reports[0].bytes,
                    "load_average_before": load, "load_average_after": list(os.getloadavg())}

    return trio.run(main)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--facts", type=int, default=None)
    parser.add_argument("--puts", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None, help="ingest repeats (default 3; 1 quick)")
    args = parser.parse_args()
    facts = args.facts or (20_000 if args.quick else 1_000_000)
    puts = args.puts or (3_200 if args.quick else 32_000)
    repeats = args.repeats or (1 if args.quick else 3)
    proc, _env = start_moto()
    runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    try:
        with scratch_root() as root:
            texts = make_texts(puts, seed=SEED)
            for n in range(repeats):
                # The order alternates, so drift on this shared machine hits both alike.
                for mode in (("off", "on") if n % 2 == 0 else ("on", "off")):
                    url = f"s3://{make_bucket(f'ingest-{n}-{mode}')}/s" if mode == "on" else None
                    with fresh_dir(root, f"ingest-{mode}") as path:
                        runs[mode].append(ingest(path, texts, url, proc.pid))
                    print(f"ingest {mode} #{n + 1}: {runs[mode][-1]['puts_per_s']:,.0f} puts/s")
            url = f"s3://{make_bucket('restore')}/big"
            with fresh_dir(root, "facts") as path, fresh_dir(root, "restored") as dest:
                build = build_facts(path, facts)
                print(f"built {facts} facts in {build:.1f} s")
                sync = initial_sync(path, url)
                print(f"initial sync in {sync:.1f} s")
                restore = restore_and_answer(url, dest / "store", proc.pid)
                print(f"restored in {restore['restore_seconds']:.1f} s")
    finally:
        proc.kill()
    on = median([r["puts_per_s"] for r in runs["on"]])
    cpu_on = median([r["engine_cpu_us_per_put"] for r in runs["on"]])
    cpu_off = median([r["engine_cpu_us_per_put"] for r in runs["off"]])
    off = median([r["puts_per_s"] for r in runs["off"]])
    results = {
        "benchmark": "replication", "date": now_iso(),
        "question": "Ingest with replication on vs off at 32 writers, replication lag p99 under "
                    "that load, restore speed of a large store from the bucket",
        "method": __doc__, "machine": machine_facts(),
        "parameters": {"writers": WRITERS, "puts": puts, "repeats": repeats, "facts": facts,
                       "quick": args.quick, "s3": "moto server (own process, 127.0.0.1)"},
        "ingest_runs": runs,
        "ingest": {"off_puts_per_s": off, "on_puts_per_s": on, "ratio_on_off": ratio(on, off),
                   "lag_p99_ms": median([r["lag_p99_ms"] for r in runs["on"]]),
                   "lag_max_sampled_ms": max(r["lag_max_sampled_ms"] or 0 for r in runs["on"]),
                   "engine_cpu_us_per_put_off": cpu_off, "engine_cpu_us_per_put_on": cpu_on,
                   "s3_server_cpu_seconds_on": median([r["s3_server_cpu_seconds"]
                                                       for r in runs["on"]])},
        "restore": {"facts": facts, "build_seconds": build, "initial_sync_seconds": sync, **restore},
    }
    results["targets"] = [
        {"target": "replication on >= 0.90x the puts/s of off (32 writers)",
         "value": results["ingest"]["ratio_on_off"], "met": (ratio(on, off) or 0) >= 0.90},
        {"target": "lag p99 < 1000 ms under load", "value": results["ingest"]["lag_p99_ms"],
         "met": (results["ingest"]["lag_p99_ms"] or 0) < 1000},
        {"target": f"{facts} facts restored and answering < 60 s",
         "value": restore["restored_and_answering_seconds"],
         "met": restore["restored_and_answering_seconds"] < 60},
    ]
    print_table(["figure", "value"], [
        ["puts/s, replication off", f"{off:,.0f}"], ["puts/s, replication on", f"{on:,.0f}"],
        ["ratio on/off", f"{ratio(on, off):.2f}"],
        ["engine CPU us/put, off / on", f"{cpu_off:.0f} / {cpu_on:.0f}"],
        ["S3 server CPU s per run (on)", f"{results['ingest']['s3_server_cpu_seconds_on']:.1f}"],
        ["lag p99 (ms)", str(results["ingest"]["lag_p99_ms"])],
        ["lag max sampled (ms)", str(results["ingest"]["lag_max_sampled_ms"])],
        [f"restore {facts} facts (s)", f"{restore['restore_seconds']:.1f}"],
        ["restored and answering (s)", f"{restore['restored_and_answering_seconds']:.1f}"],
        ["  CPU s: engine + S3 server", f"{restore['restored_and_answering_cpu_seconds']:.1f} + "
                                        f"{restore['s3_server_cpu_seconds']:.1f}"],
    ])
    name = "replication-quick.json" if args.quick else "replication.json"
    print(f"wrote {write_results(RESULTS_DIR / name, results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
