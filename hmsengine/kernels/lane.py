"""The plain-BM25 lane's kernel: every segment's best into a query's top k, located, in one call.

``bm25_lane_topk`` is ``pruning.bm25_segment_topk`` for the engine's common query (terms only,
no filter, top k of at most ``topk.INSERTION_MAX``) over all segments of a snapshot at once,
with what makes its call from Python cheap:

* the segments come as one table of addresses (``kernels/address.py``), a row per segment
  (``lane_row``), made once per snapshot: a call costs one dispatch of nine arguments, not one
  of seventeen per segment (~1.3 us each, most of what a small segment costs);
* the query's terms come as one flat float64 buffer, a record per term: its weight, then its
  local id in every segment (``term_records``); the lane joins it from bytes kept per term;
* the paths' thresholds are the module's constants instead of arguments;
* each kept document carries where it lives (segment column, local number), so that its id is
  read straight from the segment, without a search by document number; when every kept
  document is in one segment (most queries), the call says which and leaves the local numbers
  alone, so that their ids are one fancy index of that segment's id array.

Results are ``bm25_segment_topk``'s, bit for bit: the same ``segment_best`` per segment, offered
in the same order (score descending, then global document number ascending).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.address import address_of, array_at
from hmsengine.kernels.jit import jit, jit_held
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
 CODES, ALLOWED, DOCNUMS) = range(13)
ROW_WIDTH = 13


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
             allowed: npt.NDArray[np.uint8], docnums: npt.NDArray[np.int64]) -> None:
    """Describe one segment in ``table[row]``: its postings (``offsets``/``doc_ids``/``tfs``),
    ``norms`` in the by-length form ``(table, codes)`` (kernels/norms.py), ``allowed`` (read
    only when ``check_allowed``), ``docnums`` (local to global, ascending) as for
    ``bm25_segment_topk``, and ``column``, its column in the term matrix.

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
    _fill_row(table, row, column, check_allowed, offsets, doc_ids, tfs, norm_table, codes,
              allowed, docnums)


@jit_held
def _fill_row(table: npt.NDArray[np.int64], row: int, column: int, check_allowed: bool,
              offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
              tfs: npt.NDArray[np.float32], norm_table: npt.NDArray[np.float64],
              codes: npt.NDArray[np.int32], allowed: npt.NDArray[np.uint8],
              docnums: npt.NDArray[np.int64]) -> None:
    # In a kernel because an address costs ~1 us a read from Python (ndarray.ctypes).
    r = table[row]
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


def term_records(weights: npt.NDArray[np.float64],
                 matrix: npt.NDArray[np.int32]) -> npt.NDArray[np.float64]:
    """``bm25_lane_topk``'s ``terms`` from the query terms' ``weights`` and their local ids,
    ``matrix[i, c]`` for term ``i`` in the segment of column ``c`` (-1 when absent)."""
    if matrix.ndim != 2 or matrix.shape[0] != weights.shape[0]:
        raise ValueError("a row of local ids per weight")
    out = np.empty((matrix.shape[0], 1 + matrix.shape[1]), dtype=np.float64)
    out[:, 0] = weights
    out[:, 1:] = matrix
    return out.ravel()


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
    table: npt.NDArray[np.int64],
    terms: npt.NDArray[np.float64],
    top_s: npt.NDArray[np.float64],
    top_d: npt.NDArray[np.int64],
    top_w: npt.NDArray[np.int64],
    acc: npt.NDArray[np.float64],
    seen: npt.NDArray[np.uint8],
    touched: npt.NDArray[np.int32],
) -> tuple[int, int]:
    """A query's top k over the segments of ``table`` (``lane_row``), in its row order: the
    number of documents kept, and the column of the segment that holds every one of them (then
    ``top_w`` holds their local numbers alone), or -1 when they lie in several segments or none
    is kept.

    ``terms`` holds a record per query term, in the canonical order (``term_records``): its
    weight, then its local id in the segment of each column ``c`` in ``0 .. len(table) - 1``
    (-1 when absent), as float64 (exact for int32 ids). One flat buffer, so that the lane makes
    one array per query from bytes it keeps per term.
    ``top_s``/``top_d``/``top_w`` (capacity ``k = len(top_s)``, 1 <= k <= ``INSERTION_MAX``)
    receive the kept entries, best first: score, global document number, and where the document
    is (``column << LOCAL_BITS | local``, or ``local`` when they are all in one segment).
    Rows largest segment first: a segment's worst kept score is then the bar the smaller
    segments' pruning starts from (any order gives the same result). Scratch
    (``acc``/``seen``/``touched``, for the largest segment) clean on entry and on return.
    """
    depth = top_s.shape[0]
    width = 1 + table.shape[0]
    n_terms = terms.shape[0] // width
    if n_terms * width != terms.shape[0]:
        raise ValueError("terms: not a whole number of records of 1 + len(table) values")
    term_weights = np.empty(n_terms, dtype=np.float64)
    for i in range(n_terms):
        term_weights[i] = terms[i * width]
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
        term_ids = np.empty(n_terms, dtype=np.int32)
        for i in range(n_terms):
            term_ids[i] = np.int32(terms[i * width + 1 + column])
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
    # Most queries keep documents of one segment only (the largest holds most of them): their
    # local numbers then index that segment's id array in one call, where reading the ids of
    # documents of several segments takes a Python step each (~2 us for ten, index/lane.py).
    if count == 0:
        return 0, -1
    column = top_w[0] >> LOCAL_BITS
    for j in range(1, count):
        if top_w[j] >> LOCAL_BITS != column:
            return count, -1
    for j in range(count):
        top_w[j] &= LOCAL_MASK
    return count, column
