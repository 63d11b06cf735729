"""The engine's side of replication: the lease and the checks at open, the shipper's hook.

``Engine.open(path, replicate_to=...)`` calls :func:`open_replica` after recovery and before any
task starts: it takes the lease (``StoreLocked`` if another node holds it), puts or checks the
store's ``format.json`` in the bucket, compares the local journal with what the bucket holds
(``Conflict`` if the bucket is ahead: this copy is stale), and opens the journal for the
shipper. The writer then calls :meth:`Replica.on_durable` after every durable batch and every
compaction, the engine :meth:`Replica.on_settings` after a settings change (format.json), the
indexer :meth:`Replica.on_index` after it persisted the index; the shipper
(replication/shipper.py) runs in a nursery of its own around the writer's, so at close it ships
what the writer committed last and the index persisted at close, then releases the lease.

The shipping code itself lives in ``hmsengine.replication`` (below the engine: it knows the
storage layer and the bucket, never the engine's classes); this module is the narrow bridge.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

from ..errors import HmsError, InvalidRequest, map_errors
from ..replication.bucket import check_format, plan_resume, prune, restored_origin
from ..replication.client import ObjectStore
from ..replication.layout import sha256_hex
from ..replication.lease import Lease, acquire, holder_name
from ..replication.options import Replication
from ..replication.shipper import Shipper
from ..storage import manifest
from ..storage.directory import FsDirectory
from ..storage.journal import HEADER, HEADER_SIZE, frame_aad
from .store import StoreCore


class Replica:
    """One open store's replication: the shipper and the hook the writer calls."""

    def __init__(self, core: StoreCore, shipper: Shipper, options: Replication) -> None:
        self._core = core
        self.shipper = shipper
        self.options = options

    def on_durable(self, purge: bool) -> None:
        """The writer's hook: the journal is durable up to its current end."""
        core = self._core
        self.shipper.notify(core.generation, core.journal.size(), purge)

    def on_settings(self) -> None:
        """The engine's hook: format.json was rewritten (the settings changed)."""
        core = self._core
        changed = (core.clock() if core.clock is not None else None) or 0
        self.shipper.notify_format(core.generation, core.journal.size(), changed,
                                   core.format.to_json())

    def on_index(self, generation: str, files: list[str], journal_end: int) -> None:
        """The indexer's hook: ``generation``'s persisted index is now ``files``, written when
        the journal was durable up to ``journal_end``."""
        self.shipper.notify_index(generation, files, journal_end)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self.shipper.run(task_status=task_status)

    def stop(self) -> None:
        self.shipper.stop()

    def statistics(self) -> dict[str, Any]:
        s = self.shipper
        return {"replication_target": self.options.target.url, "replication_state": s.state,
                "replication_lag_ms": int(s.lag_seconds() * 1000),
                "replication_lag_p99_ms": int(s.lag_p99_seconds() * 1000),
                "replication_pending_bytes": s.pending_bytes(),
                "replication_shipped_bytes": s.shipped_bytes,
                "replication_objects": s.objects, "replication_errors": s.failures,
                "replication_last_error": s.last_error,
                "replication_index_files": s.index_files,
                "replication_index_pending": s.index_pending}


def _restored_generation(core: StoreCore) -> tuple[str, int] | None:
    """Where a restore rebuilt the live generation from, if it did (its first base frame says
    so): then the bucket must not have moved on since, and older generations stay for their
    retention instead of being purged."""
    journal = core.journal
    if journal.size() < HEADER_SIZE:
        return None
    header = journal.read_at(0, HEADER_SIZE)
    _m, version, _kind, flags, _seq, length, _crc, _r, _h = HEADER.unpack_from(header)
    try:
        stored = journal.read_at(HEADER_SIZE, length)
        payload = core.codec.decode(flags, stored, aad=frame_aad(core.journal_label, 0, version),
                                    where=journal.name, offset=0)
        origin = json.loads(payload).get("origin")
    except (HmsError, ValueError, AttributeError):
        return None
    return restored_origin(origin if isinstance(origin, str) else None)


def _open_blocking(core: StoreCore, options: Replication
                   ) -> tuple[ObjectStore, Lease, Any, Any, str, bytes]:
    directory = core.directory
    if not isinstance(directory, FsDirectory):
        raise InvalidRequest("replicate_to: only a store in a directory on disk can be replicated",
                             hint="give Engine.open a directory path")
    client = ObjectStore(options.target)
    format_bytes = directory.read_bytes(manifest.FORMAT_FILE)
    lease = acquire(client, holder=holder_name(options.node, directory.root),
                    store_id=core.format.store_id, ttl=options.lease_ttl)
    try:
        identity = check_format(client, format_bytes, core.format.store_id)
        start = plan_resume(client, generation=core.generation, journal=core.journal,
                            restored=_restored_generation(core), format_bytes=format_bytes)
        if start.marker:  # generations that passed their retention while no node shipped
            prune(client, core.generation, purge=False, retention_s=options.retention)
        with map_errors("opening the journal for replication", file=core.journal.name):
            handle = directory.open_file(f"{core.generation}/{manifest.JOURNAL_FILE}")
    except BaseException:
        try:
            lease.release()
        except Exception:  # the lease expires by itself; the first error is the one to report
            pass
        raise
    return client, lease, start, handle, sha256_hex(identity), format_bytes


async def open_replica(core: StoreCore, options: Replication) -> Replica:
    """Take the lease and check the bucket (see the module docstring); the caller starts
    :meth:`Replica.run` and installs :meth:`Replica.on_durable` as the writer's hook."""
    client, lease, start, handle, identity_sha, format_bytes = await trio.to_thread.run_sync(
        _open_blocking, core, options)

    def fenced(error: HmsError) -> None:
        core.broken = core.broken or error

    shipper = Shipper(client=client, options=options, directory=core.directory,
                      store_id=core.format.store_id, format_sha256=identity_sha, lease=lease,
                      start=start, handle=handle, journal_end=core.journal.size(),
                      compress=core.format.encryption is None, on_fenced=fenced,
                      format_bytes=format_bytes, analyzer=core.format.analyzer,
                      dim=core.format.dim)
    return Replica(core, shipper, options)


def stamp(clock: Callable[[], int]) -> Callable[[], int | None]:
    """The commit-time stamp of journal frames (``"ts"``, for point-in-time restores): the
    engine's clock, or None if it fails (a bad reading of an injected clock must not fail a
    commit; that frame just carries no time)."""
    def read() -> int | None:
        try:
            return clock()
        except Exception:
            return None
    return read


@asynccontextmanager
async def replicating(replica: Replica | None,
                      finish: Callable[[], Awaitable[None]]) -> AsyncIterator[None]:
    """Run the shipper around the writer's nursery: it starts before the first write and is
    told to stop after the last (and after ``finish``, which persists the index, so that ships
    too), then ships what is left and releases the lease."""
    if replica is None:
        yield
        return
    async with trio.open_nursery() as nursery:
        await nursery.start(replica.run)
        try:
            yield
        finally:
            try:
                with trio.CancelScope(shield=True):
                    await finish()
            finally:
                replica.stop()
