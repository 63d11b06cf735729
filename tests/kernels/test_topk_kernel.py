"""Deterministic top-k selection (insertion and heap regimes) and merging."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hmsengine.kernels import reference, topk

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
SETTINGS = settings(
    max_examples=60 if NO_JIT else 200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def touched_sets(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, int, int]:
    """A scratch accumulator with many tied scores and a shuffled touched list."""
    n_docs = draw(st.integers(1, 150))
    scores = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.25, 1e-300, 7.0])
    acc = np.array(draw(st.lists(scores, min_size=n_docs, max_size=n_docs)), dtype=np.float64)
    chosen = draw(st.permutations(range(n_docs)))[: draw(st.integers(0, n_docs))]
    touched = np.zeros(n_docs, dtype=np.int32)
    touched[: len(chosen)] = chosen
    untouched = np.ones(n_docs, dtype=bool)
    untouched[list(chosen)] = False
    acc[untouched] = 0.0
    k = draw(st.integers(0, 90))
    doc_base = draw(st.sampled_from([0, 3, 1 << 33]))
    return acc, touched, len(chosen), k, doc_base


@given(touched_sets())
@SETTINGS
def test_topk_touched_equals_lexsort(case: tuple[np.ndarray, np.ndarray, int, int, int]) -> None:
    """topk_touched orders by score desc then doc asc, for k on both sides of INSERTION_MAX."""
    acc, touched, n_touched, k, doc_base = case
    docs_local = touched[:n_touched].astype(np.int64)
    want_scores, want_docs = reference.ranked(acc[docs_local], docs_local + doc_base, k)
    seen = np.zeros(acc.shape[0], dtype=np.uint8)
    seen[docs_local] = 1
    scores, docs = topk.topk_touched(acc, seen, touched, n_touched, k, doc_base)
    assert docs.tolist() == want_docs.tolist()
    assert scores.tobytes() == want_scores.tobytes()
    assert len(docs) == min(k, n_touched)
    assert not acc.any() and not seen.any()


@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 10**6)), max_size=200), st.integers(1, 80)
)
@SETTINGS
def test_offer_finish_independent_of_input_order(items: list[tuple[int, int]], k: int) -> None:
    """The selection does not depend on the order candidates are offered in."""
    uniq = dict((d, s) for s, d in items)
    pairs = [(float(s), d) for d, s in uniq.items()]
    results = []
    for order in (pairs, pairs[::-1], sorted(pairs)):
        scores = np.empty(min(k, len(pairs)), dtype=np.float64)
        docs = np.empty(min(k, len(pairs)), dtype=np.int64)
        count = 0
        for s, d in order:
            count = topk.topk_offer(scores, docs, count, s, d)
        topk.topk_finish(scores, docs, count)
        results.append((scores.tolist(), docs.tolist()))
    assert results[0] == results[1] == results[2]


@given(
    st.lists(
        st.lists(
            st.tuples(st.sampled_from([0.0, 1.0, 2.0, 2.5]), st.integers(0, 10**6)), max_size=30
        ),
        max_size=5,
    ),
    st.integers(0, 50),
)
@SETTINGS
def test_merge_topk_equals_global_ranking(parts: list[list[tuple[float, int]]], k: int) -> None:
    """merge_topk of several (scores, docs) lists is the global top-k with doc tie-breaks."""
    seen: set[int] = set()
    arrays = []
    for part in parts:
        part = [(s, d) for s, d in part if d not in seen]
        seen.update(d for _, d in part)
        part = list(dict((d, (s, d)) for s, d in part).values())  # one entry per doc
        arrays.append(
            (np.array([s for s, _ in part], np.float64), np.array([d for _, d in part], np.int64))
        )
    scores, docs = topk.merge_topk(arrays, k)
    flat = sorted(((-s, d) for part in arrays for s, d in zip(*part, strict=True)))[:k]
    assert docs.tolist() == [d for _, d in flat]
    assert scores.tolist() == [-s for s, _ in flat]


def test_k_zero_or_negative_selects_nothing_and_cleans() -> None:
    """k <= 0 returns empty arrays and still resets the scratch."""
    acc = np.array([1.0, 2.0])
    seen = np.array([1, 1], dtype=np.uint8)
    touched = np.array([1, 0], dtype=np.int32)
    scores, docs = topk.topk_touched(acc, seen, touched, 2, -3, 0)
    assert scores.shape == (0,) and docs.shape == (0,)
    assert not acc.any() and not seen.any()
