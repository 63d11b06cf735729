"""BM25 top k by dense accumulation: every posting of the query's terms into a dense array,
then one scan of it (``bm25_dense_topk``). ``pruning.segment_best`` takes this path when the
highest-weight terms that can fill the top k already bring much of the query's postings, so that
MaxScore could skip little of them (``pruning.DENSE_RATIO``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.bm25 import bm25_term
from hmsengine.kernels.jit import jit
from hmsengine.kernels.norms import Norms, n_norms, norm_of
from hmsengine.kernels.topk import ranks_before, topk_finish, topk_offer, worst_index

# Documents per block of the dense scan.
_SCAN_BLOCK = 64


@jit
def bm25_dense_topk(
    offsets: npt.NDArray[np.int64],
    doc_ids: npt.NDArray[np.int32],
    tfs: npt.NDArray[np.float32],
    norms: Norms,
    term_ids: npt.NDArray[np.int32],
    term_weights: npt.NDArray[np.float64],
    allowed: npt.NDArray[np.uint8],
    check_allowed: bool,
    k: int,
    acc: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Top ``k`` by BM25 for queries whose terms touch much of the segment: every posting into
    the dense ``acc`` (no ``seen``/``touched`` bookkeeping), then one scan of ``acc[:n_docs]``.

    The terms are added in the order given, with ``bm25_accumulate``'s arithmetic, so scores
    are bit-identical to it. A document is a hit when its sum is > 0, which every BM25 match is
    (idf > 0, tf > 0); ``term_weights`` must be > 0. ``allowed`` is read only when
    ``check_allowed``. ``n_docs = len(norms)``; ``acc`` (at least that long) is zero on entry
    and on return. Returns ``topk_touched``'s ``(scores, docs)`` with ``doc_base = 0``.
    """
    n_terms = offsets.shape[0] - 1
    for qi in range(term_ids.shape[0]):
        t = term_ids[qi]
        if t < 0 or t >= n_terms:
            continue
        w = term_weights[qi]
        for p in range(offsets[t], offsets[t + 1]):
            d = doc_ids[p]
            if check_allowed and allowed[d] == 0:
                continue
            acc[d] += bm25_term(w, tfs[p], norm_of(norms, d))
    return _dense_scan_topk(acc, n_norms(norms), k)


@jit
def _dense_scan_topk(acc: npt.NDArray[np.float64], n_docs: int,
                     k: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    # The top k of acc[:n_docs] (sums > 0 only), in blocks; acc is zeroed on the way out.
    m = max(k, 0)
    scores = np.empty(m, dtype=np.float64)
    docs = np.empty(m, dtype=np.int64)
    count = 0
    worst = worst_index(m)
    bar = np.zeros(1, dtype=np.float64)  # the worst kept score, once the buffer is full
    bar_bits = bar.view(np.int64)
    bits = acc.view(np.int64)
    for start in range(0, n_docs if m > 0 else 0, _SCAN_BLOCK):
        end = min(start + _SCAN_BLOCK, n_docs)
        if count == m:
            # Sums are >= 0, so their IEEE bits order like the values: an integer maximum
            # (which the compiler vectorises, unlike a float one) tells whether any document of
            # the block beats the bar. A tie with it loses: the kept ones have lower numbers.
            top = np.int64(0)
            for d in range(start, end):
                v = bits[d]
                top = v if v > top else top
            if top <= bar_bits[0]:
                continue
        for d in range(start, end):
            s = acc[d]
            if s > 0.0:
                g = np.int64(d)
                if count == m and not ranks_before(s, g, bar[0], docs[worst]):
                    continue
                count = topk_offer(scores, docs, count, s, g)
                if count == m:
                    bar[0] = scores[worst]
    for d in range(n_docs):
        acc[d] = 0.0
    topk_finish(scores, docs, count)
    return scores[:count], docs[:count]
