"""Brute-force cosine top-k against the numpy reference of its summation order."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hmsengine.kernels import cosine, reference

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
SETTINGS = settings(
    max_examples=40 if NO_JIT else 100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def matrices(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Normalised random rows with duplicate rows (ties) and zero rows, a query and a mask."""
    n = draw(st.integers(0, 40 if NO_JIT else 70))
    d = draw(st.sampled_from([1, 3, 31, 32, 33, 64, 100, 200, 384]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((max(n // 3, 1), d))
    rows = base[rng.integers(0, base.shape[0], size=n)]  # repeats -> exact ties
    rows[rng.random(n) < 0.1] = 0.0
    matrix = cosine.l2_normalise_rows(rows)
    query = cosine.l2_normalise(rng.standard_normal(d))
    allowed = (rng.random(n) < draw(st.sampled_from([0.0, 0.5, 1.0]))).astype(np.uint8)
    if n and draw(st.booleans()):
        allowed[:] = 1
    return matrix, query, allowed, draw(st.integers(0, 80))


@given(matrices())
@SETTINGS
def test_cosine_topk_matches_reference(
    case: tuple[np.ndarray, np.ndarray, np.ndarray, int],
) -> None:
    """cosine_topk returns the reference's rows in order and its exact score bits."""
    matrix, query, allowed, k = case
    scores, rows = cosine.cosine_topk(matrix, query, allowed, k)
    want_scores, want_rows = reference.cosine_topk(matrix, query, allowed, k, cosine.LANES)
    assert rows.dtype == np.int64 and scores.dtype == np.float64
    assert rows.tolist() == want_rows.tolist()
    assert scores.tobytes() == want_scores.tobytes()
    assert len(rows) == min(k, int(allowed.sum()))
    exact = matrix.astype(np.float64) @ query.astype(np.float64)
    np.testing.assert_allclose(scores, exact[rows], atol=1e-5)


@given(matrices())
@SETTINGS
def test_cosine_deterministic_and_duplicates_tie(
    case: tuple[np.ndarray, np.ndarray, np.ndarray, int],
) -> None:
    """Repeated calls give the same bits; identical rows score identically wherever they sit."""
    matrix, query, _, _ = case
    n = matrix.shape[0]
    everyone = np.ones(n, dtype=np.uint8)
    first = cosine.cosine_topk(matrix, query, everyone, n)
    again = cosine.cosine_topk(matrix, query, everyone, n)
    assert first[0].tobytes() == again[0].tobytes() and first[1].tolist() == again[1].tolist()
    by_row = dict(zip(first[1].tolist(), first[0].tolist(), strict=True))
    for i in range(n):
        for j in range(i + 1, n):
            if np.array_equal(matrix[i], matrix[j]):
                assert by_row[i] == by_row[j]
    ro = matrix.copy()
    ro.flags.writeable = False
    third = cosine.cosine_topk(ro, query, everyone, n)
    assert first[0].tobytes() == third[0].tobytes()


def test_cosine_rejects_bad_shapes() -> None:
    """Mismatched dimensions, dtypes or a non-contiguous matrix raise ValueError."""
    m = cosine.l2_normalise_rows(np.eye(4))
    q = cosine.l2_normalise(np.ones(4))
    ok = np.ones(4, dtype=np.uint8)
    with pytest.raises(ValueError):
        cosine.cosine_topk(m, q[:3].copy(), ok, 2)
    with pytest.raises(ValueError):
        cosine.cosine_topk(m.astype(np.float64), q, ok, 2)
    with pytest.raises(ValueError):
        cosine.cosine_topk(m[::2], q, ok[:2].copy(), 2)  # rows not contiguous
    with pytest.raises(ValueError):
        cosine.cosine_topk(m, q, ok[:3], 2)


def test_l2_normalise_keeps_zero_rows() -> None:
    """Normalised rows have unit norm, zero rows and zero vectors stay zero."""
    m = cosine.l2_normalise_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert m.dtype == np.float32 and m.flags.c_contiguous
    assert m.tolist() == [[np.float32(0.6), np.float32(0.8)], [0.0, 0.0]]
    assert cosine.l2_normalise(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]


@given(matrices(), st.integers(0, 2**32 - 1))
@SETTINGS
def test_exact_rows_sum_each_row_in_column_order(case: tuple[np.ndarray, np.ndarray, np.ndarray, int],
                                                   seed: int) -> None:
    """cosine_exact_rows equals the column-order float64 reference bit for bit, any rows."""
    matrix, query, _, _ = case
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, max(matrix.shape[0], 1), size=rng.integers(0, 12)).astype(np.int32)
    if matrix.shape[0] == 0:
        rows = rows[:0]
    q64 = query.astype(np.float64)
    got = cosine.cosine_exact_rows(matrix, rows, q64)
    want = reference.cosine_exact_rows(matrix, rows, q64)
    assert got.dtype == np.float64 and got.tobytes() == want.tobytes()
    if rows.size:  # and it is the cosine, to float64 rounding
        assert np.allclose(got, matrix[rows].astype(np.float64) @ q64, rtol=0, atol=1e-12)
