"""The cosine top k through int8 codes (kernels/quantized.py) is ``cosine_topk``'s, bit for bit:
the codes only decide which rows are scored exactly."""

from __future__ import annotations

import os

import numpy as np
import pytest

from hmsengine.kernels import quantized
from hmsengine.kernels.cosine import cosine_topk, l2_normalise, l2_normalise_rows
from hmsengine.kernels.quantized import CODE_MAX, quantize_rows, quantized_topk

NOJIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"


def _same(matrix: np.ndarray, query: np.ndarray, allowed: np.ndarray, has: np.ndarray, k: int,
          lo: int = 0, hi: int | None = None) -> None:
    hi = matrix.shape[0] if hi is None else hi
    want_s, want_r = cosine_topk(np.ascontiguousarray(matrix[lo:hi]), query,
                                 np.ascontiguousarray(allowed[lo:hi]), k,
                                 np.ascontiguousarray(has[lo:hi]))
    codes = quantize_rows(matrix)
    for held in (False, True):
        got_s, got_r = quantized_topk(codes, matrix, query, allowed, has, k, lo, hi, held=held)
        assert got_r.tolist() == (want_r + lo).tolist()
        assert got_s.tobytes() == want_s.tobytes()  # the same bits


@pytest.mark.parametrize("seed", range(12 if NOJIT else 60))
def test_the_coded_scan_is_the_float32_scan(seed: int) -> None:
    """Random shapes (dimensions below, at and past the 32 lanes), duplicated rows (ties across
    the whole scan), zero rows, masks, a query that is one of the rows, integer-valued vectors,
    a top k deeper than the rows, sub-ranges."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400 if NOJIT else 2500))
    d = int(rng.choice([1, 3, 31, 32, 33, 64, 100, 384]))
    matrix = rng.standard_normal((n, d))
    if seed % 5 == 0:
        matrix[rng.integers(0, n, n // 3)] = matrix[0]
    if seed % 7 == 0:
        matrix[rng.integers(0, n, n // 4)] = 0.0
    if seed % 11 == 0:
        matrix = np.round(matrix)
    matrix = l2_normalise_rows(matrix)
    query = matrix[int(rng.integers(0, n))].copy() if seed % 3 == 0 \
        else l2_normalise(rng.standard_normal(d))
    allowed = (rng.random(n) < 0.8).astype(np.uint8) if seed % 2 else np.ones(n, np.uint8)
    has = (rng.random(n) < 0.9).astype(np.uint8) if seed % 4 == 1 else np.ones(n, np.uint8)
    k = int(rng.choice([1, 5, 10, 100, 5000]))
    lo = int(rng.integers(0, n)) if seed % 6 == 0 else 0
    hi = int(rng.integers(lo, n + 1)) if seed % 6 == 0 else n
    _same(matrix, query, allowed, has, k, lo, hi)


def test_rows_closer_than_the_codes_can_tell_keep_their_exact_order() -> None:
    """Rows that differ from each other far below a code's step get the same codes and the
    same estimate; their exact scores still differ, and the top k is the float32 scan's: every
    row the codes cannot separate from the k-th is scored exactly (a bound without the
    residual's share drops some of them here)."""
    rng = np.random.default_rng(3)
    d = 64
    base = l2_normalise(rng.standard_normal(d))
    matrix = np.repeat(base[None, :], 600, axis=0) + rng.standard_normal((600, d)) * 1e-4
    matrix = l2_normalise_rows(np.vstack([matrix, rng.standard_normal((400, d))]))
    query = l2_normalise(base + rng.standard_normal(d) * 0.05)
    ones = np.ones(matrix.shape[0], np.uint8)
    for k in (1, 10, 100):
        _same(matrix, query, ones, ones, k)
    # The codes cannot tell these rows apart: all of them are candidates, scored exactly.
    codes = quantize_rows(matrix)
    from hmsengine.kernels.cosine import score_error_bound
    rows, n = quantized._candidates(*codes, query, ones, ones, 10,
                                    score_error_bound(d) + quantized._SLACK, 0, 1000)
    assert n >= 600 and set(range(600)) <= set(rows[:n].tolist())


def _hidden_tails(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    # Rows whose first value dwarfs a tail too small for a code (every tail value codes to 0):
    # the estimates see only the first two values, the scores also the tails (+/- aligned with
    # a flat query's): the codes' ranking is wrong by up to the whole residual.
    matrix = np.zeros((n, d))
    matrix[:, 0] = 1.0
    matrix[:, 1] = rng.uniform(0.0, 0.05, n)
    matrix[:, 2:] = 0.0035 * rng.choice([-1.0, 1.0], n)[:, None]
    return l2_normalise_rows(matrix), l2_normalise(np.ones(d))


def test_a_residual_the_codes_cannot_see_is_bounded() -> None:
    """The bound holds the row's residual (``|qhat| * error_i``) and the query's (``|e_q| *
    norm_i``): rows or a query whose small values all code to 0 rank otherwise by their
    estimates, and the answer is still the float32 scan's (without either share of the bound,
    rows of the true top k are skipped here)."""
    rng = np.random.default_rng(9)
    matrix, flat = _hidden_tails(rng, 500, 64)
    # The query's: flat rows (fine codes) whose tails point with or against a query's tail too
    # small for a code; those against it are given the larger first value (the higher
    # estimate), those with it score higher.
    signs = rng.choice([-1.0, 1.0], 500)
    rows = np.full((500, 64), 0.125)
    rows[:, 0] += np.where(signs < 0, 0.02, 0.0) + rng.uniform(0.0, 0.002, 500)
    rows[:, 2:] *= signs[:, None]
    query = np.full(64, 0.0035)
    query[0], query[1] = 1.0, 0.04
    # Beside them, rows far below the bar, so that the candidates stay under a quarter of the
    # rows and are scored one by one (more, and one float32 pass would answer whatever the
    # bound: _MOST_ROWS).
    far = -np.abs(rng.standard_normal((2000, 64)))
    far[:, 0] = -3.0
    cases = [(l2_normalise_rows(np.vstack([matrix, far])), flat),  # the rows' residuals
             (l2_normalise_rows(np.vstack([rows, far])), l2_normalise(query))]  # the query's
    from hmsengine.kernels.cosine import score_error_bound
    for m, q in cases:
        ones = np.ones(m.shape[0], np.uint8)
        for k in (1, 10, 50):
            _, n = quantized._candidates(*quantize_rows(m), q, ones, ones, k,
                                         score_error_bound(64) + quantized._SLACK, 0, m.shape[0])
            assert 0 <= n * quantized._MOST_ROWS <= m.shape[0]  # the codes' path
            _same(m, q, ones, ones, k)


def test_the_codes_skip_most_rows() -> None:
    """What the codes are for: at 4,000 random unit rows of 384 dimensions, a top 10 scores
    a small part of them exactly (the rest are bounded below the bar)."""
    rng = np.random.default_rng(5)
    matrix = l2_normalise_rows(rng.standard_normal((4000, 384)))
    query = l2_normalise(rng.standard_normal(384))
    ones = np.ones(4000, np.uint8)
    from hmsengine.kernels.cosine import score_error_bound
    _, n = quantized._candidates(*quantize_rows(matrix), query, ones, ones, 10,
                                 score_error_bound(384) + quantized._SLACK, 0, 4000)
    assert 10 <= n < 400


def test_a_zero_query_scores_every_row_zero() -> None:
    """A zero query (every estimate and score 0): all the allowed rows are candidates, and the
    answer is the first k rows, as the float32 scan gives it."""
    rng = np.random.default_rng(1)
    matrix = l2_normalise_rows(rng.standard_normal((300, 40)))
    ones = np.ones(300, np.uint8)
    _same(matrix, np.zeros(40, np.float32), ones, ones, 7)


def test_the_codes_of_a_row() -> None:
    """Codes in [-127, 127], the largest magnitude coded 127, the residual's norm and the row's
    as recorded (rounded up, never down); a zero row all zeros."""
    rng = np.random.default_rng(2)
    matrix = l2_normalise_rows(rng.standard_normal((50, 70)))
    matrix[7] = 0.0
    codes, scales, errors, norms = quantize_rows(matrix)
    assert codes.dtype == np.int8 and int(np.abs(codes.astype(np.int32)).max()) == CODE_MAX
    assert scales[7] == errors[7] == norms[7] == 0.0 and not codes[7].any()
    x = matrix.astype(np.float64)
    residual = np.linalg.norm(x - scales[:, None] * codes.astype(np.float64), axis=1)
    assert np.all(errors >= residual) and np.allclose(errors, residual, rtol=1e-6, atol=0)
    assert np.all(norms >= np.linalg.norm(x, axis=1))
    top = np.abs(x).max(axis=1)
    assert np.allclose(scales[top > 0], top[top > 0] / CODE_MAX)


def test_read_only_arrays_are_read() -> None:
    """A loaded segment's embeddings and masks are read-only views."""
    rng = np.random.default_rng(4)
    matrix = l2_normalise_rows(rng.standard_normal((200, 48)))
    query = l2_normalise(rng.standard_normal(48))
    ones = np.ones(200, np.uint8)
    want = cosine_topk(matrix, query, ones, 5)
    codes = quantize_rows(matrix)
    for a in (matrix, ones):
        a.flags.writeable = False
    got = quantized_topk(codes, matrix, query, ones, ones, 5)
    assert got[1].tolist() == want[1].tolist() and got[0].tobytes() == want[0].tobytes()


def test_bad_arguments_are_refused() -> None:
    matrix = l2_normalise_rows(np.ones((4, 3)))
    codes = quantize_rows(matrix)
    ones = np.ones(4, np.uint8)
    query = l2_normalise(np.ones(3))
    with pytest.raises(ValueError, match="query"):
        quantized_topk(codes, matrix, query[:2].copy(), ones, ones, 2)
    with pytest.raises(ValueError, match="codes"):
        quantized_topk(quantize_rows(matrix[:3].copy()), matrix, query, ones, ones, 2)
    with pytest.raises(ValueError, match="allowed"):
        quantized_topk(codes, matrix, query, ones[:3].copy(), ones, 2)
    with pytest.raises(ValueError, match="rows 3:2"):
        quantized_topk(codes, matrix, query, ones, ones, 2, 3, 2)
    assert quantized_topk(codes, matrix, query, ones, ones, 0)[1].size == 0


def test_when_most_rows_can_rank_one_float32_pass_scores_them() -> None:
    """Near-duplicate rows all near the query's best leave every row to score exactly: the
    codes' pass gives up after its first ``_GIVE_UP_AFTER`` rows (or, in a shorter range, at
    its end) and one float32 pass over the range answers, the float32 scan's answer; the codes
    then cost ~1.1x the plain scan (100k x 384: 7.3-7.5 against 6.5-6.8 ms), not 1.8x."""
    rng = np.random.default_rng(8)
    d = 16
    base = rng.standard_normal(d)
    n = quantized._GIVE_UP_AFTER + 500
    matrix = l2_normalise_rows(base[None, :] + rng.standard_normal((n, d)) * 1e-4)
    query = l2_normalise(base)
    ones = np.ones(n, np.uint8)
    from hmsengine.kernels.cosine import score_error_bound
    _, given_up = quantized._candidates(*quantize_rows(matrix), query, ones, ones, 10,
                                        score_error_bound(d) + quantized._SLACK, 0, n)
    assert given_up == -1
    for k in (1, 10):
        _same(matrix, query, ones, ones, k)
        _same(matrix, query, ones, ones, k, 100, 900)  # a short range: kept, then one pass
