"""The ``hms`` command: thin over the public API.

Commands: the memory ones (``remember``, ``recall``, ``explain``, ``history``, ``forget``,
``load``, ``compact``; in cli_memory.py), the file and portability ones (``remember-file``,
``hydrate``, ``inspect``, ``export``, ``import``, ``snapshot``, ``restore``; in cli_files.py),
``get`` (a fact with its stamp), the document ones (``put``, ``delete``, ``stats``), ``check``
(reads a closed store without opening it), ``init`` (creates a store and records its memory
policies), ``demo``, ``serve`` and ``mcp``; docs/cli.md documents each.

Only the commands of ``CREATING_COMMANDS`` create a store; every other one on a path with no
store says "no store at PATH" (exit 2), so a mistyped ``--store`` never answers from a new,
empty store.

``main(argv=None) -> int`` is testable without a subprocess. Exit codes: 0 ok, 1 not found,
2 bad input, 3 conflict, 4 store problem. Every error is printed with its code and hint; a
traceback only with ``--debug``. ``--json`` prints machine-readable output.

The store comes from ``--store`` or ``HMS_STORE`` (default ``./hms-store``), an encryption key
from the environment variable ``--key-env`` names (never from the command line). Global options
are accepted before or after the command.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import traceback
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import attrs
import trio

from . import cli_files, cli_memory, extras
from .clock import to_ms
from .engine import CheckReport, check_store, store_exists
from .errors import Conflict, HmsError, InvalidRequest, NotFound, WrongKey
from .extras import MissingExtra
from .facade import Engine
from .memory import stored_policies as policies
from .memory.config import SUPERSESSION, MemoryConfig

EXIT_OK, EXIT_NOT_FOUND, EXIT_BAD_INPUT, EXIT_CONFLICT, EXIT_STORE = 0, 1, 2, 3, 4
# The commands that may create the store they are given; every other one needs an existing store.
CREATING_COMMANDS = ("init", "remember", "remember-file", "put", "load", "import", "restore")


def _exit_code(exc: HmsError) -> int:
    if isinstance(exc, NotFound):
        return EXIT_NOT_FOUND
    if isinstance(exc, InvalidRequest):
        return EXIT_BAD_INPUT
    if isinstance(exc, Conflict):
        return EXIT_CONFLICT
    return EXIT_STORE


def _globals() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", default=argparse.SUPPRESS,
                        help="store directory (default: $HMS_STORE or ./hms-store)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="machine-readable JSON output")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks")
    common.add_argument("--key-env", metavar="NAME", default=argparse.SUPPRESS,
                        help="read the store's encryption key from this environment variable")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _globals()
    parser = argparse.ArgumentParser(prog="hms", parents=[common],
                                     description="hmsengine: an embedded memory engine for agents")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("put", parents=[common], help="store a document (replaces the id)")
    p.add_argument("id")
    p.add_argument("text", help="the text, or - to read it from standard input")
    p.add_argument("--metadata", help="a JSON object")
    p = sub.add_parser("get", parents=[common],
                       help="print a fact (or document) with its stamp; reads no file")
    p.add_argument("id")
    p = sub.add_parser("delete", parents=[common], help="delete a document")
    p.add_argument("id")
    p = sub.add_parser("stats", parents=[common], help="store statistics")
    p.add_argument("--replicate-to", metavar="s3://BUCKET/PREFIX",
                   help="open the store replicating to this bucket: the replication fields then "
                        "say how much is not yet shipped (it is shipped before the command ends)")
    p = sub.add_parser("check", parents=[common],
                       help="verify every checksum of a closed store; prove strings are absent")
    p.add_argument("--absent", action="append", default=[], metavar="TEXT",
                   help="a string that must occur in no file, decoded (repeatable)")
    p = sub.add_parser("init", parents=[common],
                       help="create a store (or open one) and record its memory policies")
    p.add_argument("--supersession", choices=SUPERSESSION,
                   help="the store's supersession policy (kept in the store)")
    p.add_argument("--memory-config", metavar="FILE",
                   help="a MemoryConfig as JSON: its policies are recorded in the store")
    cli_memory.add_parsers(sub, common)
    cli_files.add_parsers(sub, common)
    sub.add_parser("demo", parents=[common], help="a scripted tour on a temporary store")
    p = sub.add_parser("serve", help="serve the JSON contract over HTTP, one store per tenant "
                                     "(needs the 'server' extra)")
    _serve_arguments(p)
    p = sub.add_parser("mcp", parents=[common],
                       help="an MCP server over stdio on --store (needs the 'server' extra)")
    p.add_argument("--memory-config", metavar="FILE", help="a MemoryConfig as JSON")
    return parser


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    # server/serve.py imports no dependency of the server extra at its top, so its options
    # parse without it; running it says what is missing (_missing_extra).
    from .server.serve import add_arguments

    add_arguments(parser)


def _missing_extra(exc: MissingExtra) -> int:
    """One line naming the extra and the command that installs it (never a traceback)."""
    print(f"error: {exc.msg}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _emit(args: argparse.Namespace, value: Any, human: Callable[[], str]) -> None:
    if getattr(args, "json", False):
        print(json.dumps(value, ensure_ascii=False, sort_keys=True))
    else:
        print(human())


def _key(args: argparse.Namespace) -> str | None:
    """The key from the environment variable ``--key-env`` names (never from the command line)."""
    name = getattr(args, "key_env", None)
    if name is None:
        return None
    value = os.environ.get(name)
    if not value:
        raise InvalidRequest(f"key_env: the environment variable {name!r} is not set",
                             hint=f"export {name}=... (the key) and run again")
    return value


class _IndexProgress:
    """A progress bar for the re-indexing at open, shown only on a terminal (never under
    --json) and only when there is enough to index to be worth watching."""

    MIN_DOCUMENTS = 20_000

    def __init__(self, args: argparse.Namespace) -> None:
        self.enabled = not getattr(args, "json", False) and sys.stdout.isatty()
        self.bar: Any = None
        self.task: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < self.MIN_DOCUMENTS:
            return
        if self.bar is None:
            from rich.progress import Progress

            self.bar = Progress(transient=True)
            self.bar.start()
            self.task = self.bar.add_task("indexing the store", total=total)
        self.bar.update(self.task, completed=done, total=total)
        if done >= total:
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def store_path(args: argparse.Namespace) -> str:
    """The store ``--store`` names, else ``$HMS_STORE``, else ``./hms-store``."""
    return getattr(args, "store", None) or os.environ.get("HMS_STORE") or "./hms-store"


def require_store(store: str) -> None:
    """``InvalidRequest`` "no store at PATH" unless a store was created there: commands that
    only read or remove (every command but those of ``CREATING_COMMANDS``) never create one, so a
    mistyped ``--store`` is an error, not an empty answer from a new empty store."""
    if not store_exists(store):
        raise InvalidRequest(
            f"no store at {store}",
            hint="check --store (or $HMS_STORE); a store is created by the commands that add to "
                 f"it ({', '.join(CREATING_COMMANDS)})")


async def _run(args: argparse.Namespace) -> int:
    store = store_path(args)
    args.store_existed = store_exists(store)
    if args.command not in CREATING_COMMANDS and not args.store_existed:
        require_store(store)
    progress = _IndexProgress(args)
    try:
        return await _run_open(args, store, progress)
    finally:
        progress.close()


async def _run_open(args: argparse.Namespace, store: str, progress: _IndexProgress) -> int:
    async with Engine.open(store, key=_key(args), progress=progress,
                           replicate_to=getattr(args, "replicate_to", None)) as engine:
        if args.command == "init":
            await _init(engine, args, store)
        elif args.command in cli_memory.MEMORY_COMMANDS:
            code = await cli_memory.run(engine, args)
            if code:
                return code
        elif args.command in cli_files.FILE_COMMANDS:
            await cli_files.run(engine, args, cli_memory.Output(args))
        elif args.command == "put":
            text = sys.stdin.read() if args.text == "-" else args.text
            try:
                metadata = json.loads(args.metadata) if args.metadata else None
            except ValueError as exc:
                raise InvalidRequest(f"metadata: not valid JSON ({exc})") from None
            result = await engine.put_document(args.id, text, metadata=metadata)
            _emit(args, attrs.asdict(result),
                  lambda: f"{'created' if result.created else 'replaced'} {result.id} "
                          f"(revision {result.revision})")
        elif args.command == "get":
            fact = await engine.memory().get(args.id)
            if fact is None:
                raise NotFound(f"no fact or document with id {args.id!r}")
            _emit(args, cli_memory.to_jsonable(fact), lambda: cli_memory.fact_text(fact))
        elif args.command == "delete":
            existed = await engine.delete_document(args.id)
            if not existed:
                raise NotFound(f"no document with id {args.id!r}")
            _emit(args, {"deleted": args.id}, lambda: f"deleted {args.id}")
        elif args.command == "stats":
            stats = attrs.asdict(engine.statistics())
            _emit(args, stats, lambda: "\n".join(f"{k:16} {v}" for k, v in stats.items()))
    return EXIT_OK


async def _restore_replica(args: argparse.Namespace) -> int:
    """``hms restore --from s3://...``: rebuild --store from a bucket (no store is opened first)."""
    from .engine import restore_from_bucket

    if args.path is not None:
        raise InvalidRequest("restore: give either a snapshot PATH or --from, not both")
    store = store_path(args)
    when = cli_memory.parse_time(args.known_at, "known_at")
    known_at = None if when is None else to_ms(when, field="known_at")
    reports = await restore_from_bucket(args.source, store, known_at=known_at, key=_key(args),
                                        max_bytes=args.max_bytes)
    _emit(args, [attrs.asdict(r) for r in reports],
          lambda: "\n".join(cli_files.restore_lines(reports)))
    return EXIT_OK


