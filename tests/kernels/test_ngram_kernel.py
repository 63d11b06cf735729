"""Hashed character n-gram vectors and CSR transposition."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hmsengine.kernels import bm25, ngram, reference, topk

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
SETTINGS = settings(
    max_examples=60 if NO_JIT else 120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
texts = st.text(st.characters(codec="utf-8"), max_size=40) | st.text("ab c", max_size=12)
DIMS = st.sampled_from([1, 7, 64, 4096])


@given(st.lists(texts, max_size=8), DIMS)
@SETTINGS
def test_rows_match_python_int_reference(batch: list[str], dim: int) -> None:
    """Each row equals an independent Python-integer implementation of the hash, bit for bit."""
    indptr, indices, values = ngram.ngram_vectors(batch, dim)
    assert indptr.dtype == np.int64 and indices.dtype == np.int32 and values.dtype == np.float32
    assert indptr.shape == (len(batch) + 1,)
    for i, text in enumerate(batch):
        buckets, vals = reference.ngram_row(ngram.normalise_text(text), dim)
        lo, hi = indptr[i], indptr[i + 1]
        assert indices[lo:hi].tolist() == buckets
        assert values[lo:hi].tolist() == vals


@given(st.lists(texts, min_size=1, max_size=8), DIMS)
@SETTINGS
def test_rows_unit_norm_sorted_and_deterministic(batch: list[str], dim: int) -> None:
    """Rows are empty or unit-norm with strictly ascending in-range indices, the same each call."""
    indptr, indices, values = ngram.ngram_vectors(batch, dim)
    again = ngram.ngram_vectors(batch, dim)
    assert all(
        a.tobytes() == b.tobytes() for a, b in zip((indptr, indices, values), again, strict=True)
    )
    for i, text in enumerate(batch):
        row_idx = indices[indptr[i] : indptr[i + 1]]
        row_val = values[indptr[i] : indptr[i + 1]].astype(np.float64)
        if not ngram.normalise_text(text):
            assert row_idx.size == 0
            continue
        assert row_idx.size > 0
        assert (np.diff(row_idx) > 0).all() and row_idx.min() >= 0 and row_idx.max() < dim
        assert (row_val != 0).all()
        assert abs(float(row_val @ row_val) - 1.0) < 1e-6


@given(st.lists(texts, min_size=1, max_size=6))
@SETTINGS
def test_self_dot_through_postings_is_one(batch: list[str]) -> None:
    """Scoring a text's query vector over transposed rows gives ~1 for itself (cosine)."""
    dim = 512
    indptr, indices, values = ngram.ngram_vectors(batch, dim)
    offsets, doc_ids, vals = ngram.csr_transpose(indptr, indices, values, dim)
    n = len(batch)
    for i, text in enumerate(batch):
        q_idx, q_val = ngram.ngram_query(text, dim)
        acc, seen, touched = bm25.new_scratch(n)
        n_t = bm25.sparse_accumulate(
            offsets, doc_ids, vals, q_idx, q_val.astype(np.float64), np.ones(n, np.uint8),
            acc, seen, touched, 0,
        )  # fmt: skip
        if q_idx.size == 0:
            assert n_t == 0
            continue
        assert abs(acc[i] - 1.0) < 1e-6
        topk.reset_touched(acc, seen, touched, n_t)


def test_normalisation_and_whitespace() -> None:
    """NFKC + casefold and whitespace collapsing give equal vectors for equivalent texts."""
    a = ngram.ngram_query("ＣＡＦÉ  au\tlait ", 4096)
    b = ngram.ngram_query("café au lait", 4096)
    assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    assert ngram.ngram_query(" \n ", 4096)[0].size == 0


def test_hash_is_pinned() -> None:
    """The hash never changes silently: stored n-gram vectors depend on it."""
    assert reference.ngram_hash([0x110000, ord("a"), ord("b")], 3) == PINNED_HASH
    idx, _ = ngram.ngram_query("memory", 4096)
    assert idx.tolist() == PINNED_MEMORY_BUCKETS


PINNED_HASH = 5440384142797575692
PINNED_MEMORY_BUCKETS = [122, 372, 1030, 1613, 1958, 2233, 2402, 2507, 2629, 2672, 3912]


@st.composite
def csr_matrices(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """A random CSR matrix with sorted column indices per row."""
    n_cols = draw(st.integers(1, 12))
    rows = draw(st.lists(st.sets(st.integers(0, n_cols - 1)), max_size=15))
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    indices = np.array([c for r in rows for c in sorted(r)], dtype=np.int32)
    values = np.array(
        draw(st.lists(st.floats(-2, 2, width=32), min_size=len(indices), max_size=len(indices))),
        dtype=np.float32,
    )
    return indptr, indices, values, n_cols


@given(csr_matrices())
@SETTINGS
def test_csr_transpose_round_trips(case: tuple[np.ndarray, np.ndarray, np.ndarray, int]) -> None:
    """Transposing twice gives the matrix back; once gives the dense transpose, rows ascending."""
    indptr, indices, values, n_cols = case
    n_rows = len(indptr) - 1
    offsets, doc_ids, vals = ngram.csr_transpose(indptr, indices, values, n_cols)
    assert offsets.dtype == np.int64 and doc_ids.dtype == np.int32 and vals.dtype == np.float32
    for c in range(n_cols):
        assert (np.diff(doc_ids[offsets[c] : offsets[c + 1]]) > 0).all()
    dense = reference.csr_to_dense(indptr, indices, values, n_cols)
    assert np.array_equal(reference.csr_to_dense(offsets, doc_ids, vals, n_rows), dense.T)
    back = ngram.csr_transpose(offsets, doc_ids, vals, n_rows)
    assert back[0].tolist() == indptr.tolist()
    assert back[1].tolist() == indices.tolist()
    assert back[2].tobytes() == values.tobytes()


def test_csr_transpose_rejects_out_of_range_column() -> None:
    """A column index >= n_cols raises ValueError."""
    with pytest.raises(ValueError):
        ngram.csr_transpose(
            np.array([0, 1], np.int64), np.array([5], np.int32), np.ones(1, np.float32), 3
        )
