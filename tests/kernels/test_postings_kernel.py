"""build_postings against a Counter-based reference, and the kernels' warm-up."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hmsengine.kernels import bm25, reference, warm_up

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
SETTINGS = settings(
    max_examples=60 if NO_JIT else 200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _token_docs(n_terms: int) -> st.SearchStrategy[tuple[int, list[list[int]]]]:
    docs = st.lists(st.lists(st.integers(0, n_terms - 1), max_size=12), max_size=25)
    return st.tuples(st.just(n_terms), docs)


@given(st.integers(1, 20).flatmap(_token_docs))
@SETTINGS
def test_build_postings_equals_counter_reference(case: tuple[int, list[list[int]]]) -> None:
    """Postings, term frequencies and document lengths equal a Counter-based construction."""
    n_terms, docs = case
    flat = np.array([t for doc in docs for t in doc], dtype=np.int32)
    starts = np.zeros(len(docs) + 1, dtype=np.int64)
    starts[1:] = np.cumsum([len(doc) for doc in docs])
    got = bm25.build_postings(flat, starts, n_terms)
    want = reference.build_postings(docs, n_terms)
    for g, w, dtype in zip(got, want, (np.int64, np.int32, np.float32, np.int32), strict=True):
        assert g.dtype == dtype
        assert g.tolist() == w.tolist()


def test_build_postings_rejects_unknown_term() -> None:
    """A term id >= n_terms raises ValueError."""
    with pytest.raises(ValueError):
        bm25.build_postings(np.array([3], np.int32), np.array([0, 1], np.int64), 2)


def test_build_postings_empty_batch() -> None:
    """No documents give empty postings with n_terms + 1 zero offsets."""
    offsets, doc_ids, tfs, lens = bm25.build_postings(
        np.zeros(0, np.int32), np.zeros(1, np.int64), 3
    )
    assert offsets.tolist() == [0, 0, 0, 0] and doc_ids.size == tfs.size == lens.size == 0


def test_warm_up_runs() -> None:
    """warm_up calls every kernel on tiny inputs without error."""
    warm_up()
