"""BM25 and sparse dot-product scoring over CSR postings, and the postings builder.

Postings of one index segment are CSR: ``offsets: int64[n_terms + 1]``, ``doc_ids: int32[nnz]``
(ascending within a term, local document numbers ``0..n_docs-1``) and per-posting values
``tfs: float32[nnz]`` (term frequency) or, for the n-gram channel, ``values: float32[nnz]``.

Scoring is term-at-a-time into caller-owned scratch arrays of one thread (see ``new_scratch``):
``acc: float64[n_docs]`` (all zero between queries), ``seen: uint8[n_docs]`` (all zero between
queries) and ``touched: int32[n_docs]``. ``seen`` marks a document the first time it is reached,
so a document is listed in ``touched`` exactly once even when a contribution is exactly 0 or the
sum returns to 0. ``topk.topk_touched`` (or ``topk.reset_touched``) cleans both afterwards.

Bit-for-bit reproducibility: every path adds the same float64 contributions, one per query term
in the order of ``term_ids``, starting from 0.0. The caller passes terms sorted by term id so the
order is fixed. The contribution of a term with weight ``w`` (idf times its multiplicity in the
query) to a document with term frequency ``tf`` and norm ``norm`` is ``bm25_term(w, tf, norm)``:
the formula is written there once, and every BM25 kernel (here, in ``pruning`` and ``topk``)
calls it, inlined by numba, so no path can drift from another. (``reference`` writes it out
again on purpose: it is the independent oracle the tests hold the kernels to.)

A term id outside ``[0, n_terms)`` contributes nothing (callers may map unknown terms to -1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.jit import held_twin, inline, jit, jit_held
from hmsengine.kernels.norms import Norms, n_norms, norm_of

K1 = 1.2
B = 0.75
K1_PLUS_1 = K1 + 1.0


def new_scratch(
    n_docs: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.uint8], npt.NDArray[np.int32]]:
    """Fresh per-thread scratch ``(acc float64[n], seen uint8[n], touched int32[n])``, zeroed.

    One set serves every segment with at most ``n_docs`` documents, one query at a time.
    """
    return (
        np.zeros(n_docs, dtype=np.float64),
        np.zeros(n_docs, dtype=np.uint8),
        np.zeros(n_docs, dtype=np.int32),
    )


def bm25_norms(doc_lens: npt.ArrayLike, avgdl: float) -> npt.NDArray[np.float64]:
    """Per-document length norms ``K1 * (1 - B + B * doc_len / avgdl)`` as float64[n].

    ``avgdl`` is the average length over the live documents of all segments. A non-positive or
    non-finite ``avgdl`` (an empty corpus) is taken as 1.0. Elementwise IEEE float64, evaluated
    in the same order as ``bm25_norm``, so both give identical bits.

    One pass in a kernel (``_fill_norms``): every write changes ``avgdl``, so the first query
    of each new snapshot computes the norms of every segment again; numpy's four passes and
    temporaries took ~1.5 ms at 1M documents, the kernel ~0.4 ms, with the same bits.
    """
    if not (avgdl > 0.0 and np.isfinite(avgdl)):
        avgdl = 1.0
    dl = np.asarray(doc_lens)
    if dl.dtype not in (np.int32, np.float32, np.float64):
        dl = dl.astype(np.float64)
    out = np.empty(dl.shape[0], dtype=np.float64)
    _fill_norms(np.ascontiguousarray(dl.reshape(-1)), float(avgdl), out)
    return out


@jit_held  # inline on the event loop, at most a few hundred us: see jit.jit_held
def _fill_norms(doc_lens: npt.NDArray[Any], avgdl: float, out: npt.NDArray[np.float64]) -> None:
    for i in range(doc_lens.shape[0]):
        # numpy's order in the expression it replaced: (1 - B) + ((B * dl) / avgdl), then K1 *
        out[i] = K1 * (1.0 - B + B * np.float64(doc_lens[i]) / avgdl)


def bm25_norm(doc_len: float, avgdl: float) -> float:
    """Scalar ``bm25_norms`` for one document (same bits)."""
    if not (avgdl > 0.0 and np.isfinite(avgdl)):
        avgdl = 1.0
    return float(K1 * (1.0 - B + B * float(doc_len) / float(avgdl)))


def bm25_idf(df: npt.ArrayLike, n_docs: int) -> npt.NDArray[np.float64] | float:
    """``ln(1 + (N - df + 0.5) / (df + 0.5))`` per document frequency; float64 array or float.

    ``df`` is clipped to ``[0, n_docs]`` so the idf stays positive even when counts that include
    deleted documents exceed the live ``n_docs``. Always computed through one numpy ``log1p``
    over an array, so a scalar and the same value inside an array give identical bits.
    """
    n = float(max(n_docs, 0))
    arr = np.asarray(df, dtype=np.float64)
    # minimum/maximum, not clip: the same values at half the fixed cost (~2 us against ~4 us a
    # call on a small array; recall and search call this once per query with new terms).
    d = np.minimum(np.maximum(np.atleast_1d(arr), 0.0), n)
    idf = np.log1p((n - d + 0.5) / (d + 0.5))
    if arr.ndim == 0:
        return float(idf[0])
    return idf


def bm25_idfs(dfs: list[int], n_docs: int) -> list[float]:
    """``bm25_idf`` of each of ``dfs`` (Python ints), as Python floats: the same bits in ~1/3 of
    the time for the few terms of a query. The clip and the quotient are computed in Python
    floats (IEEE float64 operations in the same order as numpy's elementwise ones, so the same
    values); only the ``log1p`` goes through numpy, over one array, as in ``bm25_idf``:
    numpy's ``log1p`` and the C library's differ in the last bit for some arguments."""
    n = float(max(n_docs, 0))
    quotients = []
    for df in dfs:
        d = min(max(float(df), 0.0), n)
        quotients.append((n - d + 0.5) / (d + 0.5))
    idfs: list[float] = np.log1p(np.array(quotients, dtype=np.float64)).tolist()
    return idfs


@inline
def bm25_term(weight: float, tf: float, norm: float) -> float:
    """One query term's BM25 contribution to one document: ``weight * tf * (k1 + 1) / (tf +
    norm)`` with ``weight`` = idf times the term's count in the query and ``norm`` =
    ``bm25_norm`` of the document's length, in float64, left to right.

    The one place the formula is written: every BM25 kernel calls it (inlined by numba, so a
    loop costs what it cost with the formula written out in it), and a search's lexical score,
    hence what ``explain`` reports, is a sum of it. ``tf`` may be a float32 posting value: it is
    widened first, as the kernels always did.
    """
    tf = np.float64(tf)
    return weight * tf * K1_PLUS_1 / (tf + norm)


@inline
def bm25_bound(weight: float) -> float:
    """The least upper bound of ``bm25_term(weight, tf, norm)`` over every ``tf`` and ``norm``
    (its limit as ``tf`` grows): what MaxScore pruning (``pruning``) bounds a term by."""
    return weight * K1_PLUS_1


@jit
def bm25_accumulate(
    offsets: npt.NDArray[np.int64],
    doc_ids: npt.NDArray[np.int32],
    tfs: npt.NDArray[np.float32],
    norms: Norms,
    term_ids: npt.NDArray[np.int32],
    term_weights: npt.NDArray[np.float64],
    allowed: npt.NDArray[np.uint8],
    acc: npt.NDArray[np.float64],
    seen: npt.NDArray[np.uint8],
    touched: npt.NDArray[np.int32],
    n_touched: int,
) -> int:
    """Add the BM25 contributions of the query terms to ``acc``; return the new ``n_touched``.

    For each query term in order, for each posting ``(d, tf)`` with ``allowed[d] != 0``:
    ``acc[d] += bm25_term(term_weights[i], tfs[p], norm_of(norms, d))`` in float64; the first time
    ``d`` is reached (``seen[d] == 0``) it is marked and appended to ``touched``. ``allowed``,
    ``norms``, ``acc``, ``seen`` and ``touched`` have at least ``n_docs`` entries. Allocates
    nothing. Several calls may accumulate into the same scratch before one ``topk_touched``.
    """
    n_terms = offsets.shape[0] - 1
    for qi in range(term_ids.shape[0]):
        t = term_ids[qi]
        if t < 0 or t >= n_terms:
            continue
        w = term_weights[qi]
        for p in range(offsets[t], offsets[t + 1]):
            d = doc_ids[p]
            if allowed[d] == 0:
                continue
            if seen[d] == 0:
                seen[d] = 1
                touched[n_touched] = d
                n_touched += 1
            acc[d] += bm25_term(w, tfs[p], norm_of(norms, d))
    return n_touched


@jit
def sparse_accumulate(
    offsets: npt.NDArray[np.int64],
    doc_ids: npt.NDArray[np.int32],
    values: npt.NDArray[np.float32],
    term_ids: npt.NDArray[np.int32],
    term_weights: npt.NDArray[np.float64],
    allowed: npt.NDArray[np.uint8],
    acc: npt.NDArray[np.float64],
    seen: npt.NDArray[np.uint8],
    touched: npt.NDArray[np.int32],
    n_touched: int,
) -> int:
    """Sparse dot product: like ``bm25_accumulate`` with ``acc[d] += w * values[p]`` (float64).

    With postings transposed from L2-normalised rows and a normalised query this is the cosine
    (the n-gram channel). Values and weights may be negative; ``seen`` keeps ``touched`` exact.
    """
    n_terms = offsets.shape[0] - 1
    for qi in range(term_ids.shape[0]):
        t = term_ids[qi]
        if t < 0 or t >= n_terms:
            continue
        w = term_weights[qi]
        for p in range(offsets[t], offsets[t + 1]):
            d = doc_ids[p]
            if allowed[d] == 0:
                continue
            if seen[d] == 0:
                seen[d] = 1
                touched[n_touched] = d
                n_touched += 1
            acc[d] += w * np.float64(values[p])
    return n_touched


@jit
def _find(doc_ids: npt.NDArray[np.int32], lo: int, hi: int, d: int) -> int:
    # Binary search for d in doc_ids[lo:hi] (ascending); its position, or -1.
    while lo < hi:
        mid = (lo + hi) >> 1
        v = doc_ids[mid]
        if v < d:
            lo = mid + 1
        elif v > d:
            hi = mid
        else:
            return mid
    return -1


# A term whose postings are at most this many times the candidates is merged with them in one
# pass (reading each posting once); a longer one is binary-searched per candidate.
MERGE_RATIO = 16


@jit
def bm25_score_docs(
    offsets: npt.NDArray[np.int64],
    doc_ids: npt.NDArray[np.int32],
    tfs: npt.NDArray[np.float32],
    norms: Norms,
    term_ids: npt.NDArray[np.int32],
    term_weights: npt.NDArray[np.float64],
    docs: npt.NDArray[np.int32],
) -> npt.NDArray[np.float64]:
    """BM25 scores of the candidate local documents ``docs: int32[m]`` as float64[m].

    The filtered path for a small candidate set. Term by term in order, each candidate's score
    starting from 0.0 gets the same contributions in the same order as in ``bm25_accumulate``,
    so a document gets bit-identical scores on both paths. When ``docs`` is strictly ascending,
    a term with at most ``MERGE_RATIO * m`` postings is merged with the candidates in one pass;
    otherwise each candidate is binary-searched in the term's postings: O(m * q * log(df)) at
    worst. A candidate matching no term scores 0.0 (a match always scores > 0 with positive
    weights). Raises ValueError for a candidate outside ``[0, len(norms))``.
    """
    n_terms = offsets.shape[0] - 1
    m = docs.shape[0]
    out = np.zeros(m, dtype=np.float64)
    ascending = True
    for j in range(m):
        d = docs[j]
        if d < 0 or d >= n_norms(norms):
            raise ValueError("candidate document number out of range")
        if j > 0 and d <= docs[j - 1]:
            ascending = False
    for qi in range(term_ids.shape[0]):
        t = term_ids[qi]
        if t < 0 or t >= n_terms:
            continue
        lo = offsets[t]
        hi = offsets[t + 1]
        w = term_weights[qi]
        if ascending and hi - lo <= MERGE_RATIO * m:
            p = lo
            for j in range(m):
                d = docs[j]
                while p < hi and doc_ids[p] < d:
                    p += 1
                if p == hi:
                    break
                if doc_ids[p] == d:
                    out[j] += bm25_term(w, tfs[p], norm_of(norms, d))
        else:
            for j in range(m):
                d = docs[j]
                p = _find(doc_ids, lo, hi, d)
                if p >= 0:
                    out[j] += bm25_term(w, tfs[p], norm_of(norms, d))
    return out


@jit
def sparse_score_docs(
    offsets: npt.NDArray[np.int64],
    doc_ids: npt.NDArray[np.int32],
    values: npt.NDArray[np.float32],
    term_ids: npt.NDArray[np.int32],
    term_weights: npt.NDArray[np.float64],
    docs: npt.NDArray[np.int32],
) -> npt.NDArray[np.float64]:
    """Sparse dot products of the candidates ``docs: int32[m]``, bit-identical to
    ``sparse_accumulate``; 0.0 for a candidate with no posting among the query terms."""
    n_terms = offsets.shape[0] - 1
    out = np.zeros(docs.shape[0], dtype=np.float64)
    for j in range(docs.shape[0]):
        d = docs[j]
        if d < 0:
            raise ValueError("candidate document number out of range")
        s = 0.0
        for qi in range(term_ids.shape[0]):
            t = term_ids[qi]
            if t < 0 or t >= n_terms:
                continue
            p = _find(doc_ids, offsets[t], offsets[t + 1], d)
            if p >= 0:
                s += term_weights[qi] * np.float64(values[p])
        out[j] = s
    return out


@jit
def build_postings(
    term_ids_flat: npt.NDArray[np.int32], doc_starts: npt.NDArray[np.int64], n_terms: int
) -> tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float32], npt.NDArray[np.int32]
]:
    """CSR postings with term frequencies from each document's token ids (a counting sort).

    Document ``i`` has tokens ``term_ids_flat[doc_starts[i]:doc_starts[i+1]]`` (ids in
    ``[0, n_terms)``, any order, repeats counted). Returns ``(offsets int64[n_terms+1],
    doc_ids int32[nnz], tfs float32[nnz], doc_lens int32[n_docs])``: doc ids ascending within
    each term, one posting per (term, document), tf = its count, doc_len = the token count.
    O(total + n_terms). Raises ValueError for a term id out of range.
    """
    n_docs = doc_starts.shape[0] - 1
    last = np.full(n_terms, -1, dtype=np.int64)
    df = np.zeros(n_terms + 1, dtype=np.int64)
    doc_lens = np.zeros(max(n_docs, 0), dtype=np.int32)
    for i in range(n_docs):
        doc_lens[i] = doc_starts[i + 1] - doc_starts[i]
        for p in range(doc_starts[i], doc_starts[i + 1]):
            t = term_ids_flat[p]
            if t < 0 or t >= n_terms:
                raise ValueError("term id out of range in build_postings")
            if last[t] != i:
                last[t] = i
                df[t + 1] += 1
    offsets = np.cumsum(df)
    nnz = offsets[n_terms]
    doc_ids = np.empty(nnz, dtype=np.int32)
    tfs = np.zeros(nnz, dtype=np.float32)
    cursor = offsets[:n_terms].copy()
    last[:] = -1
    for i in range(n_docs):
        for p in range(doc_starts[i], doc_starts[i + 1]):
            t = term_ids_flat[p]
            if last[t] != i:
                last[t] = i
                doc_ids[cursor[t]] = i
                tfs[cursor[t]] = 1.0
                cursor[t] += 1
            else:
                tfs[cursor[t] - 1] += 1.0
    return offsets, doc_ids, tfs, doc_lens


#: ``bm25_score_docs`` keeping the GIL, for inline calls on the event loop (jit.held_twin).
bm25_score_docs_held = held_twin(bm25_score_docs)
#: The n-gram signal's kernels keeping the GIL, for its queries run inline (as above).
sparse_accumulate_held = held_twin(sparse_accumulate)
sparse_score_docs_held = held_twin(sparse_score_docs)
