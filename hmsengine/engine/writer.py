"""The writer actor: the sole owner of the journal and the text segment.

Callers send :class:`WriteRequest` messages over a trio memory channel. The actor blocks on the
first message, drains whatever else is already waiting (up to a cap), checks each transaction
against the document table plus the effects of the earlier transactions of the same batch, and
commits the batch with one text write, one journal write and one fdatasync (group commit): in a
worker thread, or inline on the event loop when the batch is small and the disk quick (a thread
round trip costs as much as the fdatasync, see ``INLINE_COMMIT_CHARS``). Either
way the writer does not take the next batch before this one is durable, so the requests that
arrive meanwhile form the next group. Only then does it apply the batch to the table and resolve
every reply slot, so readers never see a write that is not durable and every caller sees its own
write as soon as its call returns.

A write that finds nothing else in flight (no other caller between sending and being answered,
the writer idle) is committed by its caller, as a batch of one, through the same code
(:meth:`WriterActor._commit_alone`): a lone writer's batch is always one write, and handing it to
the actor's task and back cost two passes of trio's scheduler per put (~12% of a lone writer's
process CPU per put, measured: 133 -> 117 us, ~10% more puts/s). Whoever commits holds ``_busy``,
so the journal and the text segment still have one owner at a time; with concurrent writers
every caller finds another in flight and goes through the mailbox, so group commit is unchanged.

A batch in progress is shielded from cancellation: it commits and replies as one unit even if the
engine is being torn down or its caller cancelled. A failed write or fsync latches the store broken
(engine/store.py); the actor keeps running and answers every later write with
:class:`DurabilityError`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import NamedTuple

import attrs
import trio

from ..errors import DurabilityError, EngineClosed, HmsError, InvalidRequest
from . import compaction
from .actor import ReplySlot
from .compaction import CompactReport
from .indexer import Indexer
from .state import LENGTH, OFFSET, doc_key
from .store import PlannedTxn, StoreCore
from .txn import PUT_ID, PUT_LENGTH, PUT_METADATA, StoredOp, StoredPut
from .values import (
    TOMBSTONE_PREFIX,
    Change,
    DeleteOp,
    DeleteResult,
    PlainPuts,
    PutOp,
    PutResult,
    put_result,
)

_log = logging.getLogger("hmsengine.writer")

MAX_BATCH_TRANSACTIONS = 1024
# A batch whose texts total at most this many characters commits inline on the event loop:
# encoding a few KiB takes tens of microseconds and the fdatasync ~0.1-0.3 ms, while a
# worker-thread round trip costs as much as the fdatasync itself (PERF-NOTES.md, "Durability"),
# so a lone writer would pay twice. Larger batches hand the commit to a worker thread.
INLINE_COMMIT_CHARS = 64 * 1024
INLINE_COMMIT_OPS = 256
# ... and only while the disk is quick: a moving average of recent journal syncs at most this.
# On a busy or stalling disk a commit blocking the loop would stall every reader with it, the
# hop is small beside the fdatasync, and (measured on this shared machine under heavy I/O load)
# single-writer commits then ran faster through the thread.
INLINE_SYNC_MAX_S = 0.0005
# Zeroing this many bytes of dead records runs inline on the event loop (a page-cache write of a
# few KiB costs microseconds, less than a thread hop); more goes to a worker thread.
INLINE_ZERO_BYTES = 256 * 1024
# A transaction of at least this many puts (and nothing else) is installed in the table in one
# pass; a concurrent writer's single put keeps the plain path, cheaper for one.
BULK_APPLY_OPS = 16
# Checkpoint (sync the text segment) once this much unsynced text has accumulated, which bounds
# what recovery has to re-verify after a crash.
CHECKPOINT_EVERY_BYTES = 64 * 1024 * 1024


@attrs.frozen(kw_only=True, eq=False)
class CompactRequest:
    """Rewrite the store into a new generation; with ``purge``, erase the old one."""

    purge: bool
    slot: ReplySlot[CompactReport]


@attrs.frozen(kw_only=True, eq=False)
class SyncRequest:
    """Make every zeroed and written text record durable now (a checkpoint)."""

    slot: ReplySlot[None]


class WriteRequest(NamedTuple):
    """One transaction: puts and deletes applied all or none. ``slot`` receives the results.
    (A named tuple: one per write, on the path every put takes.)"""

    ops: Sequence[PutOp | DeleteOp | PlainPuts]
    slot: ReplySlot[list[PutResult | DeleteResult]]


# A planned answer: a put's (id, created), made a PutResult when the transaction is answered
# (``_answers``), or a delete's DeleteResult. A plain tuple while the batch is written: the cyclic
# garbage collector stops tracking it at its first young collection, where a PutResult made here
# outlived the young collections during the commit and fed the full ones (one per document of a
# bulk put); made at the answer, it dies young when its caller drops it.
_Planned = tuple[str, bool] | DeleteResult
# An accepted request, its planned answers and the revision its transaction creates.
_Accepted = tuple[WriteRequest, list[_Planned], int]


def _answers(planned: list[_Planned], revision: int) -> list[PutResult | DeleteResult]:
    """The results of a transaction (``_Planned``), its puts' at ``revision``."""
    return [put_result(a[0], a[1], revision) if isinstance(a, tuple) else a for a in planned]


