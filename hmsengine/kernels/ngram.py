"""Hashed character n-gram vectors (the built-in "holographic" encoding) and CSR transposition.

A text is NFKC-normalised, casefolded and whitespace-collapsed (runs of Unicode whitespace become
one space, ends stripped) by ``ngram_vectors``; the kernel then pads the code points with a
boundary marker at each end and hashes every character 3-gram and 4-gram into ``dim`` buckets
with a sign (signed feature hashing). Equal buckets are summed, zero sums dropped, indices sorted
ascending and the row L2-normalised (computed in float64, stored float32). An empty text gives an
empty row. The hash is fixed (no Python ``hash()``), so vectors are the same across runs,
processes and platforms.

The hash: 64-bit FNV-1a over code points (one code point per step instead of one byte), seeded by
xoring ``n`` first, then murmur3's 64-bit finaliser so that the bucket (``h % dim``) and the sign
(the top bit) come from well-mixed bits.

Scoring: ``csr_transpose`` turns document rows into postings (bucket -> documents) for
``bm25.sparse_accumulate``; with normalised rows and query the dot product is the cosine.
"""

from __future__ import annotations

import unicodedata

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.jit import held_twin, jit

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_S63 = np.uint64(63)
#: Padding code at both ends of a text: above the Unicode range, so never a real character.
BOUNDARY = 0x110000
_BOUNDARY_U64 = np.uint64(BOUNDARY)


@jit
def _gram_hash(
    codes: npt.NDArray[np.uint32], start: int, length: int, pos: int, n: int
) -> np.uint64:
    # FNV-1a over the n padded code points starting at padded position pos, seeded by n.
    h = _FNV_OFFSET
    h = (h ^ np.uint64(n)) * _FNV_PRIME
    padded = length + 2
    for p in range(pos, pos + n):
        at_end = p == 0 or p == padded - 1
        c = _BOUNDARY_U64 if at_end else np.uint64(codes[start + p - 1])
        h = (h ^ c) * _FNV_PRIME
    h = h ^ (h >> _S33)
    h = h * _MIX1
    h = h ^ (h >> _S33)
    h = h * _MIX2
    h = h ^ (h >> _S33)
    return h


@jit
def _ngram_features(
    codes: npt.NDArray[np.uint32], starts: npt.NDArray[np.int64], dim: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    n_docs = starts.shape[0] - 1
    if n_docs < 0:
        n_docs = 0
    total = 0
    for i in range(n_docs):
        total += 2 * (starts[i + 1] - starts[i])
    indptr = np.zeros(n_docs + 1, dtype=np.int64)
    indices = np.empty(total, dtype=np.int32)
    values = np.empty(total, dtype=np.float32)
    keys = np.empty(total, dtype=np.int64)
    dim_u = np.uint64(dim)
    nnz = 0
    for i in range(n_docs):
        start = starts[i]
        length = starts[i + 1] - start
        cnt = 0
        if length > 0:
            padded = length + 2
            for n in range(3, 5):
                for pos in range(0, padded - n + 1):
                    h = _gram_hash(codes, start, length, pos, n)
                    bucket = np.int64(h % dim_u)
                    sign = np.int64(h >> _S63)
                    keys[cnt] = bucket * 2 + sign  # sorted by bucket; sign in the low bit
                    cnt += 1
        row_keys = keys[:cnt]
        row_keys.sort()
        row_start = nnz
        sumsq = 0.0
        j = 0
        while j < cnt:
            bucket = row_keys[j] >> 1
            v = 0
            while j < cnt and (row_keys[j] >> 1) == bucket:
                v += 1 - 2 * (row_keys[j] & 1)
                j += 1
            if v != 0:
                indices[nnz] = bucket
                values[nnz] = v  # exact small integer until normalised below
                sumsq += np.float64(v) * np.float64(v)
                nnz += 1
        if nnz > row_start:
            inv = 1.0 / np.sqrt(sumsq)
            for p in range(row_start, nnz):
                values[p] = np.float32(np.float64(values[p]) * inv)
        indptr[i + 1] = nnz
    return indptr, indices[:nnz].copy(), values[:nnz].copy()


#: ``_ngram_features`` keeping the GIL: a query's n-grams are hashed inline on the event loop,
#: where giving the GIL away hands it to any busy Python thread for a switch interval (5 ms).
_ngram_features_held = held_twin(_ngram_features)


def ngram_features(
    codes: npt.NDArray[np.uint32], starts: npt.NDArray[np.int64], dim: int, *, held: bool = False
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    """Signed hashed 3-/4-gram vectors of documents given as code points, as a CSR triple.

    ``codes: uint32[total]`` holds the documents' code points back to back, document ``i`` being
    ``codes[starts[i]:starts[i+1]]`` (``starts: int64[n_docs+1]``), already NFKC-normalised,
    casefolded and whitespace-collapsed (``ngram_vectors`` does that). ``dim`` >= 1 buckets.
    Returns ``(indptr int64[n+1], indices int32[nnz], values float32[nnz])``: per row, indices
    strictly ascending, no zero values, L2 norm 1 within float32 rounding (empty text: empty row).
    ``held``: keep the GIL (the twin, for a call on the event loop's thread).
    """
    if not 1 <= dim <= np.iinfo(np.int32).max:
        raise ValueError(f"dim must be in [1, 2**31 - 1], got {dim}")
    codes = np.ascontiguousarray(codes, dtype=np.uint32)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    # Without JIT the uint64 hash runs on numpy scalars, which warn on wrap-around; the wrap is
    # the point of the hash. Compiled code never warns; this only silences the fallback.
    with np.errstate(over="ignore"):
        result: tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float32]] = (
            (_ngram_features_held if held else _ngram_features)(codes, starts, int(dim))
        )
    return result