async def _init(engine: Engine, args: argparse.Namespace, store: str) -> None:
    """``hms init``: the store exists now; record the policies given, print the store's."""
    wanted: dict[str, Any] = {}
    if args.memory_config:
        wanted.update(policies.given(_read_config(args.memory_config)))
    if args.supersession is not None:
        wanted["supersession"] = args.supersession
    created = not args.store_existed
    record = await policies.change(engine, wanted) if wanted else \
        policies.record_of(engine).value or policies.policies_of(MemoryConfig())
    defaults = policies.policies_of(MemoryConfig())
    changed = {k: v for k, v in record.items() if v != defaults[k]}
    _emit(args, {"store": store, "created": created, "policies": record},
          lambda: f"{'initialized' if created else 'store'} {store}: " + (
              ", ".join(f"{k} {v if isinstance(v, str) else json.dumps(v)}"
                        for k, v in changed.items()) + " (other memory policies: the defaults)"
              if changed else "the default memory policies"))


def _read_config(path: str) -> dict[str, Any]:
    try:
        body = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidRequest(f"--memory-config {path}: cannot read it as JSON ({exc})") from None
    if not isinstance(body, dict):
        raise InvalidRequest(f"--memory-config {path}: expected a JSON object")
    return body


def _inspect(args: argparse.Namespace) -> int:
    """``hms inspect``: no store is opened; an unreadable path is bad input."""
    try:
        result = cli_files.inspect(args)
    except HmsError as exc:
        return _report(args, exc)
    out = cli_memory.Output(args)
    if out.json:
        out.emit(result)
    else:
        out.print("\n".join(cli_files.inspect_lines(result)))
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    """``hms check``: the store is read, never opened (so nothing is written to it). Exit 0 whole,
    1 findings, 2 bad input (a wrong key, no store, an empty ``--absent``), 4 locked or unreadable."""
    store = store_path(args)
    try:
        report = check_store(store, key=_key(args), absent=args.absent)
    except HmsError as exc:
        code = _report(args, exc)
        return EXIT_BAD_INPUT if isinstance(exc, WrongKey) else code
    if getattr(args, "json", False):
        print(json.dumps(attrs.asdict(report), ensure_ascii=False, sort_keys=True))
    else:
        print("\n".join(check_lines(store, report)))
    return EXIT_OK if report.ok else EXIT_NOT_FOUND


