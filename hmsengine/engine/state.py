"""The in-memory document table: what the store holds at its current revision.

Owned by the writer actor (only it mutates the table, on the event loop, after a batch is
durable); readers look entries up without waiting for anything. Text stays on disk: an entry
holds where the document's text record is, its metadata JSON and its embedding.
"""

from __future__ import annotations

import numpy as np

from .values import is_tombstone_json

# A document version's key: its place in the commit order (revision, then position in the
# transaction; a transaction holds at most 10,000 operations). The search index uses it as the
# document number, so ties rank by commit order whatever the index's history.
KEY_STRIDE = 1 << 14


def doc_key(revision: int, position: int) -> int:
    return revision * KEY_STRIDE + position


class DocEntry:
    """Where one live document's text is, and its metadata and embedding."""

    __slots__ = ("crc", "embedding", "key", "length", "metadata_json", "offset", "revision")

    def __init__(self, offset: int, length: int, crc: int, metadata_json: str | None,
                 embedding: np.ndarray | None, revision: int, key: int) -> None:
        self.offset = offset
        self.length = length
        self.crc = crc
        self.metadata_json = metadata_json
        self.embedding = embedding
        self.revision = revision
        self.key = key


class DocTable:
    """id -> :class:`DocEntry` for every live document, plus the store-wide facts."""

    def __init__(self) -> None:
        self.entries: dict[str, DocEntry] = {}
        self.revision = 0
        self.embedding_dim: int | None = None
        # Ids whose entry is a tombstone (a purged document's content-free marker): the reads
        # treat them as absent; export and restore read them (see is_tombstone_json).
        self.tombstones: set[str] = set()

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, doc_id: str) -> DocEntry | None:
        return self.entries.get(doc_id)

    def put(self, doc_id: str, entry: DocEntry) -> DocEntry | None:
        """Install ``entry``; return the replaced entry (whose record is now dead), if any."""
        old = self.entries.get(doc_id)
        self.entries[doc_id] = entry
        if is_tombstone_json(entry.metadata_json):
            self.tombstones.add(doc_id)
        elif old is not None:
            self.tombstones.discard(doc_id)
        return old

    def delete(self, doc_id: str) -> DocEntry | None:
        self.tombstones.discard(doc_id)
        return self.entries.pop(doc_id, None)

