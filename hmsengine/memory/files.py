"""File-backed memories: ``remember_file`` records where content lives, ``hydrate`` reads it back.

A file-backed fact stores a :class:`FileRef` (uri, byte range, format, the sha256 of the range,
the whole file's size and mtime, a summary) in its stamp, never the file's bytes. Its document
text, what search sees, is the summary; without one the fact is stored but not searchable (an
explanation says so). Reading the fact (``get``, ``recall``, ``history``) never touches the file;
only ``hydrate`` does, and it checks the recorded sha256: ``ProvenanceError`` with ``reason``
``missing_file``, ``truncated`` (the range no longer fits in the file) or ``checksum_mismatch``.

Only ``file://`` URIs (no host, or ``localhost``) and plain paths are accepted: any other scheme
is ``InvalidRequest`` and is never fetched. A relative path is resolved against the configured
``MemoryConfig.file_base``; without one it is refused (the process's working directory is not a
stable anchor for a stored reference). With ``file_base`` set, every file must lie inside it.
Files are hashed and read in a worker thread, so a large range never stalls the event loop.
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from ..errors import InvalidRequest, NotFound, ProvenanceError
from .values import FileRef, RememberInput, RememberResult

if TYPE_CHECKING:
    from .memory import Memory

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
READ_CHUNK = 1 << 20
MAX_FORMAT = 64


def resolve(uri: str, base: str | None) -> Path:
    """The local path ``uri`` names; ``InvalidRequest`` for another scheme or a bad path."""
    if not isinstance(uri, str) or not uri:
        raise InvalidRequest("uri: expected a non-empty string (a file:// URI or a path)")
    if "\x00" in uri:
        raise InvalidRequest("uri: contains a NUL character")
    match = _SCHEME.match(uri)
    if match is not None:
        scheme = match.group(1).lower()
        if scheme != "file":
            raise InvalidRequest(
                f"uri: the scheme {scheme!r} is not supported; only file:// URIs and plain paths are",
                hint="nothing was fetched: copy the content to a local file and remember that")
        parsed = urllib.parse.urlsplit(uri)
        if parsed.netloc not in ("", "localhost"):
            raise InvalidRequest(f"uri: a file:// URI with a host ({parsed.netloc!r}) is not supported")
        if parsed.query or parsed.fragment:
            raise InvalidRequest("uri: a file:// URI takes no query or fragment")
        path = Path(urllib.parse.unquote(parsed.path))
        if not path.is_absolute():
            raise InvalidRequest("uri: a file:// URI needs an absolute path")
    else:
        path = Path(uri)
    if not path.is_absolute():
        if base is None:
            raise InvalidRequest(f"uri: {uri!r} is relative and no file base is configured",
                                 hint="set MemoryConfig(file_base=...) or pass an absolute path")
        path = Path(base) / path
    if base is not None:
        root = Path(base).resolve()
        real = path.resolve()
        if real != root and root not in real.parents:
            raise InvalidRequest(f"uri: {uri!r} lies outside the configured file base {base!r}")
    return path


def _file_base(memory: Memory) -> str | None:
    base = memory.config.file_base
    if base is not None and not os.path.isabs(base):
        raise InvalidRequest(f"config.file_base: expected an absolute path, got {base!r}")
    return base


def _byte_range(byte_range: object) -> tuple[int, int] | None:
    if byte_range is None:
        return None
    if isinstance(byte_range, (str, bytes)) or not isinstance(byte_range, (tuple, list)) \
            or len(byte_range) != 2:
        raise InvalidRequest("byte_range: expected (offset, length) in bytes")
    offset, length = byte_range
    for name, value in (("offset", offset), ("length", length)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidRequest(f"byte_range: {name} must be a non-negative integer, got {value!r}")
    return offset, length


def _measure(path: Path, byte_range: tuple[int, int] | None) -> tuple[int, int, str, int, int]:
    """(offset, length, sha256 hex of the range, whole size, mtime ms) of ``path``, read once."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if not _is_regular(st.st_mode):
                raise InvalidRequest(f"uri: {str(path)!r} is not a regular file")
            size = st.st_size
            offset, length = byte_range if byte_range is not None else (0, size)
            if offset + length > size:
                raise InvalidRequest(f"byte_range: ({offset}, {length}) goes past the end of the "
                                     f"file ({size} bytes)")
            digest = _hash_range(f, offset, length)
    except FileNotFoundError:
        raise InvalidRequest(f"uri: no file at {str(path)!r}") from None
    except IsADirectoryError:
        raise InvalidRequest(f"uri: {str(path)!r} is a directory") from None
    except PermissionError:
        raise InvalidRequest(f"uri: {str(path)!r} cannot be read (permission denied)") from None
    return offset, length, digest, size, st.st_mtime_ns // 1_000_000


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)


