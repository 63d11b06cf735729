"""Postings of several segments merged into one (a counting sort by column), without the GIL.

A merge runs in a worker thread while the event loop answers queries. Done with numpy (repeat,
boolean masks, fancy indexing and a stable argsort over every posting), most of its time held
the GIL: merging 80k and 460k documents kept another thread from running for up to ~215 ms.
These kernels release it and sort by counting instead (linear, no argsort).

The merged order is that of a stable sort by new column of the parts' postings concatenated
part by part: within a column, the first part's postings, then the second's, each in its own
order. When the parts are not in document order (``sort_columns``) each column is then sorted
by document (the documents of one column are distinct).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.jit import jit


@jit
def count_kept(offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
               colmap: npt.NDArray[np.int64], docmap: npt.NDArray[np.int64],
               counts: npt.NDArray[np.int64]) -> None:
    """Add to ``counts[colmap[t]]`` the postings of column ``t`` whose document is kept
    (``docmap[d] >= 0``), for every column of one part."""
    for t in range(offsets.shape[0] - 1):
        n = 0
        for p in range(offsets[t], offsets[t + 1]):
            if docmap[doc_ids[p]] >= 0:
                n += 1
        counts[colmap[t]] += n


@jit
def scatter_kept(offsets: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int32],
                 values: npt.NDArray[np.float32], colmap: npt.NDArray[np.int64],
                 docmap: npt.NDArray[np.int64], cursor: npt.NDArray[np.int64],
                 out_docs: npt.NDArray[np.int32], out_values: npt.NDArray[np.float32]) -> None:
    """Write one part's kept postings, renumbered (``docmap``), at ``cursor[colmap[t]]`` (the
    next free place of each merged column; advanced past them)."""
    for t in range(offsets.shape[0] - 1):
        c = colmap[t]
        at = cursor[c]
        for p in range(offsets[t], offsets[t + 1]):
            d = docmap[doc_ids[p]]
            if d >= 0:
                out_docs[at] = d
                out_values[at] = values[p]
                at += 1
        cursor[c] = at


@jit
def sort_columns(offsets: npt.NDArray[np.int64], docs: npt.NDArray[np.int32],
                 values: npt.NDArray[np.float32]) -> None:
    """Sort each column's postings by document, in place (documents distinct per column)."""
    for c in range(offsets.shape[0] - 1):
        lo = offsets[c]
        hi = offsets[c + 1]
        ordered = True
        for p in range(lo + 1, hi):
            if docs[p] < docs[p - 1]:
                ordered = False
                break
        if ordered:
            continue
        order = np.argsort(docs[lo:hi], kind="mergesort")
        d = docs[lo:hi][order]
        v = values[lo:hi][order]
        docs[lo:hi] = d
        values[lo:hi] = v