class WriterActor:
    def __init__(self, core: StoreCore,
                 send: trio.MemorySendChannel[WriteRequest | CompactRequest | SyncRequest],
                 receive: trio.MemoryReceiveChannel[WriteRequest | CompactRequest | SyncRequest],
                 indexer: Indexer) -> None:
        self._core = core
        self._send = send  # the callers' end of the mailbox (submit); the engine closes it
        self._receive = receive
        self._indexer = indexer
        self.listeners: list[Callable[[int, list[Change]], None]] = []
        # Called (on the event loop) after each durable batch, and after each compaction with
        # its purge flag, while the journal ends exactly where that commit left it: replication
        # ships up to there (engine/replica.py). Must be quick and must not raise.
        self.on_durable: Callable[[bool], None] | None = None
        self._unsynced_bytes = 0
        self._noops: list[tuple[WriteRequest, list[_Planned]]] = []
        self._sync_s = 0.0  # moving average of journal sync durations (see INLINE_SYNC_MAX_S)
        # True while a batch, a compaction or a sync is being handled, by this actor's task or by
        # a caller committing alone: whoever set it owns the journal and the text segment.
        self._busy = False
        self._released = trio.lowlevel.ParkingLot()  # tasks waiting for busy to clear
        # Writes between entering submit and returning (sent, committing, or answered and not
        # yet resumed): while any is, a new write joins the mailbox instead of committing alone.
        self._in_flight = 0
        self.commits_in_caller = 0

    async def submit(self, ops: Sequence[PutOp | DeleteOp | PlainPuts]) -> list[PutResult | DeleteResult]:
        """Commit one transaction (``ops``, all or none) and return its results, durable and
        visible to every reader when this returns; an error of the batch is raised here.

        Cancelled before anything is sent: nothing is written. When no other write is in flight
        and the actor is idle, no group could form around this one: it commits in this task
        (:meth:`_commit_alone`), whole even if the caller is cancelled meanwhile, and the final
        schedule point does not raise, so the caller still hears of it. Otherwise it goes to the
        mailbox (a caller that arrives meanwhile finds this one in flight, so concurrent writes
        keep meeting there); a caller cancelled while it waits stops waiting, and its
        transaction still commits or not as one unit. A closed mailbox is ``EngineClosed``.
        """
        slot: ReplySlot[list[PutResult | DeleteResult]] = ReplySlot()
        request = WriteRequest(ops=ops, slot=slot)
        await trio.lowlevel.checkpoint_if_cancelled()
        if not self._in_flight and not self._busy:
            self._in_flight = 1
            try:
                await self._commit_alone(request)
                await trio.lowlevel.cancel_shielded_checkpoint()
            finally:
                self._in_flight -= 1
            return slot.result()
        self._in_flight += 1
        try:
            # A plain send_nowait when the mailbox has room: ``send`` would add a schedule point
            # of its own, and ``slot.wait`` is one.
            try:
                try:
                    self._send.send_nowait(request)
                except trio.WouldBlock:
                    await self._send.send(request)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                raise EngineClosed("the engine is closed") from None
            return await slot.wait()
        finally:
            self._in_flight -= 1

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve requests until the send side is closed and every queued request is answered."""
        task_status.started()
        # Shielded: the writer stops only when its mailbox is closed and drained, never halfway
        # through the queue because an enclosing scope was cancelled (callers would hang).
        with trio.CancelScope(shield=True):
            await self._serve()

    async def _serve(self) -> None:
        async with self._receive:
            while await self._serve_one():
                pass
        # A caller committing alone may still be waiting for a worker thread: the store closes
        # after it finishes, never under it.
        await self._wait_until_free()

    async def _wait_until_free(self) -> None:
        while self._busy:
            await self._released.park()

    def _release(self) -> None:
        self._busy = False
        if self._released:
            self._released.unpark_all()

    async def _commit_alone(self, request: WriteRequest) -> None:
        """Commit ``request`` as a batch of its own in the calling task; its slot holds the
        outcome when this returns.

        For a caller that found ``_busy`` False and no other write in flight (:meth:`submit`),
        so no batch could form around it: a lone writer saves the hand-over to
        this actor's task and back. Runs synchronously (no checkpoint) when the commit is
        inline, which is the usual case; when it waits for a worker thread, the actor parks on
        ``_busy`` if a message arrives meanwhile. Shielded from the caller's cancellation like
        any batch (see ``_commit_batch``).
        """
        self._busy = True
        try:
            await self._commit_batch([request])
        finally:
            self._release()
        self.commits_in_caller += 1

    async def _serve_one(self) -> bool:
        """Take the next batch of messages and handle it; False once the mailbox is closed.

        A method of its own so that the batch (every caller's operations, texts included, and
        their results) is released when it returns, not held by the loop's variables until the
        next write arrives."""
        try:
            first = await self._receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return False
        await self._wait_until_free()  # a caller committing alone, waiting for a worker thread
        self._busy = True
        try:
            await self._handle(first)
        finally:
            self._release()
        return True

    async def _handle(self, first: WriteRequest | CompactRequest | SyncRequest) -> None:
        batch = [first]
        while len(batch) < MAX_BATCH_TRANSACTIONS:
            try:
                batch.append(self._receive.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                break
        # Writes queued before a compaction commit first, in arrival order.
        run: list[WriteRequest] = []
        for message in batch:
            if isinstance(message, (CompactRequest, SyncRequest)):
                if run:
                    await self._commit_batch(run)
                    run = []
                if isinstance(message, CompactRequest):
                    await self._compact(message)
                else:
                    await self._sync(message)
            else:
                run.append(message)
        if run:
            await self._commit_batch(run)

    # -- one batch -------------------------------------------------------------------------

    def _plan(self, batch: list[WriteRequest]) -> tuple[list[PlannedTxn], list[_Accepted], int, int]:
        """Check each transaction against the table and the batch's earlier transactions; also
        return the accepted operations' count and characters (for ``_commit_inline``)."""
        table = self._core.table
        entries = table.entries
        staged: dict[str, bool] = {}
        dim = table.embedding_dim
        sequence = table.revision
        planned: list[PlannedTxn] = []
        accepted: list[_Accepted] = []
        noops = self._noops = []
        # The batch's size, for the inline-or-thread decision (_commit_inline), counted here
        # rather than in a second pass over every operation.
        size_ops = size_chars = 0
        for request in batch:
            local: dict[str, bool] = {}
            ops: list[PutOp | DeleteOp | PlainPuts] = []
            results: list[_Planned] = []
            fixes: int | None = None
            chars = 0
            writes = 0  # documents put or deleted (a PlainPuts is one op of many puts)
            # The revision this transaction creates if it writes anything (a no-op's results
            # are given the revision current when they are answered).
            revision = sequence + 1
            try:
                for op in request.ops:
                    if isinstance(op, PlainPuts):
                        # A plain bulk put: each document planned as its PutOp would be (the
                        # same presence test, no embedding to check).
                        for op_id in op.ids:
                            present = local.get(op_id)
                            if present is None:
                                present = staged.get(op_id)
                                if present is None:
                                    present = op_id in entries
                            results.append((op_id, not present))
                            local[op_id] = True
                        ops.append(op)
                        chars += op.chars
                        writes += len(op.ids)
                        continue
                    present = local.get(op.id)
                    if present is None:  # looked up only as far as needed (every put asks)
                        present = staged.get(op.id)
                        if present is None:
                            present = op.id in entries
                    if isinstance(op, PutOp):
                        if op.embedding is not None:
                            expected = dim if dim is not None else fixes
                            if expected is None:
                                fixes = len(op.embedding)
                            elif len(op.embedding) != expected:
                                raise InvalidRequest(
                                    f"embedding: {len(op.embedding)} dimensions, but this store's "
                                    f"embeddings have {expected}"
                                )
                        results.append((op.id, not present))
                        local[op.id] = True
                        ops.append(op)
                        writes += 1
                        chars += len(op.text)
                        if op.metadata_json is not None:
                            chars += len(op.metadata_json)
                        if op.embedding is not None:
                            chars += op.embedding.nbytes
                    else:
                        results.append(DeleteResult(id=op.id, existed=present, revision=revision))
                        if present:
                            local[op.id] = False
                            ops.append(op)
                            writes += 1
            except HmsError as exc:
                request.slot.set_error(exc)
                continue
            if not ops:  # nothing to write (e.g. deleting an absent id)
                # Answered with the batch: the answer may depend on the batch's earlier
                # transactions, so it must not be given before they are durable.
                noops.append((request, results))
                continue
            sequence += 1
            staged.update(local)
            if fixes is not None:
                dim = fixes
            planned.append(PlannedTxn(sequence=sequence, ops=ops, fixes_embedding_dim=fixes))
            accepted.append((request, results, revision))
            size_ops += writes
            size_chars += chars
        return planned, accepted, size_ops, size_chars

    async def _commit_batch(self, batch: list[WriteRequest]) -> None:
        core = self._core
        if core.broken is not None:
            refused = core.refusal()
            for request in batch:
                request.slot.set_error(refused)
            return
        try:
            planned, accepted, size_ops, size_chars = self._plan(batch)
            if not planned:
                self._answer_noops(core.table.revision)
                return
            try:
                if self._commit_inline(size_ops, size_chars):
                    stored = core.commit(planned)
                else:
                    # Every await of a batch is shielded: the actor's own task is, but a caller
                    # committing alone may be cancelled, and a batch is one unit.
                    with trio.CancelScope(shield=True):
                        stored = await trio.to_thread.run_sync(core.commit, planned)
                self._sync_s += (core.last_sync_s - self._sync_s) / 8
            except BaseException as exc:
                error: HmsError = (exc if isinstance(exc, HmsError)
                                   else DurabilityError(f"commit failed: {exc!r}"))
                for request in [*(a[0] for a in accepted), *(n[0] for n in self._noops)]:
                    request.slot.set_error(error)
                return
            applied = self._apply(planned, stored)
            self._indexer.install(core.table.revision,
                                  [(txn.sequence, ops) for txn, ops in zip(planned, stored, strict=True)])
            if self.on_durable is not None:
                self.on_durable(False)
            listeners = list(self.listeners) if self.listeners else ()
            changes = [Change(id=op[PUT_ID], deleted=False, metadata_json=op[PUT_METADATA])
                       if isinstance(op, tuple) else Change(id=op.id, deleted=True, metadata_json=None)
                       for ops in stored for op in ops] if listeners else []
            for listener in listeners:
                try:
                    listener(core.table.revision, changes)
                except Exception:
                    # The batch is durable and its callers must hear so; a faulty listener is
                    # its owner's bug, logged here, and never latches the store broken.
                    _log.exception("a commit listener failed at revision %d", core.table.revision)
            if applied:
                try:
                    await self._zero(applied)
                except HmsError as exc:
                    # The batch is durable, so its callers still succeed; recovery re-zeroes
                    # these records at the next open. Further writes are refused until then.
                    core.broken = exc
            for request, results, revision in accepted:
                request.slot.set_value(_answers(results, revision))
            if self._noops:
                self._answer_noops(core.table.revision)
            if self._unsynced_bytes >= CHECKPOINT_EVERY_BYTES:
                await self._checkpoint()
        except BaseException as exc:  # a bug here must not strand callers or kill the actor
            core.broken = core.broken or exc
            for request in batch:
                if not request.slot.done:
                    request.slot.set_error(
                        exc if isinstance(exc, HmsError) else DurabilityError(f"writer failed: {exc!r}")
                    )
            if not isinstance(exc, Exception):
                raise

    def _commit_inline(self, ops: int, chars: int) -> bool:
        """True if a batch of ``ops`` operations carrying ``chars`` characters of text and
        metadata (and embedding bytes) should be written and synced on the event loop (see
        ``INLINE_COMMIT_CHARS``): it is small and recent syncs were quick.

        Other ready tasks do not send it to a thread: the loop is then held for about one
        fdatasync (at most ``INLINE_SYNC_MAX_S`` on average), the same order as an inline query
        (engine/readers.py ``INLINE_WORK``), while callers waiting on the writer gain a thread
        round trip per batch (32 concurrent writers: ~10% more puts/s, measured in-process)."""
        return (ops <= INLINE_COMMIT_OPS and chars <= INLINE_COMMIT_CHARS
                and self._sync_s <= INLINE_SYNC_MAX_S)

    async def _compact(self, request: CompactRequest) -> None:
        """Compact (and with ``purge`` erase) while no commit can interleave."""
        core = self._core
        try:
            if core.broken is not None:
                raise core.refusal()
            report = await compaction.compact(core, self._indexer, purge=request.purge)
        except BaseException as exc:
            request.slot.set_error(exc if isinstance(exc, HmsError)
                                   else DurabilityError(f"compaction failed: {exc!r}"))
            if not isinstance(exc, Exception):
                raise
            return
        if self.on_durable is not None:
            self.on_durable(request.purge)
        request.slot.set_value(report)

    async def _sync(self, request: SyncRequest) -> None:
        core = self._core
        try:
            if core.dirty:
                self._unsynced_bytes = 0
                await trio.to_thread.run_sync(core.checkpoint)
        except BaseException as exc:
            request.slot.set_error(exc if isinstance(exc, HmsError) else DurabilityError(repr(exc)))
            if not isinstance(exc, Exception):
                raise
            return
        request.slot.set_value(None)

    def _answer_noops(self, revision: int) -> None:
        for request, results in self._noops:  # deletes of absent documents only
            request.slot.set_value([attrs.evolve(r, revision=revision)
                                    for r in _answers(results, revision)])
        self._noops = []

    def _apply(self, planned: list[PlannedTxn], stored: list[list[StoredOp]]) -> list[tuple[int, int]]:
        """Install a durable batch in the table; return the now-dead text records."""
        table = self._core.table
        dead: list[tuple[int, int]] = []
        for txn, ops in zip(planned, stored, strict=True):
            if txn.fixes_embedding_dim is not None:
                table.embedding_dim = txn.fixes_embedding_dim
            if len(ops) >= BULK_APPLY_OPS and all(type(op) is tuple for op in ops):
                # A bulk transaction of puts: installed in one pass (DocTable.put_many).
                puts: list[StoredPut] = ops  # type: ignore[assignment]
                olds = table.put_many(txn.sequence, puts)
                dead.extend((old[OFFSET], old[LENGTH]) for old in olds if old is not None)
                self._unsynced_bytes += sum(op[PUT_LENGTH] for op in puts)
                if not self._core.purge_pending and any(
                        op[PUT_METADATA] is not None
                        and op[PUT_METADATA].startswith(TOMBSTONE_PREFIX) for op in puts):
                    self._core.purge_pending = True
                table.revision = txn.sequence
                continue
            for position, op in enumerate(ops):
                if isinstance(op, tuple):
                    op_id, _, meta, vector, offset, length, crc, _ = op
                    old = table.put(op_id, (offset, length, crc, meta, vector, txn.sequence,
                                            doc_key(txn.sequence, position)))
                    self._unsynced_bytes += length
                    if meta is not None and meta.startswith(TOMBSTONE_PREFIX):
                        self._core.purge_pending = True
                else:
                    old = table.delete(op.id)
                if old is not None:
                    dead.append((old[OFFSET], old[LENGTH]))
            table.revision = txn.sequence
        return dead

    async def _zero(self, dead: list[tuple[int, int]]) -> None:
        # After the table no longer points at them, so no reader can be reading these records.
        if not dead:
            return
        if sum(length for _, length in dead) <= INLINE_ZERO_BYTES:
            self._core.zero_records(dead)
        else:
            with trio.CancelScope(shield=True):  # part of a batch (see _commit_batch)
                await trio.to_thread.run_sync(self._core.zero_records, dead)

    async def _checkpoint(self) -> None:
        self._unsynced_bytes = 0
        with trio.CancelScope(shield=True):  # part of a batch (see _commit_batch)
            await trio.to_thread.run_sync(self._core.checkpoint)
