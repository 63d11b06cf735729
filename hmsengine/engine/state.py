"""The in-memory document table: what the store holds at its current revision.

Owned by the writer actor (only it mutates the table, on the event loop, after a batch is
durable); readers look entries up without waiting for anything. Text stays on disk: an entry
holds where the document's text record is, its metadata JSON and its embedding.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any, Final

import numpy as np

from ..storage.tablesnap import PackedText
from .txn import PUT_ID, PUT_METADATA, StoredPut
from .values import TOMBSTONE_PREFIX, MetadataChunk, is_tombstone_json

# A document version's key: its place in the commit order (revision, then position in the
# transaction; a transaction holds at most 10,000 operations). The search index uses it as the
# document number, so ties rank by commit order whatever the index's history.
KEY_STRIDE = 1 << 14
# Base rows per chunk of ``Entries.metadata_chunks``: big enough that per-chunk work vanishes,
# small enough that a reader's per-chunk buffers stay a few MiB.
METADATA_CHUNK_ROWS = 1 << 16


def doc_key(revision: int, position: int) -> int:
    return revision * KEY_STRIDE + position


# Where one live document's text is, and its metadata and embedding: ``(offset, length, crc,
# metadata_json, embedding, revision, key)``, read through the indexes below. A plain tuple, on
# purpose: Python's cyclic garbage collector stops tracking a tuple of numbers, strings, None and
# numpy arrays at the first collection that sees it (not an instance of a class, nor of a named
# tuple), so the table's entries, one per document written or read since the open, are not
# traversed again by every full collection; as instances of a class with slots they were.
# Never changed once made: a repair or a new version installs a new one (readers compare
# identity to notice a concurrent replace).
DocEntry = tuple[int, int, int, str | None, np.ndarray | None, int, int]
OFFSET: Final = 0
LENGTH: Final = 1
CRC: Final = 2
METADATA: Final = 3
EMBEDDING: Final = 4
REVISION: Final = 5
KEY: Final = 6


def relocated(entry: DocEntry, offset: int, length: int, crc: int) -> DocEntry:
    """``entry`` with its text record at another place (a repair or a compaction moved it)."""
    return (offset, length, crc, *entry[METADATA:])


class Entries(MutableMapping[str, DocEntry]):
    """id -> ``DocEntry`` of every live document: a ``dict`` in behaviour, columns inside.

    An open that starts from a table snapshot (storage/tablesnap.py) installs it as a *base*:
    the ids, one int64 row of (offset, length, crc, revision, key) per document, the metadata
    packed as the snapshot stores it (``PackedText``: one UTF-8 blob, a row decoded when it is
    read; a str per document cost ~50 bytes more each) and the embeddings, as decoded. No
    ``DocEntry`` is built for a base row until someone looks it up (a million of them took
    ~2.5 s at open); the first lookup builds it and keeps it in the *overlay*, so every later
    lookup returns the same object (readers compare identity to notice a concurrent replace,
    and a repair by recovery or compaction installs a new entry).
    Writes and deletes go to the overlay; ``_live_key[row]`` tracks the key of a base id's
    current version (-1 once deleted), which lets :meth:`keys_of` answer a million ids in numpy.

    Iteration yields the base ids still live (in snapshot order), then the ids that only the
    overlay holds; callers that need an order sort by ``key`` (the commit order).

    Threads: the writer mutates on the event loop while readers may look entries up from worker
    threads (``Indexer.load_texts``), and a lookup of a base row now writes to the overlay. A
    lock orders building an entry against ``replace`` and deletion, so a reader can never put
    back a version the writer has just replaced or deleted; an overlay hit takes no lock, and
    iterations work on a copy of the overlay.
    """

    def __init__(self) -> None:
        self._over: dict[str, DocEntry] = {}
        self._ids: list[str] = []
        self._row_of: dict[str, int] = {}
        self._columns = np.zeros((0, 5), dtype=np.int64)
        self._metadata = PackedText()
        self._embeddings: list[np.ndarray | None] = []
        self._live_key = np.zeros(0, dtype=np.int64)
        self._len = 0
        self._lock = threading.Lock()

    def install(self, ids: list[str], columns: np.ndarray, metadata: PackedText | list[str | None],
                embeddings: list[np.ndarray | None]) -> None:
        """Make the (empty) mapping hold these documents as its base; ``columns`` is (n, 5)
        int64: offset, length, crc, revision, key. Ids must be distinct."""
        if self._len or self._ids:
            raise RuntimeError("a table snapshot is installed into an empty table only")
        self._ids = ids
        self._row_of = dict(zip(ids, range(len(ids)), strict=True))
        if len(self._row_of) != len(ids):
            raise ValueError("the table snapshot lists an id twice")
        self._columns = np.ascontiguousarray(columns, dtype=np.int64)
        self._metadata = metadata if isinstance(metadata, PackedText) else PackedText.of(metadata)
        if len(self._metadata) != len(ids):
            raise ValueError("the table snapshot has another number of metadata rows than ids")
        self._embeddings = embeddings
        self._live_key = self._columns[:, 4].copy()
        self._len = len(ids)

    @property
    def base_ids(self) -> list[str]:
        """The installed snapshot's ids, by row (the list itself: never changed, never to be)."""
        return self._ids

    @property
    def row_map(self) -> Mapping[str, int]:
        """id -> row of the installed snapshot's ids (fixed once installed; read-only)."""
        return self._row_of

    def _row(self, row: int) -> DocEntry:
        offset, length, crc, revision, key = self._columns[row].tolist()
        return (offset, length, crc, self._metadata[row], self._embeddings[row], revision, key)

    # -- the mapping ---------------------------------------------------------------------------

    def get(self, doc_id: str, default: Any = None) -> Any:
        entry = self._over.get(doc_id)
        if entry is not None:
            return entry
        if not self._ids:
            return default
        with self._lock:
            entry = self._over.get(doc_id)  # built or replaced meanwhile
            if entry is not None:
                return entry
            row = self._row_of.get(doc_id)
            if row is None or self._live_key[row] < 0:
                return default
            entry = self._over[doc_id] = self._row(row)
            return entry

    def __getitem__(self, doc_id: str) -> DocEntry:
        entry = self.get(doc_id)
        if entry is None:
            raise KeyError(doc_id)
        return entry  # type: ignore[no-any-return]

    def __contains__(self, doc_id: object) -> bool:
        if doc_id in self._over:
            return True
        if not self._ids:
            return False
        row = self._row_of.get(doc_id) if isinstance(doc_id, str) else None
        return row is not None and bool(self._live_key[row] >= 0)

    def __setitem__(self, doc_id: str, entry: DocEntry) -> None:
        self.replace(doc_id, entry)

    def replace(self, doc_id: str, entry: DocEntry) -> DocEntry | None:
        """Install ``entry`` under ``doc_id``; return the entry it replaces, if any (one pass:
        every put of the writer goes through here)."""
        with self._lock:
            return self._replace(doc_id, entry)

    def replace_many(self, ids: Sequence[str], entries: Sequence[DocEntry]) -> list[DocEntry | None]:
        """:meth:`replace` of each id by the entry at its place, in order, under one hold of
        the lock (a bulk put's batch); the replaced entries, None where an id was new."""
        with self._lock:
            return list(map(self._replace, ids, entries))

    def _replace(self, doc_id: str, entry: DocEntry) -> DocEntry | None:
        over = self._over
        old = over.get(doc_id)
        over[doc_id] = entry
        if old is not None:
            row = self._row_of.get(doc_id) if self._ids else None
            if row is not None:
                self._live_key[row] = entry[KEY]
            return old
        row = self._row_of.get(doc_id) if self._ids else None
        if row is None:
            self._len += 1
            return None
        if self._live_key[row] < 0:
            self._len += 1
            self._live_key[row] = entry[KEY]
            return None
        self._live_key[row] = entry[KEY]
        return self._row(row)

    def __delitem__(self, doc_id: str) -> None:
        with self._lock:
            if doc_id not in self:
                raise KeyError(doc_id)
            self._over.pop(doc_id, None)
            row = self._row_of.get(doc_id)
            if row is not None:
                self._live_key[row] = -1
            self._len -= 1

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[str]:
        row_of = self._row_of
        for doc_id, key in zip(self._ids, self._live_key.tolist(), strict=True):
            if key >= 0:
                yield doc_id
        for doc_id in list(self._over):
            if doc_id not in row_of:
                yield doc_id

    # -- column-wise reads (no DocEntry per document) --------------------------------------

    def metadata_items(self) -> list[tuple[str, str | None]]:
        """(id, metadata JSON) of every live document, in iteration order."""
        over = self._over
        out = [(doc_id, e[METADATA] if (e := over.get(doc_id)) is not None else meta)
               for doc_id, meta, key in zip(self._ids, self._metadata, self._live_key.tolist(),
                                            strict=True) if key >= 0]
        row_of = self._row_of
        out.extend((doc_id, e[METADATA]) for doc_id, e in list(over.items())
                   if doc_id not in row_of)
        return out

    def metadata_chunks(self, rows: int = METADATA_CHUNK_ROWS) -> Iterator[MetadataChunk]:
        """The documents of :meth:`metadata_items`, in the same order, as packed chunks of at
        most ``rows`` base rows: a run of base rows whose version is the snapshot's (the usual
        open) is handed over as the snapshot's bytes, no row decoded; a run holding a replaced
        or deleted row is packed from its live entries; the ids only the overlay holds come
        last. Lazy: take every chunk before the table changes (no await in between)."""
        ids, packed = self._ids, self._metadata
        # A base row whose key is still the snapshot's holds the snapshot's version (a replace
        # always brings a newer key), even when a lookup has since built its overlay entry.
        same = self._live_key == self._columns[:, 4]
        over = self._over
        for start in range(0, len(ids), rows):
            stop = min(start + rows, len(ids))
            if bool(same[start:stop].all()):
                blob, bounds = packed.span(start, stop)
                yield MetadataChunk(ids=ids[start:stop], blob=blob, bounds=bounds)
                continue
            live = [(ids[r], packed[r] if same[r] else over[ids[r]][METADATA])
                    for r in range(start, stop) if self._live_key[r] >= 0]
            if live:
                yield MetadataChunk.of(live)
        row_of = self._row_of
        rest = [(doc_id, e[METADATA]) for doc_id, e in list(over.items())
                if doc_id not in row_of]
        for start in range(0, len(rest), rows):
            yield MetadataChunk.of(rest[start:start + rows])

    def keys_of(self, ids: Sequence[str]) -> np.ndarray:
        """int64 key of each id's current version, -1 where the id is not live."""
        get = self._row_of.get
        rows = np.asarray([get(doc_id, -1) for doc_id in ids], dtype=np.int64)
        keys = np.where(rows >= 0, self._live_key[np.maximum(rows, 0)], -1) if len(self._ids) \
            else np.full(len(ids), -1, dtype=np.int64)
        if self._over:
            over = self._over
            for j in np.flatnonzero(rows < 0).tolist():
                entry = over.get(ids[j])
                if entry is not None:
                    keys[j] = entry[KEY]
        return np.asarray(keys, dtype=np.int64)

    def base_in_key_order(self, exclude: set[str]) -> tuple[list[str], np.ndarray] | None:
        """(ids, keys) of the live documents in key order, when all of them are base rows
        untouched since the install (else None); ids in ``exclude`` are left out."""
        if self._over:
            return None
        live_key = self._live_key
        if not exclude and (len(live_key) < 2 or bool(np.all(live_key[1:] > live_key[:-1]))) \
                and (len(live_key) == 0 or live_key[0] >= 0):
            return self._ids, live_key  # the snapshot is written in key order: the usual case
        rows = np.flatnonzero(self._live_key >= 0)
        if exclude:
            rows = np.asarray([r for r in rows.tolist() if self._ids[r] not in exclude],
                              dtype=np.int64)
        order = rows[np.argsort(self._live_key[rows], kind="stable")]
        ids = self._ids
        return [ids[r] for r in order.tolist()], self._live_key[order]

    def snapshot_columns(self) -> tuple[list[str], np.ndarray, list[str | None], list[np.ndarray | None]]:
        """(ids, (n, 5) int64 columns, metadata, embeddings) of every live document, for the
        table snapshot written at close; base rows not touched since open are copied as columns,
        the overlay's entries read a field at a time (no tuple per document)."""
        over = self._over
        base_rows = [r for r in np.flatnonzero(self._live_key >= 0).tolist()
                     if self._ids[r] not in over]  # an overlay entry may be repaired in place
        ids = [self._ids[r] for r in base_rows]
        columns = [self._columns[base_rows].reshape(len(base_rows), 5)]
        metadata = [self._metadata[r] for r in base_rows]
        embeddings = [self._embeddings[r] for r in base_rows]
        rest = list(over.values())
        if rest:
            ids.extend(over)
            fields = map(itemgetter(OFFSET, LENGTH, CRC, REVISION, KEY), rest)
            columns.append(np.fromiter(chain.from_iterable(fields), dtype=np.int64,
                                       count=5 * len(rest)).reshape(len(rest), 5))
            metadata.extend(map(itemgetter(METADATA), rest))
            embeddings.extend(map(itemgetter(EMBEDDING), rest))
        table = np.concatenate(columns)
        # In key (commit) order, so the next open finds its base already in the index's order
        # (a store written since its open usually is already: its overlay in commit order).
        keys = table[:, 4]
        if len(keys) < 2 or bool(np.all(keys[1:] > keys[:-1])):
            return ids, table, metadata, embeddings
        order = np.argsort(keys, kind="stable").tolist()
        return ([ids[r] for r in order], table[order], [metadata[r] for r in order],
                [embeddings[r] for r in order])


