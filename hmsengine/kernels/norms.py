"""A segment's BM25 length norms as the kernels read them: per document, or per distinct length.

Every BM25 kernel takes a segment's norms as ``norms`` (type ``Norms``) and reads document
``d``'s through ``norm_of(norms, d)``, the count of documents through ``n_norms(norms)``:

* ``float64[n_docs]``: a norm per document (``bm25.bm25_norms`` of the lengths; the tests and
  the reference use this form);
* ``(table, codes)``: ``table: float64[n_lengths]``, the norms of the segment's distinct lengths
  (``bm25_norms`` of them), and ``codes: int32[n_docs]``, each document's index into it
  (``length_codes``). The engine uses this form. Every write changes the average length, so
  each new snapshot needs new norms: this way that is a table of tens of values, not a pass
  over every document (~0.4 ms at 1M documents); and a kernel's random reads per posting touch
  4 bytes a document in a small table's index instead of 8 (a 460k-document segment's codes
  stay in a 2 MB L2 cache, its norms did not: measured ~20-40% off the per-posting loop).

Both forms give the same bits: ``table[codes[d]]`` is ``bm25_norms`` of document ``d``'s length,
computed by the same expression.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from numba import types
from numba.core.extending import overload

from hmsengine.kernels.jit import jit

Norms = npt.NDArray[np.float64] | tuple[npt.NDArray[np.float64], npt.NDArray[np.int32]]

# Lengths up to this many times the document count are coded through a presence array (one
# pass, no sort); a segment with longer documents than that sorts its distinct lengths instead.
_DENSE_LENGTHS = 4


def length_codes(doc_lens: npt.ArrayLike) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """``(lengths, codes)``: the distinct values of ``doc_lens`` (non-negative integers)
    ascending, as int32, and each document's index into them, as int32, so that
    ``lengths[codes] == doc_lens``. ValueError for a negative length.

    One kernel call (``_dense_codes``) when the lengths are dense enough for a presence array;
    a sort (``np.unique``) otherwise. The first search after every write codes its tail's
    lengths: numpy's eight calls took ~9-34 us there for forty documents, the kernel ~1-2 us.
    """
    lens = np.array(doc_lens, dtype=np.int64).reshape(-1)  # a private copy: one kernel type
    if not lens.size:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    lengths, codes, dense = _dense_codes(lens, _DENSE_LENGTHS * lens.size + 1024)
    if not dense:
        distinct, inverse = np.unique(lens, return_inverse=True)
        return distinct.astype(np.int32), inverse.astype(np.int32).reshape(-1)
    return lengths, codes


@jit
def _dense_codes(lens: npt.NDArray[np.int64], limit: int) -> tuple[npt.NDArray[np.int32],
                                                                  npt.NDArray[np.int32], bool]:
    # ``length_codes`` through a presence array over 0..max, when max <= limit; else two empty
    # arrays and False (the caller sorts). Raises for a negative length either way.
    top = 0
    for i in range(lens.shape[0]):
        if lens[i] < 0:
            raise ValueError("document lengths must be non-negative")
        top = max(top, lens[i])
    if top > limit:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), False
    index = np.full(top + 1, -1, dtype=np.int32)
    for i in range(lens.shape[0]):
        index[lens[i]] = 0  # present
    n_lengths = 0
    for value in range(top + 1):
        if index[value] == 0:
            index[value] = n_lengths + 1  # 1-based while counting: 0 still means present
            n_lengths += 1
    lengths = np.empty(n_lengths, dtype=np.int32)
    for value in range(top + 1):
        if index[value] > 0:
            index[value] -= 1
            lengths[index[value]] = value
    codes = np.empty(lens.shape[0], dtype=np.int32)
    for i in range(lens.shape[0]):
        codes[i] = index[lens[i]]
    return lengths, codes, True


def norm_of(norms: Norms, d: Any) -> Any:
    """Document ``d``'s norm (see the module docstring for the two forms)."""
    if isinstance(norms, tuple):
        return norms[0][norms[1][d]]
    return norms[d]


def n_norms(norms: Norms) -> int:
    """The number of documents ``norms`` covers."""
    if isinstance(norms, tuple):
        return int(norms[1].shape[0])
    return int(norms.shape[0])


@overload(norm_of, inline="always")
def _norm_of_compiled(norms: Any, d: Any) -> Any:
    if isinstance(norms, types.BaseTuple):
        def by_length(norms: Any, d: Any) -> Any:
            return norms[0][norms[1][d]]
        return by_length

    def per_document(norms: Any, d: Any) -> Any:
        return norms[d]
    return per_document


@overload(n_norms, inline="always")
def _n_norms_compiled(norms: Any) -> Any:
    if isinstance(norms, types.BaseTuple):
        def by_length(norms: Any) -> Any:
            return norms[1].shape[0]
        return by_length

    def per_document(norms: Any) -> Any:
        return norms.shape[0]
    return per_document
