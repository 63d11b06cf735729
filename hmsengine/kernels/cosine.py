"""Brute-force cosine top-k over a float32 matrix of L2-normalised rows.

Why a numba kernel rather than ``matrix @ query`` (BLAS sgemv): BLAS may sum a row in a different
order depending on its position in a block, on the thread count and on the CPU kernel chosen at
run time, so two identical rows need not score identically and results may change with thread
settings. Here every row is summed in one fixed order, independent of its position, of ``n`` and
of threads: identical rows give identical scores (ties then break by row number), and a plain
numpy reference reproduces the scores bit for bit (``reference.cosine_scores``).

The fixed order: ``LANES`` float32 partial sums; lane ``l`` sums ``row[b*LANES + l] * q[...]``
over blocks ``b = 0, 1, ...`` (initialised with block 0); then a float64 sum of the lanes in
order 0..LANES-1 starting from 0.0, then the ``d % LANES`` tail products (float32 products,
float64 sum) in column order. The lane count is passed at run time on purpose: as a compile-time
constant LLVM unrolls the lane loop and, numba's SLP vectoriser being off by default, emits
scalar code (12-13 ms below); as a run-time value the loop vectoriser turns it into SIMD.

Measured on this 2-vCPU machine (shared and noisy), 100,000 x 384 float32, one query, k=10,
median of 30-40 calls. Quiet: faiss-cpu 1.15 IndexFlatIP with 1 thread 4.9 ms, with its default
2 OpenMP threads 12.8-14 ms; numpy ``matrix @ query`` 5.7-6.2 ms (OpenBLAS on 2 threads, 13.3 ms
on 1); the dot loop of this kernel 6.3-6.9 ms on one thread (8 scalar float64 accumulators:
11.2 ms; 32 float64 lanes: 7.2 ms). Loaded (another test-suite running), same process:
``cosine_topk`` 7.2 ms, faiss 1 thread 9.6 ms, faiss 2 threads 40 ms. The kernel releases the
GIL, so a caller may split the rows between two threads and merge with ``topk.merge_topk``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.jit import held_twin, jit, jit_held
from hmsengine.kernels.topk import ranks_before, topk_finish, topk_offer, worst_index

#: float32 partial sums per row (part of the summation order, so of the exact scores).
LANES = 32


@jit
def _cosine_topk(
    matrix: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    allowed: npt.NDArray[np.uint8],
    has: npt.NDArray[np.uint8],
    k: int,
    lanes: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    n, d = matrix.shape
    nb = d // lanes
    main = nb * lanes
    m = min(k, n)
    if m < 0:
        m = 0
    scores = np.empty(m, dtype=np.float64)
    rows = np.empty(m, dtype=np.int64)
    if m == 0:
        return scores, rows
    acc = np.zeros(lanes, dtype=np.float32)
    # (n, nb, lanes) view of the first nb*lanes columns; 2-D block views vectorise well.
    blocks = np.lib.stride_tricks.as_strided(
        matrix, shape=(n, nb, lanes), strides=(d * 4, lanes * 4, 4)
    )
    q2 = query[:main].reshape((nb, lanes))
    count = 0
    worst = worst_index(m)
    bar_s = 0.0
    bar_r = np.int64(0)
    for i in range(n):
        if allowed[i] == 0 or has[i] == 0:
            continue
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
            continue  # cheap inline check: most rows do not beat the current k-th
        count = topk_offer(scores, rows, count, s, row)
        if count == m:
            bar_s = scores[worst]
            bar_r = rows[worst]
    topk_finish(scores, rows, count)
    return scores[:count].copy(), rows[:count].copy()


#: ``_cosine_topk`` keeping the GIL, for the queries that run it inline on the event loop (a
#: store of a few thousand vectors: up to ~0.5 ms). Released there, the GIL went to any busy
#: Python thread (the writer, the application) and came back after its switch interval: at 5k x
#: 384 beside one busy thread, a vector query's median went from ~0.5 to ~5.8 ms.
_cosine_topk_held = held_twin(_cosine_topk)


def cosine_topk(
    matrix: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    allowed: npt.NDArray[np.uint8],
    k: int,
    has: npt.NDArray[np.uint8] | None = None,
    *,
    held: bool = False,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Top ``k`` rows of ``matrix @ query`` among rows with ``allowed[row] != 0`` (and
    ``has[row] != 0`` when ``has`` is given: a segment's ``has_embedding``, read in the same
    pass instead of a numpy ``&`` of the two, which gives the GIL away over a few thousand
    rows). ``held``: keep the GIL (the twin, for a call on the event loop's thread).

    ``matrix``: float32[n, d], C-contiguous, rows L2-normalised (zero rows allowed: they score 0
    and are still candidates). ``query``: float32[d], L2-normalised. ``allowed``: uint8[n].
    Returns ``(scores float64[m], rows int64[m])``, ``m = min(k, number of allowed rows)``,
    by score descending then row ascending. Same input, same output bits, every call. Releases
    the GIL unless ``held``; O(n * d). Raises ValueError on a shape or dtype mismatch.
    """
    if matrix.ndim != 2 or matrix.dtype != np.float32 or not matrix.flags.c_contiguous:
        raise ValueError(
            f"matrix must be a C-contiguous float32 [n, d] array, got {matrix.dtype} "
            f"with shape {matrix.shape}"
        )
    n, d = matrix.shape
    if query.shape != (d,) or query.dtype != np.float32 or not query.flags.c_contiguous:
        raise ValueError(
            f"query must be a contiguous float32 [{d}] array, got {query.dtype} "
            f"with shape {query.shape}"
        )
    for name, mask in (("allowed", allowed), ("has", allowed if has is None else has)):
        if mask.shape != (n,) or mask.dtype != np.uint8:
            raise ValueError(
                f"{name} must be a uint8 [{n}] array, got {mask.dtype} with shape {mask.shape}"
            )
    kernel = _cosine_topk_held if held else _cosine_topk
    result: tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]] = kernel(
        matrix, query, allowed, allowed if has is None else has, int(k), LANES
    )
    return result


