"""File-backed memories: ``remember_file`` records where content lives, ``hydrate`` reads it back.

A file-backed fact stores a :class:`FileRef` (uri, byte range, format, the sha256 of the range,
the whole file's size and mtime, a summary) in its stamp, never the file's bytes. Its document
text, what search sees, is the summary; without one the fact is stored but not searchable (an
explanation says so). Reading the fact (``get``, ``recall``, ``history``) never touches the file;
only ``hydrate`` does, and it checks the recorded sha256: ``ProvenanceError`` with ``reason``
``missing_file``, ``truncated`` (the range no longer fits in the file) or ``checksum_mismatch``
(the bytes differ, or a whole-file reference's file changed size: it grew or shrank).

Only ``file://`` URIs (no host, or ``localhost``) and plain paths are accepted: any other scheme
is ``InvalidRequest`` and is never fetched. A relative path is resolved against the configured
``MemoryConfig.file_base``; without one it is refused (the process's working directory is not a
stable anchor for a stored reference). With ``file_base`` set, every file must lie inside it:
the path is resolved one component at a time beneath the base, so no symbolic link (swapped in
at any moment) leads out of it (hmsengine/localfiles.py). Only regular files are read, never one
inside the store's own directory, and each from the one descriptor that was checked. ``hydrate``
applies the same checks to every reference it reads (an imported one included) and refuses a
range over ``MemoryConfig.max_hydrate_bytes`` before reading. Files are hashed and read in a
worker thread, so a large range never stalls the event loop.
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.parse
from collections.abc import Sequence
from typing import Any

import attrs
import trio

from ..engine import check_text
from ..errors import InvalidRequest, NotFound, ProvenanceError
from ..localfiles import NotRegular, OutsideBase, below, open_beneath, open_regular, read_range
from .core import MemoryCore
from .remember import remember_many
from .values import FileRef, RememberInput, RememberResult

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
READ_CHUNK = 1 << 20
MAX_FORMAT = 64
MAX_URI_BYTES = 4096


@attrs.frozen(kw_only=True)
class Place:
    """Where a file reference points, before anything is opened: ``path`` is relative to
    ``base`` when a base is configured (the walk of localfiles.open_beneath starts there), else
    absolute. Messages name ``uri``, what the caller sent, never the server's own paths."""

    uri: str
    path: str
    base: str | None


def check_uri(uri: object) -> str:
    """The path a file reference's ``uri`` names (absolute, or relative to a file base), with
    no file system access; ``InvalidRequest`` for another scheme or a malformed URI. What
    ``remember_file`` accepts, and what an import accepts in a record."""
    if not isinstance(uri, str) or not uri:
        raise InvalidRequest("uri: expected a non-empty string (a file:// URI or a path)")
    if "\x00" in uri:
        raise InvalidRequest("uri: contains a NUL character")
    check_text(uri, "uri", MAX_URI_BYTES)
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
        path = urllib.parse.unquote(parsed.path)
        if not path.startswith("/"):
            raise InvalidRequest("uri: a file:// URI needs an absolute path")
        if "\x00" in path:
            raise InvalidRequest("uri: contains a NUL character")
        return path
    return uri


def locate(uri: object, base: str | None) -> Place:
    """The place ``uri`` names (no file system access); ``InvalidRequest`` for another scheme,
    a bad path, a relative path without a base, or an absolute one outside the base."""
    path = check_uri(uri)
    assert isinstance(uri, str)
    if base is None:
        if not os.path.isabs(path):
            raise InvalidRequest(f"uri: {uri!r} is relative and no file base is configured",
                                 hint="set MemoryConfig(file_base=...) or pass an absolute path")
        return Place(uri=uri, path=path, base=None)
    if os.path.isabs(path):
        # Inside the base as written, or as the base resolves (a base reached by a link).
        inside = below(base, path)
        if inside is None:
            inside = below(os.path.realpath(base), path)
        if inside is None:
            raise InvalidRequest(f"uri: {uri!r} lies outside the configured file base")
        path = inside
    return Place(uri=uri, path=path, base=base)


