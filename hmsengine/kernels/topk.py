"""Deterministic top-k selection: score descending, then document number ascending.

The order is total (document numbers are unique), so every selection strategy below returns the
same documents in the same order; ties never depend on input order, thread or platform.

Small ``k`` (up to ``INSERTION_MAX``) uses insertion into a small sorted array, which for the
common k=10 costs one comparison against the current worst for most candidates. Larger ``k`` uses
a binary heap rooted at the worst kept entry (O(log k) per candidate, no O(k) shifting), sorted
best-first at the end. Scores must not be NaN (a NaN never displaces a kept entry, so which NaN
entries are kept is unspecified).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.bm25 import bm25_term
from hmsengine.kernels.jit import held_twin, jit, jit_held
from hmsengine.kernels.norms import Norms, norm_of

# Annotations only: kernels receive numpy scalars as well as Python numbers.
Score = float | np.floating[Any]
Doc = int | np.integer[Any]

#: Largest k selected by insertion into a sorted array; above it a heap is used.
INSERTION_MAX = 32


@jit
def ranks_before(s1: Score, d1: Doc, s2: Score, d2: Doc) -> bool | np.bool_:
    """True when (s1, d1) ranks before (s2, d2): higher score, then lower document number."""
    return s1 > s2 or (s1 == s2 and d1 < d2)


@jit
def _sift_down(
    scores: npt.NDArray[np.float64], docs: npt.NDArray[np.int64], size: int, s: Score, d: Doc
) -> None:
    # Min-heap on rank: the root is the worst kept entry. Places (s, d) starting at the root.
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and ranks_before(scores[c], docs[c], scores[c + 1], docs[c + 1]):
            c += 1  # the worse child
        if ranks_before(s, d, scores[c], docs[c]):
            scores[i] = scores[c]
            docs[i] = docs[c]
            i = c
        else:
            break
    scores[i] = s
    docs[i] = d


@jit
def topk_offer(
    scores: npt.NDArray[np.float64],
    docs: npt.NDArray[np.int64],
    count: int,
    score: Score,
    doc: Doc,
) -> int:
    """Offer one candidate to a top-k buffer of capacity ``m = len(scores)``; return the new count.

    ``scores``/``docs`` hold ``count`` kept entries (``count <= m``): for ``m <= INSERTION_MAX``
    sorted best-first, otherwise a heap. Call ``topk_finish`` once after the last offer.
    """
    m = scores.shape[0]
    if m == 0:
        return 0
    if m <= INSERTION_MAX:
        if count == m:
            if not ranks_before(score, doc, scores[m - 1], docs[m - 1]):
                return count
            pos = m - 1
        else:
            pos = count
            count += 1
        while pos > 0 and ranks_before(score, doc, scores[pos - 1], docs[pos - 1]):
            scores[pos] = scores[pos - 1]
            docs[pos] = docs[pos - 1]
            pos -= 1
        scores[pos] = score
        docs[pos] = doc
        return count
    if count < m:
        i = count
        while i > 0:
            p = (i - 1) // 2
            if ranks_before(scores[p], docs[p], score, doc):
                scores[i] = scores[p]
                docs[i] = docs[p]
                i = p
            else:
                break
        scores[i] = score
        docs[i] = doc
        return count + 1
    if not ranks_before(score, doc, scores[0], docs[0]):
        return count
    _sift_down(scores, docs, m, score, doc)
    return count


@jit
def worst_index(m: int) -> int:
    """Where a full buffer of capacity ``m`` keeps its worst entry (the bar to beat)."""
    return m - 1 if m <= INSERTION_MAX else 0


@jit
def topk_finish(scores: npt.NDArray[np.float64], docs: npt.NDArray[np.int64], count: int) -> None:
    """Put the ``count`` kept entries of a ``topk_offer`` buffer in best-first order, in place."""
    if scores.shape[0] <= INSERTION_MAX:
        return
    end = count - 1
    while end > 0:
        # Move the worst (root) behind the heap, then restore the heap over [0, end).
        s = scores[end]
        d = docs[end]
        scores[end] = scores[0]
        docs[end] = docs[0]
        _sift_down(scores, docs, end, s, d)
        end -= 1


@jit
def reset_touched(
    acc: npt.NDArray[np.float64],
    seen: npt.NDArray[np.uint8],
    touched: npt.NDArray[np.int32],
    n_touched: int,
) -> None:
    """Clean the scratch after an accumulate without ``topk_touched`` (e.g. a query abandoned
    half-way): ``acc[d] = 0`` and ``seen[d] = 0`` for every ``d`` in ``touched[:n_touched]``."""
    for i in range(n_touched):
        d = touched[i]
        acc[d] = 0.0
        seen[d] = 0


@jit
def topk_touched(
    acc: npt.NDArray[np.float64],
    seen: npt.NDArray[np.uint8],
    touched: npt.NDArray[np.int32],
    n_touched: int,
    k: int,
    doc_base: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Select the best ``min(k, n_touched)`` touched documents and clean the scratch arrays.

    ``touched[:n_touched]`` lists the local documents an accumulate kernel marked (each once);
    their scores are ``acc[d]``. Returns ``(scores float64[m], docs int64[m])`` ordered by score
    descending, then ``doc_base + d`` ascending, with ``docs`` holding ``doc_base + d``. Touched
    documents scoring 0 are still candidates. Sets ``acc[d] = 0`` and ``seen[d] = 0`` for every
    touched ``d``, so the scratch is ready for the next query. ``k <= 0`` selects nothing (the
    scratch is still cleaned). O(n_touched * log k); never O(n_docs).
    """
    m = min(k, n_touched)
    if m < 0:
        m = 0
    scores = np.empty(m, dtype=np.float64)
    docs = np.empty(m, dtype=np.int64)
    if m == 0:
        reset_touched(acc, seen, touched, n_touched)
        return scores, docs
    base = np.int64(doc_base)
    count = 0
    # The bar to beat once the buffer is full, checked inline: most candidates fail it, and
    # skipping the topk_offer call for them more than halves the time (32 -> 13 us for ~3,000
    # touched documents).
    worst = worst_index(m)
    bar_s = 0.0
    bar_d = np.int64(0)
    for i in range(n_touched):
        d = touched[i]
        s = acc[d]
        acc[d] = 0.0
        seen[d] = 0
        g = base + np.int64(d)
        if count == m and not ranks_before(s, g, bar_s, bar_d):
            continue
        count = topk_offer(scores, docs, count, s, g)
        if count == m:
            bar_s = scores[worst]
            bar_d = docs[worst]
    topk_finish(scores, docs, count)
    return scores, docs


