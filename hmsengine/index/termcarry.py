"""The term memo (``lane.term_infos``) carried from a snapshot to the one a fold or a merge lands.

A fold or a merge makes a snapshot of the same live documents (the same revision), so each term
keeps its idf, and its local id and postings in every view both snapshots show; only the new
segment's view needs a lookup. Two ways, both exact:

* Ready at the landing (``adopt_memo``): the worker thread that builds the new segment also
  translates the memo of the snapshot it started from (``carry_source`` on the event loop as it
  starts, then ``built_with_memo``), and the landing translates, on the event loop, the terms
  queries added since (up to ``ADOPT_LATE_TERMS``), or the whole memo when another fold or merge
  landed meanwhile. The new snapshot's first queries then look nothing up. Carried lazily, the
  first query of each term after a landing still looked it up in the new view: in the pass of
  queries right after a fold at 50k documents, ~2.3 ms of ~12 ms (bench/results/lexical.notes.md).
* Lazily (``carry_terms``): what the new memo does not hold, ``term_infos`` takes from the
  predecessor's memo by the columns of the views both show, and looks up only the new views.

Nothing is carried over a write: a write changes the live documents, so every idf.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import attrs

from .lane import Carried, TermInfo, record_packer
from .segment import Segment
from .snapshot import SegmentView, Snapshot


def carry_terms(snap: Snapshot, previous: Snapshot) -> None:
    """Let ``snap`` take what ``previous``'s term memo knows, when ``snap`` holds the same live
    documents (the same revision: a fold or a merge made it) and both views are known: the idf
    of each term is then the same, and so are its local id and postings in every view both
    snapshots show (the same objects). Right after a fold or a merge, the first query of each
    term cost ~7 us for its lookups in every view and its idf (bench/results/lexical.notes.md).

    Holds the predecessor's memo, not its views: the views are compared here, while both
    snapshots hold them. The caller calls this once ``snap`` replaced ``previous``."""
    if snap.revision != previous.revision:
        return
    # Without its tail's view yet (built by its first query), the segments: the tail's view,
    # last, is then looked up.
    new_views = snap.built_views() or snap.segments
    known: dict[str, TermInfo] = previous.memo("terms")
    if known:
        old_views = previous.built_views()  # what the memo's local ids are indexed by
        if old_views is None:
            return
        where = {id(view): i for i, view in enumerate(old_views)}
        columns = tuple(where.get(id(view), -1) for view in new_views)
    else:
        # No query read ``previous`` (a merge and a fold landed together): pass on what it
        # carried, its columns composed with ours.
        before: Carried | None = previous.memo("kernel").get("carried")
        if before is None:
            return
        known, old_columns = before
        where = {id(view): i for i, view in enumerate(previous.built_views() or previous.segments)}
        columns = tuple(old_columns[i] if 0 <= (i := where.get(id(view), -1)) < len(old_columns)
                        else -1 for view in new_views)
    snap.memo("kernel")["carried"] = (known, columns)


# -- the memo ready at the landing -------------------------------------------------------------

# A layout lays out a snapshot's views in terms of another's: per view, the column of the same
# view in the other snapshot's views, or -1 for the view of the new segment.
Layout = tuple[int, ...]

# A copy of a snapshot's term memo, the views its columns index, its revision.
CarrySource = tuple[dict[str, TermInfo], tuple[SegmentView, ...], int]


@attrs.frozen(eq=False)
class TranslatedMemo:
    """A term memo made for a snapshot not yet landed (``translate_memo``), from the memo of a
    snapshot of ``revision`` whose views were ``views``: for the views ``layout`` lays out, the
    new one a view of ``segment``."""

    memo: dict[str, TermInfo]
    views: tuple[SegmentView, ...]
    layout: Layout
    segment: Segment | None
    revision: int


def carry_source(snap: Snapshot) -> CarrySource:
    """On the event loop, as a fold or a merge starts from ``snap``: a copy of its term memo,
    the views the memo's columns index, its revision. Before a query built the tail's view the
    memo is empty, and its views are taken to be the segments'."""
    views = snap.built_views() or snap.segments
    return snap.memo("terms").copy(), views, snap.revision  # atomic, while queries insert


def translate_memo(source: CarrySource, layout: Layout, segment: Segment | None) -> TranslatedMemo:
    """``source``'s memo for a snapshot of the same documents whose views ``layout`` lays out in
    terms of the source's views, ``segment``'s for -1. Worker thread or event loop."""
    entries, views, revision = source
    return TranslatedMemo(memo=_translated(entries, len(views), layout, segment), views=views,
                          layout=layout, segment=segment, revision=revision)


def _translated(entries: dict[str, TermInfo], n_views: int, layout: Layout,
                segment: Segment | None) -> dict[str, TermInfo]:
    # Each term's local id and postings from its column (of ``n_views``), or looked up in
    # ``segment``; its idf kept. A term's ids with the new one appended, picked by one
    # ``itemgetter`` (~0.8 us a term; a comprehension over the layout ~1.1 us).
    vocab: dict[str, int] = segment.vocab if segment is not None else {}
    offsets = segment.terms.offsets.data if segment is not None else None
    record = record_packer(len(layout))
    pick = _picker([column if column >= 0 else n_views for column in layout])
    memo: dict[str, TermInfo] = {}
    for term, (old_ids, _, idf, _, old_counts) in entries.items():
        local = vocab.get(term, -1)
        count = offsets[local + 1] - offsets[local] if offsets is not None and local >= 0 else 0
        ids = pick((*old_ids, local))
        counts = pick((*old_counts, count))
        memo[term] = (ids, sum(counts), idf, record(idf, *ids), counts)
    return memo