def normalise_text(text: str) -> str:
    """NFKC, casefold, whitespace runs to one space, ends stripped: what the n-grams see."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def ngram_vectors(
    texts: list[str], dim: int, *, held: bool = False
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    """``ngram_features`` of Python strings (normalised by ``normalise_text``), one row per text;
    ``held`` as there."""
    prepared = [normalise_text(t) for t in texts]
    lengths = np.fromiter(map(len, prepared), dtype=np.int64, count=len(prepared))
    starts = np.zeros(len(prepared) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    # UTF-32 gives one uint32 per code point; surrogatepass keeps lone surrogates encodable.
    raw = "".join(prepared).encode("utf-32-le", "surrogatepass")
    codes = np.frombuffer(raw, dtype=np.uint32)
    return ngram_features(codes, starts, dim, held=held)


def ngram_query(text: str, dim: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    """The n-gram vector of one query text as ``(indices int32 ascending, values float32)``.

    For ``sparse_accumulate`` pass ``indices`` as term ids and ``values.astype(np.float64)`` as
    weights. Keeps the GIL (a query is hashed inline, on the event loop).
    """
    _, indices, values = ngram_vectors([text], dim, held=True)
    return indices, values


@jit
def csr_transpose(
    indptr: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int32],
    values: npt.NDArray[np.float32],
    n_cols: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    """Transpose CSR rows into per-column postings (a counting sort, O(nnz + n_cols)).

    Returns ``(offsets int64[n_cols+1], doc_ids int32[nnz], values float32[nnz])`` where column
    ``c``'s entries are ``offsets[c]:offsets[c+1]``, row numbers ascending (stable in row order).
    Raises ValueError for a column index outside ``[0, n_cols)``.
    """
    n_rows = indptr.shape[0] - 1
    nnz = indptr[n_rows] if n_rows >= 0 else 0
    counts = np.zeros(n_cols + 1, dtype=np.int64)
    for p in range(nnz):
        c = indices[p]
        if c < 0 or c >= n_cols:
            raise ValueError("column index out of range in csr_transpose")
        counts[c + 1] += 1
    offsets = np.cumsum(counts)
    cursor = offsets[:n_cols].copy()
    doc_ids = np.empty(nnz, dtype=np.int32)
    out = np.empty(nnz, dtype=np.float32)
    for r in range(n_rows):
        for p in range(indptr[r], indptr[r + 1]):
            c = indices[p]
            q = cursor[c]
            doc_ids[q] = r
            out[q] = values[p]
            cursor[c] = q + 1
    return offsets, doc_ids, out
