"""Per-term score peaks of a segment: how much each term can really add, for MaxScore's bounds.

MaxScore (``pruning``) skips documents whose partial sum plus what the remaining terms can still
add cannot reach the bar. ``bm25_bound(w)`` = ``w * (k1 + 1)`` is what a term adds at most for
any document (the limit as its frequency grows); a real term in short documents adds far less
(a word once in a document of average length adds ``w``, not ``2.2 w``). The closer the bound,
the sooner terms stop touching new documents and the sooner candidates are dropped.

A term's **peak** in a segment is the largest ``tf / (tf + norm)`` over its postings, with the
norms of the segment's own average length ``ref`` (``term_peaks``). A query's snapshot has its
own average length ``a`` (over the live documents of every segment), so its norms differ:

* for ``a <= ref`` every norm is at least the reference one (``norm = k1 (1 - b + b dl / a)``
  grows as ``a`` shrinks), so every posting adds at most ``w (k1 + 1) peak``;
* for ``a > ref``, with ``x = tf + k1 (1 - b)`` and ``e = k1 b dl``, a posting's ratio is
  ``tf / (x + e / a)`` against ``tf / (x + e / ref)`` at the reference: their quotient
  ``(x + e / ref) / (x + e / a)`` is at most ``a / ref`` (``x >= 0``, ``1 / ref > 1 / a``).

So ``peak_bound(w, peak, scale)`` with ``scale = max(1, a / ref)`` bounds every contribution
of the term in the segment, whichever documents are dead (a dead document's posting only
leaves the maximum over fewer). The product is widened by ``PEAK_SLACK`` against rounding
(the exact and the computed contributions differ in the last bits) and never exceeds
``bm25_bound(w)``; MaxScore's bar comparisons keep their own tolerance as well.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.bm25 import bm25_bound
from hmsengine.kernels.jit import inline, jit
from hmsengine.kernels.norms import Norms, norm_of

#: Relative widening of a peak bound: far above the rounding of one contribution (~1e-16).
PEAK_SLACK = 1e-12


@jit
def term_peaks(offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
               tfs: npt.NDArray[np.float32], norms: Norms) -> npt.NDArray[np.float64]:
    """``float64[n_terms]``: each term's largest ``tf / (tf + norm)`` over its postings (0.0 for
    a term without any), ``norms`` those of the segment's reference average length. One pass
    over the postings (~1 ns each), made once per segment in the thread that builds, merges or
    loads it (``index/segment.ready_for_queries``)."""
    n_terms = offsets.shape[0] - 1
    out = np.zeros(max(n_terms, 0), dtype=np.float64)
    for t in range(n_terms):
        top = 0.0
        for p in range(offsets[t], offsets[t + 1]):
            tf = np.float64(tfs[p])
            r = tf / (tf + norm_of(norms, doc_ids[p]))
            if r > top:
                top = r
        out[t] = top
    return out


def peak_scale(avgdl: float, reference: float) -> float:
    """``max(1, avgdl / reference)`` (see the module docstring); the average lengths as
    ``bm25.bm25_norms`` takes them (a non-positive or non-finite one counts as 1.0)."""
    a = avgdl if avgdl > 0.0 and np.isfinite(avgdl) else 1.0
    ref = reference if reference > 0.0 and np.isfinite(reference) else 1.0
    return max(1.0, a / ref)


@inline
def peak_bound(weight: float, peak: float, scale: float) -> float:
    """An upper bound of term contributions ``bm25_term(weight, tf, norm)`` over a segment
    whose term has ``peak`` (``term_peaks``) for a snapshot of ``scale`` (``peak_scale``), at
    most ``bm25_bound(weight)``."""
    share = peak * scale * (1.0 + PEAK_SLACK)
    if share > 1.0:
        share = 1.0
    return bm25_bound(weight) * share
