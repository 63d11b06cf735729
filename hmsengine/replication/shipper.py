"""The shipper: an actor in the engine's nursery that copies the journal to the bucket.

The writer tells it, after each durable batch, where the journal now ends (:meth:`notify`, a
few hundred nanoseconds on the event loop: nothing waits for the bucket). The shipper waits
``interval`` (a quarter of the lag bound) to gather more commits, reads the new journal bytes
from disk in a worker thread, cuts them at a frame boundary, and uploads them as one immutable
segment object (create-only). It never holds a commit back; while the bucket is unreachable the
journal on disk is the queue, uploads are retried with a doubling backoff, and the lag grows
and is reported until it catches up.

A compaction switches the journal to a new generation. The shipper finishes the old one from
its open file handle (a plain compaction unlinks the file but the handle still reads it; a purge
zeroes it first, and the zeros fail the frame checks, so nothing more is shipped from it),
then ships the new generation's base and writes its ``generation.json``, and only then deletes
what the new generation replaces: every older generation after a purge, those past the
retention otherwise.

Two things a restore needs are not in the journal, and ship beside it:

- The store's ``format.json`` changes when its settings do (the memory layer records its
  embedder's identity there): each version is uploaded as ``gen-N/format-<offset>-<ms>.json``,
  the offset being where the journal ended when it changed and ``ms`` when (the engine's
  clock), before any segment after it; each new generation starts with one at offset 0.
- The persisted index segments (derived, immutable files): after the indexer persists them, a
  task of their own uploads the new files and then ``index.json`` listing them, once the
  journal they reflect is in the bucket; files no longer listed are deleted. A restore writes
  them into the restored store, whose first open then adopts them instead of tokenizing every
  document again. They never delay the journal: a large upload runs beside its shipping.

A second task renews the lease every third of its time to live. Losing it (another node took
the store) fences this one: shipping stops and ``on_fenced`` makes the store refuse writes.
"""

from __future__ import annotations

import collections
import logging
import math
import time
from collections.abc import Callable
from typing import NamedTuple

import trio

from ..errors import HmsError, ReplicaUnavailable, StoreLocked
from ..storage import generations, manifest
from ..storage.directory import Directory, FileHandle
from ..storage.journal import HEADER, HEADER_SIZE, iter_frame_offsets
from . import bucket
from .bucket import ShipStart
from .client import ObjectExists, ObjectStore
from .layout import (
    INDEX_LISTING,
    GenerationMarker,
    IndexFile,
    IndexListing,
    decode_segment,
    encode_segment,
    format_name,
    segment_name,
    sha256_hex,
)
from .lease import Lease
from .options import Replication

_log = logging.getLogger("hmsengine.replication")
LAG_SAMPLES = 4096


class _Mark(NamedTuple):
    """The journal of ``generation`` is durable up to ``end`` since ``at`` (trio clock)."""

    generation: str
    end: int
    at: float
    purge: bool


class _IndexMark(NamedTuple):
    """The persisted index of ``generation`` is ``files``, written when its journal was durable
    up to ``journal_end``."""

    generation: str
    files: tuple[str, ...]
    journal_end: int


def _number(generation: str) -> int:
    return generations.generation_number(generation) or 0


