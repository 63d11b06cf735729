"""The plain-BM25 lane, and what every lexical query reads of a snapshot, computed once.

Most queries are a few terms with no filter, no vector and a small k. ``plain_top`` answers them
over the same kernels as ``search.run``, with nothing per query but the analysis, a memo lookup
per term, two small arrays and one kernel call for all segments (``kernels.lane.bm25_lane_topk``):
no query or plan values, no per-segment arrays, and ids read straight from the segment that
holds each hit. The same documents and scores as ``search.run``, bit for bit.

Per snapshot (``Snapshot.memo``), for this lane and for ``search.prepare``: each query term's
local id per view, postings and idf (``term_infos``, a memo that drops its oldest terms when full);
the kernel's arrays per view, largest segment first (``kernel_views``), and the lane kernel's
table of their addresses (``lane_plan``, which keeps those arrays alive with it); the ids per
view. Scratch arrays and top-k buffers are per thread.
"""

from __future__ import annotations

import struct
import threading
from collections import Counter
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from ..kernels.bm25 import bm25_idfs, new_scratch
from ..kernels.lane import LOCAL_BITS, LOCAL_MASK, bm25_lane_topk, lane_row, new_table
from ..kernels.topk import INSERTION_MAX
from .segment import Segment
from .snapshot import Snapshot

#: The largest k the lane answers (its kernel keeps a sorted insertion buffer).
LANE_MAX_K = INSERTION_MAX

_local = threading.local()


def scratch(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """This thread's kernel scratch (``new_scratch``) for segments of up to ``n`` documents."""
    return _buffers(n)[:3]


_Buffers = tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, tuple[np.ndarray, np.ndarray,
                                                                     np.ndarray]]]


def _buffers(n: int) -> _Buffers:
    """This thread's scratch for segments of up to ``n`` documents and its top-k buffers by k
    (``_top``): one thread-local read per query."""
    b: _Buffers | None = getattr(_local, "buffers", None)
    if b is None or b[0].shape[0] < n:
        b = _local.buffers = (*new_scratch(max(n, 1024)), b[3] if b is not None else {})
    return b


# Per-snapshot memo of query terms (local ids per view, postings, idf): repeated terms skip a
# dictionary lookup and numpy scalar reads per view. When full, the oldest entry goes (wiping it
# whole made every term of a varied query stream a miss again, ~7 us each).
TERM_MEMO_SIZE = 16384

_IDF = struct.Struct("=d")

# (local id per view or -1, postings over all views, global idf, the term's record for the lane
# kernel: the idf then the local ids, as native float64, ``kernels.lane.term_records``; postings
# per view): the lane joins a query's records into its kernel's one array.
TermInfo = tuple[tuple[int, ...], int, float, bytes, tuple[int, ...]]


def term_infos(snap: Snapshot, memo: dict[str, TermInfo], terms: Sequence[str]) -> list[TermInfo]:
    """Per term of ``terms`` (distinct: a query's canonical terms), in order, its ``TermInfo``
    (local id per view or -1, postings over all views, global idf, the lane's record, postings
    per view), from ``memo`` (``snap.memo("terms")``) or computed and remembered there.

    A term the snapshot this one succeeds knew (``termcarry.carry_terms``: a fold or a merge
    landed, the same documents) keeps its idf and, for every view both show, its local id and
    postings; only the new views are looked up. The others get their idf from one
    ``bm25_idfs`` call over all of them (one numpy call: one per missed term made a query of
    new terms pay it three or four times; every write starts a new snapshot, so right after
    writes most terms are new). The same bits as ``bm25_idf`` over an array, as for a whole
    query."""
    found: list[TermInfo | None] = [memo.get(term) for term in terms]
    if None not in found:
        return found  # type: ignore[return-value]
    lookups = _term_lookups(snap)
    carried: Carried | None = snap.memo("kernel").get("carried")
    known, columns = carried if carried is not None else (_NOTHING_CARRIED, ())
    computed: list[tuple[int, str, tuple[int, ...], tuple[int, ...], float | None]] = []
    dfs = []
    for n, term in enumerate(terms):
        if found[n] is not None:
            continue
        ids: list[int] = []
        counts: list[int] = []
        before = known.get(term)
        if before is None:
            df = 0
            for vocab, offsets, view_df in lookups:
                local = vocab.get(term, -1)
                ids.append(local)
                if local >= 0:
                    counts.append(offsets[local + 1] - offsets[local])
                    df += view_df[local]
                else:
                    counts.append(0)
            dfs.append(df)
            computed.append((n, term, tuple(ids), tuple(counts), None))
            continue
        old_ids, old_counts = before[0], before[4]
        for view, (vocab, offsets, _) in enumerate(lookups):
            if view < len(columns) and (column := columns[view]) >= 0:
                ids.append(old_ids[column])
                counts.append(old_counts[column])
                continue
            local = vocab.get(term, -1)
            ids.append(local)
            counts.append(offsets[local + 1] - offsets[local] if local >= 0 else 0)
        computed.append((n, term, tuple(ids), tuple(counts), before[2]))
    idfs = iter(bm25_idfs(dfs, snap.n_live) if dfs else ())
    # First in, first out (dicts keep insertion order); a query of more new terms than the memo
    # holds keeps them all, until the next query.
    for _ in range(min(len(memo) + len(computed) - TERM_MEMO_SIZE, len(memo))):
        del memo[next(iter(memo))]
    record = record_packer(len(lookups))
    for n, term, local_ids, per_view, idf in computed:
        if idf is None:
            idf = next(idfs)
        found[n] = memo[term] = (local_ids, sum(per_view), idf, record(idf, *local_ids), per_view)
    return found  # type: ignore[return-value]


