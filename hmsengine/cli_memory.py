"""The memory commands of ``hms`` (``remember``, ``recall``, ``explain``, ``history``,
``forget``, ``load``, ``compact``): their arguments, their calls on the public API, and their
human (rich) and ``--json`` output. ``hmsengine.cli`` parses and handles errors."""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import sys
from typing import Any

import attrs

from .errors import InvalidRequest
from .facade import Engine
from .memory import ForgetScope, Memory
from .wire import PLAIN

STATUS_STYLE = {"current": "green", "superseded": "yellow", "expired": "red",
                "future": "cyan", "unknown": "magenta"}
DURATION_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
MEMORY_COMMANDS = ("remember", "recall", "explain", "history", "forget", "load", "compact",
                   "list", "retention",
                   "reembed")


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """The memory subcommands, each with the global options."""
    p = sub.add_parser("remember", parents=[common], help="remember a fact")
    p.add_argument("text", help="the fact's text, or - to read it from standard input")
    p.add_argument("--id", help="the fact's id (default: named after its content)")
    p.add_argument("--subject", help="the slot it describes, e.g. alice/city")
    p.add_argument("--entity", action="append", default=[], help="an entity it names (repeatable)")
    p.add_argument("--valid-from", metavar="TIME", help="when it became true")
    p.add_argument("--valid-to", metavar="TIME", help="when it stopped being true")
    p.add_argument("--event-time", metavar="TIME", help="when it happened or was observed")
    p.add_argument("--supersedes", action="append", default=[], metavar="ID",
                   help="a fact it replaces (repeatable)")
    p.add_argument("--kind", default="fact", help="fact, episode, profile, procedure (default fact)")
    p.add_argument("--namespace", default="default")
    p.add_argument("--metadata", help="a JSON object")
    p.add_argument("--retain-until", metavar="TIME",
                   help="when the store must stop keeping it (then it is no longer recalled)")

    p = sub.add_parser("list", parents=[common], help="browse the facts, newest first, a page at a time")
    p.add_argument("--namespace")
    p.add_argument("--subject")
    p.add_argument("--entity")
    p.add_argument("--kind", action="append", metavar="KIND", help="a kind to list (repeatable)")
    p.add_argument("--status", action="append", metavar="STATUS",
                   help="current (default), superseded, expired, not-yet-valid, "
                        "expired-retention, or all (repeatable)")
    _time_options(p)
    p.add_argument("--limit", type=int, default=20, help="facts per page (1-1000, default 20)")
    p.add_argument("--cursor", help="the cursor a previous page printed, to continue")

    p = sub.add_parser("retention", parents=[common],
                       help="show or set the default retention of namespaces, or apply it")
    p.add_argument("action", choices=("show", "set", "clear", "apply"))
    p.add_argument("namespace", nargs="?", help="the namespace (set, clear)")
    p.add_argument("duration", nargs="?", help="how long to keep its facts (set): 30d, 12h, 90m, 45s or ms")
    p.add_argument("--dry-run", action="store_true", help="apply: say what would go; change nothing")
    p.add_argument("--purge", action="store_true", help="apply: then compact with purge")

    p = sub.add_parser("recall", parents=[common], help="search memory, with time travel")
    p.add_argument("query")
    _time_options(p)
    p.add_argument("--history", choices=("current", "all", "historical"), default="current",
                   help="which facts: current (default), all, or only historical ones")
    p.add_argument("--explain", action="store_true", help="lay out why each hit came back")
    p.add_argument("--k", type=int, default=10, help="how many hits (default 10)")
    p.add_argument("--subject")
    p.add_argument("--kind", action="append", metavar="KIND", help="a kind to search (repeatable)")
    p.add_argument("--namespace")

    p = sub.add_parser("explain", parents=[common], help="why a fact came back for a query, or not")
    p.add_argument("query")
    p.add_argument("id")
    _time_options(p)

    p = sub.add_parser("history", parents=[common], help="a fact's supersession chain, oldest first")
    p.add_argument("id")

    p = sub.add_parser("forget", parents=[common], help="forget the facts of one scope")
    scope = p.add_mutually_exclusive_group(required=True)
    scope.add_argument("--ids", nargs="+", metavar="ID")
    scope.add_argument("--subject")
    scope.add_argument("--entity")
    scope.add_argument("--namespace")
    scope.add_argument("--ingested-before", metavar="TIME")
    scope.add_argument("--event-before", metavar="TIME")
    scope.add_argument("--metadata", metavar="JSON", help="facts whose metadata has every key: value")
    scope.add_argument("--source", metavar="PATH",
                       help="everything derived from one source: a file (file-backed facts, "
                            "the episodes `hms load` made of it and the facts drawn from them), "
                            "a file:// URI or a loaded document's name")
    p.add_argument("--include-chain", action="store_true",
                   help="also forget what they supersede and what supersedes them")
    p.add_argument("--dry-run", action="store_true", help="say what would go; change nothing")
    p.add_argument("--purge", action="store_true",
                   help="then compact with purge, so no byte of their text stays in the store's files")

    p = sub.add_parser("load", parents=[common],
                       help="load Markdown files, globs or directories (recursive) as episodes, "
                            "one document per file, keyed by its path relative to the directory")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--glob", action="append", metavar="PATTERN",
                   help="which files of a directory to load (default *.md; repeatable; a "
                        "pattern with / matches the relative path, ** any depth)")
    p.add_argument("--prune", action="store_true",
                   help="forget what came from files an earlier load of the directory loaded "
                        "and that are gone now (without it they are only listed)")
    p.add_argument("--namespace", default="default")

    sub.add_parser("reembed", parents=[common],
                   help="embed every fact again with the bundled embedder and record it as the "
                        "store's (needs the 'embed' extra)")

    p = sub.add_parser("compact", parents=[common], help="rewrite the store's files compactly")
    p.add_argument("--purge", action="store_true",
                   help="also remove every trace of deleted text from the older files")


