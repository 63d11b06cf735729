"""The plain-BM25 lane's kernel: one segment's best into a query's running top k, located.

``bm25_lane_topk`` is ``pruning.bm25_segment_topk`` for the engine's common query (terms only,
no filter, top k of at most ``topk.INSERTION_MAX``), with what makes its call from Python
cheap: the query's local term ids of every segment come as one matrix (a column per segment,
made once per query instead of an array per segment), the paths' thresholds are the module's
constants instead of arguments, the running count is an argument and the return value instead
of a one-element array, and each kept document carries where it lives (segment column, local
number) so that its id is read straight from the segment, without a search by document number.

Results are ``bm25_segment_topk``'s, bit for bit: the same ``segment_best`` per segment, offered
in the same order (score descending, then global document number ascending).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.jit import jit, jit_held
from hmsengine.kernels.pruning import DENSE_RATIO, PRUNE_MIN_POSTINGS, segment_best
from hmsengine.kernels.topk import ranks_before, topk_offer

#: ``where`` packs a document's segment column above these bits and its local number below.
LOCAL_BITS = 32
LOCAL_MASK = (1 << LOCAL_BITS) - 1


@jit
def _offer_located(scores: npt.NDArray[np.float64], docs: npt.NDArray[np.int64],
                   where: npt.NDArray[np.int64], count: int, score: float, doc: np.int64,
                   at: np.int64) -> int:
    # topk.topk_offer (a sorted insertion buffer: capacity <= INSERTION_MAX), then ``where``
    # moved as it moved ``docs``: the entries after the new one one place down, the last one
    # dropped when full. Document numbers are unique, so the new one is where ``doc`` is now.
    end = min(count, scores.shape[0] - 1)
    count = topk_offer(scores, docs, count, score, doc)
    pos = end
    while pos >= 0 and docs[pos] != doc:
        pos -= 1
    if pos >= 0:
        for j in range(end, pos, -1):
            where[j] = where[j - 1]
        where[pos] = at
    return count


@jit_held  # called inline on the event loop only, a few us a call (jit.jit_held)
def bm25_lane_topk(
    offsets: npt.NDArray[np.int64],
    doc_ids: npt.NDArray[np.int32],
    tfs: npt.NDArray[np.float32],
    norms: npt.NDArray[np.float64],
    allowed: npt.NDArray[np.uint8],
    check_allowed: bool,
    docnums: npt.NDArray[np.int64],
    term_matrix: npt.NDArray[np.int32],
    column: int,
    term_weights: npt.NDArray[np.float64],
    top_s: npt.NDArray[np.float64],
    top_d: npt.NDArray[np.int64],
    top_w: npt.NDArray[np.int64],
    count: int,
    acc: npt.NDArray[np.float64],
    seen: npt.NDArray[np.uint8],
    touched: npt.NDArray[np.int32],
) -> int:
    """Offer one segment's best BM25 documents to a query's running top k; the new count.

    The segment: ``offsets``/``doc_ids``/``tfs`` postings, ``norms``, ``allowed`` (read only
    when ``check_allowed``) and ``docnums`` (local to global, ascending), as for
    ``bm25_segment_topk``. ``term_matrix[i, column]`` is query term ``i``'s local id in this
    segment (-1 when absent), terms in the canonical order, ``term_weights[i]`` its weight.

    ``top_s``/``top_d``/``top_w`` (capacity ``k = len(top_s)``, 1 <= k <= ``INSERTION_MAX``)
    hold ``count`` kept entries, best first: score, global document number, and where the
    document is (``column << LOCAL_BITS | local``). Start with ``count = 0``; call once per
    segment, largest first (its worst kept score is then the bar the smaller segments' pruning
    starts from; any order gives the same result). Scratch clean on entry and on return.
    """
    depth = top_s.shape[0]
    term_ids = np.ascontiguousarray(term_matrix[:, column])
    theta0 = top_s[depth - 1] if count == depth else -np.inf
    scores, docs = segment_best(offsets, doc_ids, tfs, norms, term_ids, term_weights, allowed,
                                check_allowed, theta0, depth, acc, seen, touched,
                                PRUNE_MIN_POSTINGS, DENSE_RATIO)
    tag = np.int64(column) << LOCAL_BITS
    for j in range(scores.shape[0]):
        g = docnums[docs[j]]
        if count == depth and not ranks_before(scores[j], g, top_s[depth - 1], top_d[depth - 1]):
            break  # the segment's best come in order: none after this one can enter
        count = _offer_located(top_s, top_d, top_w, count, scores[j], g, tag | docs[j])
    return count