def open_place(place: Place, exclude: Sequence[str]) -> tuple[int, os.stat_result]:
    """(descriptor, stat) of the regular file at ``place``, never a store's own file; with a
    base, resolved beneath it without following links out (localfiles.open_beneath)."""
    if place.base is None:
        return open_regular(place.path, exclude=exclude)
    return open_beneath(place.base, place.path, exclude=exclude)


def _file_base(core: MemoryCore) -> str | None:
    base = core.config.file_base
    if base is not None and not os.path.isabs(base):
        raise InvalidRequest(f"config.file_base: expected an absolute path, got {base!r}")
    return base


def _exclude(core: MemoryCore) -> tuple[str, ...]:
    """The directories no file reference may reach into: the store's own."""
    path = core.engine.path
    return () if path is None else (path,)


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


def _open_checked(place: Place, exclude: Sequence[str]) -> tuple[int, os.stat_result]:
    """``open_place`` with refusals as ``InvalidRequest`` naming the uri (remember_file)."""
    uri = place.uri
    try:
        return open_place(place, exclude)
    except (FileNotFoundError, NotADirectoryError):
        raise InvalidRequest(f"uri: no file at {uri!r}") from None
    except PermissionError:
        raise InvalidRequest(f"uri: {uri!r} cannot be read (permission denied)") from None
    except NotRegular as exc:
        raise InvalidRequest(f"uri: {uri!r} is {exc.kind}, not a regular file") from None
    except OutsideBase as exc:
        raise InvalidRequest(f"uri: {uri!r} is refused: {exc}") from None
    except OSError as exc:
        raise InvalidRequest(f"uri: {uri!r} cannot be opened ({exc.strerror or exc})") from None