_NOTHING_CARRIED: dict[str, TermInfo] = {}
_PACKERS: dict[int, Callable[..., bytes]] = {}


def record_packer(n_views: int) -> Callable[..., bytes]:
    """The packer of a term's lane record for ``n_views`` views (made once per count: a
    ``struct.Struct`` costs ~0.2 us to make)."""
    found = _PACKERS.get(n_views)
    if found is None:
        found = _PACKERS[n_views] = struct.Struct(f"={1 + n_views}d").pack
    return found


# What a snapshot's term memo may take from its predecessor's (``termcarry.carry_terms``): that
# memo, and per view of the snapshot the index of the same view in the predecessor's, or -1.
Carried = tuple[dict[str, TermInfo], tuple[int, ...]]


# MaxScore reads the postings of the terms that are not needed to fill the top k only in part
# (binary searches, or one pass over candidates that are soon few): counted at this fraction.
PARTIAL_READ = 8


def lexical_work(postings: list[int], weights: list[float], fill: int) -> int:
    """The postings the lexical kernels are expected to read (kernels/pruning.py): those of the
    highest-weight terms, down to the first that brings at least ``fill`` postings, in full;
    the rest in part. On the 200k Zipf benchmark, time per query tracked this far better than
    the total (all-common-term queries read all; one rare term makes the rest cheap)."""
    total = sum(postings)
    prefix = 0
    for _, n in sorted(zip(weights, postings, strict=True), key=lambda wn: -wn[0]):
        prefix += n
        if prefix >= fill:
            break
    return prefix + (total - prefix) // PARTIAL_READ


# (view index, offsets, doc_ids, tfs, norms by length (table, codes), live, any dead, docnums)
KernelView = tuple[int, np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray],
                   np.ndarray, bool, np.ndarray]


def kernel_views(snap: Snapshot) -> list[KernelView]:
    """Per view, largest segment first: (view index, the kernel's arrays, whether any document
    is dead), made once per snapshot so that a query does not look them up view by view."""
    kernel = snap.memo("kernel")
    cached: list[KernelView] | None = kernel.get("views")
    if cached is None:
        avgdl = snap.avgdl
        views = snap.views
        cached = []
        for i in snap.views_by_size():
            view = views[i]
            t = view.segment.terms
            cached.append((i, t.offsets, t.doc_ids, t.values, view.norms(avgdl), view.live,
                           view.n_live < view.live.shape[0], view.segment.docnums))
        kernel["views"] = cached
    return cached


def largest(snap: Snapshot) -> int:
    """The most documents a view of ``snap`` has (the scratch the kernels need)."""
    kernel = snap.memo("kernel")
    found: int | None = kernel.get("largest")
    if found is None:
        found = kernel["largest"] = max((v.live.shape[0] for v in snap.views), default=0)
    return found


LanePlan = tuple[np.ndarray, int, list[KernelView]]


def lane_plan(snap: Snapshot) -> LanePlan:
    """(the lane kernel's table, the most documents a view has, the kernel views the table
    points into), made once per snapshot. The table holds the addresses of the views' arrays
    (``kernels/lane.py``): the plan keeps those arrays alive with it, and the snapshot's memo
    keeps the plan as long as the snapshot lives."""
    kernel = snap.memo("kernel")
    found: LanePlan | None = kernel.get("plan")
    if found is None:
        views = kernel_views(snap)
        table = new_table(len(views))
        for row, (i, offsets, doc_ids, tfs, norms, live, check, docnums) in enumerate(views):
            lane_row(table, row, i, check, offsets, doc_ids, tfs, norms, live, docnums)
        found = kernel["plan"] = (table, largest(snap), views)
    return found


def _term_lookups(snap: Snapshot) -> list[tuple[dict[str, int], memoryview, memoryview]]:
    """Per view: (its segment's vocabulary, postings offsets, the view's live document
    frequencies), made once per snapshot for the terms the memo misses. The arrays as
    memoryviews (``ndarray.data``): indexing one gives a Python int in ~10 ns, ``ndarray.item``
    in ~35 ns, and a missed term reads three per view."""
    kernel = snap.memo("kernel")
    found: list[tuple[dict[str, int], memoryview, memoryview]] | None = kernel.get("lookups")
    if found is None:
        found = kernel["lookups"] = [(v.segment.vocab, v.segment.terms.offsets.data, v.df.data)
                                     for v in snap.views]
    return found


