"""``warm_up``: every kernel compiled (or loaded from numba's cache) before a query needs it.

The engine runs it at open, in a thread of its own while the store recovers (much of both runs
without the GIL). It lives apart from ``jit.py`` because it calls every kernel: the decorator
module stays a leaf that the kernels import, and this module sits above all of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from hmsengine.kernels import (
    bm25,
    cosine,
    filters,
    fusion,
    lane,
    merge,
    ngram,
    pruning,
    quantized,
    tokenize,
    topk,
)
from hmsengine.kernels.norms import length_codes


def _readonly(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    out = []
    for a in arrays:
        b = a.copy()
        b.flags.writeable = False
        out.append(b)
    return tuple(out)


def warm_up(stop: Callable[[], bool] = lambda: False) -> None:
    """Call every kernel once on tiny arrays so that no real query pays for a compile.

    Compiles (or loads from numba's cache) the specialisations the engine uses: postings arrays
    (offsets, doc_ids, tfs/values) and the cosine matrix both writable and read-only (as they are
    when viewed over a ``bytes`` buffer or a read-only memory map); the tokenizer's text bytes
    read-only only (the analyzer always views them over a ``bytes`` object); every other argument
    writable, with the dtypes the kernels document. A call with any other dtype or layout compiles a new
    specialisation on first use (seconds). Blocking and CPU-bound: run it in a worker thread.

    The query path's kernels come first, then the write path's. ``stop()`` is asked after each
    kernel: when it says True the rest is left to load on first use (an engine closing before
    its warm-up finished, such as a short command line call's, waits for one kernel, not all).
    After each kernel the thread lets others run: a thread that needs a kernel meanwhile loads
    it under numba's compiler lock instead of waiting for the whole warm-up.
    """
    global _complete
    if _complete:
        return

    def between() -> None:
        if stop():
            raise _Stopped
        time.sleep(0)

    try:
        for step in _STEPS:
            step(between)
    except _Stopped:
        return
    _complete = True


def is_warm() -> bool:
    """True once a warm-up has run to its end in this process: numba's dispatchers keep what
    they compiled or loaded, so a later engine has nothing to warm up (tests and servers open
    many)."""
    return _complete


_complete = False


class _Stopped(Exception):
    """``stop()`` said True: the warm-up returns."""


def _postings() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Tiny postings (offsets, doc_ids, tfs), writable and read-only."""
    offsets = np.array([0, 2, 3], dtype=np.int64)
    doc_ids = np.array([0, 2, 1], dtype=np.int32)
    tfs = np.array([1.0, 2.0, 1.0], dtype=np.float32)
    return [(offsets, doc_ids, tfs), _readonly(offsets, doc_ids, tfs)]  # type: ignore[list-item]


_N_DOCS = 3
_TERM_IDS = np.array([0, 1], dtype=np.int32)
_WEIGHTS = np.array([1.0, 0.5], dtype=np.float64)


def _norms() -> tuple[np.ndarray, np.ndarray]:
    """Norms in the by-length form the engine passes (``SegmentView.norms``)."""
    lengths, codes = length_codes(np.array([1, 2, 1], dtype=np.int32))
    return bm25.bm25_norms(lengths, 2.0), codes


def _lane(between: Callable[[], None]) -> None:
    norms = _norms()
    allowed = np.ones(_N_DOCS, dtype=np.uint8)
    acc, seen, touched = bm25.new_scratch(_N_DOCS)
    docnums = np.arange(_N_DOCS, dtype=np.int64)
    terms = lane.term_records(_WEIGHTS, _TERM_IDS.reshape(-1, 1))
    for off, ids, vals in _postings():  # lane_row's arrays, writable and read-only
        for check in (False, True):
            table = lane.new_table(1)
            lane.lane_row(table, 0, 0, check, off, ids, vals, norms, allowed, docnums)
            top_s, top_d, top_w = np.empty(2), np.empty(2, np.int64), np.empty(2, np.int64)
            lane.bm25_lane_topk(table, terms, top_s, top_d, top_w, acc, seen, touched)
            between()


def _general(between: Callable[[], None]) -> None:
    norms = _norms()
    allowed = np.ones(_N_DOCS, dtype=np.uint8)
    docs = np.array([0, 1], dtype=np.int32)
    acc, seen, touched = bm25.new_scratch(_N_DOCS)
    term_ids, weights = _TERM_IDS, _WEIGHTS
    for off, ids, vals in _postings():
        n = bm25.bm25_accumulate(
            off, ids, vals, norms, term_ids, weights, allowed, acc, seen, touched, 0
        )
        topk.topk_touched(acc, seen, touched, n, 2, 0)
        between()
        for accumulate, touched_topk in ((bm25.sparse_accumulate, topk.topk_touched),
                                         (bm25.sparse_accumulate_held, topk.topk_touched_held)):
            n = accumulate(off, ids, vals, term_ids, weights, allowed, acc, seen, touched, 0)
            touched_topk(acc, seen, touched, n, 2, 0)
        topk.reset_touched(acc, seen, touched, 0)
        between()
        bm25.bm25_score_docs(off, ids, vals, norms, term_ids, weights, docs)
        bm25.bm25_score_docs_held(off, ids, vals, norms, term_ids, weights, docs)
        bm25.sparse_score_docs(off, ids, vals, term_ids, weights, docs)
        bm25.sparse_score_docs_held(off, ids, vals, term_ids, weights, docs)
        fusion.posting_matches(off, ids, term_ids, docs)
        between()
        n = bm25.bm25_accumulate(
            off, ids, vals, norms, term_ids[:1], weights[:1], allowed, acc, seen, touched, 0
        )
        topk.topk_touched(acc, seen, touched, n, 2, 0)
        docnums = np.arange(_N_DOCS, dtype=np.int64)
        for check in (False, True):
            for depth in (1, 2 * topk.INSERTION_MAX):  # insertion and heap buffers
                top_s = np.empty(depth, dtype=np.float64)
                top_d = np.empty(depth, dtype=np.int64)
                top_n = np.zeros(1, dtype=np.int64)
                for segment_topk, finish in ((pruning.bm25_segment_topk, topk.topk_finish),
                                             (pruning.bm25_segment_topk_held,
                                              topk.topk_finish_held)):
                    top_n[0] = 0
                    segment_topk(off, ids, vals, norms, term_ids, weights, allowed, check,
                                 docnums, top_s, top_d, top_n, acc, seen, touched,
                                 pruning.PRUNE_MIN_POSTINGS, pruning.DENSE_RATIO)
                    finish(top_s, top_d, int(top_n[0]))
                    between()


def _tokenizer(between: Callable[[], None]) -> None:
    bm25.build_postings(np.array([0, 1, 0], dtype=np.int32), np.array([0, 2, 3], dtype=np.int64), 2)
    between()
    # As Analyzer.term_ids calls them: the bytes viewed read-only over a ``bytes`` object.
    occ, occ_starts, _ = tokenize.ascii_tokens(
        np.frombuffer(b"Warm up\x00WARM", dtype=np.uint8), np.array([0, 8, 12], dtype=np.int64)
    )
    between()
    tokenize.term_ranks(np.frombuffer(b"warm  up warm", dtype=np.uint8), 4, 32)
    tokenize.apply_lut(occ, occ_starts, np.array([0, -1], dtype=np.int32))


def _merging(between: Callable[[], None]) -> None:
    colmap = np.array([1, 0], dtype=np.int64)
    docmap = np.array([0, -1, 1], dtype=np.int64)
    for off, ids, vals in _postings():  # a built segment's arrays, and a loaded one's read-only
        counts = np.zeros(2, dtype=np.int64)
        merge.count_kept(off, ids, colmap, docmap, counts)
        offsets = np.zeros(3, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        docs = np.empty(int(offsets[-1]), dtype=np.int32)
        values = np.empty(int(offsets[-1]), dtype=np.float32)
        merge.scatter_kept(off, ids, vals, colmap, docmap, offsets[:-1].copy(), docs, values)
        merge.sort_columns(offsets, docs, values)
        between()


def _vectors(between: Callable[[], None]) -> None:
    allowed = np.ones(_N_DOCS, dtype=np.uint8)
    matrix = cosine.l2_normalise_rows(np.arange(12, dtype=np.float32).reshape(3, 4))
    query = cosine.l2_normalise(np.ones(4, dtype=np.float32))
    cosine.checked_float32(np.ones(4, dtype=np.float64))
    cosine.unit_float32(np.ones(4, dtype=np.float64))
    values, ranked = np.zeros(2, dtype=np.float64), np.zeros(2, dtype=bool)
    places = np.arange(2, dtype=np.int64)
    numbers = np.arange(_N_DOCS, dtype=np.int64)
    for m, docnums in ((matrix, numbers), (*_readonly(matrix), *_readonly(numbers))):
        rows, _ = fusion.view_locals(docnums, places, 0)
        cosine.cosine_exact_into(m, rows, np.ones(2, dtype=np.uint8), places,
                                 query.astype(np.float64), values, ranked)
    # A one-view fused query's kernel, over a built segment (writable) and a loaded one.
    read_only = _readonly(matrix, allowed, numbers)
    for (off, ids, vals), m, has, docnums in zip(
            _postings(), (matrix, read_only[0]), (allowed, read_only[1]), (numbers, read_only[2]),
            strict=True):
        fusion.fuse_one_view(np.array([2, 0], dtype=np.int64), np.array([1, 2], dtype=np.int64),
                             docnums, off, ids, vals, _norms(), _TERM_IDS, _WEIGHTS, 1.0, m, has,
                             query.astype(np.float64), 1.0, True, 60)
    between()
    fusion.rrf_shares(values, values, ranked, 1.0, 60)
    fusion.scatter_positive(values, ranked, places, values)
    fusion.fused_places(values, 1)
    fusion.bar_without(values, 0, 1)
    topk.merge_topk([(values, places), (values, places + 2)], 3)
    # A built segment's embeddings and has_embedding are writable, a loaded one's read-only.
    for m, has in ((matrix, allowed), _readonly(matrix, allowed)):
        for held in (False, True):
            cosine.cosine_topk(m, query, allowed, 2, has, held=held)
        cosine.cosine_exact_rows(m, np.array([0, 2], dtype=np.int32), query.astype(np.float64))
        codes = quantized.quantize_rows(m)  # always made in the process: writable
        for held in (False, True):
            quantized.quantized_topk(codes, m, query, allowed, has, 2, held=held)
        between()


def _ngrams(between: Callable[[], None]) -> None:
    indptr, indices, values = ngram.ngram_vectors(["warm up", ""], 64)
    between()
    ngram.csr_transpose(indptr, indices, values, 64)
    ngram.ngram_query("warm", 64)


# The query path first (the plain lane, then the general one), then the write path's tokenizer
# and postings, then vectors and n-grams.
def _filters(between: Callable[[], None]) -> None:
    wanted = filters.sorted_numbers(np.array([2, -1, 0, 2], dtype=np.int64))
    live = np.ones(_N_DOCS, dtype=np.uint8)
    docnums = np.arange(_N_DOCS, dtype=np.int64)
    for numbers in (docnums, _readonly(docnums)[0]):  # persisted segments' are read-only
        filters.mask_of(filters.live_locals(wanted, numbers, live), _N_DOCS)
    between()


_STEPS: tuple[Callable[[Callable[[], None]], None], ...] = (
    _lane, _general, _filters, _tokenizer, _merging, _vectors, _ngrams)
