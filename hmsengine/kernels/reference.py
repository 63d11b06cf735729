"""Plain-numpy reference implementations of the kernels, for the tests (never for serving).

Written for clarity rather than speed, over whole arrays. Where a kernel's floating-point
arithmetic is specified (BM25 and sparse sums term by term, the cosine lane order, the n-gram
normalisation), the reference performs the same IEEE operations in the same order, so the tests
can demand bit-identical scores. Orderings use ``np.lexsort`` (score descending, then document
ascending), an implementation independent of ``topk``'s insertion and heap code. The n-gram hash
is re-implemented with Python integers, independently of the numba kernel's uint64 arithmetic.
``ascii_term_ids`` is the analyzer's batch term-id algorithm for ASCII text as it was before the
``tokenize`` kernels (regular expressions and dicts), which the kernel path must equal exactly.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.bm25 import K1_PLUS_1

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def ranked(scores: F64, docs: I64, k: int) -> tuple[F64, I64]:
    """Top ``k`` of ``(scores, docs)`` by score descending, then doc ascending (lexsort)."""
    order = np.lexsort((docs, -scores))[: max(k, 0)]
    return scores[order], docs[order]


def bm25_scores(
    offsets: I64,
    doc_ids: npt.NDArray[np.int32],
    tfs: npt.NDArray[np.float32],
    norms: F64,
    term_ids: npt.NDArray[np.int32],
    term_weights: F64,
    allowed: npt.NDArray[np.uint8],
) -> tuple[F64, npt.NDArray[np.bool_]]:
    """Dense BM25 scores of every document and which were reached by an allowed posting."""
    n_docs = norms.shape[0]
    acc = np.zeros(n_docs, dtype=np.float64)
    hit = np.zeros(n_docs, dtype=bool)
    n_terms = offsets.shape[0] - 1
    for t, w in zip(term_ids.tolist(), term_weights.tolist(), strict=True):
        if not 0 <= t < n_terms:
            continue
        d = doc_ids[offsets[t] : offsets[t + 1]].astype(np.int64)
        tf = tfs[offsets[t] : offsets[t + 1]].astype(np.float64)
        keep = allowed[d] != 0
        d, tf = d[keep], tf[keep]
        acc[d] += w * tf * K1_PLUS_1 / (tf + norms[d])  # doc ids unique within a term
        hit[d] = True
    return acc, hit


def sparse_scores(
    offsets: I64,
    doc_ids: npt.NDArray[np.int32],
    values: npt.NDArray[np.float32],
    term_ids: npt.NDArray[np.int32],
    term_weights: F64,
    allowed: npt.NDArray[np.uint8],
    n_docs: int,
) -> tuple[F64, npt.NDArray[np.bool_]]:
    """Dense sparse-dot scores of every document and which were reached."""
    acc = np.zeros(n_docs, dtype=np.float64)
    hit = np.zeros(n_docs, dtype=bool)
    n_terms = offsets.shape[0] - 1
    for t, w in zip(term_ids.tolist(), term_weights.tolist(), strict=True):
        if not 0 <= t < n_terms:
            continue
        d = doc_ids[offsets[t] : offsets[t + 1]].astype(np.int64)
        v = values[offsets[t] : offsets[t + 1]].astype(np.float64)
        keep = allowed[d] != 0
        acc[d[keep]] += w * v[keep]
        hit[d[keep]] = True
    return acc, hit


def topk_of_hits(scores: F64, hit: npt.NDArray[np.bool_], k: int, doc_base: int) -> tuple[F64, I64]:
    """Top ``k`` among the reached documents, documents numbered from ``doc_base``."""
    docs = np.flatnonzero(hit).astype(np.int64)
    return ranked(scores[docs], docs + doc_base, k)


def cosine_scores(
    matrix: npt.NDArray[np.float32], query: npt.NDArray[np.float32], lanes: int
) -> F64:
    """Every row's score in the cosine kernel's summation order (see ``cosine``'s docstring)."""
    n, d = matrix.shape
    nb = d // lanes
    main = nb * lanes
    s = np.zeros(n, dtype=np.float64)
    if nb > 0:
        prod = matrix[:, :main].reshape(n, nb, lanes) * query[:main].reshape(nb, lanes)
        acc = prod[:, 0, :].copy()  # float32
        for b in range(1, nb):
            acc = acc + prod[:, b, :]
        for lane in range(lanes):
            s = s + acc[:, lane].astype(np.float64)
    for j in range(main, d):
        s = s + (matrix[:, j] * query[j]).astype(np.float64)
    return s


def cosine_topk(
    matrix: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    allowed: npt.NDArray[np.uint8],
    k: int,
    lanes: int,
) -> tuple[F64, I64]:
    """Top ``k`` allowed rows by ``cosine_scores``, ties by row ascending."""
    rows = np.flatnonzero(allowed != 0).astype(np.int64)
    return ranked(cosine_scores(matrix, query, lanes)[rows], rows, k)


def cosine_exact_rows(
    matrix: npt.NDArray[np.float32], rows: npt.NDArray[np.int32], query: F64
) -> F64:
    """``cosine.cosine_exact_rows``: each row widened to float64, summed in column order."""
    out = np.zeros(rows.shape[0], dtype=np.float64)
    for j in range(matrix.shape[1]):  # column by column: the kernel's order for every row
        out = out + matrix[rows, j].astype(np.float64) * query[j]
    return out


def build_postings(
    docs: Sequence[Sequence[int]], n_terms: int
) -> tuple[I64, npt.NDArray[np.int32], npt.NDArray[np.float32], npt.NDArray[np.int32]]:
    """CSR postings from token-id lists with ``collections.Counter``."""
    per_term: list[list[tuple[int, int]]] = [[] for _ in range(n_terms)]
    for i, tokens in enumerate(docs):
        for t, c in sorted(Counter(tokens).items()):
            per_term[t].append((i, c))
    offsets = np.zeros(n_terms + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(p) for p in per_term])
    flat = [pair for p in per_term for pair in p]
    doc_ids = np.array([d for d, _ in flat], dtype=np.int32)
    tfs = np.array([c for _, c in flat], dtype=np.float32)
    doc_lens = np.array([len(t) for t in docs], dtype=np.int32)
    return offsets, doc_ids, tfs, doc_lens