def _measure(place: Place, byte_range: tuple[int, int] | None,
             exclude: Sequence[str]) -> tuple[int, int, str, int, int]:
    """(offset, length, sha256 hex of the range, whole size, mtime ms), read from one descriptor."""
    fd, st = _open_checked(place, exclude)
    try:
        size = st.st_size
        offset, length = byte_range if byte_range is not None else (0, size)
        if offset + length > size:
            raise InvalidRequest(f"byte_range: ({offset}, {length}) goes past the end of the "
                                 f"file ({size} bytes)")
        h = hashlib.sha256()
        done = 0
        while done < length:
            block = os.pread(fd, min(READ_CHUNK, length - done), offset + done)
            if not block:
                raise InvalidRequest(f"uri: {place.uri!r} shrank while it was read")
            h.update(block)
            done += len(block)
    except OSError as exc:
        raise InvalidRequest(f"uri: {place.uri!r} cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    return offset, length, h.hexdigest(), size, st.st_mtime_ns // 1_000_000


async def remember_file(core: MemoryCore, uri: str, *, byte_range: object = None,
                        format: str | None = None, summary: str | None = None,
                        fields: dict[str, Any]) -> RememberResult:
    """Remember a reference to a file's bytes (the whole file, or ``byte_range``).

    The range is hashed now; the fact's text is ``summary`` (or empty: stored, not searchable).
    ``fields`` are remember's other parameters (subject, entities, metadata, valid times, ...);
    ``text`` is not one of them. Same idempotency as ``remember``: the same reference to the same
    bytes with the same fields is ``created=False``. Only a regular file is accepted, never one
    inside the store's own directory; with a file base, never one outside it, whatever links
    the path goes through.
    """
    if "text" in fields:
        raise InvalidRequest("text: a file-backed fact's text is its summary; pass summary=")
    if format is not None and (not isinstance(format, str) or not format or len(format) > MAX_FORMAT):
        raise InvalidRequest(f"format: expected a short non-empty string, got {format!r}")
    if summary is not None and not isinstance(summary, str):
        raise InvalidRequest("summary: expected a string")
    place = locate(uri, _file_base(core))
    offset, length, digest, size, mtime = await trio.to_thread.run_sync(
        _measure, place, _byte_range(byte_range), _exclude(core))
    ref = FileRef(uri=uri, offset=offset, length=length, format=format, sha256=digest, size=size,
                  mtime=mtime, summary=summary)
    item = RememberInput(text=summary or "", **fields)
    return (await remember_many(core, [item], files=[ref]))[0]


def _read_range(place: Place, ref: FileRef, exclude: Sequence[str]) -> bytes:
    # Messages name the reference's uri and never the file's current size or other details:
    # an imported reference may point anywhere in the base, and hydrate must tell no more
    # about a file than whether the recorded bytes are there.
    try:
        fd, _ = open_place(place, exclude)
    except (FileNotFoundError, NotADirectoryError):
        raise ProvenanceError(f"{ref.uri}: the file is missing", reason="missing_file",
                              hint="restore the file, or forget the fact") from None
    except NotRegular as exc:
        raise InvalidRequest(f"uri: {ref.uri!r} is {exc.kind} now, not a regular file") from None
    except OutsideBase as exc:
        raise InvalidRequest(f"uri: {ref.uri!r} is refused: {exc}") from None
    except OSError as exc:
        raise ProvenanceError(f"{ref.uri}: the file cannot be read ({exc.strerror or exc})",
                              reason="missing_file") from None
    try:
        size = os.fstat(fd).st_size
        if ref.offset == 0 and ref.length == ref.size and size != ref.size:
            # A whole-file reference names the whole file: one that grew (or shrank) changed,
            # even where its first bytes are still the recorded ones.
            raise ProvenanceError(
                f"{ref.uri}: the file's size changed since it was remembered, so the whole file "
                "no longer matches the recorded sha256", reason="checksum_mismatch",
                hint="the file changed since it was remembered: remember it again to refer to "
                     "the new bytes")
        if ref.offset + ref.length > size:
            raise ProvenanceError(
                f"{ref.uri}: the file no longer holds the recorded range ({ref.offset}, "
                f"{ref.length})", reason="truncated",
                hint="the file was truncated or replaced since it was remembered")
        data = read_range(fd, ref.offset, ref.length)
    except OSError as exc:
        raise ProvenanceError(f"{ref.uri}: the file cannot be read ({exc.strerror or exc})",
                              reason="missing_file") from None
    finally:
        os.close(fd)
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


async def hydrate(core: MemoryCore, doc_id: str) -> bytes:
    """Exactly the recorded range of a file-backed fact, after checking its sha256.

    The reference is checked as a new one would be (an imported one included): inside the file
    base if one is configured, not in the store's directory, a regular file; and its range must
    be at most ``config.max_hydrate_bytes``, refused before anything is read.
    """
    if not isinstance(doc_id, str):
        raise InvalidRequest("id: expected a string")
    fact = await core.fact(doc_id)
    if fact is None:
        raise NotFound(f"no fact {doc_id!r}")
    if fact.file is None:
        # The id names a fact, but no file-backed one: there is nothing to hydrate by it.
        raise NotFound(f"no file-backed fact {doc_id!r}: it is a plain fact",
                       hint="read its text with get; hydrate reads the bytes of a fact made "
                            "by remember_file")
    ref = fact.file
    limit = core.config.max_hydrate_bytes
    if ref.length > limit:
        raise InvalidRequest(
            f"hydrate: the recorded range of {doc_id!r} is {ref.length} bytes, over the limit of "
            f"{limit}", hint="raise MemoryConfig.max_hydrate_bytes (maxHydrateBytes), or remember "
                             "smaller ranges of the file")
    place = locate(ref.uri, _file_base(core))
    return await trio.to_thread.run_sync(_read_range, place, ref, _exclude(core))


__all__ = ["Place", "check_uri", "hydrate", "locate", "open_place", "remember_file"]
