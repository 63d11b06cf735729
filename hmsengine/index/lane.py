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

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..kernels.bm25 import bm25_idfs, new_scratch
from ..kernels.lane import LOCAL_BITS, LOCAL_MASK, bm25_lane_topk, lane_row, new_table
from ..kernels.topk import INSERTION_MAX
from .snapshot import Snapshot

#: The largest k the lane answers (its kernel keeps a sorted insertion buffer).
LANE_MAX_K = INSERTION_MAX

_local = threading.local()


def scratch(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """This thread's kernel scratch (``new_scratch``) for segments of up to ``n`` documents."""
    s = getattr(_local, "scratch", None)
    if s is None or s[0].shape[0] < n:
        s = _local.scratch = new_scratch(max(n, 1024))
    return s


# Per-snapshot memo of query terms (local ids per view, postings, idf): repeated terms skip a
# dictionary lookup and numpy scalar reads per view. When full, the oldest entry goes (wiping it
# whole made every term of a varied query stream a miss again, ~7 us each).
TERM_MEMO_SIZE = 16384

TermInfo = tuple[tuple[int, ...], int, float]


def term_infos(snap: Snapshot, memo: dict[str, TermInfo], terms: Sequence[str]) -> list[TermInfo]:
    """Per term of ``terms`` (distinct: a query's canonical terms), in order: (local id per view
    or -1, postings over all views, global idf), from ``memo`` (``snap.memo("terms")``) or
    computed and remembered there.

    The terms not in the memo get their idf from one ``bm25_idfs`` call over all of them (one
    numpy call: one per missed term made a query of new terms pay it three or four times;
    every write starts a new snapshot, so right after writes most terms are new). The same
    bits as ``bm25_idf`` over an array, as for a whole query."""
    found: list[TermInfo | None] = [memo.get(term) for term in terms]
    if None not in found:
        return found  # type: ignore[return-value]
    missed = {term: n for n, term in enumerate(terms) if found[n] is None}
    lookups = _term_lookups(snap)
    ids_of: list[tuple[int, ...]] = []
    dfs = []
    postings_of = []
    for term in missed:
        ids: list[int] = []
        df = postings = 0
        for vocab, offsets, view_df in lookups:
            local = vocab.get(term, -1)
            ids.append(local)
            if local >= 0:
                postings += offsets.item(local + 1) - offsets.item(local)
                df += view_df.item(local)
        ids_of.append(tuple(ids))
        dfs.append(df)
        postings_of.append(postings)
    idfs = bm25_idfs(dfs, snap.n_live)
    # First in, first out (dicts keep insertion order); a query of more new terms than the memo
    # holds keeps them all, until the next query.
    for _ in range(min(len(memo) + len(missed) - TERM_MEMO_SIZE, len(memo))):
        del memo[next(iter(memo))]
    for (term, n), local_ids, postings, idf in zip(missed.items(), ids_of, postings_of, idfs,
                                                   strict=True):
        found[n] = memo[term] = (local_ids, postings, idf)
    return found  # type: ignore[return-value]


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


def _term_lookups(snap: Snapshot) -> list[tuple[dict[str, int], np.ndarray, np.ndarray]]:
    """Per view: (its segment's vocabulary, postings offsets, the view's live document
    frequencies), made once per snapshot for the terms the memo misses."""
    kernel = snap.memo("kernel")
    found: list[tuple[dict[str, int], np.ndarray, np.ndarray]] | None = kernel.get("lookups")
    if found is None:
        found = kernel["lookups"] = [(v.segment.vocab, v.segment.terms.offsets, v.df)
                                     for v in snap.views]
    return found


def _ids_by_view(snap: Snapshot) -> list[tuple[str, ...]]:
    kernel = snap.memo("kernel")
    found: list[tuple[str, ...]] | None = kernel.get("ids")
    if found is None:
        found = kernel["ids"] = [v.segment.ids for v in snap.views]
    return found


def _top(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """This thread's (scores, documents, where) buffers for a top ``k``."""
    tops: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = getattr(_local, "tops", None)
    if tops is None:
        tops = _local.tops = {}
    found = tops.get(k)
    if found is None:
        found = tops[k] = (np.empty(k, dtype=np.float64), np.empty(k, dtype=np.int64),
                           np.empty(k, dtype=np.int64))
    return found


def plain_top(snap: Snapshot, terms: list[str], k: int,
              inline_work: int) -> tuple[list[str], list[float]] | None:
    """The ids and BM25 scores of the top ``k`` (1 to ``LANE_MAX_K``) documents of ``snap`` for
    the analyzed query ``terms`` (repeats weigh by their multiplicity), best first, ties by
    document number: what ``search.run`` gives for a lexical-only query without filters.

    None when the query's estimated work (``lexical_work``, as ``search.prepare`` counts it) is
    above ``inline_work``: the caller then runs it in a worker thread the general way.
    Synchronous, on the caller's thread; reads only the immutable snapshot.
    """
    if not terms:
        return [], []
    if len(terms) == 1 or len(set(terms)) == len(terms):
        pairs: Any = [(term, 1) for term in sorted(terms)]
    else:
        pairs = sorted(Counter(terms).items())
    infos = term_infos(snap, snap.memo("terms"), [term for term, _ in pairs])
    rows = []
    weights = []
    postings = []
    for info, (_, m) in zip(infos, pairs, strict=True):
        rows.append(info[0])
        weights.append(info[2] * m)  # IEEE float64 product, as numpy's elementwise one
        postings.append(info[1])
    table, most, views = lane_plan(snap)
    # The estimate is at most the total: the sort in lexical_work only for a large query.
    if sum(postings) > inline_work and \
            lexical_work(postings, weights, k * len(views)) > inline_work:
        return None
    matrix = np.array(rows, dtype=np.int32)
    w = np.array(weights, dtype=np.float64)
    acc, seen, touched = scratch(most)
    top_s, top_d, top_w = _top(k)
    count = bm25_lane_topk(table, matrix, w, top_s, top_d, top_w, acc, seen, touched)
    if len(views) == 1:
        # Every hit is in view 0, so where it is is its local number: one fancy index of the
        # segment's id array (~0.4 us for ten, against ~1.6 us for the loop below).
        found = snap.views[0].segment.id_array[top_w[:count]].tolist()
    else:
        ids = _ids_by_view(snap)
        found = [ids[at >> LOCAL_BITS][at & LOCAL_MASK] for at in top_w[:count].tolist()]
    return found, top_s[:count].tolist()
