"""Fusion's small kernels (``kernels/fusion.py``) against the numpy steps they replace: a view's
candidates located by binary search (numbers it does not hold left out), the fused order by a
stable sort (ties by place), BM25 matches scattered by place, the n-gram candidates with a
posting, the exact-term floor's bar."""

from __future__ import annotations

import numpy as np

from hmsengine.kernels import fusion


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