@jit
def cosine_exact_rows(
    matrix: npt.NDArray[np.float32],
    rows: npt.NDArray[np.int32],
    query: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """float64 dot products of ``matrix[rows[i]]`` (float32[n, d], each value widened) with
    ``query`` (float64[d]): ``out[i] = sum_j float64(matrix[rows[i], j]) * query[j]``, summed in
    column order 0..d-1 from 0.0 (one fixed order, independent of BLAS and of the row's place).
    The exact scores fusion ranks a few candidates by (``index.search``), one call for all of
    them. Releases the GIL; O(len(rows) * d); rows must be in range.

    Four rows at a time: each row's sum is still one chain of additions in column order (the
    same bits), but four independent chains keep the floating-point adder busy where one
    waited on its own previous addition (~1.3 ns a column): 100 rows of 384 dimensions took ~38
    us one by one."""
    n_rows = rows.shape[0]
    d = matrix.shape[1]
    out = np.empty(n_rows, dtype=np.float64)
    i = 0
    while i + 4 <= n_rows:
        r0, r1, r2, r3 = rows[i], rows[i + 1], rows[i + 2], rows[i + 3]
        s0 = s1 = s2 = s3 = 0.0
        for j in range(d):
            qj = query[j]
            s0 += np.float64(matrix[r0, j]) * qj
            s1 += np.float64(matrix[r1, j]) * qj
            s2 += np.float64(matrix[r2, j]) * qj
            s3 += np.float64(matrix[r3, j]) * qj
        out[i], out[i + 1], out[i + 2], out[i + 3] = s0, s1, s2, s3
        i += 4
    while i < n_rows:
        row = rows[i]
        s = 0.0
        for j in range(d):
            s += np.float64(matrix[row, j]) * query[j]
        out[i] = s
        i += 1
    return out


@jit_held
def cosine_exact_into(
    matrix: npt.NDArray[np.float32],
    rows: npt.NDArray[np.int32],
    has: npt.NDArray[np.uint8],
    places: npt.NDArray[np.int64],
    query: npt.NDArray[np.float64],
    values: npt.NDArray[np.float64],
    ranked: npt.NDArray[np.bool_],
) -> None:
    """``cosine_exact_rows`` of the ``rows`` whose ``has`` (their ``has_embedding``) is set,
    each written to ``values[places[i]]`` with ``ranked[places[i]] = True``: fusion's exact
    cosine of one view's candidates in one call that keeps the GIL (inline, ~100 rows)."""
    kept = np.empty(rows.shape[0], dtype=np.int32)
    where = np.empty(rows.shape[0], dtype=np.int64)
    m = 0
    for i in range(rows.shape[0]):
        if has[i] != 0:
            kept[m] = rows[i]
            where[m] = places[i]
            m += 1
    scores = cosine_exact_rows(matrix, kept[:m], query)
    for i in range(m):
        values[where[i]] = scores[i]
        ranked[where[i]] = True


def score_error_bound(d: int) -> float:
    """A bound on how far ``cosine_topk``'s score of a row may lie from its exact score
    (``cosine_exact_rows``) for rows and a query of ``d`` dimensions and norm at most ~1 (the
    store's rows and queries are L2-normalised; a zero row scores 0 both ways).

    The kernel rounds each product to float32 and sums a lane's ``d // LANES`` of them in
    float32: at most ``(d // LANES) * 2**-24 * sum|row_j * q_j|`` off (standard recursive
    summation bound), the lanes' and the tail's float64 sums adding ~``d * 2**-53``; the exact
    score's float64 sum of exact products is ~``d * 2**-53`` off; ``sum|row_j * q_j| <= |row| *
    |q|`` (Cauchy-Schwarz), ~1. This returns ``(d + 64) * 2**-22``: over a hundred times that
    (for 384 dimensions ~1.1e-4 against ~7e-7), so rows of norms well above 1 stay inside it.
    """
    return (d + 64) * 2.0 ** -22


#: The largest finite float32 (a vector's values above it in magnitude are refused).
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: ``checked_float32``'s and ``unit_float32``'s codes.
VECTOR_OK, VECTOR_NOT_FINITE, VECTOR_OVERFLOWS = 0, 1, 2


@jit_held
def _block_sum(a: npt.NDArray[np.float64], lo: int, n: int) -> float:
    """``_pairwise_sum``'s leaf: at most 128 values."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = float(a[lo]), float(a[lo + 1]), float(a[lo + 2]), float(a[lo + 3])
    r4, r5, r6, r7 = float(a[lo + 4]), float(a[lo + 5]), float(a[lo + 6]), float(a[lo + 7])
    i = 8
    stop = n - n % 8
    while i < stop:
        j = lo + i
        r0 += a[j]
        r1 += a[j + 1]
        r2 += a[j + 2]
        r3 += a[j + 3]
        r4 += a[j + 4]
        r5 += a[j + 5]
        r6 += a[j + 6]
        r7 += a[j + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@jit_held
def _pairwise_sum(a: npt.NDArray[np.float64]) -> float:
    """``a`` summed in numpy's own order for a contiguous float64 ``add.reduce`` (``np.sum``):
    pairwise halves (each cut at a multiple of 8) down to blocks of at most 128, each summed in
    8 interleaved partial sums combined as ((0+1)+(2+3))+((4+5)+(6+7)), then its remainder one
    by one; fewer than 8 one by one from 0.0. So a vector normalised here has the bits
    ``l2_normalise_rows`` gives its row (tests/kernels/test_unit_vectors.py checks it against
    numpy on thousands of lengths and values).

    The halving walked with an explicit stack, not by recursion: numba's on-disk cache loads a
    recursive kernel into a crash (a segmentation fault on the first call from the cache)."""
    los = np.empty(64, dtype=np.int64)  # a depth of log2(n / 128) + 1: 64 holds any length
    ns = np.empty(64, dtype=np.int64)
    stage = np.empty(64, dtype=np.int64)
    left = np.empty(64, dtype=np.float64)
    los[0], ns[0], stage[0] = 0, a.shape[0], 0
    top = 0
    result = 0.0  # the value the frame popped last returned to its parent
    while top >= 0:
        n = ns[top]
        if n <= 128:
            result = _block_sum(a, los[top], n)
            top -= 1
            continue
        half = n // 2
        half -= half % 8
        if stage[top] == 0:  # first the left half
            stage[top] = 1
            los[top + 1], ns[top + 1], stage[top + 1] = los[top], half, 0
            top += 1
        elif stage[top] == 1:  # the left half's sum is in: then the right half
            left[top] = result
            stage[top] = 2
            los[top + 1], ns[top + 1], stage[top + 1] = los[top] + half, n - half, 0
            top += 1
        else:
            result = left[top] + result
            top -= 1
    return result


@jit_held
def _vector_code(values: npt.NDArray[np.float64]) -> int:
    code = VECTOR_OK
    for i in range(values.shape[0]):
        x = values[i]
        if not np.isfinite(x):
            return VECTOR_NOT_FINITE  # named first, whatever else the vector holds
        if abs(x) > FLOAT32_MAX:
            code = VECTOR_OVERFLOWS
    return code


@jit_held
def checked_float32(values: npt.NDArray[np.float64]) -> tuple[int, npt.NDArray[np.float32]]:
    """``(code, values as float32)``: ``VECTOR_NOT_FINITE`` if a value is NaN or infinite,
    else ``VECTOR_OVERFLOWS`` if one is above ``FLOAT32_MAX`` in magnitude (refused there, not
    where rounding would make it infinite), else ``VECTOR_OK``; the array is only meaningful
    with ``VECTOR_OK``. One pass instead of numpy's five calls (an embedding's checks on every
    put and every vector query). Keeps the GIL: microseconds, inline."""
    code = _vector_code(values)
    out = np.empty(values.shape[0] if code == VECTOR_OK else 0, dtype=np.float32)
    if code == VECTOR_OK:
        for i in range(values.shape[0]):
            out[i] = np.float32(values[i])
    return code, out


@jit_held
def unit_float32(values: npt.NDArray[np.float64]) -> tuple[int, npt.NDArray[np.float32]]:
    """``checked_float32``, then the float32 vector scaled to unit L2 norm as
    ``l2_normalise`` does, bit for bit: the float32 values widened, their squares summed in
    numpy's order (``_pairwise_sum``), the square root, each value divided by it and rounded
    to float32; a zero vector stays zero. A vector query's checks and normalising in one call
    (~30 us of numpy calls before, for 384 dimensions)."""
    code = _vector_code(values)
    d = values.shape[0] if code == VECTOR_OK else 0
    out = np.zeros(d, dtype=np.float32)
    if code != VECTOR_OK:
        return code, out
    wide = np.empty(d, dtype=np.float64)
    squares = np.empty(d, dtype=np.float64)
    for i in range(d):
        w = np.float64(np.float32(values[i]))
        wide[i] = w
        squares[i] = w * w
    norm = np.sqrt(_pairwise_sum(squares))
    if norm > 0.0:
        for i in range(d):
            out[i] = np.float32(wide[i] / norm)
    return code, out


def l2_normalise_rows(matrix: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Rows scaled to unit L2 norm as a new C-contiguous float32 [n, d] array.

    Norms are computed in float64; zero rows stay zero. Deterministic (plain numpy).
    """
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {m.shape}")
    norms = np.sqrt(np.sum(m * m, axis=1))
    out = np.zeros(m.shape, dtype=np.float32)
    nz = norms > 0.0
    out[nz] = (m[nz] / norms[nz, None]).astype(np.float32)
    return out


def l2_normalise(vec: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """A vector scaled to unit L2 norm as a new float32 [d] array; a zero vector stays zero."""
    v = np.asarray(vec, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"expected a 1-D array, got shape {v.shape}")
    return l2_normalise_rows(v.reshape(1, -1)).reshape(-1)
