"""The unfolded tail's documents, tokenized once for every snapshot that shows them.

Each commit publishes a snapshot whose tail is the previous snapshot's plus the new documents
(``snapshot.TailView``: views of one shared list). A query reads a snapshot's tail through a
query-time segment built once per snapshot (``Snapshot.tail_view``). Built from the texts, that
segment cost the first query after every write the analysis of the whole tail again: ~0.3 ms
at 40 documents, ~2 ms at 512 (the fold threshold), tens of ms while a merge holds the fold
back. ``TailTerms`` keeps the term ids of one list's documents as they were first analyzed, in
one vocabulary that only grows, so a snapshot's segment costs the analysis of the documents no
earlier snapshot showed and one postings build over known ids (a numba kernel).

A term's id depends on when it was first seen, so two runs may number a tail's terms
differently; no result depends on it (scores add terms in the query's canonical order).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .analyzer import Analyzer
from .segment import I32, I64, U8, Segment, segment_of_terms

# Up to this many new documents are analyzed one by one (``Analyzer.tokenize``, ~6 us for one
# short text), more in one batch (``Analyzer.term_ids``: ~30 us for one, cheaper per document
# from ~40 on). Both give the same terms (tests/index/test_analyzer.py).
ONE_BY_ONE = 16


class TailTerms:
    """Term ids of the documents of one tail list, in list order, for its first ``done``.

    Shared by the views of that list; thread-safe (snapshots are read on the event loop and in
    worker threads). Entries are only appended, so an array handed out stays valid and unchanged.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._vocab: dict[str, int] = {}
        self._flat: I32 = np.empty(1024, dtype=np.int32)
        # Per item: its tokens are flat[starts[i]:starts[i + 1]]; its id, docnum, whether it
        # has an embedding (what each snapshot's segment would otherwise gather item by item).
        self._starts: I64 = np.zeros(129, dtype=np.int64)
        self._ids: list[str] = []
        self._docnums: I64 = np.empty(128, dtype=np.int64)
        self._has: U8 = np.empty(128, dtype=np.uint8)
        self.done = 0

    def segment(self, items: Sequence[tuple[int, str, str, npt.NDArray[np.float32] | None]],
                start: int, end: int, analyzer: Analyzer, embedding_dim: int | None) -> Segment:
        """The segment of ``items[start:end]`` (``TailDoc`` values: docnum, id, text,
        embedding; ``items`` the list this object belongs to), each document's terms as
        ``analyzer`` gave them when first asked for."""
        with self._lock:
            if end > self.done:
                self._add(items[self.done:end], analyzer)
            vocab = dict(self._vocab)  # the segment's columns: the ids known now
            first = int(self._starts[start])
            flat = self._flat[first:int(self._starts[end])]
            starts = self._starts[start:end + 1] - first
            ids = self._ids[start:end]
        has = self._has[start:end]
        return segment_of_terms(
            ids=ids, docnums=self._docnums[start:end].copy(), vocab=vocab, flat=flat,
            starts=starts, has_embedding=has.copy(), embedding_dim=embedding_dim,
            embeddings=[doc[3] for doc in items[start:end]] if has.any() else None,
            with_forward=False)  # only a tail document deleted before its fold needs it

    def _add(self, docs: Sequence[tuple[int, str, str, npt.NDArray[np.float32] | None]],
             analyzer: Analyzer) -> None:
        # The new documents' terms (the vocabulary grown by their new ones), ids, docnums and
        # embedding flags, appended (under the lock).
        texts = [doc[2] for doc in docs]
        if len(texts) > ONE_BY_ONE:
            flat, starts = analyzer.term_ids(texts, self._vocab)
        else:
            vocab = self._vocab
            term_ids: list[int] = []
            ends = [0]
            for text in texts:
                for term in analyzer.tokenize(text):
                    found = vocab.get(term)
                    if found is None:
                        found = vocab[term] = len(vocab)
                    term_ids.append(found)
                ends.append(len(term_ids))
            flat = np.array(term_ids, dtype=np.int32)
            starts = np.array(ends, dtype=np.int64)
        done, top = self.done, self.done + len(docs)
        used = int(self._starts[done])
        self._flat = _room(self._flat, used + len(flat))
        self._flat[used:used + len(flat)] = flat
        self._starts = _room(self._starts, top + 1)
        self._starts[done + 1:top + 1] = starts[1:] + used
        self._docnums = _room(self._docnums, top)
        self._docnums[done:top] = [doc[0] for doc in docs]
        self._has = _room(self._has, top)
        self._has[done:top] = [doc[3] is not None for doc in docs]
        self._ids.extend(doc[1] for doc in docs)
        self.done = top


def _room(array: np.ndarray, size: int) -> np.ndarray:
    """``array``, or a copy at least twice as long when it is shorter than ``size``. Arrays
    handed out earlier are views of the old one, which nothing overwrites."""
    if size <= len(array):
        return array
    grown = np.empty(max(size, 2 * len(array)), dtype=array.dtype)
    grown[:len(array)] = array
    return grown
