"""The file and portability commands of ``hms``: ``remember-file``, ``hydrate``, ``inspect``,
``export``, ``import``, ``snapshot`` and ``restore``. Each is one call on the public API; long
ones show a progress bar on a terminal and nothing under ``--json`` or in a pipe."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from .errors import InvalidRequest
from .facade import Engine
from .portability.inspect import inspect_file

FILE_COMMANDS = ("remember-file", "hydrate", "export", "import", "snapshot", "restore")


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("remember-file", parents=[common],
                       help="remember a reference to a file's bytes (checksummed, not copied)")
    p.add_argument("uri", help="a path or file:// URI (no other scheme is ever fetched)")
    p.add_argument("--range", metavar="OFFSET:LENGTH", help="a byte range (default: the whole file)")
    p.add_argument("--format", help="the file's format, e.g. csv")
    p.add_argument("--summary", help="what search sees (without it: stored, not searchable)")
    p.add_argument("--id", help="the fact's id (default: named after the reference)")
    p.add_argument("--subject")
    p.add_argument("--namespace", default="default")

    p = sub.add_parser("hydrate", parents=[common],
                       help="write a file-backed fact's bytes to stdout, after checking their sha256")
    p.add_argument("id")
    p.add_argument("--output", metavar="FILE", help="write the bytes here instead of stdout")

    p = sub.add_parser("inspect", parents=[common],
                       help="describe a CSV, JSONL or Parquet file (advisory; needs no store)")
    p.add_argument("path")
    p.add_argument("--full", action="store_true", help="read every row or line (default: a sample)")

    p = sub.add_parser("export", parents=[common],
                       help="write every fact, document and tombstone as JSONL (.jsonl or .jsonl.gz)")
    p.add_argument("path")

    p = sub.add_parser("import", parents=[common],
                       help="import a JSONL export (all lines checked first, one transaction)")
    p.add_argument("path")
    _max_bytes(p)

    p = sub.add_parser("snapshot", parents=[common], help="write a checksummed snapshot directory")
    p.add_argument("path", help="a new or empty directory")
    p.add_argument("--format", choices=("hmsengine-v2", "hotmem-v2"), default="hmsengine-v2")
    p.add_argument("--attachments", action="store_true",
                   help="also carry the bytes of file-backed ranges under 8 KiB")

    p = sub.add_parser("restore", parents=[common],
                       help="verify a snapshot (ours or HotMem's v2) and restore it into --store; "
                            "or, with --from, rebuild --store from a replica in a bucket")
    p.add_argument("path", nargs="?", help="a snapshot directory (without --from)")
    p.add_argument("--from", dest="source", metavar="s3://BUCKET/PREFIX[/TENANT]",
                   help="a replicated store (or the tenants of `hms serve --replicate-to`); "
                        "--store must be new or empty")
    p.add_argument("--known-at", metavar="TIME",
                   help="with --from: the state as committed by then (ISO 8601 or ms)")
    _max_bytes(p)


def _max_bytes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-bytes", type=int, metavar="BYTES", default=None,
                        help="read at most this much of the input (default 1 GiB; gzip counted "
                             "decompressed; with --from: per store, default no limit)")


def inspect(args: argparse.Namespace) -> dict[str, Any]:
    """``hms inspect``: runs without opening a store."""
    return inspect_file(args.path, validation="full" if args.full else "sampled")


def inspect_lines(result: dict[str, Any]) -> list[str]:
    lines = [f"{result['path']}: {result['format'] or 'unknown format'}, {result['size']} bytes"]
    if result.get("unsupported_reason"):
        lines.append(f"  unsupported: {result['unsupported_reason']}")
    if result.get("columns"):
        lines.append(f"  columns: {', '.join(str(c) for c in result['columns'])}")
    if result.get("row_count") is not None:
        lines.append(f"  rows: {result['row_count']}")
    for key, value in sorted((result.get("metadata") or {}).items()):
        lines.append(f"  {key}: {value}")
    for error in result.get("errors") or ():
        lines.append(f"  [red]line {error.get('line')}[/]: {error.get('message')}")
    return lines


def _range(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        offset, length = value.split(":")
        return int(offset), int(length)
    except ValueError:
        raise InvalidRequest(f"range: expected OFFSET:LENGTH in bytes, got {value!r}") from None


@contextlib.contextmanager
def progress_bar(out: Any, label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on a terminal (never under --json or in a pipe), as a callback."""
    if out.json or not sys.stdout.isatty():
        yield None
        return
    from rich.progress import Progress

    with Progress(console=out.console, transient=False) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


