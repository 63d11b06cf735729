"""Query execution over a snapshot: BM25, cosine and n-gram signals, fused by weighted RRF.

Pure and synchronous: the engine runs a query inline when its estimated work is small and in a
worker thread otherwise (``prepare(...).work``). Scratch arrays are per thread.

Determinism: a document's BM25 score sums the query terms in sorted term order with global
idf, N and avgdl over the live documents of the snapshot, so the same content gives the same
bits whatever the segmentation; every ranking breaks ties by document number ascending.

Fusion: with one signal a hit's score is that signal's score. With several, each signal's top
``depth`` documents form the candidates; each signal ranks the candidates it scores (lexical:
those matching a query term; cosine: those with an embedding; n-gram: those sharing a bucket),
rank counted from 1; ``score = sum(weight / (RRF_K + rank))``.

Exact-term floor: semantic search tends to lose exact matches (names, ids, numbers) that BM25
finds at once. When the lexical signal's best document holds a rare query term (one that at
most ``rare_df(N)`` live documents hold) and BM25 scored it above zero, its fused score is
raised, if needed, to just above the third-best fused score of the other candidates, so it is
among the first three results whatever the other signals say. Nothing else moves.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import attrs
import numpy as np

from ..kernels.bm25 import (
    bm25_idf,
    bm25_score_docs,
    bm25_score_docs_held,
    sparse_accumulate,
    sparse_accumulate_held,
    sparse_score_docs_held,
)
from ..kernels.cosine import cosine_exact_into, score_error_bound
from ..kernels.filters import sorted_numbers
from ..kernels.fusion import (
    bar_without,
    fuse_one_view,
    fused_places,
    posting_matches,
    rrf_shares,
    scatter_positive,
    view_locals,
)
from ..kernels.pruning import (
    DENSE_RATIO,
    PRUNE_MIN_POSTINGS,
    bm25_segment_topk,
    bm25_segment_topk_held,
)
from ..kernels.topk import (
    merge_topk,
    topk_finish,
    topk_finish_held,
    topk_touched,
    topk_touched_held,
)
from . import lane, vectorscan
from .snapshot import SegmentView, Snapshot

RRF_K = 60
FUSION_DEPTH = 100
# The exact-term floor keeps the lexical best in the first FLOOR_RANK fused results when it holds
# a query term at most rare_df(N) documents hold: one in a thousand, and never fewer than 2.
FLOOR_RANK = 3
RARE_SHARE = 0.001
RARE_MIN_DF = 2


def rare_df(n_docs: int) -> int:
    """The largest document frequency of a term the exact-term floor counts as rare."""
    return max(RARE_MIN_DF, int(n_docs * RARE_SHARE))
# Vector entries per unit of the estimated work (``prepare``): cosine_topk reads an entry in
# ~0.16-0.24 ns (memory bandwidth: 1k-20k rows of 384-1536 dimensions, 2026-12-05), a unit of
# the lexical estimate costs ~8-10 ns (INLINE_WORK's 60,000 units ran in ~0.5-0.7 ms), so a
# vector query of the same cost runs inline too (up to ~7.5k rows of 384 dimensions) instead of
# paying a thread round trip of 0.1-0.45 ms (PERF-NOTES.md) beside a kernel of 0.1-0.5 ms.
VECTOR_ENTRIES_PER_WORK = 48
# A candidate set this small (filtered searches) is scored document by document.
SMALL_CANDIDATES = 2048

_local = threading.local()
_scratch = lane.scratch


@attrs.frozen(kw_only=True)
class Query:
    terms: tuple[tuple[str, int], ...]  # (term, multiplicity), sorted by term
    k: int
    embedding: np.ndarray | None = None  # L2-normalised float32
    ngram: tuple[np.ndarray, np.ndarray] | None = None  # (bucket ids, float64 weights)
    lexical_weight: float = 1.0
    semantic_weight: float = 1.0
    allowed: dict[int, np.ndarray] | None = None  # view index -> allowed uint8 mask
    candidates: dict[int, np.ndarray] | None = None  # view index -> sorted local docs (small sets)
    dim: int = 4096  # the n-gram dimension


class Scored(NamedTuple):
    """One ranked document (a tuple: k of them are made per query, on the hot path)."""

    docnum: int
    score: float
    lexical: float | None
    semantic: float | None


def query_terms(terms: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """(term, multiplicity) pairs sorted by term: the canonical order scores are summed in."""
    unique = set(terms)
    if len(unique) == len(terms):  # the usual query: no repeated term, no counting needed
        return tuple((t, 1) for t in sorted(unique))
    return tuple(sorted(Counter(terms).items()))


@attrs.frozen(kw_only=True, eq=False)
class Prepared:
    """What every step of one query needs, computed once: local term ids per view, the BM25
    weights (global idf x multiplicity), and the estimated work."""

    local_terms: list[np.ndarray]
    weights: np.ndarray | None
    work: int
    idf: np.ndarray | None = None  # each query term's idf (weights without the multiplicity)


def prepare(snap: Snapshot, q: Query) -> Prepared:
    rows = []
    idf_times_m = []
    idfs: list[float] = []
    postings = []
    infos = lane.term_infos(snap, snap.memo("terms"), [term for term, _ in q.terms])
    for info, (_, m) in zip(infos, q.terms, strict=True):
        rows.append(info[0])
        postings.append(info[1])
        idf_times_m.append(info[2] * m)  # IEEE float64 product, as numpy's elementwise one
        idfs.append(info[2])
    views = snap.views
    fused = q.embedding is not None or q.ngram is not None
    depth = max(q.k, FUSION_DEPTH) if fused else q.k  # as in run()
    work = lane.lexical_work(postings, idf_times_m, depth * len(views))
    if rows and len(views) == 1:
        local_terms = [np.array([r[0] for r in rows], dtype=np.int32)]
    elif rows:
        local_terms = list(np.array(rows, dtype=np.int32).T.copy())
    else:
        local_terms = [np.empty(0, dtype=np.int32) for _ in views]
    if q.ngram is not None or q.embedding is not None:
        for view in views:
            seg = view.segment
            if q.ngram is not None:
                built = seg.ngrams_if_built
                # Not built yet: the first n-gram query reads and hashes the texts: large.
                work += built.lengths(q.ngram[0].astype(np.int64)) if built is not None \
                    else 10 ** 9
            if q.embedding is not None and seg.embeddings is not None:
                entries = seg.embeddings.size
                if seg.vector_codes_if_built is not None:  # scanned through them: cheaper
                    entries //= vectorscan.CODES_COST_RATIO
                work += entries // VECTOR_ENTRIES_PER_WORK
    if q.candidates is not None:
        # The filtered path scores only the candidates (a binary search per term and document).
        work = sum(int(c.size) for c in q.candidates.values()) * max(len(rows), 1) * 16
    weights = np.asarray(idf_times_m, dtype=np.float64) if rows else None
    return Prepared(local_terms=local_terms, weights=weights, work=work,
                    idf=np.asarray(idfs, dtype=np.float64) if rows else None)


def _allowed(view: SegmentView, q: Query, i: int) -> np.ndarray:
    if q.allowed is not None:
        return q.allowed.get(i, np.zeros(view.segment.n_docs, np.uint8))
    return view.live


def _top_buffers(depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """This thread's (scores, documents, count) buffers for a top ``depth``, reused by
    ``run_lexical`` (which copies the result out before the next query can run)."""
    found = getattr(_local, "top", None)
    if found is None or found[0].shape[0] != depth:
        found = _local.top = (np.empty(depth, dtype=np.float64), np.empty(depth, dtype=np.int64),
                              np.zeros(1, dtype=np.int64))
    return found


def _lexical(snap: Snapshot, q: Query, p: Prepared, depth: int,
             buffers: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
             inline: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The top ``depth`` by BM25 over every view: one kernel call per view into one buffer.
    ``inline``: on the event loop's thread, through the kernels' twins that keep the GIL
    (kernels/jit.py ``held_twin``).

    The largest segment goes first: once the buffer is full its worst score bounds the final
    k-th best from below, so the other segments' MaxScore pruning starts from that bar
    (kernels/pruning.py: ``bm25_segment_topk``); the result is the same in any order.
    """
    weights = p.weights
    assert weights is not None  # only called when the query has terms
    if q.candidates is not None:
        return _lexical_candidates(snap, q, p, depth, inline)
    segment_topk = bm25_segment_topk_held if inline else bm25_segment_topk
    if buffers is None:
        top_s = np.empty(depth, dtype=np.float64)
        top_d = np.empty(depth, dtype=np.int64)
        top_n = np.zeros(1, dtype=np.int64)
    else:
        top_s, top_d, top_n = buffers
        top_n[0] = 0
    allowed_by_view = q.allowed
    local_terms = p.local_terms
    acc, seen, touched = _scratch(lane.largest(snap))
    for i, offsets, doc_ids, tfs, norms, live, check, docnums in lane.kernel_views(snap):
        if allowed_by_view is not None:
            allowed = allowed_by_view.get(i)
            if allowed is None:
                continue
            check = True
        else:
            allowed = live
        segment_topk(offsets, doc_ids, tfs, norms, local_terms[i], weights, allowed, check,
                     docnums, top_s, top_d, top_n, acc, seen, touched, PRUNE_MIN_POSTINGS,
                     DENSE_RATIO)
    n = int(top_n[0])
    (topk_finish_held if inline else topk_finish)(top_s, top_d, n)
    return top_s[:n], top_d[:n]