def merge_topk(
    parts: Iterable[tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]], k: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Merge several ``(scores, docs)`` pairs (e.g. one per segment) into the global top ``k``.

    Documents must be unique across parts (global numbers). Returns ``(float64[m], int64[m])``,
    ``m = min(k, total)``, by score descending then document ascending: the order of
    ``topk_touched``. Plain numpy: the inputs are a few top-k lists, so this is small.
    """
    pairs = list(parts)
    if k <= 0 or not pairs:
        return np.empty(0, dtype=np.float64), np.empty(0, dtype=np.int64)
    scores = np.concatenate([np.asarray(s, dtype=np.float64) for s, _ in pairs])
    docs = np.concatenate([np.asarray(d, dtype=np.int64) for _, d in pairs])
    order = _merged_order(scores, docs, k)
    return scores[order], docs[order]


@jit_held
def _merged_order(scores: npt.NDArray[np.float64], docs: npt.NDArray[np.int64],
                  k: int) -> npt.NDArray[np.int64]:
    """``np.lexsort((docs, -scores))[:k]`` keeping the GIL (numpy's sorts give it away, however
    short the input: a query's merge runs inline on the event loop): by document, then stably
    by score descending."""
    by_doc = np.argsort(docs, kind="mergesort")
    keys = np.empty(by_doc.shape[0], dtype=np.float64)
    for i in range(by_doc.shape[0]):
        keys[i] = -scores[by_doc[i]]
    order = by_doc[np.argsort(keys, kind="mergesort")]
    return order[:min(k, order.shape[0])].copy()


@jit
def bm25_term_topk(
    offsets: npt.NDArray[np.int64],
    doc_ids: npt.NDArray[np.int32],
    tfs: npt.NDArray[np.float32],
    norms: Norms,
    term: int,
    weight: float,
    allowed: npt.NDArray[np.uint8],
    check_allowed: bool,
    k: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Top ``k`` local documents of a one-term query, straight from its postings.

    A document's score is the term's one contribution ``bm25_term(weight, tf, norm)``,
    which is exactly what ``bm25.bm25_accumulate`` sums into 0.0, so the scores are bit-identical
    to the accumulate path, without its scatter into scratch arrays. Postings whose document has
    ``allowed[d] == 0`` are skipped (``allowed`` is read only when ``check_allowed``). Returns
    ``(scores float64[m], docs int64[m])`` in ``topk_touched``'s order; a term id outside the
    postings gives nothing.
    """
    m = 0
    if 0 <= term < offsets.shape[0] - 1 and k > 0:
        m = min(k, int(offsets[term + 1] - offsets[term]))
    scores = np.empty(m, dtype=np.float64)
    docs = np.empty(m, dtype=np.int64)
    if m == 0:
        return scores, docs
    count = 0
    worst = worst_index(m)
    bar_s = 0.0
    bar_d = np.int64(0)
    for p in range(offsets[term], offsets[term + 1]):
        d = doc_ids[p]
        if check_allowed and allowed[d] == 0:
            continue
        s = bm25_term(weight, tfs[p], norm_of(norms, d))
        g = np.int64(d)
        if count == m and not ranks_before(s, g, bar_s, bar_d):
            continue
        count = topk_offer(scores, docs, count, s, g)
        if count == m:
            bar_s = scores[worst]
            bar_d = docs[worst]
    topk_finish(scores, docs, count)
    return scores[:count], docs[:count]


#: ``topk_finish`` and ``topk_touched`` keeping the GIL, for inline calls on the event loop
#: (jit.held_twin).
topk_finish_held = held_twin(topk_finish)
topk_touched_held = held_twin(topk_touched)
