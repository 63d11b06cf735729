"""``Engine.check`` and ``hms check``: the scrub (engine/scrub.py) on a live store or a closed one.

Live (:func:`check_open`, what ``Engine.check`` runs): the scrub reads in worker threads while
the store keeps working. The journal is read up to its committed length and the text segment up
to its size at the start (frames and records are never rewritten; the writer's one write in
place, zeroing a dead record, is told apart from damage by reading again). Each index file is
read holding the index I/O lock, so a persist or a compaction, and the writes queued behind a
compaction, wait at most one segment read. A compaction that switches generations during the
scrub starts it over on the new one.

Closed (:func:`check_store`, what ``hms check`` runs): the files are read directly, never through
``Engine.open`` (whose recovery would truncate a torn tail, zero records, write checkpoints and
erase stray generations): nothing is written, and a shared lock on ``LOCK`` keeps the store from
being opened meanwhile (a store open elsewhere is ``StoreLocked``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import trio

from ..errors import CorruptStore, HmsError, InvalidRequest, StoreLocked, map_errors
from ..index import persist
from ..storage import generations, manifest
from ..storage.codec import Codec
from ..storage.directory import FsDirectory
from ..storage.keys import check_key_argument
from .indexer import Indexer
from .opening import store_codec
from .scrub import CheckReport, Ref, Scrub, Sink
from .store import StoreCore

# A compaction during a live check starts the check over; after this many, it gives up.
ATTEMPTS = 4


def check_absent(absent: Any) -> tuple[str, ...]:
    """The ``absent`` argument: a list of non-empty strings (an empty one would match anything)."""
    if isinstance(absent, (str, bytes)) or not isinstance(absent, (list, tuple)):
        raise InvalidRequest("absent: expected a list of strings")
    for n, text in enumerate(absent):
        if not isinstance(text, str) or not text:
            raise InvalidRequest(f"absent[{n}]: expected a non-empty string, got {text!r}",
                                 hint="an empty string would be found everywhere")
    return tuple(absent)


async def check_open(core: StoreCore, indexer: Indexer, absent: Sequence[str],
                     sink: Sink | None = None) -> CheckReport:
    """Scrub the store ``core`` has open (see the module docstring)."""
    strings = check_absent(absent)
    for _ in range(ATTEMPTS):
        generation = core.generation
        journal_end = core.journal.size()  # first: the text a committed frame names is older
        text_end = core.text.handle.size()
        scrub = Scrub(core.directory, core.codec, absent=strings, sink=sink,
                      still_live=functools.partial(_still_live, core, generation))
        try:
            with map_errors("checking the store", file=core.directory.describe("")):
                await trio.to_thread.run_sync(scrub.root)
                await trio.to_thread.run_sync(functools.partial(
                    scrub.generation, generation, journal_end=journal_end, text_end=text_end,
                    index=False))
                await _index(scrub, core, indexer, generation)
                await trio.to_thread.run_sync(scrub.strays, generation)
        except HmsError:
            if core.generation != generation:
                continue  # compacted meanwhile: its files went away under us
            raise
        if core.generation == generation:
            return scrub.report(generation)
    raise HmsError("the store was compacted again and again while it was being checked",
                   hint="run check again once the compactions are over")


def _still_live(core: StoreCore, generation: str, doc_id: str, ref: Ref) -> bool:
    """Whether a live document's text record the journal named is still its current one."""
    entry = core.table.get(doc_id)
    return core.generation == generation and entry is not None and \
        entry[:3] == ref[:3]


async def _index(scrub: Scrub, core: StoreCore, indexer: Indexer, generation: str) -> None:
    """The index files, each read under the index I/O lock (one segment read at a time)."""
    folder = f"{generation}/{persist.INDEX_DIR}"
    if not core.directory.isdir(folder):
        return
    async with indexer.io_lock:
        listed = await trio.to_thread.run_sync(scrub.index_manifest, generation)
    for file in listed:
        path = f"{folder}/{file}"
        async with indexer.io_lock:
            try:
                data: bytes | None = await trio.to_thread.run_sync(scrub.reader.read, path)
            except FileNotFoundError:
                data = None
            current = await trio.to_thread.run_sync(_listed, core, generation)
        if file not in current:
            continue  # replaced by a persist meanwhile: the manifest no longer names it
        if data is None:
            scrub.found(path, None, "an index segment the manifest lists is missing",
                        rebuildable=True)
            continue
        await trio.to_thread.run_sync(scrub.segment, path, file, data)
    async with indexer.io_lock:
        await trio.to_thread.run_sync(scrub.index_leftovers, generation, listed)


def _listed(core: StoreCore, generation: str) -> list[str]:
    name = f"{generation}/{persist.MANIFEST}"
    try:
        return [str(f) for f in persist.parse_manifest(core.directory.read_bytes(name),
                                                       name)["segments"]]
    except (HmsError, OSError):
        return []


def check_store(path: str | os.PathLike[str], *, key: str | bytes | None = None,
                absent: Sequence[str] = (), sink: Sink | None = None) -> CheckReport:
    """Scrub the closed store at ``path`` without opening it (see the module docstring).

    ``InvalidRequest`` "no store at PATH" when there is none, ``WrongKey`` for a missing or
    wrong key (or a key for a plain store), ``StoreLocked`` when it is open elsewhere. Damage is
    never raised: it is in the report.
    """
    strings = check_absent(absent)
    key = check_key_argument(key)
    root = os.path.abspath(os.fspath(path))
    if not os.path.isfile(os.path.join(root, manifest.FORMAT_FILE)):
        raise InvalidRequest(f"no store at {os.fspath(path)}",
                             hint="give the directory a store was created in (--store DIR)")
    directory = FsDirectory(root)
    with _shared_lock(root), map_errors("checking the store", file=root):
        codec = _codec(directory, key)
        scrub = Scrub(directory, codec, absent=strings, sink=sink)
        generation = scrub.root()
        if generation is None:  # CURRENT is damaged (a finding): verify the newest generation
            numbered = sorted((n, name) for name in directory.listdir("")
                              if (n := generations.generation_number(name)) is not None)
            if numbered:
                generation = numbered[-1][1]
                scrub.notes.append(f"CURRENT names no generation: verified {generation}, the "
                                   "newest")
        if generation is not None:
            scrub.generation(generation)
        scrub.strays(generation)
        return scrub.report(generation)


def _codec(directory: FsDirectory, key: str | bytes | None) -> Codec | None:
    """The store's codec after the key check; None when ``format.json`` is damaged (the scrub
    reports it and can then decode nothing)."""
    try:
        fmt = manifest.StoreFormat.from_json(directory.read_bytes(manifest.FORMAT_FILE),
                                             where=directory.describe(manifest.FORMAT_FILE))
    except CorruptStore:
        return None
    return store_codec(fmt, key, verb="check")


@contextlib.contextmanager
def _shared_lock(root: str) -> Iterator[None]:
    """A shared flock on ``LOCK`` (an open engine holds it exclusively), taken read-only so the
    check writes nothing; without a ``LOCK`` file nothing has the store open."""
    try:
        fd = os.open(os.path.join(root, FsDirectory.LOCK_NAME), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreLocked(f"the store {root} is open in another process",
                                  hint="check it there (engine.check()), or once it is closed"
                                  ) from None
            raise
        yield
    finally:
        os.close(fd)


__all__ = ["CheckReport", "check_absent", "check_open", "check_store"]