async def run(engine: Engine, args: argparse.Namespace, out: Any) -> None:
    cmd = args.command
    if cmd == "remember-file":
        memory = engine.memory()
        path = args.uri
        if "://" not in path and not Path(path).is_absolute():
            path = str(Path(path).resolve())  # a command line's relative path means the cwd
        result = await memory.remember_file(path, byte_range=_range(args.range), format=args.format,
                                            summary=args.summary, id=args.id,
                                            subject=args.subject, namespace=args.namespace)
        if out.json:
            out.emit(result)
        else:
            out.print(("[green]remembered[/] " if result.created else "already remembered ") + result.id)
    elif cmd == "hydrate":
        data = await engine.memory().hydrate(args.id)
        if args.output:
            Path(args.output).write_bytes(data)
            if out.json:
                out.emit({"id": args.id, "bytes": len(data), "output": args.output})
            else:
                out.print(f"wrote {len(data)} bytes to {args.output}")
        else:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
    elif cmd == "export":
        with progress_bar(out, "exporting") as progress:
            counts = await engine.export_jsonl(args.path, progress=progress)
        if out.json:
            out.emit({"path": args.path, **counts})
        else:
            out.print(f"exported {counts['facts']} fact(s), {counts['documents']} document(s), "
                      f"{counts['tombstones']} tombstone(s) to {args.path}")
    elif cmd in ("import", "restore"):
        with progress_bar(out, "importing" if cmd == "import" else "restoring") as progress:
            if cmd == "import":
                report = await engine.import_jsonl(args.path, progress=progress,
                                                   max_bytes=args.max_bytes)
            else:
                report = await engine.restore(args.path, progress=progress,
                                              max_bytes=args.max_bytes)
        # Facts that came without vectors get them from the embedder the store records, so a
        # hybrid store stays whole; a lexical store is left as it is (hms reembed makes it hybrid).
        with progress_bar(out, "embedding") as progress:
            embedded = await engine.memory().embed_missing(progress=progress)
        if out.json:
            out.emit({**attrs.asdict(report), "embedded": embedded})
        else:
            verb = "imported" if cmd == "import" else "restored"
            out.print(f"{verb} {report.added}, skipped {report.skipped} already stored, "
                      f"{report.tombstones} tombstone(s) ({report.purged} purged)")
            if embedded:
                out.print(f"embedded {embedded} fact(s) that came without a vector")
            if report.refused:
                out.print(f"[yellow]refused {len(report.refused)} purged id(s)[/]: "
                          + ", ".join(report.refused[:10]))
    elif cmd == "snapshot":
        with progress_bar(out, "snapshotting") as progress:
            manifest = await engine.snapshot(args.path, format=args.format,
                                             attachments=args.attachments, progress=progress)
        if out.json:
            out.emit(manifest)
        else:
            ident = manifest.get("snapshotId") or manifest.get("snapshot_id") or ""
            out.print(f"snapshot {ident} ({args.format}) written to {args.path}")


def restore_lines(reports: list[Any]) -> list[str]:
    """The human summary of ``hms restore --from``: one line per restored store."""
    lines = []
    for r in reports:
        name = f"tenant {r.tenant}: " if r.tenant else ""
        when = f", as known at {r.known_at} ms" if r.known_at is not None else ""
        lines.append(f"{name}restored {r.documents} document(s), revision {r.revision}{when}, "
                     f"from {r.source} ({r.generation}, {r.objects} object(s), {r.bytes} bytes) "
                     f"into {r.store} in {r.seconds:.1f} s")
        if r.index_files:
            lines.append(f"{name}with its persisted index ({r.index_files} file(s)): the first "
                         "open adopts it")
        elif r.index_note:
            lines.append(f"{name}the first open indexes it: {r.index_note}")
    return lines


__all__ = ["FILE_COMMANDS", "add_parsers", "inspect", "inspect_lines", "restore_lines", "run"]
