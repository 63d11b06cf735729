"""The synchronous core of an open store: its files, its document table, commit and checkpoint.

The writer actor calls :meth:`StoreCore.commit` and :meth:`StoreCore.checkpoint` from a worker
thread; readers call :meth:`StoreCore.read_text` inline. Nothing here knows about trio.

Durability contract of :meth:`commit`: when it returns, every transaction of the batch is in the
journal and the journal is fsynced. If any write or fsync fails, the core latches ``broken``: the
batch and every later one raise :class:`DurabilityError` until the store is reopened, and the
fsync is never retried (the kernel may have dropped the dirty pages already).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import attrs
import numpy as np

from ..errors import DurabilityError, HmsError, InvalidRequest, StoreLocked, map_errors
from ..storage import manifest, tablesnap
from ..storage.codec import Codec
from ..storage.directory import Directory, FileHandle, MemoryDirectory
from ..storage.generations import open_generation_files
from ..storage.journal import (
    HEADER,
    HEADER_SIZE,
    KIND_BASE,
    KIND_CHECKPOINT,
    KIND_TRANSACTION,
    MAGIC,
    encode_frame,
)
from ..storage.manifest import FORMAT_VERSION, StoreFormat
from ..storage.segments import TextSegment
from .state import KEY_STRIDE, DocTable, relocated
from .txn import (
    Checkpoint,
    StoredDelete,
    StoredOp,
    encode_checkpoint,
    encode_transaction,
)
from .values import DeleteOp, PlainPuts, PutOp

log = logging.getLogger(__name__)


class PlannedTxn(NamedTuple):
    """A transaction the writer has checked against the table, ready to be written (a named
    tuple: one per transaction on the write path, see txn.StoredPut)."""

    sequence: int
    ops: Sequence[PutOp | DeleteOp | PlainPuts]
    fixes_embedding_dim: int | None = None


@attrs.define
class Counters:
    writes: int = 0
    transactions: int = 0
    commits: int = 0
    fsyncs: int = 0
    bytes_written: int = 0
    checkpoints: int = 0
    records_zeroed: int = 0


class StoreCore:
    """One open store: lock held, generation files open, table recovered."""

    def __init__(self, directory: Directory, fmt: StoreFormat, generation: str,
                 journal: FileHandle, text: TextSegment, codec: Codec) -> None:
        self.directory = directory
        self.format = fmt
        self.generation = generation
        self.journal = journal
        self.text = text
        self.codec = codec
        self.table = DocTable()
        self.counters = Counters()
        self.broken: BaseException | None = None
        # Recovery state, kept current by the writer: see engine/txn.py (Checkpoint).
        self.text_synced = 0
        self.zeroed_through = 0
        self.dirty = False  # text written or zeroed since the last checkpoint
        self.last_sync_s = 0.0  # how long the last commit's journal sync took
        self.journal_label = f"{generation}/{manifest.JOURNAL_FILE}".encode()
        # Documents the last open took from the table snapshot (0: it replayed the whole journal).
        self.snapshot_documents = 0
        # What this generation's table.snap on disk describes (``_table_state``), when this
        # process loaded or wrote it; None when unknown. A close that would write the same
        # snapshot again skips it (a million rows took ~2 s to encode after a read-only session).
        self.snapshot_state: tuple[int, int, int] | None = None
        # A tombstone was written since this generation began (so its journal may still hold
        # what the tombstone replaced): set by the writer and at open, cleared by a compaction.
        self.purge_pending = False
        # Stamps each transaction's commit time ("ts", engine/txn.py) for point-in-time
        # restores; the engine sets it to its clock (None: frames carry no time).
        self.clock: Callable[[], int | None] | None = None

    @classmethod
    def open_generation(cls, directory: Directory, fmt: StoreFormat, generation: str,
                        codec: Codec) -> StoreCore:
        """A core over ``generation``'s files, its table still empty (engine/opening.py opens a
        store: lock, format, recovery)."""
        journal, text = open_generation_files(directory, generation, codec)
        return cls(directory, fmt, generation, journal, text, codec)

    def tombstones_since_base(self) -> bool:
        """Whether a tombstone was written after this generation's base (the revision its
        compaction started from, 0 for the first generation): every tombstone a compaction
        carried has a revision at or below it, every later one above."""
        base = 0
        head = self.journal.read_at(0, HEADER_SIZE)
        if len(head) == HEADER_SIZE and head[:4] == MAGIC:
            _m, _v, kind, _f, sequence, _l, _c, _r, _h = HEADER.unpack(head)
            base = sequence if kind == KIND_BASE else 0
        tombstones = list(self.table.tombstones)
        if not tombstones:
            return False
        # Keys, not entries: looking entries up would take them out of the table snapshot's
        # columns (engine/state.py), which the index's vectorised adoption at open relies on.
        keys = self.table.entries.keys_of(tombstones)
        return bool(np.any(keys // KEY_STRIDE > base))

    # -- writing (worker thread) -----------------------------------------------------------

    def refusal(self) -> HmsError:
        """The error every write gets once ``broken`` is set: a ``DurabilityError``, or the
        ``StoreLocked`` that fenced the store (its replication lease went to another node)."""
        if isinstance(self.broken, StoreLocked):
            return self.broken
        return DurabilityError(
            "the store refuses writes after an earlier write or fsync failed",
            hint="reopen the store; writes acknowledged before the failure are intact",
        )

    def _check_writable(self) -> None:
        if self.broken is not None:
            raise self.refusal() from self.broken

    def write_settings(self, settings: dict[str, Any], min_reader_version: int = 1) -> None:
        """Replace the store's settings (``format.json``'s ``settings``, every section) with an
        atomic write: after a crash the file holds the old or the new settings, never a mix.
        ``min_reader_version`` raises the store's (never lowers it), in the same write.
        Runs in a worker thread; a failure leaves the settings in memory unchanged."""
        self._check_writable()
        reader = max(self.format.min_reader_version, min_reader_version)
        fmt = attrs.evolve(self.format, settings=settings, min_reader_version=reader,
                           version=max(self.format.version, reader))
        with map_errors("writing the store settings", file=self.directory.describe(manifest.FORMAT_FILE)):
            self.directory.atomic_write(manifest.FORMAT_FILE, fmt.to_json())
        self.format = fmt

    def commit(self, batch: Sequence[PlannedTxn]) -> list[list[StoredOp]]:
        """Write a batch of transactions with one text write, one journal write and one fsync."""
        self._check_writable()
        try:
            with map_errors("committing a transaction", file=self.journal.name):
                return self._commit(batch)
        except InvalidRequest:
            raise  # refused while encoding, before any byte was written: nothing to latch
        except BaseException as exc:
            self.broken = exc
            raise

    def _commit(self, batch: Sequence[PlannedTxn]) -> list[list[StoredOp]]:
        # Every put of every caller runs through here: the batch's texts are encoded as records
        # in one pass (segments.encode_records), names are bound locally and the counters are
        # added once per batch.
        text = self.text
        codec, label = self.codec, self.journal_label
        text_start = text.handle.size()
        journal_end = self.journal.size()
        commit_ms = self.clock() if self.clock is not None else None
        raws: list[bytes] = []
        for txn in batch:
            for op in txn.ops:
                if type(op) is PutOp:
                    raws.append(op.text.encode("utf-8"))
                elif isinstance(op, PlainPuts):
                    raws.extend([doc_text.encode("utf-8") for doc_text in op.texts])
        records, lengths, crcs = text.encode_many(raws, text_start)
        located = iter(zip(lengths, crcs, strict=True))
        text_end = text_start
        frames: list[bytes] = []
        stored_batch: list[list[StoredOp]] = []
        writes = 0
        for txn in batch:
            stored: list[StoredOp] = []
            for op in txn.ops:
                if type(op) is PutOp:
                    length, crc = next(located)
                    # A StoredPut (txn.py): a plain tuple, made in place.
                    stored.append((op.id, op.text, op.metadata_json, op.embedding, text_end,
                                   length, crc, None))
                    text_end += length
                elif isinstance(op, PlainPuts):
                    for op_id, doc_text in zip(op.ids, op.texts, strict=True):
                        length, crc = next(located)
                        stored.append((op_id, doc_text, None, None, text_end, length, crc, None))
                        text_end += length
                else:
                    stored.append(StoredDelete(id=op.id))
            writes += len(stored)
            frame = encode_frame(codec, kind=KIND_TRANSACTION, sequence=txn.sequence,
                                 payload=encode_transaction(stored, embedding_dim=txn.fixes_embedding_dim,
                                                            commit_ms=commit_ms),
                                 version=FORMAT_VERSION, file_label=label, offset=journal_end)
            frames.append(frame)
            journal_end += len(frame)
            stored_batch.append(stored)
        written = 0
        if records:
            blob = b"".join(records)
            text.handle.append(blob)
            written = len(blob)
            self.dirty = True
        blob = b"".join(frames)
        self.journal.append(blob)
        started = time.perf_counter()
        self.journal.sync()
        self.last_sync_s = time.perf_counter() - started  # the writer's inline-commit gauge
        counters = self.counters
        counters.bytes_written += written + len(blob)
        counters.fsyncs += 1
        counters.commits += 1
        counters.transactions += len(batch)
        counters.writes += writes
        return stored_batch

    def zero_records(self, records: Sequence[tuple[int, int]]) -> None:
        """Overwrite dead text records with zeros in place (synced by the next checkpoint)."""
        if not records:
            return
        with map_errors("zeroing deleted text", file=self.text.where):
            for offset, length in records:
                self.text.zero(offset, length)
        self.counters.records_zeroed += len(records)
        self.counters.bytes_written += sum(length for _, length in records)
        self.dirty = True

    def checkpoint(self, *, moved: Sequence[tuple[str, int, int, int, int]] = ()) -> None:
        """Sync the text segment, then journal that it is synced (and what recovery re-wrote).

        After it, recovery need not re-verify records before ``text_synced`` nor re-zero records
        that died at or before the current revision.
        """
        self._check_writable()
        try:
            with map_errors("writing a checkpoint", file=self.journal.name):
                self.text.sync()
                self.counters.fsyncs += 1
                cp = Checkpoint(text_synced=self.text.handle.size(),
                                zeroed_through=self.table.revision, moved=tuple(moved))
                frame = encode_frame(self.codec, kind=KIND_CHECKPOINT, sequence=self.table.revision,
                                     payload=encode_checkpoint(cp), version=FORMAT_VERSION,
                                     file_label=self.journal_label, offset=self.journal.size())
                self.journal.append(frame)
                self.journal.sync()
                self.counters.fsyncs += 1
                self.counters.bytes_written += len(frame)
                self.counters.checkpoints += 1
        except BaseException as exc:
            self.broken = exc
            raise
        self.text_synced = cp.text_synced
        self.zeroed_through = cp.zeroed_through
        self.dirty = False

    def switch_generation(self, name: str, locations: dict[str, tuple[int, int, int]]) -> None:
        """Point the store at a freshly written, already-current generation (event loop).

        Entries are replaced, not mutated, so a reader that looked one up before the switch
        notices the change and reads again.
        """
        old_journal, old_text = self.journal, self.text.handle
        fresh = StoreCore.open_generation(self.directory, self.format, name, self.codec)
        self.generation, self.journal, self.text = name, fresh.journal, fresh.text
        self.journal_label = fresh.journal_label
        entries = self.table.entries
        for doc_id, (offset, length, crc) in locations.items():
            entries[doc_id] = relocated(entries[doc_id], offset, length, crc)
        self.text_synced = self.text.handle.size()
        self.zeroed_through = self.table.revision
        self.dirty = False
        self.purge_pending = False  # the new journal's tombstones are all in its base frames
        old_journal.close()
        old_text.close()

    # -- reading (any thread) --------------------------------------------------------------

    def read_text(self, offset: int, length: int, crc: int) -> str:
        with map_errors("reading a document", file=self.text.where):
            return self.text.read(offset, length, crc).decode("utf-8")

    # -- closing ---------------------------------------------------------------------------

    def close_files(self) -> None:
        self.journal.close()
        self.text.handle.close()

    def close(self) -> None:
        """Checkpoint if anything is unsynced (and the store is healthy), write the table
        snapshot that lets the next open skip replaying the journal, close files, unlock."""
        try:
            if self.dirty and self.broken is None:
                try:
                    self.checkpoint()
                except DurabilityError:
                    pass  # the journal stays the source of truth; recovery redoes the work
            if not self.dirty and self.broken is None and \
                    self.snapshot_state != self._table_state():
                self.write_table_snapshot()
        finally:
            self.close_files()
            self.directory.unlock()

    def _table_state(self) -> tuple[int, int, int]:
        """What a table snapshot written now would describe: (journal end, table revision, text
        size). Every change to the table or the text (a transaction, a purge's zeroing, a
        recovery's repair) appends to the journal, so equal states mean an equal snapshot."""
        return (self.journal.size(), self.table.revision, self.text.handle.size())

    def write_table_snapshot(self) -> None:
        """Write ``table.snap`` for the table as of now (after a checkpoint, nothing unsynced).

        Best effort: a failure leaves the previous snapshot (still valid for the journal prefix
        it covers) or none; the journal alone always suffices.
        """
        if isinstance(self.directory, MemoryDirectory):
            return  # nothing reopens an in-memory store
        try:
            ids, columns, metadata, embeddings = self.table.entries.snapshot_columns()
            text_size = self.text.handle.size()
            if len(ids) and int((columns[:, 0] + columns[:, 1]).max()) > text_size:
                return  # a record past the text's end: leave it to recovery (no snapshot)
            end = self.journal.size()
            tail = self.journal.read_at(max(0, end - tablesnap.TAIL_BYTES), min(end, tablesnap.TAIL_BYTES))
            name = f"{self.generation}/{tablesnap.FILE_NAME}"
            data = tablesnap.encode(
                self.codec, name.encode(), journal_end=end, journal_tail=tail,
                sequence=self.table.revision, text_synced=text_size, store_id=self.format.store_id,
                zeroed_through=self.table.revision, embedding_dim=self.table.embedding_dim,
                ids=ids, metadata=metadata, columns=columns, embeddings=embeddings)
            self.directory.atomic_write(name, data)
            self.snapshot_state = (end, self.table.revision, text_size)
        except Exception:  # an optimisation must never fail a close
            log.warning("could not write the table snapshot of %s", self.generation, exc_info=True)