def _time_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--as-of", metavar="TIME", help="what was true at this moment")
    p.add_argument("--known-at", metavar="TIME", help="only what the store knew at this moment")


def parse_time(value: str | None, field: str) -> int | _dt.datetime | None:
    """Integer ms, or ISO 8601 with a timezone; anything else is ``InvalidRequest``."""
    if value is None:
        return None
    text = value.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = _dt.datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        raise InvalidRequest(f"{field}: expected ISO 8601 or integer ms, got {value!r}",
                             hint="e.g. 2025-01-31T12:00:00Z or 1738324800000") from None
    if moment.tzinfo is None:
        raise InvalidRequest(f"{field}: {value!r} has no timezone, so it is ambiguous",
                             hint="add one, e.g. 2025-01-31T12:00:00Z or +01:00")
    return moment


def _json_object(value: str | None, field: str) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise InvalidRequest(f"{field}: not valid JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise InvalidRequest(f"{field}: expected a JSON object")
    return parsed


def to_jsonable(value: Any) -> Any:
    """The ``--json`` form of a value: ``wire.PLAIN`` (the JSON contract's converter with the
    attribute names as they are)."""
    return PLAIN.unstructure(value)


def fact_text(fact: Any) -> str:
    """A fact for a person: its text, then the stamp fields that are set."""
    lines = [fact.text or "(no text)"]
    fields = [("id", fact.id), ("kind", fact.kind), ("namespace", fact.namespace),
              ("subject", fact.subject), ("entities", ", ".join(fact.entities) or None),
              ("valid", f"{_when(fact.valid_from)} .. {_when(fact.valid_to)}"
               if fact.valid_from is not None or fact.valid_to is not None else None),
              ("event time", _when(fact.event_time) if fact.event_time is not None else None),
              ("ingested", _when(fact.ingest_time) if fact.ingest_time else None),
              ("supersedes", ", ".join(fact.supersedes) or None),
              ("sources", ", ".join(fact.sources) or None), ("actor", fact.actor),
              ("importance", fact.importance),
              ("metadata", json.dumps(fact.metadata, ensure_ascii=False) if fact.metadata else None)]
    if fact.file is not None:
        f = fact.file
        fields.append(("file", f"{f.uri} [{f.offset}, +{f.length}] of {f.size} bytes, "
                               f"sha256 {f.sha256[:16]}..."))
    lines.extend(f"-- {name}: {value}" for name, value in fields if value is not None)
    return "\n".join(lines)


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC).strftime("%Y-%m-%d %H:%M")


