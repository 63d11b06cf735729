"""Snapshots: the segments of one revision, with their deletions, never mutated once published.

A :class:`SegmentView` pairs an immutable :class:`Segment` with the liveness of its documents
and the document frequencies over its live documents at one revision. Deleting documents makes
new views (copy on write of two small arrays); a reader that took a :class:`Snapshot` keeps
seeing exactly that revision, and never blocks the writer.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import attrs
import numpy as np

from ..kernels.bm25 import bm25_norms
from .analyzer import Analyzer
from .segment import I64, U8, Segment
from .tailterms import TailTerms


@attrs.frozen(kw_only=True, eq=False)
class SegmentView:
    segment: Segment
    live: U8
    df: I64
    n_live: int
    len_live: int
    _norm_cache: dict[float, tuple[np.ndarray, np.ndarray]] = attrs.field(factory=dict,
                                                                          init=False)

    @classmethod
    def fresh(cls, segment: Segment) -> SegmentView:
        return cls(segment=segment, live=np.ones(segment.n_docs, dtype=np.uint8), df=segment.df,
                   n_live=segment.n_docs, len_live=int(segment.doc_lens.sum()))

    def without(self, locals_: Iterable[int]) -> SegmentView:
        """A view with the given live local documents marked dead (df adjusted)."""
        live = self.live.copy()
        df = self.df.copy()
        fwd = self.segment.forward
        n_live, len_live = self.n_live, self.len_live
        for d in locals_:
            if live[d]:
                live[d] = 0
                df[fwd.doc_ids[fwd.offsets[d]:fwd.offsets[d + 1]]] -= 1
                n_live -= 1
                len_live -= int(self.segment.doc_lens[d])
        return SegmentView(segment=self.segment, live=live, df=df, n_live=n_live, len_live=len_live)

    def norms(self, avgdl: float) -> tuple[np.ndarray, np.ndarray]:
        """The segment's BM25 length norms for ``avgdl`` in the kernels' by-length form
        (``kernels/norms.py``): the norms of its distinct lengths, and each document's index
        into them. Cached: a snapshot has one avgdl, and each new one costs a table of the
        distinct lengths only."""
        cached = self._norm_cache.get(avgdl)
        if cached is None:
            lengths, codes = self.segment.length_codes
            self._norm_cache.clear()
            cached = self._norm_cache[avgdl] = (bm25_norms(lengths, avgdl), codes)
        return cached


# A committed document not yet folded into a segment (the mutable tail's unit): a plain tuple
# (docnum, id, text, embedding), read by position (``TAIL_*``). One is made per document put, on
# the write path: a plain tuple is the cheapest to make (an attrs value cost ~3x), and the cyclic
# garbage collector stops tracking it at its first young collection, where it tracked a named
# tuple's instance for as long as the document stayed in the tail (engine/txn.py StoredPut).
TailDoc = tuple[int, str, str, np.ndarray | None]
TAIL_DOCNUM: Final = 0
TAIL_ID: Final = 1
TAIL_TEXT: Final = 2
TAIL_EMBEDDING: Final = 3


class TailView(Sequence[TailDoc]):
    """An immutable view of the unfolded tail: ``items[start:end]`` of a list shared by every
    snapshot until the next fold.

    Publishing a snapshot after a commit appends to the shared list and widens the view, so it
    costs O(new documents), not O(tail) (a copy per commit measured 74 us at 512 documents).
    A view never sees items appended after it was made.
    """

    __slots__ = ("_end", "_items", "_start", "_terms")

    def __init__(self, items: list[TailDoc] | None = None, start: int = 0, end: int | None = None,
                 terms: TailTerms | None = None) -> None:
        self._items = items if items is not None else []
        self._start = start
        self._end = len(self._items) if end is None else end
        # The list's documents as analyzed so far, shared by every view of the same list.
        self._terms = terms if terms is not None else TailTerms()

    def __len__(self) -> int:
        return self._end - self._start

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            begin, stop, step = index.indices(len(self))
            if step != 1:
                return tuple(self)[index]
            return TailView(self._items, self._start + begin, self._start + max(begin, stop),
                            self._terms)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._items[self._start + index]

    def __iter__(self) -> Any:
        items = self._items
        for i in range(self._start, self._end):
            yield items[i]

    def extended(self, docs: list[TailDoc]) -> TailView:
        """This view plus ``docs``: shares the list when this view is its newest."""
        if self._end == len(self._items):
            self._items.extend(docs)
            return TailView(self._items, self._start, len(self._items), self._terms)
        fresh = [*self, *docs]
        return TailView(fresh, 0, len(fresh))

    def segment(self, analyzer: Analyzer, embedding_dim: int | None) -> Segment:
        """The segment of this view's documents (dead ones too: a snapshot marks those), each
        analyzed once for all the views of its list (``tailterms.TailTerms``)."""
        return self._terms.segment(self._items, self._start, self._end, analyzer, embedding_dim)

    def compacted(self) -> TailView:
        """The same documents in a list of their own (after a fold, frees the folded prefix)."""
        fresh = list(self)
        return TailView(fresh, 0, len(fresh))


@attrs.frozen(kw_only=True, eq=False)
class Snapshot:
    """The index at one revision: segment views in docnum order, then the unfolded tail.

    The tail holds the newest committed documents as plain values; the first search of a
    snapshot with a tail makes it a small segment (``tail_segment``: each document analyzed once
    for all the snapshots that show it, ``TailView.segment``) and caches it, and the
    index-builder actor folds the tail into a real segment in the background.
    """

    revision: int
    segments: tuple[SegmentView, ...]
    tail: TailView = attrs.field(factory=TailView)
    tail_dead: frozenset[int] = frozenset()
    tail_segment: Callable[[TailView], Segment] | None = None
    load_texts: Callable[[Segment], list[str]] | None = None
    _cache: dict[str, Any] = attrs.field(factory=dict, init=False)

    @property
    def views(self) -> tuple[SegmentView, ...]:
        """The segment views, then the query-time view of the live tail (if any)."""
        cached = self._cache.get("views")
        if cached is None:
            tail = self.tail_view()
            cached = self._cache["views"] = self.segments if tail is None else (*self.segments, tail)
        return cached

    def built_views(self) -> tuple[SegmentView, ...] | None:
        """``views`` when known without building the tail's query-time view (no tail, or
        built already), else None."""
        if "views" in self._cache or "tail" in self._cache or not len(self.tail):
            return self.views
        return None

    @property
    def tail_pending(self) -> int:
        """How many tail documents this snapshot's query-time segment would be built from on
        first use: 0 once built (or carried over), or without a tail."""
        return 0 if "tail" in self._cache else len(self.tail)

    def tail_view(self) -> SegmentView | None:
        """The tail as a segment, its dead documents marked, built on first use once per
        snapshot (and carried over by ``with_segments``); None when no tail document is live."""
        if "tail" not in self._cache:
            tail, dead = self.tail, self.tail_dead
            built = None
            if len(tail) and self.tail_segment is not None:
                dead_at = [i for i, d in enumerate(tail) if d[TAIL_DOCNUM] in dead] if dead else []
                if len(dead_at) < len(tail):
                    built = SegmentView.fresh(self.tail_segment(tail))
                    built = built.without(dead_at) if dead_at else built
            self._cache["tail"] = built
        view: SegmentView | None = self._cache["tail"]
        return view

    def with_segments(self, segments: tuple[SegmentView, ...]) -> Snapshot:
        """This snapshot with other segment views (a merge landed) and the same tail: the tail's
        query-time segment, if built, is shared rather than tokenized again (a merge landing
        after a burst would otherwise cost the next query ~ms per thousand tail documents)."""
        snap = Snapshot(revision=self.revision, segments=segments, tail=self.tail,
                        tail_dead=self.tail_dead, tail_segment=self.tail_segment,
                        load_texts=self.load_texts)
        if "tail" in self._cache:
            snap._cache["tail"] = self._cache["tail"]
        return snap

    def memo(self, name: str) -> dict[Any, Any]:
        """A named dictionary that lives as long as this snapshot (for derived values)."""
        found = self._cache.get(name)
        if found is None:
            found = self._cache[name] = {}
        return found

    def views_by_size(self) -> list[int]:
        """View indexes, largest segment first (ties by index)."""
        cached = self._cache.get("by_size")
        if cached is None:
            views = self.views
            cached = self._cache["by_size"] = sorted(
                range(len(views)), key=lambda i: (-views[i].segment.n_docs, i))
        return cached

    @property
    def n_live(self) -> int:
        """Live documents over every view (summed once per snapshot)."""
        cached = self._cache.get("n_live")
        if cached is None:
            cached = self._cache["n_live"] = sum(v.n_live for v in self.views)
        return int(cached)

    @property
    def avgdl(self) -> float:
        """The average length of the live documents (once per snapshot; 1.0 when empty)."""
        cached = self._cache.get("avgdl")
        if cached is None:
            n = self.n_live
            cached = self._cache["avgdl"] = sum(v.len_live for v in self.views) / n if n else 1.0
        return float(cached)

    def view_of(self, docnum: int) -> tuple[int, int]:
        """(view index, local number) of a global docnum, or (-1, -1)."""
        firsts = self._cache.get("firsts")
        if firsts is None:
            firsts = self._cache["firsts"] = [v.segment.first for v in self.views]
        i = bisect.bisect_right(firsts, docnum) - 1
        if i < 0:
            return -1, -1
        docnums = self.views[i].segment.docnums
        local = int(docnums.searchsorted(docnum))
        return (i, local) if local < docnums.shape[0] and docnums[local] == docnum else (-1, -1)

    def id_of(self, docnum: int) -> str:
        i, local = self.view_of(docnum)
        return self.views[i].segment.ids[local]

    def ids_of(self, docnums: Sequence[int] | np.ndarray) -> list[str]:
        """The ids of live global docnums, in order (``id_of`` for many, vectorised per view)."""
        if len(docnums) <= 64:
            return self._ids_of_few(docnums)
        firsts = self._cache.get("firsts_array")
        if firsts is None:
            firsts = self._cache["firsts_array"] = np.asarray(
                [v.segment.first for v in self.views], dtype=np.int64)
        wanted = np.asarray(docnums, dtype=np.int64)
        which = np.searchsorted(firsts, wanted, side="right") - 1
        out: list[str] = [""] * len(docnums)
        views = self.views
        for i in np.unique(which).tolist():
            rows = np.flatnonzero(which == i)
            segment = views[i].segment
            local = segment.docnums.searchsorted(wanted[rows]).tolist()
            ids = segment.ids
            for row, at in zip(rows.tolist(), local, strict=True):
                out[row] = ids[at]
        return out

    def _ids_of_few(self, docnums: Sequence[int] | np.ndarray) -> list[str]:
        # Per document in plain Python: a view whose segment numbers its documents without gaps
        # (no merge has dropped any) maps a number to its id by subtraction.
        dense = self._cache.get("dense")
        if dense is None:
            views = self.views
            firsts = [v.segment.first for v in views]
            gapless = [v.segment.n_docs > 0 and int(v.segment.docnums[-1]) - firsts[i] + 1
                       == v.segment.n_docs for i, v in enumerate(views)]
            dense = self._cache["dense"] = (firsts, gapless)
        firsts, gapless = dense
        views = self.views
        if len(views) == 1:  # the common case once the index is consolidated
            segment = views[0].segment
            wanted = np.asarray(docnums, dtype=np.int64)
            local = wanted - firsts[0] if gapless[0] else segment.docnums.searchsorted(wanted)
            return segment.id_array[local].tolist()  # type: ignore[no-any-return]
        if isinstance(docnums, np.ndarray):
            docnums = docnums.tolist()
        out = [""] * len(docnums)
        gapped: dict[int, list[int]] = {}  # view -> rows whose docnum it holds, with gaps
        for row, d in enumerate(docnums):
            i = bisect.bisect_right(firsts, d) - 1
            if gapless[i]:
                out[row] = views[i].segment.ids[d - firsts[i]]
            else:
                gapped.setdefault(i, []).append(row)
        for i, rows in gapped.items():  # one searchsorted per view, not one per document
            segment = views[i].segment
            ids = segment.ids
            at = segment.docnums.searchsorted([docnums[row] for row in rows]).tolist()
            for row, local in zip(rows, at, strict=True):
                out[row] = ids[local]
        return out

    def segment_of(self, docnum: int) -> tuple[int, int]:
        """(index into ``segments``, local number) of a docnum in a folded segment, or (-1, -1)."""
        firsts = np.asarray([v.segment.first for v in self.segments], dtype=np.int64)
        i = int(np.searchsorted(firsts, docnum, side="right")) - 1
        if i < 0:
            return -1, -1
        local = self.segments[i].segment.local(docnum)
        return (i, local) if local >= 0 else (-1, -1)

    def with_deletions(self, docnums: Iterable[int]) -> tuple[SegmentView, ...]:
        """The folded segments with these documents dead; untouched views are shared."""
        by_view: dict[int, list[int]] = {}
        for docnum in docnums:
            i, local = self.segment_of(docnum)
            if i >= 0:
                by_view.setdefault(i, []).append(local)
        return tuple(v.without(by_view[i]) if i in by_view else v
                     for i, v in enumerate(self.segments))


EMPTY = Snapshot(revision=0, segments=())
