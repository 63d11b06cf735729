"""The search index of an open engine: snapshots, per-commit tail segments, the merge actor.

* Each committed batch's new documents are tokenized into a small immutable segment in the
  writer's worker thread, in the same hop as the journal fsync (:meth:`Indexer.prepare`); the
  writer then installs it on the event loop before replying (:meth:`Indexer.install`), so a
  write is searchable the moment its call returns.
* Installing publishes a new :class:`Snapshot`; readers take the current one and search it
  without locks, so a reader never sees half a transaction and never blocks the writer.
* The **index-builder actor** (:meth:`Indexer.run`) folds the tail into segments; its merge task
  (:meth:`Indexer._merging`) merges small segments into larger ones in worker threads, dropping
  dead documents and swapping the merged segment in (applying deletions that happened
  meanwhile), and persists them (``engine/indexfiles.py`` writes the files).
* At open the index is rebuilt from the document table in worker threads.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import numpy as np
import trio

from ..errors import HmsError, map_errors
from ..index import termcarry
from ..index.analyzer import Analyzer
from ..index.mergepolicy import MergePolicy, consolidation_window
from ..index.persist import PersistedIndex
from ..index.segment import Segment, build_segment, merge_segments, ready_for_queries
from ..index.snapshot import (
    EMPTY,
    TAIL_DOCNUM,
    TAIL_EMBEDDING,
    TAIL_ID,
    TAIL_TEXT,
    SegmentView,
    Snapshot,
    TailDoc,
    TailView,
)
from .actor import Warming
from .docnums import DocnumMap
from .indexfiles import IndexFiles
from .loaded import adopt, adopt_all, finish_loaded
from .metaindex import MetadataIndex
from .state import EMBEDDING, KEY, METADATA, DocEntry, doc_key
from .store import StoreCore
from .txn import StoredOp
from .values import TOMBSTONE_PREFIX

# Fold the tail into a segment once it holds this many documents, or after this much quiet.
FOLD_AT = 512
FOLD_IDLE_SECONDS = 0.05
# ... or this many while the builder's merge task is busy (a merge or a persist can take
# seconds): folds go on meanwhile (Indexer.run), and folding every 512 documents then left a
# 200k-document burst of 128 writers with 38 segments, most of 512 documents, each costing a
# query ~1 us; folding at most this many leaves at most that much unfolded at the end of a burst
# (the first search builds its query-time segment in a worker thread, ~15 ms).
FOLD_AT_MERGING = 4096
REBUILD_CHUNK = 20_000
DEAD_FRACTION_TO_REWRITE = 0.3
# Persist segments in the background once this many indexed documents are not on disk.
PERSIST_AT = 50_000
# Consolidation (Indexer._consolidation): once no commit has come for this long, the builder
# merges segments so that queries visit fewer of them (a 200k-document index answered ~13%
# faster as one segment than as the five its build left, bench/search.py): all into one when
# the documents outside the largest are at least this fraction of it, else only the small ones
# together. 1/32, not 1/4: the merge policy below leaves under a quarter outside the largest
# (1/4 settled 3 of 102 simulated bursts of 20k-200k into one segment, 1/32 90 of them), at a
# cost in idle work only: the largest grows by 1/32 between two such rewrites, so at most ~33
# documents are written per document taken.
CONSOLIDATE_IDLE_SECONDS = 0.5
CONSOLIDATE_FRACTION = 1 / 32
# ... and only merges of at most this many documents: a larger one would rewrite hundreds of MB
# in the background (holding a second copy of the index meanwhile) for a gain that shrinks as
# the postings themselves dominate a query; such stores keep the regular merge policy.
CONSOLIDATE_MAX_DOCS = 500_000
# Which segments merge while writes come (index/mergepolicy.py; bench/results/lexical.notes.md):
# 2-4 are left right after 128 writers put 50k documents (the former cap of 6, merging the 4
# smallest neighbours, left 4-7), with fewer documents written by merges per document.
MERGE_POLICY = MergePolicy(ratio=4.0, max_merge=CONSOLIDATE_MAX_DOCS, max_segments=12, window=4)


class Indexer:
    def __init__(self, core: StoreCore, analyzer: Analyzer, *, persistent: bool) -> None:
        self._core = core
        self._persistent = persistent
        self.files = IndexFiles(core, analyzer.name, core.format.dim)
        self.loaded_documents = 0
        self.segments_rejected = 0
        self.analyzer = analyzer
        self.dim = core.format.dim
        self.snapshot: Snapshot = EMPTY
        # id -> document number of every document the index holds (engine/docnums.py).
        self.docnum_of = DocnumMap()
        # Resolved search filters of frozenset ids, per snapshot (engine/readers.py).
        self._wake = trio.Event()
        self._merge_wake = trio.Event()  # the merge task's (``_merging``): segments changed
        self._merge_busy = False  # the merge task is merging or persisting (``_fold_due``)
        self._commits = 0  # commits installed, for the merge task's quiet test
        self.metadata = MetadataIndex(self._metadata_source)  # the filters' index
        self._cancel = trio.CancelScope()
        self._coding_stop = threading.Event()  # set by stop(): the coding task's thread ends
        self.merges = 0
        self.merged_documents = 0  # documents written by merges (write amplification, bench/)
        self.folds = 0
        self.consolidations = 0
        self.persist_failures = 0
        # Serializes index file I/O with compaction (which moves the index to a new generation).
        self.io_lock = trio.Lock()
        self.rebuilt_documents = 0
        # The kernel warm-up the open started; the first search waits for it (engine/readers.py).
        self.warming: Warming | None = None
        # Told (generation, files, journal end) each time the persisted index changes (replication).
        self.on_persisted: Callable[[str, list[str], int], None] | None = None

    def persisted_files(self) -> list[str]:
        """The index files of the live generation that hold documents of the current index."""
        return self.files.names()

    # -- per commit (event loop, before the writer replies) --------------------------------

    def build_tail(self, docs: Sequence[TailDoc]) -> Segment:
        """Tokenize tail documents into a segment carrying their own docnums (pure)."""
        segment = build_segment(
            self.analyzer, ids=[d[TAIL_ID] for d in docs], texts=[d[TAIL_TEXT] for d in docs],
            embeddings=[d[TAIL_EMBEDDING] for d in docs], first_docnum=0, dim=self.dim,
            embedding_dim=self._core.table.embedding_dim,
        )
        return ready_for_queries(
            attrs.evolve(segment, docnums=np.asarray([d[TAIL_DOCNUM] for d in docs], dtype=np.int64)),
            ids=True)

    def tail_segment(self, tail: TailView) -> Segment:
        """A snapshot's query-time segment of its tail (``TailView.segment``: each document
        analyzed once for every snapshot that shows it). Runs inline or in a worker thread."""
        return tail.segment(self.analyzer, self._core.table.embedding_dim)

    def load_texts(self, segment: Segment) -> list[str]:
        """The texts of a segment's documents that are still that version ("" for the others:
        they are dead in every snapshot that could ask). Runs in a worker thread or inline."""
        table = self._core.table
        texts = []
        for doc_id, key in zip(segment.ids, segment.docnums, strict=True):
            entry = table.get(doc_id)
            if entry is None or entry[KEY] != int(key):
                texts.append("")
                continue
            try:
                texts.append(self._core.read_text(*entry[:3]))
            except HmsError:
                texts.append("")  # replaced or compacted meanwhile: dead by now
        return texts

    def install(self, revision: int, batch: Sequence[tuple[int, Sequence[StoredOp]]]) -> None:
        """Publish the snapshot of ``revision``: O(changes), no tokenizing on the write path.

        ``batch`` holds each committed transaction's sequence and operations, in commit order.
        """
        snap = self.snapshot
        dead_folded: list[int] = []
        tail = snap.tail
        new_docs: list[TailDoc] = []
        died_in_tail: list[int] = []
        first_tail = tail[0][TAIL_DOCNUM] if len(tail) else None
        # Every committed document passes here: names bound locally, the key and the tombstone
        # test inlined (doc_key, is_tombstone_json), a put (txn.StoredPut) unpacked at once.
        docnums = self.docnum_of
        pop, meta_update = docnums.pop, self.metadata.update
        for sequence, ops in batch:
            base = doc_key(sequence, 0)
            for position, op in enumerate(ops):
                if isinstance(op, tuple):  # a put (txn.StoredPut), else a StoredDelete
                    op_id, text, meta, vector, _, _, _, _ = op
                    put = meta is None or not meta.startswith(TOMBSTONE_PREFIX)
                else:
                    op_id, meta, put = op.id, None, False
                old = pop(op_id, None)
                docnum = -1
                if old is not None:
                    if first_tail is not None and old >= first_tail:
                        died_in_tail.append(old)
                    else:
                        dead_folded.append(old)
                if put:
                    docnum = key = base + position
                    docnums[op_id] = key
                    new_docs.append((key, op_id, text, vector))
                    if first_tail is None:
                        first_tail = key
                meta_update(op_id, meta, docnum)
        segments = snap.with_deletions(dead_folded) if dead_folded else snap.segments
        grown = tail.extended(new_docs) if new_docs else tail
        # The dead-in-tail set is copied only when this batch adds to it (not on every commit).
        tail_dead = snap.tail_dead.union(died_in_tail) if died_in_tail else snap.tail_dead
        self.snapshot = Snapshot(revision=revision, segments=segments, tail=grown,
                                 tail_dead=tail_dead, tail_segment=self.tail_segment,
                                 load_texts=self.load_texts)
        self._commits += 1
        # Wake the builder only when there is something new for it to decide: a tail just
        # started (its idle timer), a full tail, or deletions in folded segments.
        if not len(snap.tail) or len(grown) >= FOLD_AT or dead_folded:
            self._wake.set()

    # -- metadata filter index (built on first use) -----------------------------------------

    def ids_with_metadata(self, wanted: dict[str, object]) -> set[str]:
        """Ids of live documents whose metadata has every ``key: value`` of ``wanted``."""
        found = self.metadata.ids(wanted)
        return set(self.docnum_of) if found is None else found

    def docnums_with_metadata(self, wanted: dict[str, object]) -> np.ndarray:
        """``ids_with_metadata`` as document numbers (int64, any order; -1 for a document the
        search index does not hold)."""
        found = self.metadata.docnums(wanted)
        if found is None:
            return np.fromiter(self.docnum_of.values(), dtype=np.int64, count=len(self.docnum_of))
        return found

    def _metadata_source(self) -> Iterator[tuple[str, str | None, int]]:
        docnum_of = self.docnum_of
        for doc_id, entry in self._core.table.entries.items():
            yield doc_id, entry[METADATA], docnum_of.get(doc_id, -1)

    # -- rebuild at open -------------------------------------------------------------------

    async def rebuild(self, progress: Callable[[int, int], Any] | None = None,
                      read: PersistedIndex | None = None) -> None:
        """Build the index at open: load persisted segments, re-index only what they lack.

        A persisted document counts only if the table still holds exactly that version (same
        version key); every other document of the table is tokenized again, in chunks, in worker
        threads. Segments are then made non-overlapping in document-number order, so ranking
        ties come out as a full rebuild would give them. ``progress(done, total)`` is called
        before each chunk of documents to tokenize and once at the end (never when none are).
        ``read``: the persisted segments, if the opener has read them already.
        """
        table = self._core.table
        views: list[SegmentView] = []
        if self._persistent:
            loaded = await trio.to_thread.run_sync(self._load_persisted, read)
            adopted = adopt_all(table, self.docnum_of, loaded)
            if adopted is None:
                adopted = [(segment, file, adopt(table, self.docnum_of, segment))
                           for segment, file in loaded]
            for segment, file, dead in adopted:
                view = SegmentView.fresh(segment)
                view = view.without(dead) if dead else view
                if view.n_live:
                    views.append(view)
                    self.files.persisted[segment] = file
                self.loaded_documents += view.n_live
        missing = [] if len(self.docnum_of) == len(table) - len(table.tombstones) else sorted(
            ((i, e) for i, e in table.entries.items()
             if i not in self.docnum_of and i not in table.tombstones),
            key=lambda item: item[1][KEY])
        for start in range(0, len(missing), REBUILD_CHUNK):
            if progress is not None:
                progress(start, len(missing))
            chunk = missing[start:start + REBUILD_CHUNK]
            segment = await trio.to_thread.run_sync(self._build_chunk, chunk, table.embedding_dim)
            for doc_id, entry in chunk:
                self.docnum_of[doc_id] = entry[KEY]
            views.append(SegmentView.fresh(segment))
            self.rebuilt_documents += len(chunk)
        if progress is not None and missing:
            progress(len(missing), len(missing))
        views = await self._disjoint(views)
        self.snapshot = Snapshot(revision=table.revision, segments=tuple(views),
                                 tail_segment=self.tail_segment, load_texts=self.load_texts)
        if self._persistent and self.rebuilt_documents >= PERSIST_AT:
            self._wake.set()  # persist soon, so the next open need not tokenize them again

    async def _disjoint(self, views: list[SegmentView]) -> list[SegmentView]:
        """Views sorted by document number, overlapping ones merged (rare: damaged segments)."""
        views.sort(key=lambda v: v.segment.first)
        out: list[list[SegmentView]] = []
        last = -1
        for view in views:
            if out and view.segment.first <= last:
                out[-1].append(view)
            else:
                out.append([view])
            last = max(last, int(view.segment.docnums[-1]))
        result = []
        for group in out:
            if len(group) == 1:
                result.append(group[0])
                continue
            edim = self._core.table.embedding_dim
            merged = await trio.to_thread.run_sync(
                functools.partial(self._merged, [v.segment for v in group], [v.live for v in group],
                                  edim))
            result.append(SegmentView.fresh(merged))
        return result

    # -- persistence (engine/indexfiles.py does the writing, in worker threads) -------------

    def _load_persisted(self, read: PersistedIndex | None) -> list[tuple[Segment, str]]:
        """``IndexFiles.load``, counting the files it rejected. Worker thread."""
        loaded, rejected = self.files.load(read)
        self.segments_rejected += rejected
        return loaded

    async def persist_into(self, generation: str) -> None:
        """Write every current segment into ``generation`` (a compaction's new one), each with
        only its live documents and their terms (``IndexFiles.file_segment``)."""
        if not self._persistent:
            return
        views = list(self.snapshot.segments)
        await trio.to_thread.run_sync(self.files.write_generation, generation, views)

    def switched_generation(self) -> None:
        """The store now lives in the generation ``persist_into`` wrote."""
        self.files.switch()
        if self.on_persisted is not None:  # no commit since the compaction: its base holds all
            self.on_persisted(self._core.generation, self.persisted_files(), self._core.journal.size())

    def _unpersisted_documents(self) -> int:
        return self.files.unpersisted(self.snapshot.segments)

    async def persist_now(self) -> None:
        """Fold the tail and persist every segment (at close). Failures are not fatal: the
        index is derived, and the next open re-indexes what is missing."""
        if not self._persistent:
            return
        if self.snapshot.tail:
            await self._fold()
        await self._persist_segments()

    async def _persist_segments(self) -> None:
        """Persist the current segments under the index I/O lock; a failure is counted, not
        raised (the index is derived: the next open re-indexes what is not on disk)."""
        async with self.io_lock:
            views = list(self.snapshot.segments)
            try:
                with map_errors("persisting the index"):
                    files = await trio.to_thread.run_sync(self.files.write, views)
            except HmsError:
                self.persist_failures += 1
                return
            if self.on_persisted is not None:
                # Measured after: every document of ``views`` was committed before it.
                self.on_persisted(self._core.generation, files, self._core.journal.size())

    def _merged(self, segments: list[Segment], lives: list[np.ndarray],
                embedding_dim: int | None) -> Segment:
        """``merge_segments``, ready for queries (``ready_for_queries``). Worker thread."""
        return ready_for_queries(merge_segments(segments, lives, dim=self.dim,
                                                embedding_dim=embedding_dim), ids=True)

    def _build_chunk(self, chunk: list[tuple[str, DocEntry]], embedding_dim: int | None) -> Segment:
        """A segment of ``chunk``'s documents, numbered by their keys, ready for queries.
        Worker thread (an open that indexes documents its files did not hold)."""
        core = self._core
        texts = [core.read_text(*e[:3]) for _, e in chunk]
        segment = build_segment(
            self.analyzer, ids=[i for i, _ in chunk], texts=texts,
            embeddings=[e[EMBEDDING] for _, e in chunk], first_docnum=0,
            dim=self.dim, embedding_dim=embedding_dim,
        )
        return ready_for_queries(attrs.evolve(
            segment, docnums=np.asarray([e[KEY] for _, e in chunk], dtype=np.int64)))

    # -- the index-builder actor -----------------------------------------------------------

    def _pick(self) -> tuple[int, int] | None:
        views = self.snapshot.segments
        for i, v in enumerate(views):
            if v.segment.n_docs >= 64 and v.n_live < (1 - DEAD_FRACTION_TO_REWRITE) * v.segment.n_docs:
                return i, i + 1
        return MERGE_POLICY.pick([v.n_live for v in views])

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The index-builder actor: fold the tail into segments (here); merge small or sparse
        segments and persist them (``_merging``, a task of its own).

        Folding never waits for a merge or a persist: either can take seconds at 200k documents
        (a merge ~0.5 s, writing a 180k-document segment longer), and a burst of writes
        meanwhile left its whole tail unfolded (15-24k documents at the end of a 200k-document
        burst of 128 writers), which the first search then had to analyze (~60-80 ms) and the
        builder fold after it."""
        with self._cancel:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._merging)
                nursery.start_soon(self._coding)
                task_status.started()
                while True:
                    await self._wake.wait()
                    self._wake = trio.Event()
                    if await self._fold_due():
                        await self._fold()
                    self._merge_wake.set()

    async def _coding(self) -> None:
        """What the segments the open loaded still lack (``loaded.finish_loaded``)."""
        await finish_loaded(self.snapshot.views, self._coding_stop)

    async def _fold_due(self) -> bool:
        """Whether to fold the tail now, after waiting until it is due: it holds ``FOLD_AT``
        documents (``FOLD_AT_MERGING`` while the merge task is busy, which wakes us when it is
        done), or no wake came for ``FOLD_IDLE_SECONDS`` (a burst of commits accumulates into
        fewer, larger segments). False without a tail."""
        while self.snapshot.tail:
            if len(self.snapshot.tail) >= (FOLD_AT_MERGING if self._merge_busy else FOLD_AT):
                return True
            with trio.move_on_after(FOLD_IDLE_SECONDS):
                await self._wake.wait()
                self._wake = trio.Event()
                continue
            return True  # quiet
        return False

    async def _merging(self) -> None:
        """The builder's merge task: persist once enough is not on disk, merge what the merge
        policy picks, one merge at a time, while folds go on; once no commit has come for
        ``CONSOLIDATE_IDLE_SECONDS`` and no tail waits, consolidate. Merges replace their window
        of segments by identity, and folds only append segments, so the two never undo each
        other's work (``_merge``)."""
        while True:
            self._merge_busy = True
            await self._persist_if_due()
            if (window := self._pick()) is not None:
                await self._merge(*window)
                continue
            if self._consolidation() is not None:
                self._merge_idle()
                if await self._quiet():
                    self._merge_busy = True
                    await self._consolidate()
                continue
            self._merge_idle()
            await self._merge_wake.wait()
            self._merge_wake = trio.Event()

    def _merge_idle(self) -> None:
        self._merge_busy = False
        if len(self.snapshot.tail) >= FOLD_AT:
            self._wake.set()  # a tail held back while we were busy (``_fold_due``)

    async def _quiet(self) -> bool:
        """Wait ``CONSOLIDATE_IDLE_SECONDS``: True when no commit came meanwhile; False as soon
        as a fold, a deletion or a persist wakes the merge task (the caller decides again and
        waits anew, reading the idle time again), or when a commit came."""
        commits = self._commits
        with trio.move_on_after(CONSOLIDATE_IDLE_SECONDS):
            await self._merge_wake.wait()
            self._merge_wake = trio.Event()
            return False
        return self._commits == commits

    async def _persist_if_due(self) -> None:
        if self._persistent and self._unpersisted_documents() >= PERSIST_AT:
            await self._persist_segments()

    def _consolidation(self) -> tuple[int, int] | None:
        """The segments an idle builder should merge (``mergepolicy.consolidation_window`` of the
        live sizes), or None; never while a tail is waiting to be folded."""
        snap = self.snapshot
        if len(snap.tail):
            return None
        return consolidation_window([v.n_live for v in snap.segments],
                                    fraction=CONSOLIDATE_FRACTION, max_docs=CONSOLIDATE_MAX_DOCS)

    async def _consolidate(self) -> None:
        window = self._consolidation()
        if window is not None:
            await self._merge(*window)
            self.consolidations += 1

    @property
    def settled(self) -> bool:
        """True when the builder has nothing left to do: no tail to fold, no merge due, no
        consolidation pending (benchmarks and tests wait for it)."""
        return not self.snapshot.tail and self._pick() is None and self._consolidation() is None

    async def _fold(self) -> None:
        tail = self.snapshot.tail
        dead = self.snapshot.tail_dead
        live = [d for d in tail if d[TAIL_DOCNUM] not in dead]
        start = self.snapshot
        segment, translated = await trio.to_thread.run_sync(
            termcarry.built_with_memo, self.build_tail, (live,), termcarry.carry_source(start),
            functools.partial(termcarry.fold_layout, snap=start)) if live else (None, None)
        snap = self.snapshot  # commits may have happened meanwhile: fold only what we built
        folded = {d[TAIL_DOCNUM] for d in tail}
        died = [d for d in snap.tail_dead if d in folded and d not in dead]
        segments = snap.segments
        if segment is not None and segment.n_docs:
            view = SegmentView.fresh(segment)
            if died:
                view = view.without([segment.local(d) for d in died])
            segments = (*segments, view)
        self.snapshot = Snapshot(
            revision=snap.revision, segments=segments, tail=snap.tail[len(tail):].compacted(),
            tail_dead=frozenset(d for d in snap.tail_dead if d not in folded),
            tail_segment=self.tail_segment, load_texts=self.load_texts,
        )
        termcarry.hand_over(self.snapshot, snap, translated,
                            termcarry.fold_layout(segment, snap=snap), segment)
        self.folds += 1
        if self.snapshot.tail:
            self._wake.set()  # commits landed while we folded: their tail needs folding too

    async def _merge(self, a: int, b: int) -> None:
        views = self.snapshot.segments[a:b]
        lives = [v.live for v in views]
        edim = self._core.table.embedding_dim
        before = self.snapshot
        source = termcarry.carry_source(before)
        merged, translated = await trio.to_thread.run_sync(
            termcarry.built_with_memo, self._merged, ([v.segment for v in views], lives, edim),
            source, functools.partial(termcarry.merge_layout, views[0].segment, len(views),
                                      snap=before, views=source[1]))
        snap = self.snapshot
        current = snap.segments
        start = next(i for i, v in enumerate(current) if v.segment is views[0].segment)
        now = current[start:start + len(views)]
        # Documents that died while we merged: dead now, alive in the merged copy.
        died = [int(d) for old, new in zip(views, now, strict=True)
                for d in old.segment.docnums[(old.live == 1) & (new.live == 0)]]
        middle: tuple[SegmentView, ...] = ()
        if merged.n_docs:
            view = SegmentView.fresh(merged)
            if died:
                view = view.without([merged.local(d) for d in died if merged.local(d) >= 0])
            middle = (view,)
        self.snapshot = snap.with_segments((*current[:start], *middle, *current[start + len(views):]))
        termcarry.hand_over(self.snapshot, snap, translated, termcarry.merge_layout(
            views[0].segment, len(views), merged, snap=snap), merged)
        self.merges += 1
        self.merged_documents += merged.n_docs

    def stop(self) -> None:
        self._coding_stop.set()  # first: a chunk in a thread is not cancelled, only stopped
        self._cancel.cancel()
