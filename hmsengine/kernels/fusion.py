"""The small steps of fused ranking (``index/search._fuse``) as kernels that keep the GIL.

A fused query ranks at most a few hundred candidates: numpy's fixed cost per call (~1-3 us, more
with caches cold after a cosine kernel streamed the embeddings through them) was most of the
fusion's time, a dozen calls for each signal. These do the same arithmetic in one call each,
on the event loop's thread (``jit_held``: microseconds).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.jit import inline, jit_held


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