def csr_to_dense(
    indptr: I64, indices: npt.NDArray[np.int32], values: npt.NDArray[np.float32], n_cols: int
) -> npt.NDArray[np.float32]:
    """A CSR matrix as a dense float32 array."""
    n_rows = indptr.shape[0] - 1
    out = np.zeros((n_rows, n_cols), dtype=np.float32)
    for r in range(n_rows):
        out[r, indices[indptr[r] : indptr[r + 1]]] = values[indptr[r] : indptr[r + 1]]
    return out


_MASK = (1 << 64) - 1


def ngram_hash(grams: Sequence[int], n: int) -> int:
    """The n-gram hash with Python integers: FNV-1a over code points seeded by n, murmur3 fmix."""
    h = 0xCBF29CE484222325
    h = ((h ^ n) * 0x100000001B3) & _MASK
    for c in grams:
        h = ((h ^ c) * 0x100000001B3) & _MASK
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK
    h ^= h >> 33
    return h


def ngram_row(text: str, dim: int, boundary: int = 0x110000) -> tuple[list[int], list[float]]:
    """One already-normalised text's n-gram row: (sorted buckets, float32-rounded values)."""
    if not text:
        return [], []
    padded = [boundary, *map(ord, text), boundary]
    sums: Counter[int] = Counter()
    for n in (3, 4):
        for pos in range(len(padded) - n + 1):
            h = ngram_hash(padded[pos : pos + n], n)
            sums[h % dim] += -1 if h >> 63 else 1
    buckets = sorted(b for b, v in sums.items() if v != 0)
    sumsq = float(sum(sums[b] * sums[b] for b in buckets))
    inv = 1.0 / math.sqrt(sumsq) if buckets else 0.0
    return buckets, [float(np.float32(float(sums[b]) * inv)) for b in buckets]


_TOKEN_RE = re.compile(r"[^\W_]+")
_ASCII_BATCH_RE = re.compile(r"[0-9a-z]+|\x00", re.ASCII)


def ascii_term_ids(
    texts: list[str], vocab: dict[str, int], terms_of: Callable[[set[str]], dict[str, str]]
) -> tuple[npt.NDArray[np.int32], I64]:
    """``Analyzer.term_ids`` of ASCII ``texts`` by the former regex algorithm.

    ``terms_of`` maps distinct raw tokens to terms ("" = dropped), as ``Analyzer._terms_of``.
    The texts are joined with NUL, tokenized by one findall (NUL is a token there); a text
    holding NUL itself makes the batch go text by text. New terms get ids in sorted order.
    """
    sep = "\x00"
    n = len(texts)
    big = sep.join(texts)
    assert big.isascii()
    flat: list[str] = _ASCII_BATCH_RE.findall(big.lower())
    tokens = set(flat)
    tokens.discard(sep)
    terms = terms_of(tokens)
    if flat.count(sep) != max(n - 1, 0):
        flat = []
        for text in texts:
            flat.extend(_TOKEN_RE.findall(unicodedata.normalize("NFKC", text).casefold()))
            flat.append(sep)
        flat.pop()
    new_terms = set(terms.values()).difference(vocab)
    new_terms.discard("")
    for term in sorted(new_terms):
        vocab[term] = len(vocab)
    lut = {raw: vocab.get(term, -1) if term else -1 for raw, term in terms.items()}
    lut[sep] = -2
    ids = np.array([lut[t] for t in flat], dtype=np.int32)
    doc_of = np.cumsum(ids == -2)
    keep = ids >= 0
    lens = np.bincount(doc_of[keep], minlength=n) if n else np.zeros(0, dtype=np.int64)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=starts[1:])
    return ids[keep], starts
