"""Which kernels keep the GIL (kernels/jit.py): the plain lane's kernel, called inline on the
event loop for a few microseconds, keeps it; the kernels that worker threads run release it."""

from __future__ import annotations

import os

import pytest

from hmsengine.kernels import (
    bm25,
    cosine,
    filters,
    fusion,
    lane,
    ngram,
    pruning,
    quantized,
    tokenize,
    topk,
)

pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1",
                                reason="without the JIT the kernels are plain Python functions")


def test_the_lane_kernel_keeps_the_gil() -> None:
    """bm25_lane_topk is compiled with nogil=False: giving the GIL away for a call of a few
    microseconds hands it to any busy thread (a merge, the writer), and the event loop then
    waits up to a switch interval (5 ms) to get it back (jit.jit_held: q/s halved and a p99
    of 9 ms beside one busy Python thread, measured)."""
    assert lane.bm25_lane_topk.targetoptions["nogil"] is False
    assert lane._fill_row.targetoptions["nogil"] is False  # once per snapshot, inline too


@pytest.mark.parametrize("kernel", [
    filters.sorted_numbers, filters.live_locals, filters.mask_of, fusion.rrf_shares,
    fusion.scatter_positive, fusion.fused_places, fusion.view_locals, cosine.cosine_exact_into,
    cosine.unit_float32, cosine.checked_float32, fusion.posting_matches, fusion.bar_without,
    fusion.fuse_one_view, topk._merged_order,
], ids=lambda k: k.__name__)
def test_the_filter_and_fusion_kernels_keep_the_gil(kernel) -> None:  # type: ignore[no-untyped-def]
    """A filter's numbers are located inline on the event loop, in kernels that keep the GIL
    (numpy gave it away in each of a dozen calls: ~64 ms beside a busy thread); so are fused
    ranking's steps over its few hundred candidates, the merge of per-view top lists and a
    query vector's checks (numpy's sorts give the GIL away however short the array)."""
    assert kernel.targetoptions["nogil"] is False


def test_the_norms_kernel_keeps_the_gil() -> None:
    """bm25._fill_norms (the length norms a new snapshot computes once per segment, inline on
    the first query's thread, ~0.4 ms at 1M documents) keeps the GIL, as the lane kernel does."""
    assert bm25._fill_norms.targetoptions["nogil"] is False


@pytest.mark.parametrize("twin, kernel", [
    (pruning.bm25_segment_topk_held, pruning.bm25_segment_topk),
    (topk.topk_finish_held, topk.topk_finish),
    (bm25.bm25_score_docs_held, bm25.bm25_score_docs),
    (cosine._cosine_topk_held, cosine._cosine_topk),
    (bm25.sparse_accumulate_held, bm25.sparse_accumulate),
    (bm25.sparse_score_docs_held, bm25.sparse_score_docs),
    (topk.topk_touched_held, topk.topk_touched),
    (ngram._ngram_features_held, ngram._ngram_features),
    (quantized._quantized_topk_held, quantized._quantized_topk),
], ids=lambda k: k.__name__)
def test_the_inline_twins_keep_the_gil(twin, kernel) -> None:  # type: ignore[no-untyped-def]
    """The general path's kernels have twins for its inline calls (jit.held_twin): the same
    Python code under a name of its own (a cache entry of its own), keeping the GIL, while
    the originals, which worker threads run, release it."""
    assert twin.targetoptions["nogil"] is False and kernel.targetoptions["nogil"] is True
    assert twin.py_func.__code__ is kernel.py_func.__code__
    assert twin.py_func.__qualname__ == kernel.py_func.__qualname__ + "__held"


@pytest.mark.parametrize("kernel", [
    pruning.bm25_segment_topk, bm25.bm25_accumulate, bm25.build_postings, cosine._cosine_topk,
    ngram.csr_transpose, tokenize.ascii_tokens, quantized.quantize_rows_into,
], ids=lambda k: k.__name__)
def test_the_kernels_worker_threads_run_release_the_gil(kernel) -> None:  # type: ignore[no-untyped-def]
    """The kernels that run long in worker threads (large queries, tokenizing, building,
    merging) are compiled with nogil=True, so the event loop goes on meanwhile."""
    assert kernel.targetoptions["nogil"] is True
