"""Fusion's small kernels (``kernels/fusion.py``) against the numpy steps they replace: a view's
candidates located by binary search (numbers it does not hold left out), the fused order by a
stable sort (ties by place), BM25 matches scattered by place."""

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