def check_lines(store: str, report: CheckReport) -> list[str]:
    """The human output of ``hms check``."""
    lines = [f"checked {store} ({report.generation or 'no live generation'}): {report.files} "
             f"files, {report.frames} journal frames, {report.records} text records, "
             f"{report.segments} index segments, {report.bytes} bytes"]
    if report.absent:
        lines.append(f"searched the decoded content for {len(report.absent)} string(s)")
    lines.extend(f"note: {note}" for note in report.notes)
    for f in report.findings:
        at = "" if f.offset is None else f" @ {f.offset}"
        kind = "" if f.absent is not None else \
            f" [{'rebuildable' if f.rebuildable else 'not rebuildable'}]"
        lines.append(f"{'FOUND' if f.absent is not None else 'DAMAGED'} {f.file}{at}: "
                     f"{f.what}{kind}")
    lines.append("whole: every checksum and authentication tag verified" + (
        ", no --absent string found" if report.absent else "") if report.ok
        else f"{len(report.findings)} finding(s)")
    return lines


def _report(args: argparse.Namespace, exc: HmsError) -> int:
    if getattr(args, "debug", False):
        traceback.print_exc()
    if getattr(args, "json", False):
        print(json.dumps({"error": exc.to_json()}), file=sys.stderr)
    else:
        print(f"error [{exc.code}]: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
    return _exit_code(exc)


def main(argv: list[str] | None = None) -> int:
    """Run ``hms`` with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse's own usage errors and --help
        return int(exc.code or 0) and EXIT_BAD_INPUT
    if args.command == "inspect":
        return _inspect(args)
    if args.command == "check":
        return _check(args)
    if args.command == "demo":
        from .demo import main as demo_main

        return demo_main()
    if args.command in ("serve", "mcp"):
        try:
            extras.require(f"hms {args.command}", "server",
                           ("starlette", "hypercorn") if args.command == "serve" else ("mcp",))
        except MissingExtra as exc:
            return _missing_extra(exc)
        if args.command == "serve":
            from .server.serve import run as serve_run

            return serve_run(args)
        from .mcp import run as mcp_run

        return mcp_run(store_path(args), args.memory_config)
    if args.command == "restore" and args.source is not None:
        runner: Callable[[], Coroutine[Any, Any, int]] = lambda: _restore_replica(args)  # noqa: E731
    elif args.command == "restore" and args.known_at is not None:
        return _report(args, InvalidRequest("--known-at needs --from (a bucket to restore from)"))
    elif args.command == "restore" and args.path is None:
        return _report(args, InvalidRequest("restore: give a snapshot PATH or --from s3://...",
                                            hint="hms restore --from s3://bucket/prefix --store DIR"))
    else:
        runner = lambda: _run(args)  # noqa: E731
    try:
        return trio.run(runner)
    except HmsError as exc:
        return _report(args, exc)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of our output went away (``hms recall x | head``): not an error of ours.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - so the exit flush cannot fail again
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
