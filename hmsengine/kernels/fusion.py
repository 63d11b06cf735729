"""The small steps of fused ranking (``index/search._fuse``) as kernels that keep the GIL.

A fused query ranks at most a few hundred candidates: numpy's fixed cost per call (~1-3 us, more
with caches cold after a cosine kernel streamed the embeddings through them) was most of the
fusion's time, a dozen calls for each signal. These do the same arithmetic in one call each,
on the event loop's thread (``jit_held``: microseconds); ``fuse_one_view`` does all of a
one-view query's fusion but its ordering in one call.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.bm25 import bm25_score_docs
from hmsengine.kernels.cosine import cosine_exact_into
from hmsengine.kernels.filters import sorted_numbers
from hmsengine.kernels.jit import inline, jit_held
from hmsengine.kernels.norms import Norms


@inline
def _descending(values: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """The places of ``values`` by value descending, equal values in place order (a stable
    sort of the negated values)."""
    keys = np.empty(values.shape[0], dtype=np.float64)
    for i in range(values.shape[0]):
        keys[i] = -values[i]
    return np.argsort(keys, kind="mergesort")


@jit_held
def rrf_shares(total: npt.NDArray[np.float64], scores: npt.NDArray[np.float64],
               ranked: npt.NDArray[np.bool_], weight: float, rrf_k: int) -> None:
    """Add one signal's weighted reciprocal-rank shares to ``total`` (by candidate place): the
    places it ranks (``ranked``) ordered by ``scores`` descending, then by place (a stable sort
    of the ascending places), and rank r (from 1) adds ``weight / (rrf_k + r)``, float64."""
    n = scores.shape[0]
    places = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        if ranked[i]:
            places[m] = i
            m += 1
    order = _descending(scores[places[:m]])  # equal scores keep place order
    for r in range(m):
        total[places[order[r]]] += weight / np.float64(rrf_k + r + 1)


@jit_held
def scatter_positive(values: npt.NDArray[np.float64], ranked: npt.NDArray[np.bool_],
                     places: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]) -> None:
    """``values[places[i]] = scores[i]`` and ``ranked[places[i]] = True`` where
    ``scores[i] > 0`` (a BM25 match always scores above zero)."""
    for i in range(scores.shape[0]):
        if scores[i] > 0.0:
            values[places[i]] = scores[i]
            ranked[places[i]] = True


@jit_held
def fused_places(total: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.int64]:
    """The first ``k`` places by ``total`` descending, then by place (a stable sort: over
    candidates in ascending document numbers, by number)."""
    order = _descending(total)
    return order[:min(k, order.shape[0])].copy()


@inline
def _lower_bound(a: npt.NDArray[np.integer], lo: int, hi: int, x: int) -> int:
    """The first place in ``a[lo:hi]`` (ascending) whose value is not below ``x`` (``hi`` if
    none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit_held
def view_locals(docnums: npt.NDArray[np.int64], wanted: npt.NDArray[np.int64],
                first_place: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    """``(local numbers, places)`` of the ``wanted`` numbers (ascending; the slice of the
    candidates from place ``first_place``) that a segment holds (``docnums``: its local ->
    global numbers, ascending): a binary search each, from the last match on."""
    local = np.empty(wanted.shape[0], dtype=np.int32)
    places = np.empty(wanted.shape[0], dtype=np.int64)
    m = 0
    at = 0
    n = docnums.shape[0]
    for i in range(wanted.shape[0]):
        at = _lower_bound(docnums, at, n, wanted[i])
        if at < n and docnums[at] == wanted[i]:
            local[m] = at
            places[m] = first_place + i
            m += 1
    return local[:m].copy(), places[:m].copy()


@jit_held
def posting_matches(offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
                    term_ids: npt.NDArray[np.int32],
                    docs: npt.NDArray[np.int32]) -> npt.NDArray[np.bool_]:
    """Which ``docs`` have a posting under at least one of ``term_ids`` (ignoring negative or
    out-of-range ids): a binary search of each term's ascending postings per document, where
    numpy's ``isin`` per term sorted (and gave the GIL away)."""
    n_terms = offsets.shape[0] - 1
    out = np.zeros(docs.shape[0], dtype=np.bool_)
    for j in range(docs.shape[0]):
        for qi in range(term_ids.shape[0]):
            t = term_ids[qi]
            if t < 0 or t >= n_terms:
                continue
            end = offsets[t + 1]
            at = _lower_bound(doc_ids, offsets[t], end, docs[j])
            if at < end and doc_ids[at] == docs[j]:
                out[j] = True
                break
    return out


@jit_held
def bar_without(total: npt.NDArray[np.float64], place: int, rank: int) -> float:
    """The ``rank``-th largest of ``total`` with its ``place`` left out (counting equal values
    apart; ``rank`` at most ``len(total) - 1``): the exact-term floor's bar, where numpy's
    ``sort`` gave the GIL away."""
    rest = np.empty(total.shape[0] - 1, dtype=np.float64)
    m = 0
    for i in range(total.shape[0]):
        if i != place:
            rest[m] = total[i]
            m += 1
    rest.sort()
    return float(rest[m - rank])


@jit_held
def fuse_one_view(lexical_docs: npt.NDArray[np.int64], cosine_docs: npt.NDArray[np.int64],
                  docnums: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64],
                  doc_ids: npt.NDArray[np.int32], tfs: npt.NDArray[np.float32], norms: Norms,
                  terms: npt.NDArray[np.int32], weights: npt.NDArray[np.float64],
                  lexical_weight: float, matrix: npt.NDArray[np.float32],
                  has: npt.NDArray[np.uint8], query: npt.NDArray[np.float64],
                  semantic_weight: float, cosine_scored: bool, rrf_k: int,
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64],
                             npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The weighted RRF of a query over one segment view in one call: the kernels
    ``index/search._fuse`` calls one by one for several views, called here in the same order
    (so the same bits): the candidates (``filters.sorted_numbers`` of both signals' top lists)
    and their local numbers (``view_locals``); each candidate's exact BM25 score
    (``bm25_score_docs``, kept where above 0 by ``scatter_positive``) when ``weights`` is not
    empty (the query has terms); its exact cosine (``cosine.cosine_exact_into``: ranked where
    ``has``) when ``cosine_scored``; each signal's shares (``rrf_shares``: lexical, then
    cosine). Returns ``(candidates, total, bm25 scores, cosine scores)``, 0.0 where a signal
    does not rank a candidate. Every number of the lists must be one of ``docnums`` (the
    view's local -> global numbers, ascending): ValueError otherwise."""
    both = np.empty(lexical_docs.shape[0] + cosine_docs.shape[0], dtype=np.int64)
    both[:lexical_docs.shape[0]] = lexical_docs
    both[lexical_docs.shape[0]:] = cosine_docs
    candidates = sorted_numbers(both)
    n = candidates.shape[0]
    local, places = view_locals(docnums, candidates, 0)
    if local.shape[0] != n:
        raise ValueError("a fused candidate is not one of the view's documents")
    total = np.zeros(n, dtype=np.float64)
    lexical = np.zeros(n, dtype=np.float64)
    if weights.shape[0] > 0:
        lexical_ranked = np.zeros(n, dtype=np.bool_)
        scatter_positive(lexical, lexical_ranked, places,
                         bm25_score_docs(offsets, doc_ids, tfs, norms, terms, weights, local))
        rrf_shares(total, lexical, lexical_ranked, lexical_weight, rrf_k)
    cosine = np.zeros(n, dtype=np.float64)
    if cosine_scored:
        cosine_ranked = np.zeros(n, dtype=np.bool_)
        cosine_exact_into(matrix, local, has[local], places, query, cosine, cosine_ranked)
        rrf_shares(total, cosine, cosine_ranked, semantic_weight, rrf_k)
    return candidates, total, lexical, cosine
