"""How many mixed remember/recall requests per second does `hms serve` answer on loopback, and how
fast, next to hotmem's own server on the same workload?

Workload, the same for both servers, in the same run: 32 concurrent clients, each with its own
keep-alive HTTP connection (an ``httpx.AsyncClient`` in one trio task), send 200 requests each,
a seeded mix of half writes and half searches in a seeded order:

- hmsengine (``hms serve --root DIR --port 0``): ``POST /api/v1/memory/remember`` with
  ``{"text", "id"}`` and ``POST /api/v1/memory/recall`` with ``{"query", "k": 5}``. A remember is
  durable when answered (fsynced, group-committed across clients).
- hotmem 0.2.6 (``hotmem serve --db FILE --port P``: FastAPI under uvicorn, SQLite in WAL mode
  with ``synchronous=NORMAL``, its default ``hash`` embedder): ``POST /v1/add`` with
  ``{"identifier", "fact"}`` and ``POST /v1/search`` with ``{"query", "top_k": 5}``. With
  ``synchronous=NORMAL`` a WAL commit is not fsynced when it returns: a write it acknowledged can
  be lost by a power failure, where hmsengine's cannot. The figures below do not even that out.

Each server starts on a fresh store in a new directory on the repository's disk and is first
loaded with ``--preload`` facts through the same API (not timed; recall then searches a real
corpus), then the clock runs over the 32 x 200 requests. Latency is per request, measured in the
client from send to the parsed answer; an error is any transport failure or non-200 answer.
Every server runs alone (the other is stopped); repeats alternate the two servers. The load
generator runs in this process, on the same 2 vCPUs as the server it drives: both servers pay
for it alike.

Run: ``python bench/server.py`` (about 3 minutes, most of it hotmem's), ``--quick`` for a smoke
run of seconds, ``--repeats 3`` for medians of three alternating runs.
Writes bench/results/server.json (``--quick``: server-quick.json) with every raw run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
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

QUESTION = ("Mixed remember/recall requests/s and latency of `hms serve` on loopback, 32 "
            "concurrent clients, next to hotmem's own server on the same workload")
SEED = 20240611
CLIENTS = 32
REQUESTS = 200
PRELOAD = 1000
QUICK = {"requests": 20, "preload": 200}
START_TIMEOUT_S = 60.0
HOTMEM_VERSION = "0.2.6"


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the two servers -------------------------------------------------------------------------------


class Server:
    """A server subprocess; ``remember``/``recall`` build its two kinds of request."""

    name = ""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.proc, self.url, self.log = proc, url, log

    def remember(self, fact_id: str, text: str) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def recall(self, query: str) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


class Hms(Server):
    name = "hmsengine"

    def remember(self, fact_id: str, text: str) -> tuple[str, dict[str, Any]]:
        return "/api/v1/memory/remember", {"text": text, "id": fact_id}

    def recall(self, query: str) -> tuple[str, dict[str, Any]]:
        return "/api/v1/memory/recall", {"query": query, "k": 5}

    @classmethod
    def start(cls, directory: Path) -> Hms:
        log = directory / "server.log"
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "hmsengine.cli", "serve", "--root", str(directory / "root"),
                 "--host", "127.0.0.1", "--port", "0"],
                stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL)
        assert proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            if select.select([proc.stdout], [], [], 0.2)[0]:
                line = proc.stdout.readline().decode()
                if "listening on " in line:
                    return cls(proc, line.rsplit("listening on ", 1)[1].strip(), log)
        proc.kill()
        raise RuntimeError(f"hms serve did not start: {log.read_text(errors='replace')[-2000:]}")


class HotMem(Server):
    name = "hotmem"

    def remember(self, fact_id: str, text: str) -> tuple[str, dict[str, Any]]:
        return "/v1/add", {"identifier": fact_id, "fact": text}

    def recall(self, query: str) -> tuple[str, dict[str, Any]]:
        return "/v1/search", {"query": query, "top_k": 5}

    @classmethod
    def start(cls, directory: Path) -> HotMem:
        with socket.socket() as s:  # a free port: hotmem serve has no "any port" option
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log = directory / "server.log"
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-c", "import sys; from hotmem.cli import main; "
                 "sys.argv[0] = 'hotmem'; main()", "serve", "--db",
                 str(directory / "hotmem.sqlite"), "--host", "127.0.0.1", "--port", str(port)],
                stdout=err, stderr=err, stdin=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/v1/health", timeout=2).status_code == 200:
                    return cls(proc, url, log)
            time.sleep(0.2)
        proc.kill()
        raise RuntimeError(f"hotmem serve did not start: {log.read_text(errors='replace')[-2000:]}")


def hotmem_unavailable() -> str | None:
    """Why hotmem's server cannot run here, or None."""
    try:
        import importlib.metadata

        version = importlib.metadata.version("hotmem")
    except importlib.metadata.PackageNotFoundError:
        return f"hotmem is not installed (pip install hotmem=={HOTMEM_VERSION})"
    if version != HOTMEM_VERSION:
        return f"hotmem {version} is installed; this benchmark is defined for {HOTMEM_VERSION}"
    try:
        import hotmem.cli
        import hotmem.server  # noqa: F401
    except ImportError as exc:
        return f"hotmem's server cannot be imported: {exc}"
    return None