def _hash_range(f: Any, offset: int, length: int) -> str:
    h = hashlib.sha256()
    f.seek(offset)
    left = length
    while left:
        block = f.read(min(READ_CHUNK, left))
        if not block:
            break
        h.update(block)
        left -= len(block)
    return h.hexdigest()


async def remember_file(memory: Memory, uri: str, *, byte_range: object = None,
                        format: str | None = None, summary: str | None = None,
                        **fields: Any) -> RememberResult:
    """Remember a reference to a file's bytes (the whole file, or ``byte_range``).

    The range is hashed now; the fact's text is ``summary`` (or empty: stored, not searchable).
    ``fields`` are remember's other parameters (subject, entities, metadata, valid times, ...);
    ``text`` is not one of them. Same idempotency as ``remember``: the same reference to the same
    bytes with the same fields is ``created=False``.
    """
    if "text" in fields:
        raise InvalidRequest("text: a file-backed fact's text is its summary; pass summary=")
    if format is not None and (not isinstance(format, str) or not format or len(format) > MAX_FORMAT):
        raise InvalidRequest(f"format: expected a short non-empty string, got {format!r}")
    if summary is not None and not isinstance(summary, str):
        raise InvalidRequest("summary: expected a string")
    base = _file_base(memory)
    path = resolve(uri, base)
    offset, length, digest, size, mtime = await trio.to_thread.run_sync(
        _measure, path, _byte_range(byte_range))
    ref = FileRef(uri=uri, offset=offset, length=length, format=format, sha256=digest, size=size,
                  mtime=mtime, summary=summary)
    item = RememberInput(text=summary or "", **fields)
    return (await memory.remember_many([item], files=[ref]))[0]


def _read_range(path: Path, ref: FileRef) -> bytes:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if ref.offset + ref.length > size:
                raise ProvenanceError(
                    f"{ref.uri}: the file is {size} bytes now; the recorded range "
                    f"({ref.offset}, {ref.length}) no longer fits", reason="truncated",
                    hint="the file was truncated or replaced since it was remembered")
            f.seek(ref.offset)
            data = f.read(ref.length)
    except FileNotFoundError:
        raise ProvenanceError(f"{ref.uri}: the file is missing", reason="missing_file",
                              hint="restore the file, or forget the fact") from None
    except (IsADirectoryError, PermissionError) as exc:
        raise ProvenanceError(f"{ref.uri}: the file cannot be read ({exc.strerror})",
                              reason="missing_file") from None
    if len(data) != ref.length:
        raise ProvenanceError(f"{ref.uri}: the file ended inside the recorded range",
                              reason="truncated")
    if not ref.sha256:
        raise ProvenanceError(
            f"{ref.uri}: no checksum was recorded for this reference (an imported record "
            "without one), so its bytes cannot be verified", reason="checksum_mismatch",
            hint="remember the file again to record its checksum")
    if hashlib.sha256(data).hexdigest() != ref.sha256:
        raise ProvenanceError(
            f"{ref.uri}: the bytes of ({ref.offset}, {ref.length}) no longer match the recorded "
            "sha256", reason="checksum_mismatch",
            hint="the file changed since it was remembered: remember it again to refer to the new bytes")
    return data


async def hydrate(memory: Memory, doc_id: str) -> bytes:
    """Exactly the recorded range of a file-backed fact, after checking its sha256."""
    if not isinstance(doc_id, str):
        raise InvalidRequest("id: expected a string")
    fact = await memory.fact(doc_id)
    if fact is None:
        raise NotFound(f"no fact {doc_id!r}")
    if fact.file is None:
        raise InvalidRequest(f"id: {doc_id!r} is not a file-backed fact")
    path = resolve(fact.file.uri, _file_base(memory))
    return await trio.to_thread.run_sync(_read_range, path, fact.file)


def file_ref(raw: tuple[Any, ...] | None) -> FileRef | None:
    """The FileRef of a stamp's file element."""
    if raw is None:
        return None
    uri, offset, length, fmt, sha256, size, mtime, summary = raw
    return FileRef(uri=uri, offset=offset, length=length, format=fmt, sha256=sha256, size=size,
                   mtime=mtime, summary=summary)


def stamp_file(ref: FileRef) -> tuple[Any, ...]:
    return (ref.uri, ref.offset, ref.length, ref.format, ref.sha256, ref.size, ref.mtime, ref.summary)


__all__ = ["file_ref", "hydrate", "remember_file", "resolve", "stamp_file"]