class Shipper:
    """Ships one store's journal (see the module docstring). Created by the engine at open."""

    def __init__(self, *, client: ObjectStore, options: Replication, directory: Directory,
                 store_id: str, format_sha256: str, lease: Lease, start: ShipStart,
                 handle: FileHandle, journal_end: int, compress: bool,
                 on_fenced: Callable[[HmsError], None], format_bytes: bytes,
                 analyzer: str, dim: int) -> None:
        self._client = client
        self._options = options
        self._directory = directory
        self._store_id = store_id
        self._format_sha256 = format_sha256
        self.lease = lease
        self._compress = compress
        self._on_fenced = on_fenced
        self._gen = start.generation
        self._handle: FileHandle | None = handle
        self._shipped = start.shipped
        self._marker = start.marker
        self._base_end = start.base_end
        self._purge_pending = start.purge_pending
        self._marks: collections.deque[_Mark] = collections.deque()
        self._handles: dict[str, FileHandle | None] = {}
        self._latest = start.generation
        self._wake = trio.Event()
        self._stop = trio.Event()
        self._deadline = math.inf
        self._scope = trio.CancelScope()  # shielded by stop(): the final flush is bounded by time
        self.state = "ok"
        self.last_error: str | None = None
        self.failures = 0
        self.shipped_bytes = 0
        self.objects = 0
        self.lags: collections.deque[float] = collections.deque(maxlen=LAG_SAMPLES)
        self._pending_since: float | None = None
        # format.json versions to upload: (generation, journal offset, change time, bytes),
        # oldest first. One found changed at open is known from the open on.
        self._format = format_bytes
        self._formats: collections.deque[tuple[str, int, int, bytes]] = collections.deque()
        if start.format_offset is not None:
            changed = int(time.time() * 1000) if start.format_offset else 0
            self._formats.append((start.generation, start.format_offset, changed, format_bytes))
        self._analyzer, self._dim = analyzer, dim
        self._index: _IndexMark | None = None
        self._index_keys: set[str] = set(start.index_keys)  # the live generation's, in the bucket
        self._index_wake = trio.Event()
        self.index_files = 0  # index files uploaded
        self.index_pending = False
        self.notify(start.generation, journal_end, False, at=trio.current_time())

    # -- the writer's side (event loop, must be cheap) -------------------------------------

    def notify(self, generation: str, end: int, purge: bool, *, at: float | None = None) -> None:
        """The journal of ``generation`` is durable up to ``end``; ``purge``: a purge made it."""
        now = trio.current_time() if at is None else at
        marks = self._marks
        if generation != self._latest:
            # Open the new generation's journal now, before a later compaction can remove it.
            try:
                self._handles[generation] = self._directory.open_file(
                    f"{generation}/{manifest.JOURNAL_FILE}")
            except OSError:
                self._handles[generation] = None
            self._latest = generation
            # In effect since before the generation's base, which every restore from it holds.
            self._formats.append((generation, 0, 0, self._format))
        elif marks:
            last = marks[-1]
            # Coalesce close marks (and all of them while the bucket fails) so a long outage
            # costs little memory; the older time is kept, so the lag is never understated.
            if last.generation == generation and not purge and (
                    now - last.at < 0.01 or (self.failures and now - last.at < 1.0)):
                marks[-1] = last._replace(end=max(end, last.end))
                return
        marks.append(_Mark(generation, end, now, purge))
        if not self._wake.is_set():
            self._wake.set()

    def notify_format(self, generation: str, offset: int, changed_ms: int, data: bytes) -> None:
        """The store's format.json is ``data`` from ``offset`` of ``generation``'s journal on,
        since ``changed_ms``."""
        self._format = data
        self._formats.append((generation, offset, changed_ms, data))
        self._wake.set()

    def notify_index(self, generation: str, files: list[str], journal_end: int) -> None:
        """The persisted index of ``generation`` is now ``files`` (index/MANIFEST's list)."""
        self._index = _IndexMark(generation, tuple(files), journal_end)
        self.index_pending = True
        self._index_wake.set()

    def stop(self) -> None:
        """Begin the final flush: ship what is left within ``close_timeout``, then release."""
        self._deadline = trio.current_time() + self._options.close_timeout
        self._scope.shield = True
        self._stop.set()
        self._wake.set()
        self._index_wake.set()

    # -- statistics -----------------------------------------------------------------------

    def lag_seconds(self) -> float:
        """How long the oldest durable transaction not yet in the bucket has waited (0: none)."""
        return trio.current_time() - self._marks[0].at if self._marks else 0.0

    def pending_bytes(self) -> int:
        if not self._marks:
            return 0
        return max(m.end for m in self._marks if m.generation == self._gen) - self._shipped \
            if any(m.generation == self._gen for m in self._marks) else self._marks[-1].end

    def lag_p99_seconds(self) -> float:
        if not self.lags:
            return 0.0
        ordered = sorted(self.lags)
        return ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]

    # -- the actor ------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._renew_loop)
            index_done = trio.Event()
            nursery.start_soon(self._index_loop, index_done)
            task_status.started()
            try:
                with self._scope:
                    await self._ship_loop()
                    # The index's last files get what is left of the close deadline.
                    with trio.move_on_at(self._deadline):
                        await index_done.wait()
            finally:
                nursery.cancel_scope.cancel()
        with trio.CancelScope(shield=True):
            await self._finish()

    async def _ship_loop(self) -> None:
        while self.state != "fenced":
            if not self._marks and not self._formats_due():
                if self._stop.is_set():
                    return
                await self._wake.wait()
                self._wake = trio.Event()
                continue
            if self._marks and not self._stop.is_set():
                # Gather the commits of the next ``interval`` into the same object.
                with trio.move_on_at(self._marks[0].at + self._options.interval):
                    await self._stop.wait()
            try:
                await self._ship_available()
            except ReplicaUnavailable as exc:
                self._failed(exc)
                wait = min(self._options.retry_max, self._options.retry_min * 2 ** (self.failures - 1))
                if trio.current_time() + wait > self._deadline:
                    _log.warning("closing with %d bytes not shipped to %s: %s", self.pending_bytes(),
                                 self._client.target.url, exc.message)
                    return
                await trio.sleep(wait)
            except StoreLocked as exc:
                self._fence(exc)
            except Exception as exc:  # damage, a bug: nothing a retry fixes; never the engine's end
                self.failures += 1
                self.last_error = exc.message if isinstance(exc, HmsError) else repr(exc)
                _log.error("replication of %s stopped: %s", self._client.target.url, exc,
                           exc_info=not isinstance(exc, HmsError))
                self.state = "failed"
                return

    def _formats_due(self) -> bool:
        """Whether a queued format.json version can be shipped now (one of a newer generation
        waits for that generation's first mark)."""
        return any(_number(g) <= _number(self._gen) for g, _o, _c, _d in self._formats)

    def _failed(self, exc: HmsError) -> None:
        self.failures += 1
        self.state = "retrying"
        self.last_error = exc.message
        if self.failures in (1, 10) or self.failures % 100 == 0:
            _log.warning("shipping to %s failed (%d in a row, %d bytes waiting): %s",
                         self._client.target.url, self.failures, self.pending_bytes(), exc.message)

    def _fence(self, exc: HmsError) -> None:
        self.state = "fenced"
        self.last_error = exc.message
        _log.error("%s", exc.message)
        self._on_fenced(exc)

    async def _ship_available(self) -> None:
        """Ship every mark queued now, generation by generation, each format.json version
        before the journal after it."""
        while (self._marks or self._formats_due()) and self.state != "fenced":
            if self._marks and self._marks[0].generation != self._gen:
                self._switch(self._marks[0])
            await self._ship_formats()
            if not self._marks:
                break
            target = max(m.end for m in self._marks if m.generation == self._gen)
            if self._handle is not None and self._shipped < target:
                await self._ship_range(target)
            else:
                self._pop_through(target)
            if self._handle is not None and not self._marker and self._shipped >= self._base_end:
                await trio.to_thread.run_sync(self._write_marker)
            if self.failures:
                _log.info("shipping to %s caught up after %d failure(s)", self._client.target.url,
                          self.failures)
            self.failures = 0
            self.state = "ok"
            if self._marks and self._marks[0].generation == self._gen:
                return  # more arrived meanwhile: the caller waits an interval for them

    def _switch(self, mark: _Mark) -> None:
        """Move on to the next generation (the old one is as shipped as it will be)."""
        if self._handle is not None:
            self._handle.close()
        self._gen = mark.generation
        self._handle = self._handles.pop(mark.generation, None)
        self._shipped = 0
        self._marker = False
        self._base_end = mark.end
        self._purge_pending = self._purge_pending or mark.purge
        self._index_keys = set()

    async def _ship_formats(self) -> None:
        """Upload the queued format.json versions of the generation being shipped (those of
        an older one are moot; a newer one's wait for its switch)."""
        while self._formats:
            generation, offset, changed, data = self._formats[0]
            if generation == self._gen:
                if self._handle is not None:  # not erased by a purge
                    # Replaced, not create-only: a retry after a lost answer writes the same.
                    await trio.to_thread.run_sync(
                        self._put_checked, format_name(generation, offset, changed), data, False)
            elif _number(generation) > _number(self._gen):
                return
            self._formats.popleft()

    async def _ship_range(self, target: int) -> None:
        while self._shipped < target:
            prepared = await trio.to_thread.run_sync(self._prepare, self._shipped, target)
            if prepared is None:
                # The generation's file was erased under us (a purge): nothing more of it.
                _log.info("stopped shipping %s at %d of %d bytes (erased by a purge)",
                          self._gen, self._shipped, target)
                self._handle = None
                self._pop_through(target)
                return
            key, data, end = prepared
            await trio.to_thread.run_sync(self._upload, key, data)
            self.shipped_bytes += end - self._shipped
            self.objects += 1
            self._shipped = end
            self._pop_through(end)

    def _pop_through(self, end: int) -> None:
        now = trio.current_time()
        marks = self._marks
        while marks and marks[0].generation == self._gen and marks[0].end <= end:
            self.lags.append(now - marks.popleft().at)

    # -- worker-thread steps ---------------------------------------------------------------

    def _prepare(self, start: int, target: int) -> tuple[str, bytes, int] | None:
        """Read journal bytes from ``start``, cut at the last whole frame (at most
        ``segment_bytes``, or one larger frame), and build the segment object."""
        assert self._handle is not None
        length = min(target - start, self._options.segment_bytes)
        data = self._handle.read_at(start, length)
        bounds = list(iter_frame_offsets(data, manifest.FORMAT_VERSION))
        if not bounds and length < target - start and len(data) >= HEADER_SIZE:
            whole = HEADER_SIZE + HEADER.unpack_from(data)[5]  # one frame over segment_bytes
            data = self._handle.read_at(start, min(whole, target - start))
            bounds = list(iter_frame_offsets(data, manifest.FORMAT_VERSION))
        if not bounds:
            return None
        end = bounds[-1][1]
        body = data[:end]
        first = HEADER.unpack_from(body, 0)[4]
        last = HEADER.unpack_from(body, bounds[-1][0])[4]
        obj = encode_segment(body, start=start, first_sequence=first, last_sequence=last,
                             compress=self._compress)
        return segment_name(self._gen, start, start + end), obj, start + end

    def _upload(self, key: str, data: bytes) -> None:
        self.lease.verify()
        try:
            self._client.put(key, data, create=True)
        except ObjectExists:
            # Ours, from an attempt whose answer was lost? Then it is the same bytes.
            found = self._client.get(key)
            if found is not None:
                where = self._client.describe(key)
                theirs = decode_segment(found[0], where=where).body
                if theirs == decode_segment(data, where=where).body:
                    return
            raise StoreLocked(f"{self._client.describe(key)} was written by another node: the "
                              "store is being written elsewhere", hint="restore it from the bucket "
                              "before writing here again") from None

    def _write_marker(self) -> None:
        marker = GenerationMarker(generation=self._gen, store_id=self._store_id,
                                  base_end=self._base_end, created_ms=int(time.time() * 1000),
                                  node=self._options.node, format_sha256=self._format_sha256)
        try:
            self._client.put(f"{self._gen}/generation.json", marker.to_bytes(), create=True)
        except ObjectExists:
            pass  # written before a restart
        self._marker = True
        bucket.prune(self._client, self._gen, purge=self._purge_pending,
                     retention_s=self._options.retention)
        self._purge_pending = False

    # -- the index ------------------------------------------------------------------------

    async def _index_loop(self, done: trio.Event) -> None:
        """Upload each persisted index once the journal it reflects is in the bucket."""
        failures = 0
        try:
            while self.state not in ("fenced", "failed"):
                mark = self._index
                if mark is None or _number(mark.generation) < _number(self._gen):
                    self._index, self.index_pending = None, False
                    if self._stop.is_set():
                        return
                    await self._index_wake.wait()
                    self._index_wake = trio.Event()
                    continue
                if mark.generation != self._gen or not self._marker \
                        or self._shipped < mark.journal_end:
                    if self._stop.is_set() and not self._marks:
                        return  # the journal it needs will not be shipped now
                    await trio.sleep(self._options.interval)  # the journal first
                    continue
                try:
                    await self._ship_index(mark)
                    failures = 0
                except ReplicaUnavailable as exc:
                    failures += 1
                    _log.info("uploading the index to %s failed: %s", self._client.target.url,
                              exc.message)
                    await trio.sleep(min(self._options.retry_max,
                                         self._options.retry_min * 2 ** (failures - 1)))
                    continue
                except StoreLocked as exc:
                    self._fence(exc)
                    return
                if self._index is mark:
                    self._index, self.index_pending = None, False
        finally:
            done.set()

    async def _ship_index(self, mark: _IndexMark) -> None:
        """Upload ``mark``'s files that are not in the bucket, then its ``index.json``, then
        delete the generation's index files it no longer lists. Gives up quietly when a file
        is gone (a newer index replaced it: its own mark follows)."""
        known = self._index_keys  # this generation's (a switch starts another set)
        files, written = [], []
        for name in mark.files:
            read = await trio.to_thread.run_sync(self._read_index_file, mark.generation, name)
            if read is None:
                return
            data, digest = read
            entry = IndexFile(name=name, sha256=digest, size=len(data))
            key = f"{mark.generation}/{entry.key}"
            if key not in known:
                await trio.to_thread.run_sync(self._put_checked, key, data, True)
                known.add(key)
                written.append(key)
                self.index_files += 1
            if not await self._still_live(mark.generation, written):
                return
            files.append(entry)
        listing = IndexListing(generation=mark.generation, store_id=self._store_id,
                               journal_end=mark.journal_end, analyzer=self._analyzer,
                               dim=self._dim, files=tuple(files))
        key = f"{mark.generation}/{INDEX_LISTING}"
        await trio.to_thread.run_sync(self._put_checked, key, listing.to_bytes(), False)
        if not await self._still_live(mark.generation, [key, *written]):
            return
        stale = sorted(known - {f"{mark.generation}/{f.key}" for f in files})
        if stale:
            await trio.to_thread.run_sync(self._client.delete, stale)
            known.difference_update(stale)

    async def _still_live(self, generation: str, keys: list[str]) -> bool:
        """Whether ``generation`` is still the one shipped; if not (a compaction, maybe a
        purge, replaced it while its index was uploading), delete ``keys``, what was just
        written, which a purge's sweep of the old generation may have listed before it existed."""
        if generation == self._gen:
            return True
        if keys:
            await trio.to_thread.run_sync(self._client.delete, keys)
        return False

    def _read_index_file(self, generation: str, name: str) -> tuple[bytes, str] | None:
        try:
            data = self._directory.read_bytes(f"{generation}/index/{name}")
        except (OSError, HmsError):
            return None
        return data, sha256_hex(data)

    def _put_checked(self, key: str, data: bytes, create: bool) -> None:
        self.lease.verify()
        try:
            self._client.put(key, data, create=create)
        except ObjectExists:
            pass  # an index file is named by its content: the same bytes

    # -- the lease ------------------------------------------------------------------------

    async def _renew_loop(self) -> None:
        every = self._options.lease_ttl / 3
        while self.state != "fenced":
            await trio.sleep(every)
            try:
                await trio.to_thread.run_sync(self.lease.renew)
            except StoreLocked as exc:
                self._fence(exc)
                self._wake.set()
                return
            except ReplicaUnavailable as exc:
                # Writes go on; the lease may expire meanwhile (see docs/replication.md).
                _log.warning("could not renew the lease on %s: %s", self._client.target.url,
                             exc.message)

    def close_handles(self) -> None:
        """Close the journal files held open for shipping (idempotent)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        for handle in self._handles.values():
            if handle is not None:
                handle.close()
        self._handles.clear()

    async def _finish(self) -> None:
        """After the final flush: release the lease if everything is in the bucket."""
        self.close_handles()
        if self.state == "fenced" or self._marks or self._formats_due():
            return  # not everything shipped: the lease expires by itself
        with trio.move_on_after(self._options.close_timeout):
            try:
                await trio.to_thread.run_sync(self.lease.release)
            except (HmsError, Exception) as exc:
                _log.warning("could not release the lease on %s: %s", self._client.target.url, exc)
