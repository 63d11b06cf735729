"""Fusion's small kernels (``kernels/fusion.py``) against the numpy steps they replace: a view's
candidates located by binary search (numbers it does not hold left out), the fused order by a
stable sort (ties by place), BM25 matches scattered by place, the n-gram candidates with a
posting, the exact-term floor's bar; a one-view query's fusion in one call against those steps."""

from __future__ import annotations

import numpy as np
import pytest

from hmsengine.kernels import bm25, cosine, fusion
from hmsengine.kernels.norms import length_codes


def test_view_locals_is_searchsorted_with_the_numbers_held() -> None:
    rng = np.random.default_rng(21)
    for _ in range(300):
        docnums = np.unique(rng.integers(0, 400, int(rng.integers(0, 120)))).astype(np.int64)
        wanted = np.unique(rng.integers(0, 450, int(rng.integers(1, 90)))).astype(np.int64)
        first = int(rng.integers(0, 50))
        local, places = fusion.view_locals(docnums, wanted, first)
        at = np.searchsorted(docnums, wanted)
        held = (at < docnums.shape[0]) & (docnums[np.minimum(at, max(docnums.shape[0] - 1, 0))]
                                          == wanted) if docnums.shape[0] else wanted < 0
        assert local.dtype == np.int32 and places.dtype == np.int64
        assert local.tolist() == at[held].tolist()
        assert places.tolist() == (np.flatnonzero(held) + first).tolist()


def test_fused_places_are_lexsort_by_total_then_place() -> None:
    rng = np.random.default_rng(22)
    for _ in range(300):
        n = int(rng.integers(1, 150))
        total = np.round(rng.random(n), 1)  # many ties
        k = int(rng.integers(1, n + 5))
        want = np.lexsort((np.arange(n), -total))[:k]
        assert fusion.fused_places(total, k).tolist() == want.tolist()


def test_scatter_positive_writes_the_matches_only() -> None:
    values, ranked = np.zeros(6), np.zeros(6, dtype=bool)
    fusion.scatter_positive(values, ranked, np.array([5, 0, 3], dtype=np.int64),
                            np.array([1.5, 0.0, 2.0]))
    assert values.tolist() == [0.0, 0.0, 0.0, 2.0, 0.0, 1.5]
    assert ranked.tolist() == [False, False, False, True, False, True]


def test_posting_matches_is_isin_over_the_terms() -> None:
    rng = np.random.default_rng(23)
    for _ in range(200):
        n_terms = int(rng.integers(1, 12))
        lists = [np.unique(rng.integers(0, 80, int(rng.integers(0, 30)))).astype(np.int32)
                 for _ in range(n_terms)]
        offsets = np.zeros(n_terms + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(x) for x in lists])
        doc_ids = np.concatenate(lists).astype(np.int32) if offsets[-1] else np.empty(0, np.int32)
        terms = rng.integers(-2, n_terms + 2, int(rng.integers(0, 6))).astype(np.int32)
        docs = rng.integers(0, 90, int(rng.integers(0, 40))).astype(np.int32)
        want = np.zeros(docs.shape[0], dtype=bool)
        for t in terms:
            if 0 <= t < n_terms:
                want |= np.isin(docs, lists[t])
        assert fusion.posting_matches(offsets, doc_ids, terms, docs).tolist() == want.tolist()


def test_bar_without_is_the_sorted_rest() -> None:
    rng = np.random.default_rng(24)
    for _ in range(300):
        n = int(rng.integers(2, 60))
        total = np.round(rng.random(n), 1)
        place = int(rng.integers(0, n))
        rank = int(rng.integers(1, n))
        want = float(np.sort(np.delete(total, place))[::-1][rank - 1])
        assert fusion.bar_without(total, place, rank) == want


def _read_only(*arrays: np.ndarray) -> list[np.ndarray]:
    out = []
    for a in arrays:
        b = a.copy()
        b.flags.writeable = False
        out.append(b)
    return out


