"""How an ``Engine`` opens and closes: recovery, the actors' nursery, the ordered shutdown.

Nursery layout (started in this order, stopped in reverse)::

    Engine.open(...)                     recovery runs in a worker thread before anything starts
      (replication)                      the shipper, around everything below (engine/replica.py)
        nursery
          writer actor                   sole owner of the journal and the text segment
          index-builder actor            derives search segments from committed batches
      reader tasks                       the callers' own tasks: lock-free lookups, inline reads

Leaving the ``async with`` block closes the writer's mailbox; the writer answers every request
already queued, then exits; the index is persisted (and, when replicating, shipped with the
last commits before the lease is released); the store checkpoints unsynced text, closes its
files and releases the lock. No ``ExceptionGroup`` escapes: see ``actor.raise_single``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol, TypeVar

import trio

from ..errors import InvalidRequest, map_errors
from ..index.analyzer import get_analyzer
from ..index.persist import read_persisted
from ..kernels.warmup import is_warm, warm_up
from ..replication.options import Replication
from ..storage.directory import Directory, FsDirectory, MemoryDirectory
from .actor import Background, Warming, raise_single
from .indexer import Indexer
from .opening import open_store
from .replica import Replica, open_replica, replicating, stamp
from .store import StoreCore
from .writer import CompactRequest, SyncRequest, WriterActor, WriteRequest

MAILBOX_SIZE = 4096


class Closable(Protocol):
    """What the lifecycle needs of the engine it opens: to mark it closed."""

    _closed: bool


_E = TypeVar("_E", bound=Closable)
Mailbox = trio.MemorySendChannel[WriteRequest | CompactRequest | SyncRequest]
Factory = Callable[[StoreCore, Mailbox, WriterActor, Indexer, Callable[[], int], "Replica | None"], _E]


def as_directory(path: str | os.PathLike[str] | Directory | None) -> Directory:
    """``Engine.open``'s ``path``: a directory on disk, None (in memory), or a ``Directory``."""
    if path is None:
        return MemoryDirectory()
    if isinstance(path, (str, os.PathLike)):
        return FsDirectory(path)
    if hasattr(path, "open_file") and hasattr(path, "atomic_write"):
        return path  # a Directory implementation (tests, shims)
    raise InvalidRequest(f"path: expected a directory path or None, got {type(path).__name__}")


async def _open_core(directory: Directory, clock: Callable[[], int], *, dim: int,
                     embedding_dim: int | None, analyzer: str, key: str | bytes | None,
                     ) -> tuple[StoreCore, Warming, Background | None]:
    """The recovered core, the kernel warm-up, and the reading of the persisted index segments
    (None for an in-memory store), both started in threads of their own."""
    now = clock()
    # Compile (or load from numba's cache) every kernel before the first query needs it, in a
    # thread of its own while the store is recovered: much of both runs without the GIL. The
    # open does not wait for it (about 0.5 s: most of a short command line call such as `hms
    # remember`): the first search does (readers.kernels_warm), as its kernels run inline on
    # the event loop; writes load what they need in their worker threads.
    warming = Warming(warm_up, needed=not is_warm())
    # The persisted index segments are read in a third thread, started once the live generation
    # is known and the key checked: reading and decompressing them (a second for a million
    # documents) runs without the GIL, beside recovery's table snapshot and journal tail.
    reading: list[Background] = []

    def read_index(core: StoreCore) -> None:
        if isinstance(directory, MemoryDirectory):
            return
        fmt = core.format
        reading.append(Background(functools.partial(
            read_persisted, core.directory, core.generation, core.codec,
            analyzer=get_analyzer(fmt.analyzer).name, dim=fmt.dim), "hmsengine-index-read"))

    try:
        core = await trio.to_thread.run_sync(
            lambda: open_store(directory, analyzer=analyzer, dim=dim,
                               embedding_dim=embedding_dim, now_ms=now, key=key,
                               before_recovery=read_index)
        )
    except BaseException:
        await trio.to_thread.run_sync(warming.stop)  # a failed open leaves no thread behind
        raise
    finally:
        for thread in reading:  # a failed open leaves no thread reading its files
            await trio.to_thread.run_sync(thread.join)
    prefetch = reading[0] if reading else None
    recorded = core.format.embedding_dim or core.table.embedding_dim
    if embedding_dim is not None and recorded is not None and recorded != embedding_dim:
        await trio.to_thread.run_sync(warming.stop)
        await trio.to_thread.run_sync(core.close)
        raise InvalidRequest(f"embedding_dim: this store was created with {recorded}, not {embedding_dim}")
    if core.table.embedding_dim is None:
        core.table.embedding_dim = recorded
    core.clock = stamp(clock)
    return core, warming, prefetch


@asynccontextmanager
async def lifecycle(factory: Factory[_E], directory: Directory, clock: Callable[[], int], *,
                    dim: int, embedding_dim: int | None, analyzer: str, key: str | bytes | None,
                    progress: Callable[[int, int], Any] | None = None,
                    replication: Replication | None = None) -> AsyncIterator[_E]:
    """Open the store, start its actors, yield ``factory(...)``'s engine, close in order."""
    core, warming, reading = await _open_core(directory, clock, dim=dim,
                                              embedding_dim=embedding_dim, analyzer=analyzer,
                                              key=key)
    replica = None
    if replication is not None:
        try:
            replica = await open_replica(core, replication)
        except BaseException:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(warming.stop)
                await trio.to_thread.run_sync(core.close)
            raise
    send, receive = trio.open_memory_channel[WriteRequest | CompactRequest | SyncRequest](MAILBOX_SIZE)
    indexer = Indexer(core, get_analyzer(core.format.analyzer),
                      persistent=not isinstance(directory, MemoryDirectory))
    writer = WriterActor(core, send, receive, indexer)
    engine = factory(core, send, writer, indexer, clock, replica)
    persisted = False

    async def persist_index() -> None:
        nonlocal persisted
        persisted = True
        # The index is derived: persisting it is best effort (a failure is counted).
        await indexer.persist_now()

    indexer.warming = warming if warming.needed else None
    try:
        await indexer.rebuild(progress, reading.result() if reading is not None else None)
        if replica is not None:
            writer.on_durable = replica.on_durable
            indexer.on_persisted = replica.on_index
            if indexer.persisted_files():  # the index this open adopted ships too
                replica.on_index(core.generation, indexer.persisted_files(), core.journal.size())
        try:
            async with replicating(replica, persist_index), trio.open_nursery() as nursery:
                await nursery.start(writer.run)
                await nursery.start(indexer.run)
                try:
                    yield engine
                finally:
                    # Finish in-flight writes even if the body is being cancelled.
                    with trio.CancelScope(shield=True):
                        engine._closed = True
                        warming.cancel()  # what closing needs loads on first use
                        await send.aclose()
                        indexer.stop()
        except BaseExceptionGroup as group:
            raise_single(group)
    finally:
        if replica is not None:
            replica.shipper.close_handles()  # also when the shipper never started
        with trio.CancelScope(shield=True):
            try:
                if not persisted:
                    await indexer.persist_now()
            finally:
                # Whatever happened above, the files are closed and the lock released, and the
                # warm-up stopped (no thread outlives the engine).
                try:
                    with map_errors("closing the store"):
                        await trio.to_thread.run_sync(core.close)
                finally:
                    await trio.to_thread.run_sync(warming.stop)
