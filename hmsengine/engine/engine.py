"""``DocumentEngine``: the document engine and its document methods.

``DocumentEngine.open`` checks its arguments and hands over to engine/lifecycle.py, which recovers the
store, starts the writer and index-builder actors (and the replication shipper), and closes
them in order. The methods here read lock-free from the table and the index snapshot, and
send writes to the writer actor.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Self

import trio

from ..clock import checked_clock
from ..errors import EngineClosed, HmsError, InvalidRequest
from ..replication.options import Replication, replication_options
from ..storage.directory import Directory, FsDirectory
from ..storage.keys import check_key_argument
from ..storage.manifest import READER_VERSION, updated_settings
from . import readers
from .actor import ReplySlot
from .check import check_open
from .compaction import CompactReport
from .indexer import Indexer
from .lifecycle import as_directory, lifecycle
from .pacing import SearchPacer, pacing_now
from .replica import Replica
from .scrub import CheckReport
from .state import EMBEDDING, KEY, METADATA, DocEntry
from .store import StoreCore
from .values import (
    DEFAULT_SEMANTIC_WEIGHT,
    MAX_TRANSACTION_DOCUMENTS,
    MAX_TRANSACTION_TEXT_BYTES,
    Change,
    DeleteOp,
    DeleteResult,
    Document,
    EngineStatistics,
    Hit,
    MetadataChunk,
    PlainPuts,
    PutOp,
    PutResult,
    check_id,
    check_metadata,
    make_put,
    make_puts,
    make_tombstone,
    parse_metadata,
    put_batch,
    tombstone_time,
)
from .writer import CompactRequest, SyncRequest, WriterActor, WriteRequest

# Texts up to this size are read and decompressed inline on the event loop (a few microseconds);
# larger ones go to a worker thread so a reader never stalls the loop (PERF-NOTES: a hop costs
# ~0.3 ms, about what decompressing 1 MiB costs).
INLINE_READ_BYTES = 256 * 1024
ANALYZERS = ("standard", "simple")


class DocumentEngine:
    """An open store's document engine. Create it with ``async with Engine.open(path) as engine``.

    This class is the engine layer's whole face: documents, search, transactions, compaction,
    commit listeners. ``hmsengine.Engine`` (hmsengine/facade.py) is this class plus the
    methods API.md names on the engine that belong to higher layers (``memory()``, JSONL export
    and import, snapshots); ``open`` builds whichever class it is called on.
    """

    def __init__(self, core: StoreCore,
                 send: trio.MemorySendChannel[WriteRequest | CompactRequest | SyncRequest],
                 writer: WriterActor, indexer: Indexer, clock: Callable[[], int],
                 replica: Replica | None = None) -> None:
        self._core = core
        self._replica = replica
        self._indexer = indexer
        self._send = send
        self._writer = writer
        self._clock = clock
        self._closed = False
        self._settings_lock = trio.Lock()
        self._pacer = SearchPacer()

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] | Directory | None = None, *,
        key: str | bytes | None = None, clock: Callable[[], int] | None = None, dim: int = 4096,
        embedding_dim: int | None = None, analyzer: str = "standard",
        progress: Callable[[int, int], Any] | None = None,
        replicate_to: str | Replication | None = None,
    ) -> AbstractAsyncContextManager[Self]:
        """Open (creating if missing) the store at ``path``; ``None`` is a purely in-memory store.

        ``replicate_to="s3://bucket/prefix"`` (or a ``replication.Replication``) ships every
        commit there within a bounded lag (docs/replication.md): the open takes the store's
        lease (``StoreLocked`` while another node holds it) and refuses a copy the bucket is
        ahead of (``Conflict``). Endpoint and credentials: the ``AWS_*`` variables.

        Raises ``StoreLocked`` if the store is already open, ``CorruptStore`` for damage before
        the journal's tail (a torn tail is truncated), ``IncompatibleStore`` for a store written by
        a newer format. ``analyzer``, ``dim`` and ``embedding_dim`` are recorded at creation; a
        reopen uses the recorded ``analyzer`` and ``dim``, and an explicit ``embedding_dim`` that
        contradicts the recorded one is ``InvalidRequest``. ``progress(done, total)`` follows the
        re-indexing of documents the persisted index segments lack (a large store's first open).
        """
        key = check_key_argument(key)
        if analyzer not in ANALYZERS:
            raise InvalidRequest(f"analyzer: expected one of {', '.join(ANALYZERS)}, got {analyzer!r}")
        if isinstance(dim, bool) or not isinstance(dim, int) or not 16 <= dim <= 1 << 20:
            raise InvalidRequest(f"dim: expected an integer from 16 to {1 << 20}, got {dim!r}")
        if embedding_dim is not None and (
            isinstance(embedding_dim, bool) or not isinstance(embedding_dim, int)
            or not 1 <= embedding_dim <= 65536
        ):
            raise InvalidRequest(f"embedding_dim: expected None or 1..65536, got {embedding_dim!r}")
        replication = replication_options(replicate_to)
        if replication is not None and path is None:
            raise InvalidRequest("replicate_to: an in-memory store (path=None) cannot be replicated",
                                 hint="give Engine.open a directory")
        return lifecycle(cls, as_directory(path), checked_clock(clock), dim=dim,
                         embedding_dim=embedding_dim, analyzer=analyzer, key=key, progress=progress,
                         replication=replication)

    # -- writes ----------------------------------------------------------------------------

    async def _submit(self, ops: Sequence[PutOp | DeleteOp | PlainPuts]) -> list[Any]:
        if self._closed:
            raise EngineClosed("the engine is closed")
        return await self._writer.submit(ops)

    async def put_document(self, id: str, text: str, *, metadata: dict[str, Any] | None = None,
                           embedding: Any = None) -> PutResult:
        """Store ``text`` under ``id``, replacing any document with that id atomically.

        Durable when it returns (its journal transaction is fsynced, possibly together with other
        callers' writes). Visible to every reader from that moment. If the caller is cancelled
        while waiting, the write may or may not have been committed.
        """
        op = make_put(id, text, metadata, embedding)
        result: PutResult = (await self._submit([op]))[0]
        return result

    async def put_documents(self, items: list[Any]) -> list[PutResult]:
        """Store several documents in one transaction: all of them, or (on any error) none."""
        batch = put_batch(items)  # plain items stay two columns (values.PlainPuts)
        return await self._submit([batch] if isinstance(batch, PlainPuts) else batch)

    async def delete_document(self, id: str, *, purge: bool = False) -> bool:
        """Delete a document; True if it existed.

        The delete is durable when it returns, and the document's text record in
        ``documents.text`` has been overwritten with zeros (synced by the next checkpoint: at
        close, or once 64 MiB of unsynced text accumulates; recovery re-zeroes after a crash).
        The journal keeps the old frame until a compaction.

        With ``purge``, the document is replaced by a content-free tombstone (the id and the
        time, nothing else: see ``tombstones``) and the store is compacted with purge, so no
        byte of it remains in any file and no later import or restore brings it back.
        """
        doc_id = check_id(id)
        if not isinstance(purge, bool):
            raise InvalidRequest(f"purge: expected a bool, got {type(purge).__name__}")
        existed = await self.has_document(doc_id)
        if not existed:
            # Nothing live (a tombstone stays a tombstone); a purge still erases older copies.
            if purge:
                await self.compact(purge=True)
            return False
        if not purge:
            result: DeleteResult = (await self._submit([DeleteOp(id=doc_id)]))[0]
            return result.existed
        await self._submit([make_tombstone(doc_id, self.now())])
        await self.compact(purge=True)
        return True

    async def transact(self, *, puts: list[Any] = (), deletes: list[str] = (),  # type: ignore[assignment]
                       tombstones: list[str] = ()) -> list[Any]:  # type: ignore[assignment]
        """Puts, deletes and tombstones in one transaction, all or none; results in the same
        order (a ``PutResult`` per put, then a bool per delete: whether the document existed,
        then a ``PutResult`` per tombstone).

        A tombstone (an id, or an ``(id, purged_at ms)`` pair to keep an earlier purge time, as
        a restore does) replaces the document (if any) by a content-free marker of its id and
        the time (``tombstones()``); reads treat the id as absent; a later put may reuse the id.
        The replaced text is zeroed like a delete's; erasing the journal's copy is a
        ``compact(purge=True)``. Durable and visible when it returns, like ``put_documents``.
        An id may appear once. Up to 1,000,000 documents (160 MiB of text) in one transaction.
        """
        ops: list[PutOp | DeleteOp] = list(make_puts(
            puts, max_documents=MAX_TRANSACTION_DOCUMENTS,
            max_text_bytes=MAX_TRANSACTION_TEXT_BYTES)) if puts else []
        seen = {op.id for op in ops}
        for name, values in (("deletes", deletes), ("tombstones", tombstones)):
            if isinstance(values, (str, bytes)):
                raise InvalidRequest(f"{name}: expected a list of ids")
        now = self.now() if tombstones else 0
        for name, values in (("deletes", deletes), ("tombstones", tombstones)):
            for n, value in enumerate(values):
                doc_id, when = value, now
                if name == "tombstones" and isinstance(value, tuple):
                    doc_id, when = _tombstone_pair(value, n)
                checked = check_id(doc_id, f"{name}[{n}]")
                if checked in seen:
                    raise InvalidRequest(f"{name}[{n}]: {checked!r} appears twice in one transaction")
                seen.add(checked)
                ops.append(DeleteOp(id=checked) if name == "deletes" else make_tombstone(checked, when))
        # Deleting a tombstoned id deletes nothing (the purge is remembered): it answers False.
        purged = self._core.table.tombstones
        tombstoned = [n for n, op in enumerate(ops) if isinstance(op, DeleteOp) and op.id in purged]
        if tombstoned:
            ops = [op for op in ops if not (isinstance(op, DeleteOp) and op.id in purged)]
        if len(ops) > MAX_TRANSACTION_DOCUMENTS:
            raise InvalidRequest(f"{len(ops)} operations in one transaction is over the limit of "
                                 f"{MAX_TRANSACTION_DOCUMENTS}")
        results: list[Any] = list(await self._submit(ops)) if ops else []
        for n in tombstoned:
            results.insert(n, DeleteResult(id="", existed=False, revision=self.revision))
        return [r.existed if isinstance(r, DeleteResult) else r for r in results]

    async def sync(self) -> None:
        """Make every text record written or zeroed so far durable (fsync of the text segment
        and a checkpoint). Deletes are durable when they return; this makes their zeroing so."""
        self._check_open()
        slot: ReplySlot[None] = ReplySlot()
        try:
            await self._send.send(SyncRequest(slot=slot))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise EngineClosed("the engine is closed") from None
        await slot.wait()

    def add_commit_listener(self, listener: Callable[[int, list[Change]], None]) -> None:
        """Call ``listener(revision, changes)`` for every committed batch, on the event loop,
        after the batch is durable and visible and before its writers' calls return.

        A listener must be quick and must not raise (it runs inside the writer actor).
        """
        self._writer.listeners.append(listener)

    def remove_commit_listener(self, listener: Callable[[int, list[Change]], None]) -> None:
        if listener in self._writer.listeners:
            self._writer.listeners.remove(listener)

    def scan_metadata(self, *, commit_order: bool = False) -> list[tuple[str, str | None]]:
        """(id, metadata JSON text or None) of every document at the current revision.

        Synchronous, so it can be paired with ``add_commit_listener`` without missing a commit.
        With ``commit_order``, in the order the documents' current versions were committed: the
        order in which search breaks score ties (export writes it, so a restore keeps ties).
        """
        self._check_open()
        entries = self._core.table.entries
        if commit_order:
            ordered = sorted(entries.items(), key=lambda item: item[1][KEY])
            return [(doc_id, e[METADATA]) for doc_id, e in ordered]
        return entries.metadata_items()

    def scan_metadata_chunks(self) -> list[MetadataChunk]:
        """The documents of ``scan_metadata()`` in the same order, as ``MetadataChunk`` runs
        whose metadata stays packed UTF-8: after an open from a table snapshot most runs are
        the snapshot's own bytes, so a reader that groups equal rows before decoding them
        (the memory index at open) skips a ``str`` per document. Synchronous, like
        ``scan_metadata``."""
        self._check_open()
        return list(self._core.table.entries.metadata_chunks())

    def tombstones(self) -> dict[str, int]:
        """id -> purge time (ms) of every purged id the store remembers (see ``transact``).

        Tombstones survive compaction; ``scan_metadata`` lists them too (their metadata is
        exactly ``{"_hms_tombstone": <ms>}``), every other read treats them as absent.
        """
        self._check_open()
        table = self._core.table
        out = {}
        for doc_id in table.tombstones:
            metadata_json = table.entries[doc_id][METADATA]
            assert metadata_json is not None
            out[doc_id] = tombstone_time(metadata_json)
        return out

    async def compact(self, *, purge: bool = False) -> CompactReport:
        """Rewrite the store into a new generation without deleted or replaced documents.

        The new generation (journal, text segment, index segments) is written and fsynced, then
        ``CURRENT`` is switched atomically: a crash at any point leaves the old or the new
        generation live, never neither. Readers keep working throughout; writes queue behind it.
        With ``purge``, the replaced generation is then overwritten with zeros, fsynced and
        unlinked, so no byte of a deleted document remains in any file of the store (the limits
        no file API controls are in docs/SECURITY.md). While a purge is pending (tombstones were
        written since the last compaction: ``statistics().purge_pending``) every compaction
        purges, so one that a crash interrupted is finished by the next.
        """
        if not isinstance(purge, bool):
            raise InvalidRequest(f"purge: expected a bool, got {type(purge).__name__}")
        if self._closed:
            raise EngineClosed("the engine is closed")
        slot: ReplySlot[CompactReport] = ReplySlot()
        try:
            await self._send.send(CompactRequest(purge=purge, slot=slot))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise EngineClosed("the engine is closed") from None
        return await slot.wait()

    async def check(self, *, absent: Sequence[str] = ()) -> CheckReport:
        """Read every byte of the store and verify every checksum and authentication tag (the
        journal from its first frame, every text record, the table snapshot, the index files);
        search the decoded content for each ``absent`` string. A ``CheckReport``: ``ok``,
        ``findings`` (file, offset, what, rebuildable), counts. Damage is reported, not raised.

        Runs beside reads and writes: the scrub reads in worker threads, and holds the index
        I/O lock (which a compaction waits for) for one segment read at a time. See
        engine/check.py; ``hms check`` checks a closed store without opening it.
        """
        self._check_open()
        return await check_open(self._core, self._indexer, absent)

    # -- reads -----------------------------------------------------------------------------

    async def get_document(self, id: str) -> Document | None:
        """The document stored under ``id`` at the current revision, or None.

        Never waits for the writer. A record larger than ``INLINE_READ_BYTES`` is read in a worker
        thread; if the document is replaced or deleted meanwhile, the read starts over.
        """
        doc_id = check_id(id)
        self._check_open()
        for _ in range(8):
            entry = self._core.table.get(doc_id)
            if entry is None or doc_id in self._core.table.tombstones:
                return None
            try:
                offset, length, crc = entry[:3]
                if length <= INLINE_READ_BYTES:
                    text = self._core.read_text(offset, length, crc)
                else:
                    text = await trio.to_thread.run_sync(self._core.read_text, offset, length, crc)
            except HmsError:
                if self._core.table.get(doc_id) is not entry:
                    continue  # replaced or deleted while we read: look again
                raise
            return _document(doc_id, text, entry)
        raise HmsError("the document kept changing while it was being read; try again")

    async def get_documents(self, ids: list[str] | tuple[str, ...]) -> list[Document | None]:
        """The documents stored under ``ids`` at the current revision, in the same order (None
        for an id with no document); what ``get_document`` returns for each, in one call.

        Never waits for the writer. Every id is validated first (``InvalidRequest`` naming
        ``ids[n]``). Records up to ``INLINE_READ_BYTES`` are read inline in one synchronous
        pass, so the small ones all come from the same revision; a larger one (or one replaced
        while it was read) is read as ``get_document`` reads it.
        """
        if isinstance(ids, (str, bytes)) or not isinstance(ids, (list, tuple)):
            raise InvalidRequest("ids: expected a list of document ids")
        checked = [check_id(doc_id, f"ids[{n}]") for n, doc_id in enumerate(ids)]
        self._check_open()
        table = self._core.table
        read_text = self._core.read_text
        out: list[Document | None] = []
        later: list[int] = []
        for doc_id in checked:
            entry = table.get(doc_id)
            if entry is None or doc_id in table.tombstones:
                out.append(None)
                continue
            offset, length, crc = entry[:3]
            if length <= INLINE_READ_BYTES:
                try:
                    out.append(_document(doc_id, read_text(offset, length, crc), entry))
                    continue
                except HmsError:
                    if table.get(doc_id) is entry:
                        raise
            later.append(len(out))
            out.append(None)
        for n in later:
            out[n] = await self.get_document(checked[n])
        return out

    async def has_document(self, id: str) -> bool:
        """True if a document is stored under ``id``; never waits for the writer."""
        doc_id = check_id(id)
        self._check_open()
        table = self._core.table
        return doc_id in table.entries and doc_id not in table.tombstones

    async def search_documents(
        self, query: str, *, k: int = 10, embedding: Any = None,
        ids: list[str] | set[str] | frozenset[str] | None = None,
        metadata: dict[str, Any] | None = None, semantic: str | None = None,
        lexical_weight: float = 1.0, semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT,
    ) -> list[Hit]:
        """Rank documents by BM25 (and cosine with ``embedding``, n-grams with ``semantic="ngram"``).

        Several signals are fused by weighted reciprocal rank (constant 60), the semantic signal
        weighing ``semantic_weight`` (default ``DEFAULT_SEMANTIC_WEIGHT``, the same as
        recall's) against BM25's ``lexical_weight``; see index/search.py for the exact-term
        floor. Without ``embedding`` (or ``semantic``) the ranking is BM25 alone: the engine
        never embeds (a ``Memory`` with an embedder does, and passes the vector). ``ids`` and
        ``metadata`` (exact match per key) restrict the candidates before ranking; a frozenset
        of ids is resolved once per snapshot (until the next write) and reused. Reads one
        immutable snapshot: never waits for the writer, sees every write acknowledged before the
        call. Deterministic: the same store content gives bit-for-bit the same hits.
        """
        self._check_open()
        if self._indexer.snapshot.tail_pending >= readers.TAIL_INLINE_DOCS:
            await readers.tail_ready(self._indexer)
        if embedding is None and ids is None and metadata is None and semantic is None:
            hits = readers.plain_hits(self._indexer, query, k, lexical_weight, semantic_weight)
            if hits is not None:
                if pacing_now() >= self._pacer.check_at:
                    await self._pacer.between_searches()
                return hits
        found = await readers.search_documents(
            self._indexer, query, k=k, embedding=embedding, ids=ids, metadata=metadata,
            semantic=semantic, lexical_weight=lexical_weight, semantic_weight=semantic_weight,
        )
        if pacing_now() >= self._pacer.check_at:
            await self._pacer.between_searches()
        return found

    async def search_ids(
        self, query: str, *, k: int = 10, embedding: Any = None,
        ids: list[str] | set[str] | frozenset[str] | None = None,
        metadata: dict[str, Any] | None = None, semantic: str | None = None,
        lexical_weight: float = 1.0, semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT,
    ) -> list[tuple[str, float]]:
        """``search_documents``'s ranking as ``(id, fused score)`` pairs: the same documents in
        the same order, with the same options, validation and guarantees, without building a
        ``Hit`` per result (for callers that need only ids and scores, such as recall)."""
        self._check_open()
        if self._indexer.snapshot.tail_pending >= readers.TAIL_INLINE_DOCS:
            await readers.tail_ready(self._indexer)
        if embedding is None and ids is None and metadata is None and semantic is None:
            pairs = readers.plain_pairs(self._indexer, query, k, lexical_weight, semantic_weight)
            if pairs is not None:
                if pacing_now() >= self._pacer.check_at:
                    await self._pacer.between_searches()
                return pairs
        found, scores = await readers.search_ranked(
            self._indexer, query, k=k, embedding=embedding, ids=ids, metadata=metadata,
            semantic=semantic, lexical_weight=lexical_weight, semantic_weight=semantic_weight,
        )
        if pacing_now() >= self._pacer.check_at:
            await self._pacer.between_searches()
        return list(zip(found, scores, strict=True))

    @property
    def settings(self) -> dict[str, Any]:
        """The store's settings: named sections of plain JSON that the layers above keep with
        the store (the memory layer's embedder identity, its policies), a deep copy.
        ``{}`` for a store that never had one. Persisted in ``format.json``
        (docs/PERSISTED-FORMAT.md §2)."""
        copy: dict[str, Any] = json.loads(json.dumps(self._core.format.settings))
        return copy

    async def update_settings(self, section: str, value: dict[str, Any] | None, *,
                              min_reader_version: int = 1) -> None:
        """Set one section of the store's settings to ``value`` (a JSON object), or remove it
        (``None``); the other sections are kept. Durable when it returns (an atomic rewrite of
        ``format.json``, fsynced); concurrent updates apply one after the other.
        ``min_reader_version`` (at most ``READER_VERSION``) raises the store's in the same
        write, for a section an older build must not ignore (it then refuses the store)."""
        self._check_open()
        check = updated_settings({}, section, value)  # refuses bad input before the lock
        if isinstance(min_reader_version, bool) or not isinstance(min_reader_version, int) \
                or not 1 <= min_reader_version <= READER_VERSION:
            raise InvalidRequest(f"min_reader_version: expected 1 to {READER_VERSION}, "
                                 f"got {min_reader_version!r}")
        async with self._settings_lock:
            settings = updated_settings(self.settings, section, check.get(section))
            await trio.to_thread.run_sync(self._core.write_settings, settings, min_reader_version)
            if self._replica is not None:
                self._replica.on_settings()

    @property
    def min_reader_version(self) -> int:
        """The oldest format a build must read to open this store (``format.json``)."""
        return self._core.format.min_reader_version

    @property
    def revision(self) -> int:
        """The number of transactions committed to this store; grows by one with each."""
        return self._core.table.revision

    def statistics(self) -> EngineStatistics:
        c = self._core.counters
        table = self._core.table
        return EngineStatistics(
            documents=len(table) - len(table.tombstones), revision=table.revision, writes=c.writes,
            transactions=c.transactions, commits=c.commits, fsyncs=c.fsyncs,
            bytes_written=c.bytes_written, checkpoints=c.checkpoints,
            records_zeroed=c.records_zeroed, embedding_dim=self._core.table.embedding_dim,
            broken=self._core.broken is not None,
            index_segments=len(self._indexer.snapshot.segments),
            index_tail=len(self._indexer.snapshot.tail),
            index_documents_loaded=self._indexer.loaded_documents,
            index_documents_tokenized=self._indexer.rebuilt_documents,
            index_segments_rejected=self._indexer.segments_rejected,
            index_merges=self._indexer.merges,
            commits_in_caller=self._writer.commits_in_caller,
            tombstones=len(self._core.table.tombstones),
            table_snapshot_documents=self._core.snapshot_documents,
            purge_pending=self._core.purge_pending,
            **(self._replica.statistics() if self._replica is not None else {}),
        )

    def find_ids(self, *, metadata: dict[str, Any]) -> set[str]:
        """Ids of the documents whose metadata has every ``key: value`` of ``metadata`` (exact
        match per key, as the search filter), at the current revision."""
        self._check_open()
        if not isinstance(metadata, dict) or not metadata:
            raise InvalidRequest("metadata: expected a non-empty object of key: value")
        check_metadata(metadata)
        return self._indexer.ids_with_metadata(metadata)

    def analyze(self, text: str) -> list[str]:
        """The terms the store's analyzer makes of ``text`` (what BM25 matches on)."""
        if not isinstance(text, str):
            raise InvalidRequest(f"text: expected a string, got {type(text).__name__}")
        return self._indexer.analyzer.tokenize(text)

    @property
    def analyzer(self) -> str:
        return self._core.format.analyzer

    @property
    def path(self) -> str | None:
        """The store's directory (absolute, as opened), or None for an in-memory store. File
        references never reach into it (memory/files.py)."""
        directory = self._core.directory
        return directory.root if isinstance(directory, FsDirectory) else None

    @property
    def dim(self) -> int:
        return self._core.format.dim

    def now(self) -> int:
        """The engine's clock, in ms (the injectable ``clock`` of ``open``)."""
        return self._clock()

    def _check_open(self) -> None:
        if self._closed:
            raise EngineClosed("the engine is closed")


def _tombstone_pair(value: tuple[Any, ...], n: int) -> tuple[Any, int]:
    if len(value) != 2 or isinstance(value[1], bool) or not isinstance(value[1], int) or value[1] < 0:
        raise InvalidRequest(f"tombstones[{n}]: expected an id or an (id, purged_at ms) pair")
    return value[0], value[1]


def _document(doc_id: str, text: str, entry: DocEntry) -> Document:
    # tolist() gives the same Python floats as float() of each float32, ~5x faster (384 dims).
    metadata_json, embedding = entry[METADATA], entry[EMBEDDING]
    return Document(
        id=doc_id, text=text,
        metadata=None if metadata_json is None else parse_metadata(metadata_json),
        embedding=None if embedding is None else tuple(embedding.tolist()),
    )
