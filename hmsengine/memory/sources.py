"""``ForgetScope.source``: every fact derived from one source, found without knowing its ids.

A source is named by a path, a ``file://`` URI or a document name. It matches:

1. **file-backed facts** (``remember_file``) whose file reference names the same file: both
   sides are normalised to an absolute path (a ``file://`` URI to its path, a relative path
   against ``MemoryConfig.file_base``, else the working directory, ``.`` and ``..`` folded); a
   file that exists also matches through its real path (symbolic links resolved);
2. **episodes of a loaded document**: ``load(document, ...)`` names chunk n ``<document>-<nnnn>``
   (revisions ``@<r>``). The value itself is taken as a document name, and a path's or URI's
   file stem is too (``notes/guide.md`` and ``guide`` both match the episodes ``guide-0001``,
   ``guide-0002@2``) for episodes that name no file as their source (loads by older builds);
   those that do (``hms load`` records the file's absolute path) match by that path (3);
3. **facts that list the source** in their ``sources`` (the value as given, or its normalised
   path): what ``capture(..., source=...)`` records, or a caller's own ``sources``;
4. everything **derived** from a match, transitively: a fact whose ``sources`` name a matched
   fact's id (what ``load`` and ``capture`` write: each extracted fact lists its chunk's
   episode), or that consolidates matched facts.

The match is computed from the memory index (no document is read); ``dry_run`` lists it.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from ..errors import InvalidRequest

if TYPE_CHECKING:
    from .index import MemoryIndex
    from .stamp import Stamp

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_EPISODE = re.compile(r"^(?P<doc>.+)-\d{4,}(?:@\d+)?$")


def check_source(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidRequest("scope.source: expected a non-empty path, file:// URI or document "
                             f"name, got {value!r}")
    if "\x00" in value:
        raise InvalidRequest("scope.source: contains a NUL character")
    return value


def _path(value: str, base: str | None) -> str | None:
    """The absolute, normalised path ``value`` names, or None when it names no local file (a
    URI of another scheme)."""
    match = _SCHEME.match(value)
    if match is not None and len(match.group(1)) > 1:  # not a Windows drive letter
        if match.group(1).lower() != "file":
            return None
        parsed = urllib.parse.urlsplit(value)
        if parsed.netloc not in ("", "localhost"):
            return None
        value = urllib.parse.unquote(parsed.path)
    if not os.path.isabs(value):
        value = os.path.join(base if base is not None else os.getcwd(), value)
    return os.path.normpath(value)


def path_keys(value: str, base: str | None) -> set[str]:
    """The forms of a file reference or source that name the same file."""
    path = _path(value, base)
    if path is None:
        return set()
    keys = {path}
    if os.path.exists(path):
        keys.add(os.path.realpath(path))
    return keys


def _path_like(source: str) -> bool:
    """A recorded source worth normalising (ids and plain names are compared as they are)."""
    return "/" in source or os.sep in source or source.startswith("file:")


def _document_names(value: str) -> set[str]:
    """The document names ``value`` may stand for: itself, and a path's or URI's file stem
    (a plain name such as ``notes:guide``, what ``hms load`` makes of ``notes/guide.md``
    under a loaded directory, stands for itself only)."""
    names = {value}
    if not _path_like(value):
        return names
    match = _SCHEME.match(value)
    tail = urllib.parse.unquote(urllib.parse.urlsplit(value).path) if match else value
    stem = PurePosixPath(tail.replace(os.sep, "/")).stem
    if stem:
        names.add(stem)
    return names


def _names_source(doc_id: str, stamp: Stamp, base: str | None, keys: set[str], names: set[str],
                  wanted: set[str]) -> bool:
    """Whether a fact itself comes from the source: its file, its document, its sources."""
    if stamp.file is not None and path_keys(str(stamp.file[0]), base) & keys:
        return True
    # An episode whose load named its file (``hms load``) is matched by that path only (rule 3):
    # by its name's stem it would also match another directory's file of the same name.
    if stamp.kind == "episode" and not any(_path_like(s) for s in stamp.sources):
        episode = _EPISODE.match(doc_id)
        if episode is not None and episode["doc"] in names:
            return True
    return any(s in wanted or (_path_like(s) and _path(s, base) in keys) for s in stamp.sources)


def match_source(index: MemoryIndex, value: str, base: str | None) -> set[str]:
    """The ids of every fact derived from the source ``value`` (see the module docstring)."""
    value = check_source(value)
    keys = path_keys(value, base)
    names = _document_names(value)
    wanted = {value} | keys
    matched: set[str] = set()
    derived: dict[str, list[str]] = {}  # a source id -> the facts that list it
    for doc_id, stamp in index.facts.items():
        for source in stamp.sources:
            derived.setdefault(source, []).append(doc_id)
        if _names_source(doc_id, stamp, base, keys, names, wanted):
            matched.add(doc_id)
    todo = list(matched)
    while todo:
        for doc_id in derived.get(todo.pop(), ()):
            if doc_id not in matched:
                matched.add(doc_id)
                todo.append(doc_id)
    return matched


def loaded_under(index: MemoryIndex, directory: str, namespace: str) -> set[str]:
    """The absolute paths under ``directory`` (absolute, normalised) that episodes of
    ``namespace`` name as their source: the files ``hms load`` loaded from it."""
    prefix = directory.rstrip("/") + "/"
    return {source for stamp in index.facts.values()
            if stamp.kind == "episode" and stamp.namespace == namespace
            for source in stamp.sources if source.startswith(prefix)}


__all__ = ["check_source", "loaded_under", "match_source", "path_keys"]