class DocTable:
    """id -> ``DocEntry`` for every live document, plus the store-wide facts."""

    def __init__(self) -> None:
        self.entries = Entries()
        self.revision = 0
        self.embedding_dim: int | None = None
        # Ids whose entry is a tombstone (a purged document's content-free marker): the reads
        # treat them as absent; export and restore read them (see is_tombstone_json).
        self.tombstones: set[str] = set()

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, doc_id: str) -> DocEntry | None:
        entry: DocEntry | None = self.entries.get(doc_id)
        return entry

    def put(self, doc_id: str, entry: DocEntry) -> DocEntry | None:
        """Install ``entry``; return the replaced entry (whose record is now dead), if any."""
        old = self.entries.replace(doc_id, entry)
        if is_tombstone_json(entry[METADATA]):
            self.tombstones.add(doc_id)
        elif old is not None:
            self.tombstones.discard(doc_id)
        return old

    def put_many(self, revision: int, puts: Sequence[StoredPut]) -> list[DocEntry | None]:
        """Install the puts of one transaction of ``revision`` (``doc_key`` of their positions
        in it, which holds nothing else), as :meth:`put` each: the replaced entries, in order."""
        base = revision * KEY_STRIDE
        olds = self.entries.replace_many(
            [op[PUT_ID] for op in puts],
            [(offset, length, crc, meta, vector, revision, base + position)
             for position, (_, _, meta, vector, offset, length, crc, _) in enumerate(puts)])
        tombstones = self.tombstones
        for op, old in zip(puts, olds, strict=True):
            meta = op[PUT_METADATA]
            if meta is not None and meta.startswith(TOMBSTONE_PREFIX):
                tombstones.add(op[PUT_ID])
            elif old is not None and tombstones:
                tombstones.discard(op[PUT_ID])
        return olds

    def delete(self, doc_id: str) -> DocEntry | None:
        self.tombstones.discard(doc_id)
        old = self.get(doc_id)
        if old is not None:
            del self.entries[doc_id]
        return old