# -- the workload ----------------------------------------------------------------------------------


def plan(client: int, requests: int, texts: list[str], seed: int) -> list[tuple[str, str, str]]:
    """One client's requests: ("remember", id, text) or ("recall", "", query), seeded."""
    rng = random.Random(seed * 1000 + client)
    kinds = ["remember"] * (requests // 2) + ["recall"] * (requests - requests // 2)
    rng.shuffle(kinds)
    out = []
    for n, kind in enumerate(kinds):
        if kind == "remember":
            out.append(("remember", f"c{client}-{n}", texts[rng.randrange(len(texts))]))
        else:
            words = [w.strip(".,'") for w in texts[rng.randrange(len(texts))].split()]
            words = [w for w in words if len(w) > 3] or ["report"]
            out.append(("recall", "", " ".join(rng.sample(words, min(3, len(words))))))
    return out


async def drive(server: Server, plans: list[list[tuple[str, str, str]]]) -> dict[str, Any]:
    """Send every client's plan concurrently; latencies (s) per kind, errors, wall time."""
    latencies: dict[str, list[float]] = {"remember": [], "recall": []}
    errors: list[str] = []

    async def client(requests: list[tuple[str, str, str]]) -> None:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=60) as http:
            for kind, fact_id, text in requests:
                path, body = (server.remember(fact_id, text) if kind == "remember"
                              else server.recall(text))
                started = time.perf_counter()
                try:
                    response = await http.post(path, content=json.dumps(body).encode(),
                                               headers={"Content-Type": "application/json"})
                    response.json()
                except (httpx.HTTPError, ValueError) as exc:
                    errors.append(f"{kind}: {type(exc).__name__}: {exc}")
                    continue
                latencies[kind].append(time.perf_counter() - started)
                if response.status_code != 200:
                    errors.append(f"{kind}: HTTP {response.status_code}: {response.text[:200]}")

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for requests in plans:
            nursery.start_soon(client, requests)
    wall = time.perf_counter() - started
    return {"latencies": latencies, "errors": errors, "wall_s": wall}


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    both = result["latencies"]["remember"] + result["latencies"]["recall"]
    requests = len(both) + len(result["errors"])

    def ms(values: list[float], q: float) -> float | None:
        value = _pct(values, q)
        return None if value is None else round(value * 1000, 3)

    return {
        "requests": requests, "errors": len(result["errors"]),
        "error_samples": result["errors"][:5], "wall_s": round(result["wall_s"], 3),
        "requests_per_s": round(requests / result["wall_s"], 1) if result["wall_s"] else None,
        "p50_ms": ms(both, 0.50), "p99_ms": ms(both, 0.99),
        "remember_p50_ms": ms(result["latencies"]["remember"], 0.50),
        "remember_p99_ms": ms(result["latencies"]["remember"], 0.99),
        "recall_p50_ms": ms(result["latencies"]["recall"], 0.50),
        "recall_p99_ms": ms(result["latencies"]["recall"], 0.99),
    }


@contextlib.contextmanager
def running(kind: type[Server], directory: Path) -> Iterator[Server]:
    server = kind.start(directory)
    try:
        yield server
    finally:
        rc = server.stop()
        if rc != 0 and kind is Hms:
            _log(f"warning: hms serve exited {rc}")