def _status(status: str) -> str:
    return f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"


class Output:
    """Where a command writes: JSON lines under ``--json``, rich otherwise."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.json = bool(getattr(args, "json", False))
        self._console: Any = None

    @property
    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            # A pipe gets whole lines (no wrapping at 80 columns), a terminal its own width.
            width = None if sys.stdout.isatty() else 200
            self._console = Console(highlight=False, soft_wrap=False, width=width)
        return self._console

    def busy(self, message: str) -> Any:
        """A spinner while a long step runs, on a terminal only (never under --json)."""
        if self.json or not sys.stdout.isatty():
            return contextlib.nullcontext()
        return self.console.status(message)

    def emit(self, value: Any) -> None:
        print(json.dumps(to_jsonable(value), ensure_ascii=False, sort_keys=True))

    def print(self, *items: Any) -> None:
        self.console.print(*items)

    def facts_table(self, title: str, rows: list[tuple[Any, ...]], columns: tuple[str, ...]) -> None:
        from rich.table import Table

        table = Table(title=title, title_justify="left")
        for name in columns:
            table.add_column(name, overflow="fold")
        for row in rows:
            table.add_row(*(str(c) for c in row))
        self.print(table)


def _explanation_lines(e: Any) -> list[str]:
    if e.rank is not None:
        why = "came back"
    elif not e.known:
        why = "did not come back: the store did not know it yet"
    elif e.status != "current":
        why = f"did not come back: it is {e.status} at that moment"
    else:
        why = "did not come back: it ranked below the cut"
    lines = [f"[bold]{e.id}[/] {why}" + (f" at rank {e.rank}" if e.rank is not None else ""),
             f"  status       {_status(e.status)} at {_when(e.evaluated_at)}"
             f" (valid {_when(e.valid_from)} .. {_when(e.valid_to)})",
             f"  lexical      {e.lexical if e.lexical is not None else '-'}"
             f"  matched terms: {', '.join(e.matched_terms) or 'none'}",
             f"  semantic     {e.semantic if e.semantic is not None else '-'}",
             f"  fusion       {e.fusion} {e.weights}",
             f"  multipliers  recency {e.recency_multiplier:g}, historical {e.historical_multiplier:g}"
             f", importance {e.importance_multiplier:g}"]
    if e.chain:
        lines.append(f"  chain        {' -> '.join(e.chain)}")
    if e.score is not None:
        lines.append(f"  score        {e.score:.4f}")
    if not e.known:
        lines.append("  known        [red]no[/]: the store did not know it at --known-at")
    return lines


async def run(engine: Engine, args: argparse.Namespace) -> int:
    """Run one memory command on the open ``engine``; its exit code (0, or 1 for a forget that
    matched nothing or named ids that are not there)."""
    out = Output(args)
    if args.command == "compact":
        await _compact(engine, args, out)
        return 0
    code = await _COMMANDS[args.command](engine.memory(), args, out)
    return code or 0


async def _compact(engine: Engine, args: argparse.Namespace, out: Output) -> None:
    with out.busy("compacting" + (" with purge" if args.purge else "")):
        # Compaction applies retention first (Engine.compact does too; this says how much).
        expired = await engine.memory().apply_retention(dry_run=False)
        report = await engine.compact(purge=args.purge)
    if out.json:
        out.emit({**attrs.asdict(report), "retention": {"removed": list(expired.removed)}})
    else:
        out.print(f"compacted: {report.documents} documents, {report.bytes_before} -> "
                  f"{report.bytes_after} bytes" + (" (purged)" if report.purged else "")
                  + (f"; {len(expired.removed)} fact(s) past their retention forgotten"
                     if expired.removed else ""))


async def _reembed(memory: Memory, args: argparse.Namespace, out: Output) -> None:
    from .cli_files import progress_bar

    with progress_bar(out, "re-embedding") as progress:
        count = await memory.reembed(progress=progress)
    identity = memory.embedder_identity or {}
    if out.json:
        out.emit({"reembedded": count, "embedder": identity})
    else:
        out.print(f"re-embedded {count} document(s) with {identity.get('model')} "
                  f"(dim {identity.get('dim')})")


async def _remember(memory: Memory, args: argparse.Namespace, out: Output) -> None:
    text = sys.stdin.read() if args.text == "-" else args.text
    result = await memory.remember(
        text, id=args.id, subject=args.subject, entities=tuple(args.entity),
        valid_from=parse_time(args.valid_from, "valid_from"),
        valid_to=parse_time(args.valid_to, "valid_to"),
        event_time=parse_time(args.event_time, "event_time"),
        supersedes=tuple(args.supersedes), kind=args.kind, namespace=args.namespace,
        metadata=_json_object(args.metadata, "metadata"),
        retain_until=parse_time(args.retain_until, "retain_until"))
    if out.json:
        out.emit(result)
    else:
        verb = "[green]remembered[/]" if result.created else "already remembered"
        tail = f" (supersedes {', '.join(result.superseded)})" if result.superseded else ""
        out.print(f"{verb} {result.id}{tail}")


async def _recall(memory: Memory, args: argparse.Namespace, out: Output) -> None:
    hits = await memory.recall(
        args.query, k=args.k, history=args.history, explain=args.explain,
        as_of=parse_time(args.as_of, "as_of"), known_at=parse_time(args.known_at, "known_at"),
        subject=args.subject, namespace=args.namespace, kinds=args.kind or None)
    if out.json:
        out.emit({"hits": hits})
        return
    if not hits:
        out.print("no facts match")
        return
    out.facts_table(f"recall {args.query!r}", [
        (n, h.fact.id, _status(h.status), f"{h.score:.3f}", h.fact.text)
        for n, h in enumerate(hits, 1)], ("#", "id", "status", "score", "text"))
    if args.explain:
        for h in hits:
            if h.explanation is not None:
                out.print("\n".join(_explanation_lines(h.explanation)))


async def _explain(memory: Memory, args: argparse.Namespace, out: Output) -> None:
    explanation = await memory.explain(args.query, args.id,
                                       as_of=parse_time(args.as_of, "as_of"),
                                       known_at=parse_time(args.known_at, "known_at"))
    if out.json:
        out.emit(explanation)
    else:
        out.print("\n".join(_explanation_lines(explanation)))


async def _history(memory: Memory, args: argparse.Namespace, out: Output) -> None:
    facts = await memory.history(args.id)
    if out.json:
        out.emit({"facts": facts})
    else:
        out.facts_table(f"history of {args.id}", [
            (f.id, _when(f.valid_from), _when(f.valid_to), _when(f.ingest_time), f.text)
            for f in facts], ("id", "valid from", "valid to", "ingested", "text"))


async def _forget(memory: Any, args: argparse.Namespace, out: Output) -> int:
    """``hms forget``: exit 1 when the scope matched nothing, or when ``--ids`` named ids that
    hold no fact (the others are forgotten, as ``rm`` removes what it can)."""
    with out.busy("forgetting and purging" if args.purge and not args.dry_run else "forgetting"):
        report = await memory.forget(_scope(args), include_chain=args.include_chain,
                                     dry_run=args.dry_run, purge=args.purge)
    removed = set(report.removed)
    missing = [i for i in dict.fromkeys(args.ids or ())
               if i not in removed and await memory.get(i) is None]
    if out.json:
        out.emit({**attrs.asdict(report), "matched": len(report.removed), "not_found": missing})
    elif not report.removed:
        out.print("nothing to forget: the scope matched 0 facts")
    else:
        verb = "would forget" if report.dry_run else "forgot"
        out.print(f"{verb} {len(report.removed)} fact(s): {', '.join(report.removed)}"
                  + (" [bold](purged)[/]" if args.purge and not report.dry_run else ""))
        if report.relinked:
            out.print(f"relinked: {', '.join(report.relinked)}")
    if missing and not out.json:
        out.print(f"[yellow]not found[/]: {', '.join(missing)}")
    return 1 if missing or not report.removed else 0


def _scope(args: argparse.Namespace) -> ForgetScope:
    if args.ids:
        return ForgetScope.ids(args.ids)
    if args.subject is not None:
        return ForgetScope.subject(args.subject)
    if args.entity is not None:
        return ForgetScope.entity(args.entity)
    if args.namespace is not None:
        return ForgetScope.namespace(args.namespace)
    if args.ingested_before is not None:
        return ForgetScope.ingested_before(parse_time(args.ingested_before, "ingested_before"))  # type: ignore[arg-type]
    if args.event_before is not None:
        return ForgetScope.event_before(parse_time(args.event_before, "event_before"))  # type: ignore[arg-type]
    if args.source is not None:
        return ForgetScope.source(args.source)
    return ForgetScope.metadata(_json_object(args.metadata, "metadata") or {})


async def _load(memory: Memory, args: argparse.Namespace, out: Output) -> None:
    from .cli_load import load  # directories, --glob, true counts (cli_load.py)

    await load(memory, args, out)


def parse_duration(value: str | None) -> int:
    """``30d``, ``12h``, ``90m``, ``45s``, ``250ms`` or plain ms, as ms."""
    text = (value or "").strip().lower()
    for unit in ("ms", "d", "h", "m", "s"):
        number = text.removesuffix(unit)
        if number != text and number.isdigit():
            return int(number) * DURATION_UNITS[unit]
    if text.isdigit():
        return int(text)
    raise InvalidRequest(f"duration: expected e.g. 30d, 12h, 90m, 45s or ms, got {value!r}")


async def _list(memory: Any, args: argparse.Namespace, out: Output) -> None:
    status: Any = args.status[0] if args.status and len(args.status) == 1 else (
        tuple(args.status) if args.status else None)
    kind: Any = args.kind[0] if args.kind and len(args.kind) == 1 else (
        tuple(args.kind) if args.kind else None)
    page = await memory.list(namespace=args.namespace, subject=args.subject, entity=args.entity,
                             kind=kind, status=status, as_of=parse_time(args.as_of, "as_of"),
                             known_at=parse_time(args.known_at, "known_at"), limit=args.limit,
                             cursor=args.cursor)
    if out.json:
        out.emit({"items": page.items, "nextCursor": page.next_cursor})
        return
    if not page.items:
        out.print("no facts" if args.cursor is None else "no more facts")
    else:
        out.facts_table("facts, newest first", [
            (f.id, f.namespace, f.subject or "-", f.kind, _when(f.ingest_time), f.text)
            for f in page.items], ("id", "namespace", "subject", "kind", "ingested", "text"))
    if page.next_cursor is not None:
        out.print(f"more: add --cursor {page.next_cursor}")


async def _retention(memory: Any, args: argparse.Namespace, out: Output) -> None:
    action = args.action
    if action in ("set", "clear") and not args.namespace:
        raise InvalidRequest(f"retention {action}: name the namespace")
    if action == "set":
        await memory.set_retention(args.namespace, parse_duration(args.duration))
    elif action == "clear":
        await memory.set_retention(args.namespace, None)
    elif action == "apply":
        with out.busy("applying retention"):
            report = await memory.apply_retention(dry_run=args.dry_run, purge=args.purge)
        if out.json:
            out.emit(report)
        else:
            verb = "would forget" if report.dry_run else "forgot"
            out.print(f"{verb} {len(report.removed)} fact(s) past their retention")
        return
    defaults = memory.retention
    if out.json:
        out.emit({"retention": defaults})
    elif not defaults:
        out.print("no namespace has a default retention")
    else:
        for namespace, ms in sorted(defaults.items()):
            out.print(f"{namespace}: {_duration_text(ms)}")


def _duration_text(ms: int) -> str:
    for unit in ("d", "h", "m", "s"):
        if ms % DURATION_UNITS[unit] == 0:
            return f"{ms // DURATION_UNITS[unit]}{unit}"
    return f"{ms}ms"


# Each handler returns None (exit 0) or its exit code (hms forget: 1 when nothing matched).
_COMMANDS: dict[str, Any] = {
    "reembed": _reembed, "remember": _remember, "recall": _recall, "explain": _explain,
    "history": _history, "forget": _forget, "load": _load, "list": _list, "retention": _retention}
