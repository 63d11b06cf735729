"""One segment's BM25 top k for a query, reading as few postings as the query allows.

``bm25_segment_topk`` is what the engine calls, once per segment, into one top-k buffer shared
by the segments of a query. It picks a path by the query's postings in the segment:

* one term: the postings go straight into a top-k buffer (``topk.bm25_term_topk``);
* the highest-weight terms that can fill the top k already bring much of the postings (only
  common terms): every posting into the dense accumulator, then one scan (``bm25_dense_topk``);
* few postings: plain term-at-a-time accumulation (``bm25.bm25_accumulate``);
* otherwise MaxScore (``bm25_maxscore``). Terms run from the largest upper bound down (rarest
  first). The bar ``theta`` is a lower bound on the final k-th best score: the worst score of
  the full shared buffer (other segments), a term's own k-th best contribution (``term_kth``:
  scores only grow as terms are added), or the k-th best partial sum. A document not touched yet
  is touched only if its contribution plus the bounds of the remaining terms can reach the bar;
  once those bounds alone cannot, the remaining terms are added only to the candidates that can
  still reach it (binary search when they are few, else one pass), which shrink term by term.
  The last term, reached with no bar yet, is read once: the touched documents get it, and only
  the best ``k`` of the others by their contribution alone are touched.

Partial sums in MaxScore add the terms in bound order, not in the canonical order, so they may
differ from the exact scores in the last bits: every comparison with the bar keeps a relative
tolerance (``TOLERANCE``), so a document whose exact score ties the bar is never dropped. The
candidates are re-scored with ``bm25.bm25_score_docs`` in the canonical term order; every other
path sums in the canonical order. So every path gives the scores of ``bm25_accumulate``, bit for
bit, and the same ranking (score descending, then document number ascending).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.bm25 import _find, bm25_accumulate, bm25_bound, bm25_score_docs, bm25_term
from hmsengine.kernels.dense import bm25_dense_topk
from hmsengine.kernels.jit import held_twin, jit
from hmsengine.kernels.norms import Norms, n_norms, norm_of
from hmsengine.kernels.topk import (
    bm25_term_topk,
    ranks_before,
    reset_touched,
    topk_finish,
    topk_offer,
    topk_touched,
    worst_index,
)

#: Relative slack on every bar comparison: far above the rounding of a sum of a few terms
#: (~1e-16 relative), far below any real score difference that matters.
TOLERANCE = 1e-9
# Binary search per candidate when the candidates are fewer than postings / this.
_SEARCH_RATIO = 24


@jit
def kth_largest(acc: npt.NDArray[np.float64], docs: npt.NDArray[np.int32], n: int, k: int,
                buf: npt.NDArray[np.float64]) -> float:
    """The k-th largest ``acc[docs[i]]`` for ``i < n`` (-inf when ``n < k`` or ``k <= 0``).

    ``buf`` is caller scratch of at least ``k`` float64 entries (overwritten). One pass with a
    sorted buffer of the k best; most values fail the bar check at once. Allocates nothing.
    """
    if k <= 0 or n < k:
        return -np.inf
    count = 0
    for i in range(n):
        v = acc[docs[i]]
        if count == k:
            if v <= buf[k - 1]:
                continue
            pos = k - 1
        else:
            pos = count
            count += 1
        while pos > 0 and buf[pos - 1] < v:
            buf[pos] = buf[pos - 1]
            pos -= 1
        buf[pos] = v
    return float(buf[k - 1])


@jit
def term_kth(offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
             tfs: npt.NDArray[np.float32], norms: Norms, t: int, w: float,
             allowed: npt.NDArray[np.uint8], check_allowed: bool, k: int,
             buf: npt.NDArray[np.float64]) -> float:
    """The k-th largest contribution of term ``t`` (weight ``w``) among the allowed documents;
    -inf when fewer than ``k``. Scores only grow as terms are added, so this is a lower bound on
    the k-th best score of any query containing the term. ``buf``: scratch of >= k float64."""
    if k <= 0:
        return -np.inf
    count = 0
    for p in range(offsets[t], offsets[t + 1]):
        d = doc_ids[p]
        if check_allowed and allowed[d] == 0:
            continue
        v = bm25_term(w, tfs[p], norm_of(norms, d))
        if count == k:
            if v <= buf[k - 1]:
                continue
            pos = k - 1
        else:
            pos = count
            count += 1
        while pos > 0 and buf[pos - 1] < v:
            buf[pos] = buf[pos - 1]
            pos -= 1
        buf[pos] = v
    return float(buf[k - 1]) if count == k else -np.inf


@jit
def _accumulate_term(offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
                     tfs: npt.NDArray[np.float32], norms: Norms, t: int,
                     w: float, allowed: npt.NDArray[np.uint8], check_allowed: bool, lim: float,
                     acc: npt.NDArray[np.float64], seen: npt.NDArray[np.uint8],
                     touched: npt.NDArray[np.int32], n_touched: int) -> int:
    # bm25_accumulate for one term, except that a document not touched yet is left out when its
    # contribution is below ``lim`` (it cannot reach the bar: the caller's proof). The same
    # float64 arithmetic; a new document's acc goes from 0.0 to exactly its contribution.
    for p in range(offsets[t], offsets[t + 1]):
        d = doc_ids[p]
        if check_allowed and allowed[d] == 0:
            continue
        c = bm25_term(w, tfs[p], norm_of(norms, d))
        if seen[d] == 0:
            if c < lim:
                continue
            seen[d] = 1
            touched[n_touched] = d
            n_touched += 1
        acc[d] += c
    return n_touched


@jit
def _touch_last_term(offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
                     tfs: npt.NDArray[np.float32], norms: Norms, t: int, w: float,
                     allowed: npt.NDArray[np.uint8], check_allowed: bool, depth: int,
                     acc: npt.NDArray[np.float64], seen: npt.NDArray[np.uint8],
                     touched: npt.NDArray[np.int32], n_touched: int) -> int:
    # The query's last term (in bound order) in one pass, when no bar is known: a touched
    # document gets its contribution (its partial sum is then complete); an untouched one would
    # score that contribution alone, exactly (0.0 plus it), so only the best ``depth`` of those
    # (score descending, document ascending) can be in the top ``depth``: any other has
    # ``depth`` untouched documents ranking before it. They are kept in a top-k buffer during
    # the pass, then touched with their contribution (acc goes from 0.0 to exactly it).
    scores = np.empty(depth, dtype=np.float64)
    docs = np.empty(depth, dtype=np.int64)
    count = 0
    worst = worst_index(depth)
    bar_s = 0.0
    bar_d = np.int64(0)
    for p in range(offsets[t], offsets[t + 1]):
        d = doc_ids[p]
        if check_allowed and allowed[d] == 0:
            continue
        c = bm25_term(w, tfs[p], norm_of(norms, d))
        if seen[d] != 0:
            acc[d] += c
            continue
        g = np.int64(d)
        if count == depth and not ranks_before(c, g, bar_s, bar_d):
            continue
        count = topk_offer(scores, docs, count, c, g)
        if count == depth:
            bar_s = scores[worst]
            bar_d = docs[worst]
    for i in range(count):
        d = docs[i]
        seen[d] = 1
        touched[n_touched] = d
        n_touched += 1
        acc[d] += scores[i]
    return n_touched


@jit
def _suffix_bounds(bounds: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    # remaining[i]: the sum of the bounds of terms i.. (what a document can still gain there).
    nq = bounds.shape[0]
    remaining = np.zeros(nq + 1, dtype=np.float64)
    for i in range(nq - 1, -1, -1):
        remaining[i] = remaining[i + 1] + bounds[i]
    return remaining


@jit
def _touch_phase(offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
                 tfs: npt.NDArray[np.float32], norms: Norms,
                 term_ids: npt.NDArray[np.int32], term_weights: npt.NDArray[np.float64],
                 bounds: npt.NDArray[np.float64], remaining: npt.NDArray[np.float64], tol: float,
                 allowed: npt.NDArray[np.uint8], check_allowed: bool, theta: float, depth: int,
                 buf: npt.NDArray[np.float64], acc: npt.NDArray[np.float64],
                 seen: npt.NDArray[np.uint8],
                 touched: npt.NDArray[np.int32]) -> tuple[int, int, float]:
    """MaxScore's first phase: terms in bound order, each touching only the documents that can
    still reach the bar ``theta``, which rises with the k-th best partial sum; it ends once the
    bounds of the remaining terms alone cannot reach the bar. ``(touched, next term, bar)``."""
    nq = term_ids.shape[0]
    n = 0
    pos = 0
    done = 0.0  # sum of the bounds of the terms accumulated: no partial sum exceeds it
    while pos < nq:
        if remaining[pos] < theta - tol:
            break  # an untouched document cannot reach the bar any more
        t = term_ids[pos]
        if theta == -np.inf and offsets[t + 1] - offsets[t] >= depth:
            if pos == nq - 1:
                # The last term and still no bar: one pass instead of two (its k-th best, then
                # the touch pass), where a query of a rare word and a very common one spent
                # most of its time (_touch_last_term).
                n = _touch_last_term(offsets, doc_ids, tfs, norms, t, term_weights[pos],
                                     allowed, check_allowed, depth, acc, seen, touched, n)
                return n, nq, theta
            # No bar yet: this term's own k-th best contribution is one (a cheap pass that
            # spares touching every document of a common term).
            theta = term_kth(offsets, doc_ids, tfs, norms, t, term_weights[pos], allowed,
                             check_allowed, depth, buf)
        # A document first reached here is only worth touching if it can still reach the bar.
        n = _accumulate_term(offsets, doc_ids, tfs, norms, t, term_weights[pos], allowed,
                             check_allowed, theta - tol - remaining[pos + 1], acc, seen,
                             touched, n)
        done += bounds[pos]
        pos += 1
        # The k-th best partial sum can only stop the loop when it may exceed what remains.
        if pos < nq and n >= depth and done + tol >= remaining[pos]:
            kth = kth_largest(acc, touched, n, depth, buf)
            if kth > theta:
                theta = kth
    return n, pos, theta


@jit
def _candidates(acc: npt.NDArray[np.float64], seen: npt.NDArray[np.uint8],
                touched: npt.NDArray[np.int32], n: int, lim: float) -> tuple[npt.NDArray[np.int32], int]:
    # The touched documents whose partial sum can still reach the bar, marked seen = 2.
    cand = np.empty(n, dtype=np.int32)
    nc = 0
    for i in range(n):
        d = touched[i]
        if acc[d] >= lim:
            cand[nc] = d
            nc += 1
            seen[d] = 2
    return cand, nc


@jit
def _add_term_to_candidates(offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
                            tfs: npt.NDArray[np.float32], norms: Norms, t: int,
                            w: float, cand: npt.NDArray[np.int32], nc: int,
                            acc: npt.NDArray[np.float64], seen: npt.NDArray[np.uint8]) -> None:
    # Term ``t``'s contributions to the candidates only (marked seen = 2): a binary search per
    # candidate when they are few next to its postings, else one pass over the postings.
    lo = offsets[t]
    hi = offsets[t + 1]
    if nc * _SEARCH_RATIO < hi - lo:
        for i in range(nc):
            d = cand[i]
            p = _find(doc_ids, lo, hi, d)
            if p >= 0:
                acc[d] += bm25_term(w, tfs[p], norm_of(norms, d))
    else:
        for p in range(lo, hi):
            d = doc_ids[p]
            if seen[d] == 2:
                acc[d] += bm25_term(w, tfs[p], norm_of(norms, d))


@jit
def _shrink_candidates(acc: npt.NDArray[np.float64], seen: npt.NDArray[np.uint8],
                       cand: npt.NDArray[np.int32], nc: int, lim: float) -> int:
    # Keep the candidates whose partial sum can still reach the bar (in place); the others go
    # back to seen = 1. The new count.
    kept = 0
    for i in range(nc):
        d = cand[i]
        if acc[d] >= lim:
            cand[kept] = d
            kept += 1
        else:
            seen[d] = 1
    return kept


@jit
def _best_by_partial_sum(acc: npt.NDArray[np.float64], cand: npt.NDArray[np.int32], nc: int,
                         pick: int) -> npt.NDArray[np.int32]:
    # The best ``pick`` of the candidates by partial sum (score descending, document ascending).
    m = min(pick, nc)
    scores = np.empty(m, dtype=np.float64)
    docs = np.empty(m, dtype=np.int64)
    count = 0
    if m > 0:
        worst = worst_index(m)
        bar_s = 0.0
        bar_d = np.int64(0)
        for i in range(nc):
            d = cand[i]
            s = acc[d]
            g = np.int64(d)
            if count == m and not ranks_before(s, g, bar_s, bar_d):
                continue
            count = topk_offer(scores, docs, count, s, g)
            if count == m:
                bar_s = scores[worst]
                bar_d = docs[worst]
        topk_finish(scores, docs, count)
    out = np.empty(count, dtype=np.int32)
    for i in range(count):
        out[i] = np.int32(docs[i])
    return out


@jit
def bm25_maxscore(
    offsets: npt.NDArray[np.int64],
    doc_ids: npt.NDArray[np.int32],
    tfs: npt.NDArray[np.float32],
    norms: Norms,
    term_ids: npt.NDArray[np.int32],
    term_weights: npt.NDArray[np.float64],
    bounds: npt.NDArray[np.float64],
    allowed: npt.NDArray[np.uint8],
    check_allowed: bool,
    theta0: float,
    depth: int,
    pick: int,
    acc: npt.NDArray[np.float64],
    seen: npt.NDArray[np.uint8],
    touched: npt.NDArray[np.int32],
) -> npt.NDArray[np.int32]:
    """Local documents that may rank in the segment's top ``depth`` with score >= ``theta0``.

    ``term_ids`` (valid ids in ``[0, n_terms)``, distinct), ``term_weights`` and ``bounds`` are in
    processing order, bounds descending; ``bounds[i]`` must be >= every contribution of term
    ``i`` (``bm25_bound(term_weights[i])`` is). ``theta0`` is a lower bound on the final k-th
    best score (``-inf`` when unknown): a document scoring below it is not wanted. ``allowed``
    is read only when ``check_allowed``. Scratch ``acc``, ``seen``, ``touched`` as in
    ``bm25_accumulate`` (zero on entry; cleaned again on return).

    Returns up to ``pick`` (>= ``depth``) local documents: the best by partial sum (score
    descending, document ascending) among those that can still reach the bar. Every document of
    the exact top ``depth`` scoring >= ``theta0`` is among them whenever ``pick`` covers the
    rounding near-ties (the caller uses ``2 * depth + 8`` and re-scores exactly). Allocates
    O(touched) at most.

    The steps: the touch phase (``_touch_phase``) while an untouched document can still reach
    the bar; then the candidates that can (``_candidates``) get the remaining terms
    (``_add_term_to_candidates``), the bar rising and the candidates shrinking term by term
    (``_shrink_candidates``); the best ``pick`` of them by partial sum are the answer.
    """
    nq = term_ids.shape[0]
    remaining = _suffix_bounds(bounds)
    tol = TOLERANCE * (1.0 + remaining[0])
    buf = np.empty(max(depth, 1), dtype=np.float64)
    n, pos, theta = _touch_phase(offsets, doc_ids, tfs, norms, term_ids, term_weights, bounds,
                                 remaining, tol, allowed, check_allowed, theta0, depth, buf, acc,
                                 seen, touched)
    cand, nc = _candidates(acc, seen, touched, n, theta - tol - remaining[pos])
    while pos < nq:
        _add_term_to_candidates(offsets, doc_ids, tfs, norms, term_ids[pos], term_weights[pos],
                                cand, nc, acc, seen)
        pos += 1
        if pos < nq:
            kth = kth_largest(acc, cand, nc, depth, buf)
            if kth > theta:
                theta = kth
            nc = _shrink_candidates(acc, seen, cand, nc, theta - tol - remaining[pos])
    out = _best_by_partial_sum(acc, cand, nc, pick)
    reset_touched(acc, seen, touched, n)
    return out


#: Dense accumulation when the postings up to the first term (by bound) that can fill the top k
#: are at least 1/DENSE_RATIO of the query's postings: MaxScore cannot skip much then.
DENSE_RATIO = 3


#: Below this many postings in a segment for the query, plain term-at-a-time accumulation is
#: cheaper than MaxScore's bookkeeping.
PRUNE_MIN_POSTINGS = 2_000


@jit
def bm25_segment_topk(
    offsets: npt.NDArray[np.int64],
    doc_ids: npt.NDArray[np.int32],
    tfs: npt.NDArray[np.float32],
    norms: Norms,
    term_ids: npt.NDArray[np.int32],
    term_weights: npt.NDArray[np.float64],
    allowed: npt.NDArray[np.uint8],
    check_allowed: bool,
    docnums: npt.NDArray[np.int64],
    top_s: npt.NDArray[np.float64],
    top_d: npt.NDArray[np.int64],
    top_n: npt.NDArray[np.int64],
    acc: npt.NDArray[np.float64],
    seen: npt.NDArray[np.uint8],
    touched: npt.NDArray[np.int32],
    prune_min: int,
    dense_ratio: int,
) -> None:
    """Offer one segment's best BM25 documents to a query's running top k, exact scores.

    ``top_s``/``top_d`` (capacity ``depth = len(top_s)``) with ``top_n[0]`` kept entries form a
    ``topk.topk_offer`` buffer over global document numbers, shared by the calls for every
    segment of one query (start with ``top_n[0] = 0``; call ``topk.topk_finish`` after the last).
    Once full, its worst score is a lower bound on the final k-th best, the bar this segment's
    MaxScore pruning starts from; the final buffer holds the same documents whatever the order
    of the segments. ``docnums`` maps local to global document numbers (ascending).

    ``term_ids``/``term_weights`` in the canonical order (ids outside ``[0, n_terms)`` ignored):
    scores are bit-identical to ``bm25_accumulate``'s over the same terms. ``allowed`` is read
    only when ``check_allowed`` (False when every document is live and there is no filter).
    The path, by the segment's postings for the query: one term, its postings straight into a
    top-k buffer; the highest-weight terms that can fill the top k bring at least
    ``1/dense_ratio`` of the postings and there are at least as many postings as documents,
    ``bm25_dense_topk``; fewer than ``prune_min`` postings, plain accumulation; otherwise
    ``bm25_maxscore``, then an exact re-score of its candidates in the canonical order
    (``_maxscore_topk``); the segment's best then join the shared buffer (``_offer_segment``). Every
    path gives the same result (the thresholds are parameters so tests can force each; the
    engine passes ``PRUNE_MIN_POSTINGS`` and ``DENSE_RATIO``). No default values: numba's
    dispatcher takes a slow path (~0.1 ms a call) when an argument is omitted.
    Scratch as in ``bm25_accumulate`` (clean on entry and on return).
    """
    depth = top_s.shape[0]
    theta0 = top_s[worst_index(depth)] if top_n[0] == depth and depth > 0 else -np.inf
    scores, docs = segment_best(offsets, doc_ids, tfs, norms, term_ids, term_weights, allowed,
                                check_allowed, theta0, depth, acc, seen, touched, prune_min,
                                dense_ratio)
    _offer_segment(scores, docs, docnums, top_s, top_d, top_n)


@jit
def segment_best(
    offsets: npt.NDArray[np.int64],
    doc_ids: npt.NDArray[np.int32],
    tfs: npt.NDArray[np.float32],
    norms: Norms,
    term_ids: npt.NDArray[np.int32],
    term_weights: npt.NDArray[np.float64],
    allowed: npt.NDArray[np.uint8],
    check_allowed: bool,
    theta0: float,
    depth: int,
    acc: npt.NDArray[np.float64],
    seen: npt.NDArray[np.uint8],
    touched: npt.NDArray[np.int32],
    prune_min: int,
    dense_ratio: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """One segment's best (up to ``depth``, best first, local numbers) for ``bm25_segment_topk``
    (which documents the paths): every document of the segment's exact top ``depth`` that scores
    at least ``theta0``, a lower bound on the query's final k-th best (``-inf`` when unknown);
    documents below it may be missing. Exact scores."""
    order, nv, postings = _terms_by_bound(offsets, term_ids, term_weights)
    if nv == 0 or depth <= 0:
        return np.empty(0, dtype=np.float64), np.empty(0, dtype=np.int64)
    if nv == 1:
        i = order[0]
        scores, docs = bm25_term_topk(offsets, doc_ids, tfs, norms, term_ids[i],
                                      term_weights[i], allowed, check_allowed, depth)
    elif _filling_prefix(offsets, term_ids, order, nv, depth) * dense_ratio >= postings \
            and postings >= n_norms(norms):
        scores, docs = bm25_dense_topk(offsets, doc_ids, tfs, norms, term_ids, term_weights,
                                       allowed, check_allowed, depth, acc)
    elif postings < prune_min:
        n = bm25_accumulate(offsets, doc_ids, tfs, norms, term_ids, term_weights, allowed, acc,
                            seen, touched, 0)
        scores, docs = topk_touched(acc, seen, touched, n, depth, 0)
    else:
        scores, docs = _maxscore_topk(offsets, doc_ids, tfs, norms, term_ids, term_weights,
                                      order, nv, allowed, check_allowed, theta0, depth, acc,
                                      seen, touched)
    return scores, docs


@jit
def _terms_by_bound(offsets: npt.NDArray[np.int64], term_ids: npt.NDArray[np.int32],
                    term_weights: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.int64], int, int]:
    # The query positions of the terms with postings in the segment, largest bound (weight)
    # first, then canonical position: (order, how many, their postings in all).
    n_terms = offsets.shape[0] - 1
    nq = term_ids.shape[0]
    order = np.empty(nq, dtype=np.int64)
    nv = 0
    postings = 0
    for i in range(nq):
        t = term_ids[i]
        if t < 0 or t >= n_terms or offsets[t + 1] <= offsets[t]:
            continue
        pos = nv
        nv += 1
        while pos > 0 and term_weights[order[pos - 1]] < term_weights[i]:
            order[pos] = order[pos - 1]
            pos -= 1
        order[pos] = i
        postings += offsets[t + 1] - offsets[t]
    return order, nv, postings


@jit
def _filling_prefix(offsets: npt.NDArray[np.int64], term_ids: npt.NDArray[np.int32],
                    order: npt.NDArray[np.int64], nv: int, depth: int) -> int:
    # The postings of the highest-bound terms up to the first whose postings can fill the top k.
    prefix = 0
    for j in range(nv):
        t = term_ids[order[j]]
        prefix += offsets[t + 1] - offsets[t]
        if prefix >= depth:
            break
    return prefix


@jit
def _maxscore_topk(offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
                   tfs: npt.NDArray[np.float32], norms: Norms,
                   term_ids: npt.NDArray[np.int32], term_weights: npt.NDArray[np.float64],
                   order: npt.NDArray[np.int64], nv: int, allowed: npt.NDArray[np.uint8],
                   check_allowed: bool, theta0: float, depth: int, acc: npt.NDArray[np.float64],
                   seen: npt.NDArray[np.uint8],
                   touched: npt.NDArray[np.int32]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    # MaxScore over the terms in bound order, then the exact scores of its candidates (the
    # canonical term order, bm25_score_docs): the segment's top ``depth``, best first.
    ids_o = np.empty(nv, dtype=np.int32)
    w_o = np.empty(nv, dtype=np.float64)
    bounds = np.empty(nv, dtype=np.float64)
    for j in range(nv):
        ids_o[j] = term_ids[order[j]]
        w_o[j] = term_weights[order[j]]
        bounds[j] = bm25_bound(w_o[j])
    picked = bm25_maxscore(offsets, doc_ids, tfs, norms, ids_o, w_o, bounds, allowed,
                           check_allowed, theta0, depth, 2 * depth + 8, acc, seen, touched)
    exact = bm25_score_docs(offsets, doc_ids, tfs, norms, term_ids, term_weights, picked)
    m = min(depth, picked.shape[0])
    scores = np.empty(m, dtype=np.float64)
    docs = np.empty(m, dtype=np.int64)
    count = 0
    for j in range(picked.shape[0]):
        count = topk_offer(scores, docs, count, exact[j], np.int64(picked[j]))
    topk_finish(scores, docs, count)
    return scores[:count], docs[:count]


@jit
def _offer_segment(scores: npt.NDArray[np.float64], docs: npt.NDArray[np.int64],
                   docnums: npt.NDArray[np.int64], top_s: npt.NDArray[np.float64],
                   top_d: npt.NDArray[np.int64], top_n: npt.NDArray[np.int64]) -> None:
    # A segment's top (best first, local numbers) into the query's shared buffer: the first
    # that fails the bar ends it (local and global numbers rise together).
    depth = top_s.shape[0]
    worst = worst_index(depth)
    count = top_n[0]
    for j in range(scores.shape[0]):
        g = docnums[docs[j]]
        if count == depth and not ranks_before(scores[j], g, top_s[worst], top_d[worst]):
            break
        count = topk_offer(top_s, top_d, count, scores[j], g)
    top_n[0] = count


#: ``bm25_segment_topk`` keeping the GIL, for inline calls on the event loop (jit.held_twin).
bm25_segment_topk_held = held_twin(bm25_segment_topk)