def test_fuse_one_view_is_the_separate_steps() -> None:
    """``fuse_one_view`` against the steps it joins (sorted distinct candidates, their local
    numbers, ``bm25_score_docs`` scattered where positive, ``cosine_exact_rows`` of the rows
    with an embedding, ``rrf_shares`` lexical then cosine), bit for bit, on writable and
    read-only arrays (a segment built in the process, one loaded), with lists that overlap,
    signals that did not run and rows without an embedding."""
    rng = np.random.default_rng(23)
    for trial in range(60):
        n_docs, n_terms, dim = int(rng.integers(5, 80)), 6, 8
        docs = [np.unique(rng.integers(0, n_docs, int(rng.integers(0, n_docs))))
                for _ in range(n_terms)]
        offsets = np.zeros(n_terms + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([d.shape[0] for d in docs])
        doc_ids = np.concatenate(docs).astype(np.int32)
        tfs = rng.integers(1, 4, doc_ids.shape[0]).astype(np.float32)
        lengths, codes = length_codes(rng.integers(1, 20, n_docs).astype(np.int32))
        norms = (bm25.bm25_norms(lengths, 7.5), codes)
        matrix = cosine.l2_normalise_rows(rng.standard_normal((n_docs, dim)))
        has = (rng.random(n_docs) < 0.8).astype(np.uint8)
        docnums = np.sort(rng.choice(10 * n_docs, n_docs, replace=False)).astype(np.int64)
        terms = rng.integers(-1, n_terms + 1, int(rng.integers(1, 4))).astype(np.int32)
        weights = rng.random(terms.shape[0]) + 0.1 if trial % 4 else np.empty(0)
        query = cosine.l2_normalise(rng.standard_normal(dim)).astype(np.float64)
        scored = trial % 3 != 0
        lists = [docnums[rng.choice(n_docs, int(rng.integers(0, n_docs)), replace=False)]
                 for _ in range(2)]
        lw, sw = float(rng.random() * 2), float(rng.random() * 2)
        candidates = np.unique(np.concatenate(lists))
        local = np.searchsorted(docnums, candidates).astype(np.int32)
        want_lex = np.zeros(candidates.shape[0])
        want_cos = np.zeros(candidates.shape[0])
        want_total = np.zeros(candidates.shape[0])
        if weights.shape[0]:
            scores = bm25.bm25_score_docs(offsets, doc_ids, tfs, norms, terms, weights, local)
            ranked = scores > 0.0
            want_lex[ranked] = scores[ranked]
            fusion.rrf_shares(want_total, want_lex, ranked, lw, 60)
        if scored:
            ranked = has[local] != 0
            want_cos[ranked] = cosine.cosine_exact_rows(matrix, local[ranked], query)
            fusion.rrf_shares(want_total, want_cos, ranked, sw, 60)
        for arrays in ((docnums, offsets, doc_ids, tfs, matrix, has),
                       _read_only(docnums, offsets, doc_ids, tfs, matrix, has)):
            got = fusion.fuse_one_view(lists[0], lists[1], arrays[0], *arrays[1:4], norms, terms,
                                       weights, lw, arrays[4], arrays[5], query, sw, scored, 60)
            assert got[0].tolist() == candidates.tolist()
            assert got[1].tolist() == want_total.tolist()
            assert got[2].tolist() == want_lex.tolist()
            assert got[3].tolist() == want_cos.tolist()


def test_fuse_one_view_refuses_a_number_the_view_does_not_hold() -> None:
    docnums = np.array([3, 5, 9], dtype=np.int64)
    offsets = np.zeros(2, dtype=np.int64)
    with pytest.raises(ValueError, match="not one of the view's documents"):
        fusion.fuse_one_view(np.array([5, 4], dtype=np.int64), np.empty(0, dtype=np.int64),
                             docnums, offsets, np.empty(0, dtype=np.int32),
                             np.empty(0, dtype=np.float32), np.ones(3), np.zeros(1, np.int32),
                             np.ones(1), 1.0, np.zeros((3, 2), dtype=np.float32),
                             np.ones(3, dtype=np.uint8), np.zeros(2), 1.0, False, 60)
