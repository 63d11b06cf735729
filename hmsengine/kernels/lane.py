"""The plain-BM25 lane's kernel: every segment's best into a query's top k, located, in one call.

``bm25_lane_topk`` is ``pruning.bm25_segment_topk`` for the engine's common query (terms only,
no filter, top k of at most ``topk.INSERTION_MAX``) over all segments of a snapshot at once,
with what makes its call from Python cheap:

* the segments come as one table of addresses (``kernels/address.py``), a row per segment
  (``lane_row``), made once per snapshot: a call costs one dispatch of nine arguments, not one
  of seventeen per segment (~1.3 us each, most of what a small segment costs);
* the query's local term ids of every segment come as one matrix (a column per segment);
* the paths' thresholds are the module's constants instead of arguments;
* each kept document carries where it lives (segment column, local number), so that its id is
  read straight from the segment, without a search by document number.

Results are ``bm25_segment_topk``'s, bit for bit: a large segment's ``segment_best`` offered in
order (score descending, then global document number ascending); a small one's documents scored
by plain accumulation and offered directly (``DIRECT_MAX_DOCS``), with the same exact scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.address import address_of, array_at
from hmsengine.kernels.bm25 import bm25_term
from hmsengine.kernels.jit import jit, jit_held
from hmsengine.kernels.norms import Norms, norm_of
from hmsengine.kernels.pruning import DENSE_RATIO, PRUNE_MIN_POSTINGS, segment_best
from hmsengine.kernels.topk import ranks_before, topk_offer

#: ``where`` packs a document's segment column above these bits and its local number below.
LOCAL_BITS = 32
LOCAL_MASK = (1 << LOCAL_BITS) - 1

# A lane table row (int64): the segment's column in the term matrix, its document count, whether
# any document is dead (``allowed`` read), then the addresses (and lengths) of its arrays; its
# norms in the by-length form (kernels/norms.py): the table of the distinct lengths' norms and
# each document's index into it.
(COLUMN, N_DOCS, CHECK, OFFSETS, N_OFFSETS, DOC_IDS, N_POSTINGS, TFS, NORM_TABLE, N_LENGTHS,
 CODES, ALLOWED, DOCNUMS, DIRECT) = range(14)
ROW_WIDTH = 14

#: A segment of at most this many documents is scored directly (``lane_row``'s ``direct``):
#: every posting accumulated and each touched document offered straight into the query's top
#: k, without a top k of its own. For such a segment that is the plain-accumulation path
#: anyway, and it skips the per-segment selection and its arrays: right after a burst of
#: writes, with three or four small segments beside the large one, ~1 us a query at 50k.
DIRECT_MAX_DOCS = 16384


def new_table(n_views: int) -> npt.NDArray[np.int64]:
    """An empty lane table for ``n_views`` segments (rows filled by ``lane_row``)."""
    return np.zeros((n_views, ROW_WIDTH), dtype=np.int64)


# The dtypes ``bm25_lane_topk`` reads each array as: ``lane_row`` refuses anything else, since
# a wrong dtype or a strided array behind an address would be read as garbage.
_DTYPES = (np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.float32), np.dtype(np.float64),
           np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.int64))


def lane_row(table: npt.NDArray[np.int64], row: int, column: int, check_allowed: bool,
             offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
             tfs: npt.NDArray[np.float32],
             norms: tuple[npt.NDArray[np.float64], npt.NDArray[np.int32]],
             allowed: npt.NDArray[np.uint8], docnums: npt.NDArray[np.int64],
             direct: bool | None = None) -> None:
    """Describe one segment in ``table[row]``: its postings (``offsets``/``doc_ids``/``tfs``),
    ``norms`` in the by-length form ``(table, codes)`` (kernels/norms.py), ``allowed`` (read
    only when ``check_allowed``), ``docnums`` (local to global, ascending) as for
    ``bm25_segment_topk``, and ``column``, its column in the term matrix. ``direct``: whether
    the kernel scores it directly (``DIRECT_MAX_DOCS``; None: when it has at most that many
    documents); either way gives the same top k.

    The table then holds these arrays' addresses: the caller keeps them alive while it uses
    the table. Raises ValueError for an array that is not C-contiguous or not of the kernel's
    dtype, or for lengths that do not fit together. The codes are not read here (that would
    cost a pass over every document of every segment per snapshot): they must index the norm
    table, as ``norms.length_codes`` makes them."""
    norm_table, codes = norms
    arrays: tuple[npt.NDArray[Any], ...] = (offsets, doc_ids, tfs, norm_table, codes, allowed,
                                            docnums)
    for array, dtype in zip(arrays, _DTYPES, strict=True):
        if array.dtype != dtype or array.ndim != 1 or not array.flags.c_contiguous:
            raise ValueError(f"a lane table needs C-contiguous 1-d {dtype} arrays, got "
                             f"{array.dtype} of shape {array.shape}")
    n = codes.shape[0]
    if allowed.shape[0] != n or docnums.shape[0] != n or doc_ids.shape[0] != tfs.shape[0] or \
            offsets.shape[0] < 1 or (n and not norm_table.shape[0]):
        raise ValueError("a lane table row's arrays do not fit together")
    if direct is None:
        direct = n <= DIRECT_MAX_DOCS
    _fill_row(table, row, column, check_allowed, offsets, doc_ids, tfs, norm_table, codes,
              allowed, docnums, direct)


@jit_held
def _fill_row(table: npt.NDArray[np.int64], row: int, column: int, check_allowed: bool,
              offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
              tfs: npt.NDArray[np.float32], norm_table: npt.NDArray[np.float64],
              codes: npt.NDArray[np.int32], allowed: npt.NDArray[np.uint8],
              docnums: npt.NDArray[np.int64], direct: bool) -> None:
    # In a kernel because an address costs ~1 us a read from Python (ndarray.ctypes).
    r = table[row]
    r[DIRECT] = 1 if direct else 0
    r[COLUMN] = column
    r[N_DOCS] = codes.shape[0]
    r[CHECK] = 1 if check_allowed else 0
    r[OFFSETS] = address_of(offsets)
    r[N_OFFSETS] = offsets.shape[0]
    r[DOC_IDS] = address_of(doc_ids)
    r[N_POSTINGS] = doc_ids.shape[0]
    r[TFS] = address_of(tfs)
    r[NORM_TABLE] = address_of(norm_table)
    r[N_LENGTHS] = norm_table.shape[0]
    r[CODES] = address_of(codes)
    r[ALLOWED] = address_of(allowed)
    r[DOCNUMS] = address_of(docnums)


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


@jit
def _direct_view(offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
                 tfs: npt.NDArray[np.float32], norms: Norms, allowed: npt.NDArray[np.uint8],
                 check_allowed: bool, docnums: npt.NDArray[np.int64], term_matrix: npt.NDArray[np.int32],
                 column: np.int64, term_weights: npt.NDArray[np.float64],
                 top_s: npt.NDArray[np.float64], top_d: npt.NDArray[np.int64],
                 top_w: npt.NDArray[np.int64], count: int, acc: npt.NDArray[np.float64],
                 seen: npt.NDArray[np.uint8], touched: npt.NDArray[np.int32]) -> int:
    # A direct row (DIRECT_MAX_DOCS): bm25.bm25_accumulate's loop (the terms in canonical
    # order, so each score has the bits every path's exact score has), reading the term ids
    # from the matrix's column, then every touched document offered into the running top k
    # (the k best of a total order do not depend on the order they are offered in) and the
    # scratch cleaned on the way.
    depth = top_s.shape[0]
    n_terms = offsets.shape[0] - 1
    n_touched = 0
    for qi in range(term_matrix.shape[0]):
        t = term_matrix[qi, column]
        if t < 0 or t >= n_terms:
            continue
        w = term_weights[qi]
        for p in range(offsets[t], offsets[t + 1]):
            d = doc_ids[p]
            if check_allowed and allowed[d] == 0:
                continue
            if seen[d] == 0:
                seen[d] = 1
                touched[n_touched] = d
                n_touched += 1
            acc[d] += bm25_term(w, tfs[p], norm_of(norms, d))
    tag = np.int64(column) << LOCAL_BITS
    for i in range(n_touched):
        d = touched[i]
        s = acc[d]
        acc[d] = 0.0
        seen[d] = 0
        g = docnums[d]
        if count == depth and not ranks_before(s, g, top_s[depth - 1], top_d[depth - 1]):
            continue
        count = _offer_located(top_s, top_d, top_w, count, s, g, tag | d)
    return count


@jit_held  # called inline on the event loop only, a few us a call (jit.jit_held)
def bm25_lane_topk(
    table: npt.NDArray[np.int64],
    term_matrix: npt.NDArray[np.int32],
    term_weights: npt.NDArray[np.float64],
    top_s: npt.NDArray[np.float64],
    top_d: npt.NDArray[np.int64],
    top_w: npt.NDArray[np.int64],
    acc: npt.NDArray[np.float64],
    seen: npt.NDArray[np.uint8],
    touched: npt.NDArray[np.int32],
) -> int:
    """A query's top k over the segments of ``table`` (``lane_row``), in its row order; the
    number of documents kept.

    ``term_matrix[i, c]`` is query term ``i``'s local id in the segment of column ``c`` (-1 when
    absent), terms in the canonical order, ``term_weights[i]`` its weight.
    ``top_s``/``top_d``/``top_w`` (capacity ``k = len(top_s)``, 1 <= k <= ``INSERTION_MAX``)
    receive the kept entries, best first: score, global document number, and where the document
    is (``column << LOCAL_BITS | local``). Rows largest segment first: a segment's worst kept
    score is then the bar the smaller segments' pruning starts from (any order gives the same
    result). Scratch (``acc``/``seen``/``touched``, for the largest segment) clean on entry
    and on return.
    """
    depth = top_s.shape[0]
    count = 0
    for row in range(table.shape[0]):
        r = table[row]
        column = r[COLUMN]
        n = r[N_DOCS]
        offsets = array_at(r[OFFSETS], r[N_OFFSETS], np.int64)
        doc_ids = array_at(r[DOC_IDS], r[N_POSTINGS], np.int32)
        tfs = array_at(r[TFS], r[N_POSTINGS], np.float32)
        norms = (array_at(r[NORM_TABLE], r[N_LENGTHS], np.float64),
                 array_at(r[CODES], n, np.int32))
        allowed = array_at(r[ALLOWED], n, np.uint8)
        docnums = array_at(r[DOCNUMS], n, np.int64)
        if r[DIRECT] != 0:
            count = _direct_view(offsets, doc_ids, tfs, norms, allowed, r[CHECK] != 0, docnums,
                                 term_matrix, column, term_weights, top_s, top_d, top_w, count,
                                 acc, seen, touched)
            continue
        term_ids = np.ascontiguousarray(term_matrix[:, column])
        theta0 = top_s[depth - 1] if count == depth else -np.inf
        scores, docs = segment_best(offsets, doc_ids, tfs, norms, term_ids, term_weights,
                                    allowed, r[CHECK] != 0, theta0, depth, acc, seen, touched,
                                    PRUNE_MIN_POSTINGS, DENSE_RATIO)
        tag = np.int64(column) << LOCAL_BITS
        for j in range(scores.shape[0]):
            g = docnums[docs[j]]
            if count == depth and not ranks_before(scores[j], g, top_s[depth - 1],
                                                   top_d[depth - 1]):
                break  # the segment's best come in order: none after this one can enter
            count = _offer_located(top_s, top_d, top_w, count, scores[j], g, tag | docs[j])
    return count