def _lexical_candidates(snap: Snapshot, q: Query, p: Prepared, depth: int,
                        inline: bool) -> tuple[np.ndarray, np.ndarray]:
    """The filtered path: each view's small candidate set scored document by document."""
    assert q.candidates is not None and p.weights is not None
    parts = []
    avgdl = snap.avgdl
    for i, view in enumerate(snap.views):
        docs = q.candidates.get(i)
        if docs is None or docs.size == 0:
            continue
        seg = view.segment
        t = seg.terms
        score_docs = bm25_score_docs_held if inline else bm25_score_docs
        scores = score_docs(t.offsets, t.doc_ids, t.values, view.norms(avgdl), p.local_terms[i],
                            p.weights, docs)
        matched = scores > 0.0  # every BM25 match scores > 0 (idf > 0, tf > 0)
        parts.append((scores[matched], seg.docnums[docs[matched]]))
    return merge_topk(parts, depth)


def _matched(postings: object, ids: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """Which candidate docs contain at least one of the terms (BM25 > 0 needs a match)."""
    return posting_matches(postings.offsets, postings.doc_ids,  # type: ignore[attr-defined]
                           ids, docs)


def _ngram(snap: Snapshot, q: Query, depth: int,
           inline: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The top ``depth`` by n-gram cosine over every view; ``inline``: through the kernels'
    twins that keep the GIL (as ``_lexical``)."""
    assert q.ngram is not None
    buckets, weights = q.ngram
    parts = []
    for i, view in enumerate(snap.views):
        g = view.segment.ngram_postings(_loader(snap), q.dim)
        if q.candidates is not None:
            docs = q.candidates.get(i)
            if docs is None or docs.size == 0:
                continue
            scores = sparse_score_docs_held(g.offsets, g.doc_ids, g.values, buckets, weights,
                                            docs)
            matched = _matched(g, buckets, docs)
            parts.append((scores[matched], view.segment.docnums[docs[matched]]))
            continue
        acc, seen, touched = _scratch(view.segment.n_docs)
        n = (sparse_accumulate_held if inline else sparse_accumulate)(
            g.offsets, g.doc_ids, g.values, buckets, weights, _allowed(view, q, i), acc, seen,
            touched, 0)
        scores, local = (topk_touched_held if inline else topk_touched)(
            acc, seen, touched, n, depth, 0)
        parts.append((scores, view.segment.docnums[local]))
    if len(parts) == 1 and q.candidates is None:  # one view's top list: merge_topk's order
        return parts[0]
    return merge_topk(parts, depth)


def _cosine(snap: Snapshot, q: Query, depth: int,
            inline: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The top ``depth`` by cosine over every view; ``inline``: the kernel keeps the GIL (its
    twin). No numpy pass over a view's rows here: numpy gives the GIL away over a few thousand
    (a view's masks are combined in the kernel's pass)."""
    assert q.embedding is not None
    parts = []
    for i, view in enumerate(snap.views):
        seg = view.segment
        if seg.embeddings is None or seg.embeddings.shape[1] != q.embedding.shape[0]:
            continue
        allowed = _allowed(view, q, i)
        if q.candidates is not None:  # a few documents: the allowed ones among them
            mask = np.zeros(seg.n_docs, dtype=np.uint8)
            docs = q.candidates.get(i)
            if docs is not None:
                mask[docs] = allowed[docs]
            allowed = mask
        # The int8 codes once a worker thread made them (the builder, or an open's coding
        # task); a query never makes them: at 1M rows, ~1.1 s.
        codes = seg.vector_codes_if_built
        scores, rows = vectorscan.cosine_rows(seg.embeddings, q.embedding, allowed,
                                              seg.has_embedding, depth, inline, codes)
        parts.append((scores, seg.docnums[rows]))
    if len(parts) == 1:  # already in merge_topk's order: a view's numbers ascend with its rows
        return parts[0]
    return merge_topk(parts, depth)


def _loader(snap: Snapshot) -> Any:
    if snap.load_texts is None:
        raise RuntimeError("a snapshot without a text loader cannot build n-gram postings")
    return snap.load_texts


def run(snap: Snapshot, q: Query, prepared: Prepared | None = None, *,
        inline: bool = False) -> list[Scored]:
    """Execute ``q`` on ``snap``; the top ``q.k`` documents, best first. ``inline``: the
    caller is the event loop (every kernel then keeps the GIL: the held twins, fusion's
    kernels; no numpy sort, ``tests/index/test_inline_sorts.py``)."""
    p = prepared if prepared is not None else prepare(snap, q)
    if q.embedding is not None and not q.terms and q.ngram is None:
        found = _cosine_alone(snap, q, p, inline)
        if found is not None:
            return found
    signals: list[tuple[str, float, np.ndarray, np.ndarray]] = []
    fused = q.embedding is not None or q.ngram is not None
    depth = max(q.k, FUSION_DEPTH) if fused else q.k
    if q.terms:
        s, d = _lexical(snap, q, p, depth, inline=inline)
        signals.append(("lexical", q.lexical_weight, s, d))
    if q.embedding is not None:
        s, d = _cosine(snap, q, depth, inline)
        signals.append(("cosine", q.semantic_weight, s, d))
    if q.ngram is not None:
        s, d = _ngram(snap, q, depth, inline)
        signals.append(("ngram", q.semantic_weight, s, d))
    if not signals:
        return []
    if not fused:
        _, _, s, d = signals[0]
        return [Scored(doc, sc, sc, None) for sc, doc in zip(s.tolist(), d.tolist(), strict=True)]
    return _fuse(snap, q, p, signals)


def _cosine_alone(snap: Snapshot, q: Query, p: Prepared, inline: bool) -> list[Scored] | None:
    """A vector-only query's answer from the cosine kernel's top ``2k`` instead of its top
    ``FUSION_DEPTH``, when that provably is the same answer; else None (``run`` then takes
    the general path).

    The general path ranks the kernel's top 100 by their exact scores. The top ``2k`` is
    that list's first ``2k`` (one total order: kernel score, then number). A row past them
    scores at most the ``2k``-th's kernel score, so exactly at most that plus
    ``score_error_bound``: when that is below the ``k``-th best exact score among the first
    ``2k``, no later row can enter the top ``k`` or rank before one of it, so the top ``k``,
    their ranks, and so their RRF scores (``weight / (RRF_K + rank)``, strictly decreasing
    for a weight above 0) are the general path's. A list shorter than ``2k`` holds every row
    the query allows. Near-ties at the boundary (duplicated vectors) fail the test and take
    the general path. Saves the kernel's deeper selection, exact scores and fusion of ~80
    candidates: ~40-50 us of a ~460 us query at 5k x 384."""
    depth = 2 * q.k
    if depth >= FUSION_DEPTH or q.semantic_weight <= 0.0:
        return None
    assert q.embedding is not None
    s, d = _cosine(snap, q, depth, inline)
    found = _fuse(snap, q, p, [("cosine", q.semantic_weight, s, d)])
    if d.shape[0] < depth:
        return found
    kth = found[q.k - 1].semantic
    assert kth is not None  # every candidate of the kernel has an embedding
    if float(s[-1]) + score_error_bound(q.embedding.shape[0]) < kth:
        return found
    return None


def lexical_only(q: Query) -> bool:
    """Whether ``q`` is BM25 alone (no vector, no n-grams): ``run_lexical`` answers it."""
    return q.embedding is None and q.ngram is None


def run_lexical(snap: Snapshot, q: Query, p: Prepared, *,
                inline: bool = False) -> tuple[np.ndarray, list[float]]:
    """``run`` for a ``lexical_only`` query: (document numbers, a copy; scores), best first,
    without a ``Scored`` per hit: the same documents and scores."""
    if not q.terms:
        return np.empty(0, dtype=np.int64), []
    s, d = _lexical(snap, q, p, q.k, _top_buffers(q.k), inline)
    return d.copy(), s.tolist()


def _fuse(snap: Snapshot, q: Query, p: Prepared,
          signals: list[tuple[str, float, np.ndarray, np.ndarray]]) -> list[Scored]:
    """Weighted RRF over the union of each signal's top ``depth``; ties by docnum.

    Over arrays indexed by the candidates' places (ascending document numbers), not dictionaries
    of Python numbers: the same values bit for bit (each rank's ``weight / (RRF_K + rank)`` added
    to 0.0 in signal order, as IEEE float64 either way). The 100 candidates of a vector-only
    query at 5k x 384: 141 -> 63 us warm; 225 -> 133 us at 10k in a loop of queries, whose
    kernel leaves the caches cold (the RRF step had cost a third of the kernel)."""
    if len(snap.views) == 1 and q.ngram is None:
        candidates, total, lexical, semantic = _fuse_one_view(snap, q, p, signals)
    else:
        found = [docs for _, _, _, docs in signals]
        # The kernel, not numpy's sort: numpy's gives the GIL away, however few the numbers.
        candidates = sorted_numbers(found[0] if len(found) == 1 else np.concatenate(found))
        # Each signal's ranking of the candidates: its own top list already is that ranking for
        # the candidates it scored; a candidate outside a signal's list was not ranked by it
        # unless its exact score can be computed, which we do so that every candidate is ranked
        # fairly.
        exact = _exact_scores(snap, q, p, candidates, [name for name, *_ in signals])
        total = np.zeros(candidates.shape[0], dtype=np.float64)
        for name, weight, _, _ in signals:
            scores, ranked = exact[name]
            rrf_add(total, scores, ranked, weight)
        lexical = exact["lexical"][0] if "lexical" in exact else None
        semantic_name = "cosine" if q.embedding is not None else "ngram"
        semantic = exact[semantic_name][0] if semantic_name in exact else None
    _exact_term_floor(snap, p, signals, candidates, total)
    top = fused_order(candidates, total, q.k)
    # A signal that ran and did not rank a candidate scores it 0.0; one that did not run, None.
    lex = lexical[top].tolist() if lexical is not None else [None] * top.shape[0]
    sem = semantic[top].tolist() if semantic is not None else [None] * top.shape[0]
    return [Scored(docnum=c, score=t, lexical=lx, semantic=sm) for c, t, lx, sm
            in zip(candidates[top].tolist(), total[top].tolist(), lex, sem, strict=True)]


def _fuse_one_view(snap: Snapshot, q: Query, p: Prepared,
                   signals: list[tuple[str, float, np.ndarray, np.ndarray]],
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """``_fuse``'s candidates, RRF totals and exact scores (lexical, cosine: None for a signal
    that did not run) over a one-view snapshot without n-grams, in one kernel call
    (``kernels.fusion.fuse_one_view``) instead of a dozen: after a cosine kernel has streamed
    the embeddings through the caches, each call's fixed cost is several times its warm one."""
    view = snap.views[0]
    seg = view.segment
    lexical_docs = cosine_docs = _NO_DOCS
    lexical_weight = semantic_weight = 0.0
    for name, weight, _, docs in signals:
        if name == "lexical":
            lexical_docs, lexical_weight = docs, weight
        else:
            cosine_docs, semantic_weight = docs, weight
    matrix, has, query = seg.embeddings, seg.has_embedding, q.embedding
    scored = matrix is not None and query is not None and matrix.shape[1] == query.shape[0]
    if not scored or matrix is None or query is None:
        matrix, has, query64 = _NO_MATRIX, _NO_MASK, _NO_QUERY
    else:
        query64 = query.astype(np.float64)
    t = seg.terms
    candidates, total, lexical, cosine = fuse_one_view(
        lexical_docs, cosine_docs, seg.docnums, t.offsets, t.doc_ids, t.values,
        view.norms(snap.avgdl), p.local_terms[0], _NO_WEIGHTS if p.weights is None else p.weights,
        float(lexical_weight), matrix, has, query64, float(semantic_weight), scored, RRF_K)
    return (candidates, total, lexical if p.weights is not None else None,
            cosine if q.embedding is not None else None)


# ``_fuse_one_view``'s arguments for a signal that did not run, or a view without embeddings.
_NO_DOCS = np.empty(0, dtype=np.int64)
_NO_WEIGHTS = np.empty(0, dtype=np.float64)
_NO_MATRIX = np.empty((0, 1), dtype=np.float32)
_NO_MASK = np.empty(0, dtype=np.uint8)
_NO_QUERY = np.empty(1, dtype=np.float64)


def rrf_add(total: np.ndarray, scores: np.ndarray, ranked: np.ndarray, weight: float) -> None:
    """Add one signal's weighted RRF shares to ``total`` (float64, by candidate place): the
    places it ranks (``ranked``) ordered by ``scores`` descending, then by place (so by document
    number: the places ascend as the numbers do); rank r adds ``weight / (RRF_K + r)``
    (``kernels.fusion.rrf_shares``: one call, not five numpy ones)."""
    rrf_shares(total, scores, ranked, float(weight), RRF_K)


def fused_order(candidates: np.ndarray, total: np.ndarray, k: int | None = None) -> np.ndarray:
    """The candidates' (ascending numbers) first ``k`` places (all without ``k``) by fused
    score descending, then document number ascending."""
    return fused_places(total, candidates.shape[0] if k is None else k)


def _exact_term_floor(snap: Snapshot, p: Prepared,
                      signals: list[tuple[str, float, np.ndarray, np.ndarray]],
                      candidates: np.ndarray, total: np.ndarray) -> None:
    """Raise the lexical best's fused score in ``total`` (by ``candidates``' places) per the
    module docstring's floor."""
    lexical = [(w, d) for name, w, _, d in signals if name == "lexical"]
    if not lexical or lexical[0][0] <= 0 or lexical[0][1].size == 0 or p.weights is None \
            or p.idf is None or total.shape[0] <= FLOOR_RANK:
        return
    # The rare query terms are those whose idf is at least that of a term in rare_df(N)
    # documents (once per snapshot). Without one, nothing to raise: checked first, the cheaper
    # test (the common query holds no rare term).
    memo = snap.memo("kernel")
    threshold = memo.get("rare_idf")
    if threshold is None:
        threshold = memo["rare_idf"] = float(bm25_idf(  # type: ignore[index]
            np.asarray([rare_df(snap.n_live)], dtype=np.int64), snap.n_live)[0])
    if not any(idf >= threshold for idf in p.idf.tolist()):
        return
    best = int(lexical[0][1][0])
    place = int(np.searchsorted(candidates, best))
    bar = bar_without(total, place, FLOOR_RANK)
    if total[place] > bar:
        return
    rare = np.where(p.idf >= threshold, p.weights, 0.0)  # the rare terms' BM25 weights only
    i, local = snap.view_of(best)
    view = snap.views[i]
    seg = view.segment
    score = bm25_score_docs_held(seg.terms.offsets, seg.terms.doc_ids, seg.terms.values,
                                 view.norms(snap.avgdl), p.local_terms[i], rare,
                                 np.asarray([local], dtype=np.int32))
    if float(score[0]) > 0.0:
        total[place] = float(np.nextafter(bar, np.inf))


def _exact_scores(snap: Snapshot, q: Query, p: Prepared, candidates: np.ndarray,
                  names: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each signal's exact score of each candidate (by place in ``candidates``) and whether it
    ranks it (lexical: BM25 > 0; n-gram: a shared bucket; cosine: an embedding of the query's
    dimension); 0.0 where not ranked.

    One kernel call per view and signal for all of that view's candidates (fusion examines up
    to ``FUSION_DEPTH`` per signal): the cosine in float64 in a fixed order
    (``cosine_exact_rows``), BM25 and n-grams as their kernels score documents."""
    n = candidates.shape[0]
    out = {name: (np.zeros(n, dtype=np.float64), np.zeros(n, dtype=bool)) for name in names}
    weights = p.weights
    query64 = q.embedding.astype(np.float64) if q.embedding is not None else None
    for i, docs, places in _by_view(snap, candidates):
        view = snap.views[i]
        seg = view.segment
        if "lexical" in out and weights is not None:
            scores = bm25_score_docs_held(seg.terms.offsets, seg.terms.doc_ids, seg.terms.values,
                                          view.norms(snap.avgdl), p.local_terms[i], weights, docs)
            scatter_positive(*out["lexical"], places, scores)
        if "ngram" in out and q.ngram is not None:
            g = seg.ngram_postings(_loader(snap), q.dim)
            scores = sparse_score_docs_held(g.offsets, g.doc_ids, g.values, q.ngram[0],
                                            q.ngram[1], docs)
            matched = _matched(g, q.ngram[0], docs)
            values, ranked = out["ngram"]
            values[places[matched]] = scores[matched]
            ranked[places[matched]] = True
        if "cosine" in out and query64 is not None and seg.embeddings is not None \
                and seg.embeddings.shape[1] == query64.shape[0]:
            cosine_exact_into(seg.embeddings, docs, seg.has_embedding[docs], places, query64,
                              *out["cosine"])
    return out


def _by_view(snap: Snapshot, candidates: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(view index, local numbers int32, places in ``candidates``) of the live or dead
    documents among ``candidates`` (int64, ascending), per view that holds some; numbers no
    view holds are left out. The views' numbers ascend with their order, so each view's
    candidates are one slice of ``candidates``: one search for the slices, one per view for
    the local numbers."""
    views = snap.views
    if len(views) == 1:
        bounds = [0, candidates.shape[0]]
    else:
        firsts = snap.memo("kernel").get("firsts_array")
        if firsts is None:
            firsts = snap.memo("kernel")["firsts_array"] = np.asarray(
                [v.segment.first for v in views], dtype=np.int64)
        bounds = [*np.searchsorted(candidates, firsts).tolist(), candidates.shape[0]]
    out = []
    for i, view in enumerate(views):
        lo, hi = bounds[i], bounds[i + 1]
        if lo < hi:
            local, places = view_locals(view.segment.docnums, candidates[lo:hi], lo)
            if local.shape[0]:
                out.append((i, local, places))
    return out
