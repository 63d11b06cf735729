"""MaxScore helpers: finish a query's common terms on already-touched documents only.

Term-at-a-time scoring visits every posting of every query term; a very common term (low idf)
has the most postings and the smallest contributions. MaxScore processes terms from the
largest upper bound down; once the upper bounds of the remaining terms cannot lift a document
that no term has touched yet above the current k-th best partial score, those remaining terms
are only added to the touched documents (``bm25_add_touched``), never to new ones.

The caller then re-scores the surviving candidates with ``bm25_score_docs`` in the canonical
term order, so scores stay bit-for-bit those of the unpruned path.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.bm25 import K1_PLUS_1, _find
from hmsengine.kernels.jit import jit


@jit
def bm25_add_touched(
    offsets: npt.NDArray[np.int64],
    doc_ids: npt.NDArray[np.int32],
    tfs: npt.NDArray[np.float32],
    norms: npt.NDArray[np.float64],
    term: int,
    weight: float,
    acc: npt.NDArray[np.float64],
    seen: npt.NDArray[np.uint8],
    touched: npt.NDArray[np.int32],
    n_touched: int,
) -> None:
    """Add term ``term``'s contribution to the touched documents that contain it, and to no
    other. Binary search per touched document when they are few relative to the postings, one
    pass over the postings otherwise; the same arithmetic as ``bm25_accumulate``."""
    if term < 0 or term >= offsets.shape[0] - 1:
        return
    lo = offsets[term]
    hi = offsets[term + 1]
    if hi <= lo:
        return
    if n_touched * 24 < hi - lo:
        for i in range(n_touched):
            d = touched[i]
            p = _find(doc_ids, lo, hi, d)
            if p >= 0:
                tf = np.float64(tfs[p])
                acc[d] += weight * tf * K1_PLUS_1 / (tf + norms[d])
    else:
        for p in range(lo, hi):
            d = doc_ids[p]
            if seen[d] != 0:
                tf = np.float64(tfs[p])
                acc[d] += weight * tf * K1_PLUS_1 / (tf + norms[d])


@jit
def kth_best(acc: npt.NDArray[np.float64], touched: npt.NDArray[np.int32], n_touched: int,
             k: int) -> float:
    """The k-th largest ``acc`` among the touched documents (-inf when fewer than k)."""
    if k <= 0 or n_touched < k:
        return -np.inf
    values = np.empty(n_touched, dtype=np.float64)
    for i in range(n_touched):
        values[i] = acc[touched[i]]
    return float(np.partition(values, n_touched - k)[n_touched - k])