def _picker(columns: list[int]) -> Callable[[tuple[int, ...]], tuple[int, ...]]:
    """A function that picks ``columns`` of a tuple, as a tuple (``itemgetter`` gives a bare
    item for one column, and takes none)."""
    if len(columns) >= 2:
        return operator.itemgetter(*columns)
    if columns:
        column = columns[0]
        return lambda t: (t[column],)
    return lambda t: ()


def built_with_memo(build: Callable[..., Segment], args: tuple[Any, ...], source: CarrySource,
                    layout_of: Callable[[Segment], Layout]) -> tuple[Segment, TranslatedMemo]:
    """``build(*args)`` (a fold's or a merge's new segment), and ``source``'s memo translated
    for the snapshot whose views ``layout_of(segment)`` lays out. Worker thread."""
    segment = build(*args)
    return segment, translate_memo(source, layout_of(segment), _with_documents(segment))


def fold_layout(segment: Segment | None, *, snap: Snapshot) -> Layout:
    """The views of the snapshot a fold of all of ``snap``'s tail into ``segment`` lands, in
    terms of ``snap``'s: its segments', then the new segment's (unless it has no document)."""
    new = (-1,) if _with_documents(segment) is not None else ()
    return (*range(len(snap.segments)), *new)


def merge_layout(first: Segment, count: int, merged: Segment, *, snap: Snapshot,
                 views: tuple[SegmentView, ...] | None = None) -> Layout:
    """The views of the snapshot the merge of ``count`` of ``snap``'s segments from ``first``
    into ``merged`` lands, in terms of ``snap``'s (``views``: as ``carry_source`` took them, so
    that a worker thread does not read them off ``snap``): those before, the merged segment's
    (unless it has no document), those after, and the tail's if built."""
    segments = snap.segments
    start = next(i for i, v in enumerate(segments) if v.segment is first)
    if views is None:
        views = snap.built_views() or segments
    new = (-1,) if merged.n_docs else ()
    return (*range(start), *new, *range(start + count, len(views)))


# At a landing, at most this many terms are translated on the event loop: the terms queries
# added to the predecessor's memo after the worker copied it, or its whole memo when another
# fold or merge landed meanwhile. ~0.8 us a term, so at most ~1.6 ms once per landing, where
# the first queries after it paid ~1-1.7 us a term (and a query's fixed cost) to look each up
# lazily; more are carried lazily (``carry_terms``).
ADOPT_LATE_TERMS = 2048


def adopt_memo(snap: Snapshot, previous: Snapshot, translated: TranslatedMemo | None,
               layout: Layout, segment: Segment | None) -> bool:
    """At a fold's or a merge's landing, before any query reads ``snap``, which replaces
    ``previous`` and whose views ``layout`` lays out in terms of ``previous``'s (-1: the view of
    the new ``segment``): give ``snap`` its term memo, whole. ``translated`` (the worker's) when
    it was made from ``previous``'s memo (or that of a snapshot of the same revision and views)
    for this layout, with the terms queries added since translated here; else ``previous``'s
    memo translated here. Up to ``ADOPT_LATE_TERMS`` are translated here; beyond, only the
    worker's are taken (or none) and the rest carried lazily. True when ``snap`` took a memo."""
    views = snap.built_views()
    old = previous.built_views()
    if snap.revision != previous.revision or views is None or old is None \
            or len(views) != len(layout) or snap.memo("terms"):
        return False
    for view, column in zip(views, layout, strict=True):
        if not (view is old[column] if column >= 0 else
                segment is not None and view.segment is segment):
            return False
    base: dict[str, TermInfo] = {}
    if translated is not None and translated.layout == layout and translated.segment is segment \
            and translated.revision == previous.revision and _same(translated.views, old):
        base = translated.memo
    known = previous.memo("terms").copy()  # atomic, while a worker's query may insert
    late = known.keys() - base.keys()
    if len(late) > ADOPT_LATE_TERMS:
        if not base:
            return False
        late = set()
    memo = snap.memo("terms")
    memo.update(base)
    if late:
        memo.update(_translated({term: known[term] for term in late}, len(old), layout, segment))
    return True


def _same(a: tuple[SegmentView, ...], b: tuple[SegmentView, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def hand_over(snap: Snapshot, previous: Snapshot, translated: TranslatedMemo | None,
              layout: Layout, segment: Segment | None) -> None:
    """A fold's or a merge's landing: ``snap``, which replaced ``previous``, takes its memo
    ready (``adopt_memo``; ``segment`` the new one, ignored without a document) and carries
    lazily what that did not cover (``carry_terms``)."""
    adopt_memo(snap, previous, translated, layout, _with_documents(segment))
    carry_terms(snap, previous)


def _with_documents(segment: Segment | None) -> Segment | None:
    return segment if segment is not None and segment.n_docs else None
