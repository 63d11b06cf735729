"""Exact cosine top k over int8 codes of the rows: a cheap pass bounds every row's score, and
only the rows that can still reach the top k are scored the way ``cosine.cosine_topk`` scores
them.

Why: ``cosine_topk`` reads 4 bytes a dimension and is bound by memory bandwidth (100k x 384 in
~6.5-7.3 ms on one core of this VM). A row's int8 codes are a quarter of that, and their integer
dot product with the query's codes vectorises well: the same 100k rows in ~1.3 ms.

The codes (``quantize_rows``): row ``i`` is ``scale_i * codes_i`` plus a residual, with
``scale_i = max_j |x_ij| / 127`` and ``codes_ij = round(x_ij / scale_i)``; ``error_i`` is the
residual's L2 norm and ``norm_i`` the row's, both in float64 and rounded up (``_UP``). The query
``q`` gets codes the same way (``q = qhat + e_q``). A row's estimate ``est_i = scale_i * qscale *
(codes_i . qcodes)`` (an exact integer dot product) differs from the exact dot product by
``q.x_i - qhat.xhat_i = qhat.e_i + e_q.x_i``, at most ``|qhat| * error_i + |e_q| * norm_i``
(Cauchy-Schwarz; ``|qhat| <= |q| + |e_q|`` is used), and ``cosine_topk``'s score lies within
``cosine.score_error_bound(d)`` of the exact one; ``_SLACK`` more covers the float64 rounding
of the estimate and of the bound itself. So every row's kernel score is in ``[est_i - bound_i,
est_i + bound_i]``.

The pass keeps the k largest lower bounds; their smallest, ``L``, is at most the k-th best
kernel score (k rows score at least their lower bounds). A row of the true top k scores at least
that, so its upper bound reaches ``L``: the rows whose upper bound reaches ``L`` hold the whole
top k, ties included. They are scored as ``cosine_topk`` scores a row (the same float32 lanes in
the same order: the same bits) and ranked the same way (score descending, then row). So the
answer is ``cosine_topk``'s, bit for bit, whatever the data: the codes only decide how many rows
are scored exactly (for 384-dimension unit rows the bound is ~0.015; with k = 100 at 100k
random rows, a few hundred).

Rows with ``allowed[i] == 0`` or ``has[i] == 0`` are skipped, as ``cosine_topk`` skips them.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.cosine import LANES, _cosine_topk, score_error_bound
from hmsengine.kernels.jit import held_twin, jit
from hmsengine.kernels.topk import ranks_before, topk_finish, topk_offer, worst_index

#: The largest code magnitude: codes lie in [-127, 127] (symmetric: no -128).
CODE_MAX = 127
#: The most dimensions the integer dot product holds exactly in 32 bits (``d * 127**2 < 2**31``).
MAX_DIMENSIONS = 133_000
#: Relative round-up of a computed residual or row norm (a float64 sum of ``d`` squares is
#: within ~``d * 2**-53`` of its value, far below this).
_UP = 1.0 + 1e-9
#: Absolute slack added to every row's bound: the estimate's float64 products and the bound's
#: own arithmetic (each ~1e-16 relative on values of at most ~1).
_SLACK = 1e-9

#: When more than 1 / _MOST_ROWS of a range's rows are left to score exactly, they are scored
#: by one ``cosine_topk`` pass over the range instead; the codes' pass gives up as soon as that
#: many of the first ``_GIVE_UP_AFTER`` rows or more are kept (a top k keeps ~k ln(rows / k) of
#: them as its bar rises: a few hundred of 16k for k = 100).
_MOST_ROWS = 4
_GIVE_UP_AFTER = 16_384

#: A row's codes, scale, residual norm and norm, as ``quantize_rows`` returns them.
Quantized = tuple[npt.NDArray[np.int8], npt.NDArray[np.float64], npt.NDArray[np.float64],
                  npt.NDArray[np.float64]]


def quantize_rows(matrix: npt.NDArray[np.float32]) -> Quantized:
    """``(codes int8[n, d], scales float64[n], errors float64[n], norms float64[n])`` of the
    rows of ``matrix`` (float32[n, d], finite): see the module docstring. A zero row has scale
    0, codes 0, error 0 and norm 0. Releases the GIL; O(n * d)."""
    out = empty_codes(*matrix.shape)
    quantize_rows_into(matrix, 0, matrix.shape[0], *out)
    return out


def empty_codes(n: int, d: int) -> Quantized:
    """Arrays for the codes of ``n`` rows of ``d`` dimensions (``quantize_rows_into`` fills
    them)."""
    return (np.empty((n, d), dtype=np.int8), np.empty(n, dtype=np.float64),
            np.empty(n, dtype=np.float64), np.empty(n, dtype=np.float64))


@jit
def quantize_rows_into(matrix: npt.NDArray[np.float32], lo: int, hi: int,
                       codes: npt.NDArray[np.int8], scales: npt.NDArray[np.float64],
                       errors: npt.NDArray[np.float64], norms: npt.NDArray[np.float64]) -> None:
    """``quantize_rows`` of rows ``lo:hi`` of ``matrix``, written into those rows of the four
    arrays (every value of them written): a long matrix can be coded in chunks, between which
    the caller may stop. Releases the GIL."""
    d = matrix.shape[1]
    for i in range(lo, hi):
        top = 0.0
        for j in range(d):
            v = abs(np.float64(matrix[i, j]))
            if v > top:
                top = v
        if top == 0.0:
            for j in range(d):
                codes[i, j] = 0
            scales[i] = 0.0
            errors[i] = 0.0
            norms[i] = 0.0
            continue
        scale = top / CODE_MAX
        residual = 0.0
        norm = 0.0
        for j in range(d):
            x = np.float64(matrix[i, j])
            c = min(max(np.floor(x / scale + 0.5), -CODE_MAX), CODE_MAX)
            codes[i, j] = np.int8(c)
            e = x - scale * c
            residual += e * e
            norm += x * x
        scales[i] = scale
        errors[i] = np.sqrt(residual) * _UP
        norms[i] = np.sqrt(norm) * _UP


@jit
def _query_codes(query: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int8], float, float,
                                                           float]:
    # The query's codes and scale as a row's (quantize_rows_into), a bound on |qhat| (|q| +
    # |e_q|: qhat = q - e_q) and |e_q|, both rounded up.
    d = query.shape[0]
    codes = np.empty((1, d), dtype=np.int8)
    scale = np.empty(1, dtype=np.float64)
    error = np.empty(1, dtype=np.float64)
    norm = np.empty(1, dtype=np.float64)
    quantize_rows_into(query.reshape((1, d)), 0, 1, codes, scale, error, norm)
    return codes[0], scale[0], (norm[0] + error[0]) * _UP, error[0]


@jit
def _candidates(codes: npt.NDArray[np.int8], scales: npt.NDArray[np.float64],
                errors: npt.NDArray[np.float64], norms: npt.NDArray[np.float64],
                query: npt.NDArray[np.float32], allowed: npt.NDArray[np.uint8],
                has: npt.NDArray[np.uint8], k: int, margin: float, lo: int,
                hi: int) -> tuple[npt.NDArray[np.int64], int]:
    # The rows of lo:hi (ascending) whose upper bound reaches the k-th largest lower bound:
    # (rows, count), or count -1 when most rows are kept (_GIVE_UP_AFTER: the caller then scans
    # the float32 rows). One pass: a row is kept when its upper bound reaches the bar so far
    # (the k-th largest lower bound yet, which only rises), and the kept ones are filtered by
    # the final bar at the end.
    d = codes.shape[1]
    qcodes, qscale, qhat, qerr = _query_codes(query)
    lows = np.empty(k, dtype=np.float64)  # the k largest lower bounds, descending
    n_lows = 0
    bar = -np.inf
    kept = np.empty(max(4 * k, 64), dtype=np.int64)
    uppers = np.empty(kept.shape[0], dtype=np.float64)
    n_kept = 0
    for i in range(lo, hi):
        if allowed[i] == 0 or has[i] == 0:
            continue
        # Kept to 32 bits at each step (numba widens int32 products to int64, which halves the
        # vector lanes: 3.5 against 1.4 ms for 100k x 384); |dot| <= d * 127**2 < 2**31.
        dot = np.int32(0)
        for j in range(d):
            dot = np.int32(dot + np.int32(codes[i, j]) * np.int32(qcodes[j]))
        est = scales[i] * qscale * np.float64(dot)
        bound = qhat * errors[i] + qerr * norms[i] + margin
        upper = est + bound
        if upper < bar:
            continue
        if n_kept == kept.shape[0]:
            grown = np.empty(2 * n_kept, dtype=np.int64)
            grown[:n_kept] = kept
            kept = grown
            grown_u = np.empty(2 * n_kept, dtype=np.float64)
            grown_u[:n_kept] = uppers
            uppers = grown_u
        kept[n_kept] = i
        uppers[n_kept] = upper
        n_kept += 1
        if n_kept * _MOST_ROWS > i - lo + 1 and i - lo + 1 >= _GIVE_UP_AFTER:
            return kept, -1
        low = est - bound
        if n_lows == k:
            if low <= lows[k - 1]:
                continue
            pos = k - 1
        else:
            pos = n_lows
            n_lows += 1
        while pos > 0 and lows[pos - 1] < low:
            lows[pos] = lows[pos - 1]
            pos -= 1
        lows[pos] = low
        if n_lows == k:
            bar = lows[k - 1]
    n = 0
    for t in range(n_kept):
        if uppers[t] >= bar:
            kept[n] = kept[t]
            n += 1
    return kept, n


@jit
def _quantized_topk(codes: npt.NDArray[np.int8], scales: npt.NDArray[np.float64],
                    errors: npt.NDArray[np.float64], norms: npt.NDArray[np.float64],
                    matrix: npt.NDArray[np.float32], query: npt.NDArray[np.float32],
                    allowed: npt.NDArray[np.uint8], has: npt.NDArray[np.uint8], k: int,
                    lanes: int, margin: float, lo: int,
                    hi: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    n, d = matrix.shape
    m = max(k, 0)
    scores = np.empty(m, dtype=np.float64)
    rows = np.empty(m, dtype=np.int64)
    if m == 0 or hi <= lo:
        return scores[:0].copy(), rows[:0].copy()
    cand, n_cand = _candidates(codes, scales, errors, norms, query, allowed, has, m, margin, lo,
                               hi)
    if n_cand < 0 or n_cand * _MOST_ROWS > hi - lo:
        # Most rows can still rank (near-duplicates near the query's best): one float32 pass
        # over the range (100k x 384 rows all within the bounds: 12 ms through every code and
        # every candidate, the float32 pass alone 6.6-7.2).
        scores, rows = _cosine_topk(matrix[lo:hi], query, allowed[lo:hi], has[lo:hi], m, lanes)
        return scores, rows + lo
    # Each candidate scored exactly as _cosine_topk scores a row (cosine.py): the same lanes,
    # views and order of operations, so the same bits (the tests compare them bit for bit).
    # Written out here as there: the loop moved into one inlined helper for both kernels made
    # cosine_topk 40-75% slower (100k x 384: 6.6-6.8 -> 9.4-11.8 ms, alternated), its lanes
    # no longer vectorised as they are written in place.
    nb = d // lanes
    main = nb * lanes
    acc = np.zeros(lanes, dtype=np.float32)
    blocks = np.lib.stride_tricks.as_strided(
        matrix, shape=(n, nb, lanes), strides=(d * 4, lanes * 4, 4)
    )
    q2 = query[:main].reshape((nb, lanes))
    count = 0
    worst = worst_index(m)
    bar_s = 0.0
    bar_r = np.int64(0)
    for t in range(n_cand):
        i = cand[t]
        s = 0.0
        if nb > 0:
            r2 = blocks[i]
            for lane in range(lanes):
                acc[lane] = r2[0, lane] * q2[0, lane]
            for b in range(1, nb):
                for lane in range(lanes):
                    acc[lane] += r2[b, lane] * q2[b, lane]
            for lane in range(lanes):
                s += np.float64(acc[lane])
        for j in range(main, d):
            s += np.float64(matrix[i, j] * query[j])
        row = np.int64(i)
        if count == m and not ranks_before(s, row, bar_s, bar_r):
            continue
        count = topk_offer(scores, rows, count, s, row)
        if count == m:
            bar_s = scores[worst]
            bar_r = rows[worst]
    topk_finish(scores, rows, count)
    return scores[:count].copy(), rows[:count].copy()


#: ``_quantized_topk`` keeping the GIL, for a scan on the event loop's thread.
_quantized_topk_held = held_twin(_quantized_topk)


def quantized_topk(quantized: Quantized, matrix: npt.NDArray[np.float32],
                   query: npt.NDArray[np.float32], allowed: npt.NDArray[np.uint8],
                   has: npt.NDArray[np.uint8], k: int, lo: int = 0, hi: int | None = None, *,
                   held: bool = False) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """``cosine.cosine_topk(matrix[lo:hi], query, allowed[lo:hi], k, has[lo:hi])`` with the rows
    numbered in ``matrix`` (``lo`` added), bit for bit, reading ``quantized``
    (``quantize_rows(matrix)``) for all rows and ``matrix`` only for the rows that can reach the
    top ``k`` (module docstring). ``held``: keep the GIL (an inline call). Raises ValueError on
    a shape or dtype mismatch."""
    codes, scales, errors, norms = quantized
    n, d = matrix.shape
    hi = n if hi is None else hi
    if matrix.dtype != np.float32 or not matrix.flags.c_contiguous:
        raise ValueError(f"matrix must be a C-contiguous float32 [n, d] array, got {matrix.dtype}")
    if codes.shape != (n, d) or codes.dtype != np.int8 or not codes.flags.c_contiguous:
        raise ValueError(f"codes must be a C-contiguous int8 [{n}, {d}] array, got {codes.dtype} "
                         f"with shape {codes.shape}")
    for name, a in (("scales", scales), ("errors", errors), ("norms", norms)):
        if a.shape != (n,) or a.dtype != np.float64:
            raise ValueError(f"{name} must be a float64 [{n}] array, got {a.dtype} {a.shape}")
    if query.shape != (d,) or query.dtype != np.float32 or not query.flags.c_contiguous:
        raise ValueError(f"query must be a contiguous float32 [{d}] array, got {query.dtype} "
                         f"with shape {query.shape}")
    for name, mask in (("allowed", allowed), ("has", has)):
        if mask.shape != (n,) or mask.dtype != np.uint8:
            raise ValueError(f"{name} must be a uint8 [{n}] array, got {mask.dtype} {mask.shape}")
    if d > MAX_DIMENSIONS:
        raise ValueError(f"{d} dimensions is over the {MAX_DIMENSIONS} the codes hold")
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"rows {lo}:{hi} are not a range of the {n} rows")
    kernel = _quantized_topk_held if held else _quantized_topk
    result: tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]] = kernel(
        codes, scales, errors, norms, matrix, query, allowed, has, int(k), LANES,
        score_error_bound(d) + _SLACK, lo, hi)
    return result