def _ids_by_view(snap: Snapshot) -> list[tuple[str, ...]]:
    kernel = snap.memo("kernel")
    found: list[tuple[str, ...]] | None = kernel.get("ids")
    if found is None:
        found = kernel["ids"] = [v.segment.ids for v in snap.views]
    return found


def _top(tops: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]],
         k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (scores, documents, where) buffers for a top ``k`` in ``tops`` (this thread's,
    ``_buffers``), made on first use."""
    found = tops[k] = (np.empty(k, dtype=np.float64), np.empty(k, dtype=np.int64),
                       np.empty(k, dtype=np.int64))
    return found


def plain_lane(snap: Snapshot) -> PlainLane:
    """The snapshot's plain lane, made on first use and kept in its memo."""
    kernel = snap.memo("kernel")
    found: PlainLane | None = kernel.get("lane")
    if found is None:
        # The plan keeps the kernel views' arrays alive as long as its table points into them.
        table, most, views = lane_plan(snap)
        found = kernel["lane"] = PlainLane(snap=snap, memo=snap.memo("terms"), table=table,
                                           most=most, views=views, ids=_ids_by_view(snap),
                                           segments=[v.segment for v in snap.views])
    return found


@attrs.define(eq=False)
class PlainLane:
    """What the plain lane reads of one snapshot, gathered once so that a query costs its
    analysis, a memo lookup per term, two small arrays, one kernel call and its ids
    (``top``). Made by ``plain_lane``; lives as long as its snapshot."""

    _snap: Snapshot
    _memo: dict[str, TermInfo]
    _table: np.ndarray
    _most: int
    _views: list[KernelView]
    _ids: list[tuple[str, ...]]
    _segments: list[Segment]  # per view, by view index (the kernel's columns)

    def top(self, terms: list[str], k: int,
            inline_work: int) -> tuple[list[str], list[float]] | None:
        """``plain_top`` of this lane's snapshot."""
        if not terms:
            return [], []
        distinct = sorted(set(terms))
        memo = self._memo
        infos: list[TermInfo] = [memo.get(term) for term in distinct]  # type: ignore[misc]
        if None in infos:
            infos = term_infos(self._snap, memo, distinct)
        total = 0
        for info in infos:
            total += info[1]
        repeated = len(distinct) < len(terms)
        # The estimate is at most the total: the sort in lexical_work only for a large query.
        if total > inline_work:
            weights = _weights(infos, terms, distinct) if repeated else [i[2] for i in infos]
            if lexical_work([i[1] for i in infos], weights, k * len(self._views)) > inline_work:
                return None
        # The kernel's one array from each term's record (``term_infos``): one join and one
        # view (~0.6 us; a matrix and a weight array made apart took ~2 us, np.array over
        # tuples of ints more). Writable (bytearray), as the kernel was compiled and warmed for.
        if repeated:
            records = [_IDF.pack(w) + i[3][_IDF.size:]
                       for i, w in zip(infos, _weights(infos, terms, distinct), strict=True)]
        else:
            records = [i[3] for i in infos]
        acc, seen, touched, tops = _buffers(self._most)
        top_s, top_d, top_w = tops.get(k) or _top(tops, k)
        count, view = bm25_lane_topk(self._table, np.frombuffer(bytearray().join(records)),
                                     top_s, top_d, top_w, acc, seen, touched)
        if view >= 0:
            # Every hit in one view, ``top_w`` their local numbers: one fancy index of its
            # segment's id array (~0.4 us for ten, against ~1-3 us by the tuples below).
            found = self._segments[view].id_array[top_w[:count]].tolist()
        else:
            ids = self._ids
            found = [ids[at >> LOCAL_BITS][at & LOCAL_MASK] for at in top_w[:count].tolist()]
        return found, top_s[:count].tolist()


def _weights(infos: list[TermInfo], terms: list[str], distinct: list[str]) -> list[float]:
    # Each distinct term's idf times its count in the query: the IEEE float64 product, as
    # numpy's elementwise one (search.prepare computes the same).
    counts = Counter(terms)
    return [info[2] * counts[term] for info, term in zip(infos, distinct, strict=True)]


def plain_top(snap: Snapshot, terms: list[str], k: int,
              inline_work: int) -> tuple[list[str], list[float]] | None:
    """The ids and BM25 scores of the top ``k`` (1 to ``LANE_MAX_K``) documents of ``snap`` for
    the analyzed query ``terms`` (repeats weigh by their multiplicity), best first, ties by
    document number: what ``search.run`` gives for a lexical-only query without filters.

    None when the query's estimated work (``lexical_work``, as ``search.prepare`` counts it) is
    above ``inline_work``: the caller then runs it in a worker thread the general way.
    Synchronous, on the caller's thread; reads only the immutable snapshot.
    """
    return plain_lane(snap).top(terms, k, inline_work)
