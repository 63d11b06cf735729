"""``hms load``: Markdown files, globs and whole directories into episodes, with true counts.

What is loaded:

* a **directory** is walked recursively (hidden files and directories, those whose name starts
  with ``.``, are skipped; symbolic links to directories are not followed); its files whose name
  matches a ``--glob`` pattern (default ``*.md``; a pattern holding ``/`` is matched against the
  path relative to the directory, ``**`` for any depth) are loaded;
* a **glob** (``'notes/**/*.md'``, quoted so that ``hms`` expands it) loads its matches, relative
  to the directory its fixed part names (``notes``);
* a **file** is loaded relative to its own directory.

Each file is one document, keyed by its path relative to that root: ``guide.md`` is the document
``guide`` (episodes ``guide-0001``, ...) and ``ops/guide.md`` is ``ops:guide``, another one. The
episodes record the file's absolute path as their source, so ``hms forget --source PATH`` finds
them by it. Only regular files are read (a FIFO or device met on the way is refused at once, never
opened for reading), each at most ``MAX_FILE_BYTES``, as UTF-8.

The counts are per file and true on a repeated load: **new** (no episode of its document
existed), **changed** (something was written: a new revision of a chunk, or new chunks),
**unchanged** (nothing written, no extractor called). **Removed**: a file that an earlier load of
the same directory (or glob) loaded, that matches the same patterns, and is gone now. Its
episodes are kept (a load never forgets by itself): the output lists the files, and ``--prune``
forgets what came from them (``ForgetScope.source``), as ``hms forget --source`` would.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys
from pathlib import PurePosixPath
from typing import Any

import attrs
import trio

from .errors import InvalidRequest
from .localfiles import NotRegular, TooLarge, open_regular, read_whole
from .memory.sources import loaded_under
from .memory.values import ForgetScope

DEFAULT_GLOB = "*.md"
MAX_FILE_BYTES = 64 * 1024 * 1024
SEARCH_HINT = ("episodes stay out of `hms recall` by design (it answers with facts); search "
               "them with: hms recall QUERY --kind episode")


@attrs.frozen(kw_only=True)
class Source:
    """One file to load: its path, the root its key is relative to, and its document name."""

    path: str  # absolute, normalised
    key: str  # relative to the root, with /
    document: str


@attrs.frozen(kw_only=True)
class Root:
    """A directory or glob given on the command line: where removed files are looked for."""

    directory: str  # absolute, normalised
    patterns: tuple[str, ...]  # relative to the directory
    by_name: bool  # --glob patterns of a directory (see _matches); False for a glob's own


def document_name(key: str) -> str:
    """The document of a root-relative path: the path without its extension, ``/`` written
    ``:`` (a document name holds no ``/``): ``guide.md`` -> ``guide``, ``ops/guide.md`` ->
    ``ops:guide``."""
    path = PurePosixPath(key)
    return ":".join((*path.parent.parts, path.stem or path.name))


def _segment(part: str) -> str:
    """A regex for one path component of a glob: ``*`` and ``?`` never cross a ``/``."""
    out, i = [], 0
    while i < len(part):
        c = part[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and "]" in part[i + 2:]:  # a class: [abc], [!abc]
            end = part.index("]", i + 2)
            body = part[i + 1:end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """A glob over a ``/``-separated relative path, ``**`` matching any number of directories."""
    parts = pattern.strip("/").split("/")
    out = ""
    for n, part in enumerate(parts):
        if part == "**":
            out += ".*" if n == len(parts) - 1 else "(?:[^/]*/)*"
        else:
            out += _segment(part) + ("/" if n < len(parts) - 1 else "")
    return re.compile(out + r"\Z")


def _matches(key: str, root: Root) -> bool:
    """Whether ``key`` (relative to the root) is one of the root's files: a pattern without
    ``/`` given by ``--glob`` matches the file's name at any depth; a glob's own pattern, and any
    pattern with ``/``, the whole relative path."""
    name = key.rsplit("/", 1)[-1]
    for pattern in root.patterns:
        if root.by_name and "/" not in pattern:
            if pattern_regex(pattern).match(name):
                return True
        elif pattern_regex(pattern).match(key):
            return True
    return False


def _walk(root: Root) -> list[tuple[str, str]]:
    """(absolute path, key) of the regular files under the root's directory that match."""
    directory = root.directory
    found: list[tuple[str, str]] = []
    for top, dirs, files in os.walk(directory, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = os.path.join(top, name)
            key = os.path.relpath(path, directory).replace(os.sep, "/")
            if _matches(key, root) and os.path.isfile(path):
                found.append((path, key))
    return found


def _static_prefix(pattern: str) -> str:
    """The directory a glob's fixed leading components name (``.`` when it starts with magic)."""
    parts: list[str] = []
    for part in pattern.split("/"):
        if glob.has_magic(part):
            break
        parts.append(part)
    else:
        parts = parts[:-1]
    return "/".join(parts) if parts else ("/" if pattern.startswith("/") else ".")


def collect(paths: list[str], patterns: tuple[str, ...]) -> tuple[list[Source], list[Root]]:
    """The files to load (each once) and the roots to look for removed files in."""
    sources: dict[str, Source] = {}
    documents: dict[str, str] = {}  # document -> the path it was made of
    roots: list[Root] = []

    def add(path: str, key: str) -> None:
        path = os.path.abspath(path)
        source = Source(path=path, key=key, document=document_name(key))
        other = documents.setdefault(source.document, path)
        if other != path:
            raise InvalidRequest(f"paths: {other!r} and {path!r} would both be document "
                                 f"{source.document!r}",
                                 hint="load them in separate namespaces (--namespace)")
        sources.setdefault(path, source)

    for given in paths:
        if os.path.isdir(given):
            root = Root(directory=os.path.abspath(given), patterns=patterns, by_name=True)
            roots.append(root)
            for path, key in _walk(root):
                add(path, key)
        elif glob.has_magic(given):
            directory = os.path.abspath(_static_prefix(given))
            matches = [m for m in sorted(glob.glob(given, recursive=True)) if os.path.isfile(m)]
            if not matches:
                raise InvalidRequest(f"paths: {given!r} matches no file")
            relative = os.path.relpath(os.path.abspath(given), directory).replace(os.sep, "/")
            roots.append(Root(directory=directory, patterns=(relative,), by_name=False))
            for m in matches:
                add(m, os.path.relpath(os.path.abspath(m), directory).replace(os.sep, "/"))
        elif os.path.lexists(given):
            add(given, os.path.basename(given))  # a FIFO or device is refused when read
        else:
            raise InvalidRequest(f"paths: {given!r} does not exist")
    if not sources and not roots:
        raise InvalidRequest("paths: no files to load")
    return list(sources.values()), roots


def read_text(path: str) -> str:
    """A file's text: a regular file (anything else refused at once), at most
    ``MAX_FILE_BYTES``, UTF-8 (a byte order mark dropped)."""
    try:
        fd, st = open_regular(path)
    except NotRegular as exc:
        raise InvalidRequest(f"paths: {path!r} is {exc.kind}, not a regular file") from None
    except OSError as exc:
        raise InvalidRequest(f"paths: cannot read {path!r} ({exc.strerror or exc})") from None
    try:
        data = read_whole(fd, st, MAX_FILE_BYTES)
    except TooLarge as exc:
        raise InvalidRequest(f"paths: {path!r}: {exc}", hint="split the document") from None
    except OSError as exc:
        raise InvalidRequest(f"paths: cannot read {path!r} ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidRequest(f"paths: {path!r} is not UTF-8 text ({exc})") from None


def removed_files(memory: Any, roots: list[Root], loaded: set[str], namespace: str) -> list[str]:
    """The files earlier loads of these roots loaded that match their patterns and are gone."""
    gone: set[str] = set()
    for root in roots:
        for path in loaded_under(memory.index, root.directory, namespace):
            key = path[len(root.directory.rstrip("/")) + 1:]
            if path not in loaded and _matches(key, root) and not os.path.isfile(path):
                gone.add(path)
    return sorted(gone)


async def load(memory: Any, args: argparse.Namespace, out: Any) -> None:
    """Run ``hms load`` (see the module docstring) and print what it did."""
    patterns = tuple(args.glob or (DEFAULT_GLOB,))
    sources, roots = collect(args.paths, patterns)
    engine = memory.engine
    results: list[dict[str, Any]] = []
    progress = None
    if not out.json and sys.stdout.isatty() and sources:
        from rich.progress import Progress

        progress = Progress(console=out.console, transient=False)
        progress.start()
        task = progress.add_task("loading", total=len(sources))
    try:
        for source in sources:
            text = await trio.to_thread.run_sync(read_text, source.path)
            existed = await engine.has_document(f"{source.document}-0001")
            revision = engine.revision
            result = await memory.load(source.document, text, namespace=args.namespace,
                                       source=source.path)
            status = "unchanged" if engine.revision == revision else \
                "changed" if existed else "new"
            results.append({"path": source.path, "key": source.key,
                            "document": source.document, "status": status,
                            "episodes": list(result.episodes), "facts": list(result.facts)})
            if progress is not None:
                progress.advance(task)
    finally:
        if progress is not None:
            progress.stop()
    removed = removed_files(memory, roots, {s.path for s in sources}, args.namespace)
    pruned: list[str] = []
    if args.prune:
        for path in removed:
            report = await memory.forget(ForgetScope.source(path))
            pruned.extend(report.removed)
    _report(out, results, removed, pruned, prune=args.prune)


def _report(out: Any, results: list[dict[str, Any]], removed: list[str], pruned: list[str], *,
            prune: bool) -> None:
    counts = {status: sum(r["status"] == status for r in results)
              for status in ("new", "changed", "unchanged")}
    counts["removed"] = len(removed)
    if out.json:
        out.emit({"documents": results, "counts": counts, "removed": removed, "pruned": pruned})
        return
    episodes = sum(len(r["episodes"]) for r in results)
    facts = sum(len(r["facts"]) for r in results)
    out.print(f"loaded {len(results)} file(s): {counts['new']} new, {counts['changed']} changed, "
              f"{counts['unchanged']} unchanged, {counts['removed']} removed; "
              f"{episodes} episode(s), {facts} fact(s)")
    if removed:
        what = f"forgot their {len(pruned)} episode(s) and fact(s)" if prune else \
            "their episodes are kept: --prune forgets them"
        out.print(f"removed since the last load ({what}):")
        for path in removed:
            out.print(f"  {path}")
    out.print(SEARCH_HINT)


__all__ = ["DEFAULT_GLOB", "MAX_FILE_BYTES", "collect", "document_name", "load", "read_text"]