def measure(kind: type[Server], root: Path, texts: list[str], args: argparse.Namespace,
            rep: int) -> dict[str, Any]:
    with fresh_dir(root, kind.name) as directory, running(kind, directory) as server:
        preload_plans = [[("remember", f"p{c}-{n}", texts[(c * 7919 + n) % len(texts)])
                          for n in range(args.preload // args.clients)]
                         for c in range(args.clients)]
        loaded = trio.run(drive, server, preload_plans)
        if loaded["errors"]:
            raise RuntimeError(f"{kind.name}: preload failed: {loaded['errors'][:3]}")
        plans = [plan(c, args.requests, texts, args.seed + rep) for c in range(args.clients)]
        summary = summarize(trio.run(drive, server, plans))
    _log(f"  {kind.name}: {summary['requests_per_s']} req/s, p50 {summary['p50_ms']} ms, "
         f"p99 {summary['p99_ms']} ms, {summary['errors']} errors")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/server.py",
        description="Mixed remember/recall over HTTP on loopback: hms serve next to hotmem's "
                    "server, same run, same workload (32 clients x 200 requests). Prints a table "
                    "of medians and writes every run to bench/results/server.json.")
    parser.add_argument("--quick", action="store_true",
                        help=f"a smoke run: {QUICK['requests']} requests per client, "
                             f"{QUICK['preload']} preloaded facts, results to server-quick.json")
    parser.add_argument("--clients", type=int, default=CLIENTS,
                        help="concurrent clients (default %(default)s)")
    parser.add_argument("--requests", type=int, default=None,
                        help=f"requests per client (default {REQUESTS})")
    parser.add_argument("--preload", type=int, default=None,
                        help=f"facts stored before the clock starts (default {PRELOAD})")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs per server, alternating (default %(default)s: hotmem needs "
                             "~2 minutes a run at this size)")
    parser.add_argument("--no-hotmem", action="store_true", help="measure hmsengine alone")
    parser.add_argument("--seed", type=int, default=SEED, help="workload seed (default %(default)s)")
    parser.add_argument("--output", type=Path, default=None,
                        help="results JSON (default bench/results/server.json)")
    args = parser.parse_args(argv)
    args.requests = args.requests or (QUICK["requests"] if args.quick else REQUESTS)
    args.preload = args.preload if args.preload is not None else (
        QUICK["preload"] if args.quick else PRELOAD)
    repeats = args.repeats
    if min(args.clients, args.requests, repeats) < 1 or args.preload < 0:
        parser.error("--clients, --requests and --repeats must be positive")
    output = args.output or RESULTS_DIR / ("server-quick.json" if args.quick else "server.json")

    hotmem_skipped = "--no-hotmem was given" if args.no_hotmem else hotmem_unavailable()
    kinds: list[type[Server]] = [Hms] if hotmem_skipped else [Hms, HotMem]
    if hotmem_skipped:
        _log(f"hotmem is not measured: {hotmem_skipped}")
    texts = make_texts(4000, seed=args.seed)
    runs: dict[str, list[dict[str, Any]]] = {k.name: [] for k in kinds}
    started = time.perf_counter()
    with scratch_root() as root:
        facts = machine_facts(root)
        warning = busy_warning()
        if warning:
            _log(warning)
        for rep in range(repeats):
            _log(f"repeat {rep + 1}/{repeats}")
            for kind in (kinds if rep % 2 == 0 else list(reversed(kinds))):
                try:
                    runs[kind.name].append(measure(kind, root, texts, args, rep))
                except Exception as exc:  # a server that fails is reported, not hidden
                    if kind is Hms:
                        raise
                    hotmem_skipped = f"hotmem failed: {exc}"
                    _log(hotmem_skipped)
                    kinds = [Hms]
                    runs.pop(kind.name, None)
                    break
    elapsed = time.perf_counter() - started

    keys = ("requests_per_s", "p50_ms", "p99_ms", "remember_p50_ms", "remember_p99_ms",
            "recall_p50_ms", "recall_p99_ms")
    medians = {name: {k: median([r[k] for r in rs if r[k] is not None]) for k in keys}
               | {"errors": sum(r["errors"] for r in rs), "requests": sum(r["requests"] for r in rs)}
               for name, rs in runs.items()}
    rows = [[name, str(m["requests"]), str(m["errors"]), fmt_rate(m["requests_per_s"]),
             f"{m['p50_ms']:.2f}", f"{m['p99_ms']:.2f}", f"{m['remember_p50_ms']:.2f}",
             f"{m['recall_p50_ms']:.2f}"] for name, m in medians.items()]
    print(f"\n{args.clients} clients x {args.requests} requests (half remember, half recall), "
          f"{args.preload} facts preloaded, median of {repeats} run(s):\n")
    print_table(["server", "requests", "errors", "req/s", "p50 ms", "p99 ms", "remember p50",
                 "recall p50"], rows)
    speedup = None
    if "hotmem" in medians:
        speedup = ratio(medians["hmsengine"]["requests_per_s"], medians["hotmem"]["requests_per_s"])
        print(f"\nhmsengine / hotmem requests/s: {fmt_ratio(speedup)}")
    else:
        print(f"\nhotmem not measured: {hotmem_skipped}")

    payload = {
        "benchmark": "server",
        "question": QUESTION,
        "date": now_iso(),
        "method": METHOD_NOTE + " Each run: a fresh store, preloaded through the API untimed, "
                  "then the clients' requests timed; servers alternate across repeats.",
        "machine": facts,
        "parameters": {
            "clients": args.clients, "requests_per_client": args.requests,
            "preload": args.preload, "repeats": repeats, "quick": args.quick, "seed": args.seed,
            "mix": "half remember, half recall, seeded order per client",
            "hmsengine": "hms serve --root DIR --port 0; POST /api/v1/memory/remember {text, id}; "
                         "POST /api/v1/memory/recall {query, k: 5}; a remember is fsynced "
                         "(group commit) before its answer",
            "hotmem": (f"hotmem {HOTMEM_VERSION}: hotmem serve --db FILE (uvicorn, SQLite WAL, "
                       "synchronous=NORMAL: a commit is not fsynced before its answer), default "
                       "hash embedder; POST /v1/add {identifier, fact}; POST /v1/search "
                       "{query, top_k: 5}"),
            "client": "httpx.AsyncClient per client (one keep-alive connection), trio, "
                      "in the benchmark process",
        },
        "hotmem_skipped": hotmem_skipped,
        "medians": medians,
        "hmsengine_over_hotmem_requests_per_s": speedup,
        "runs": runs,
        "load_average_at_end": load_average(),
        "wall_seconds": round(elapsed, 1),
    }
    path = write_results(output, payload)
    print(f"\nWrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path} "
          f"({elapsed:.0f} s).")
    errors = sum(m["errors"] for m in medians.values())
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
