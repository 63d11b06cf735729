"""A search filter's document numbers located in a snapshot's segments (``engine/readers.py``).

A filter (ids or metadata) comes as document numbers in any order, with repeats and -1 for
what the index does not hold; the query needs, per segment view, the live local numbers it
allows, or a mask of them. Done with numpy, that was a dozen calls over arrays of thousands,
and numpy gives the GIL away in each call over ~500 elements: beside a thread that holds the
GIL (a merge, the writer, the application), each call waited up to the 5 ms switch interval to
get it back, ~64 ms for a filter of 12k documents. These kernels keep the GIL (``jit_held``:
they run inline on the event loop, ~0.1-1 ms) and do the same work in two calls per view.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.jit import jit_held


@jit_held
def sorted_numbers(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The distinct non-negative ``values``, ascending."""
    kept = np.empty(values.shape[0], dtype=np.int64)
    n = 0
    for i in range(values.shape[0]):
        if values[i] >= 0:
            kept[n] = values[i]
            n += 1
    kept = np.sort(kept[:n])
    m = 0
    for i in range(n):
        if m == 0 or kept[i] != kept[m - 1]:
            kept[m] = kept[i]
            m += 1
    return kept[:m].copy()


@jit_held
def live_locals(wanted: npt.NDArray[np.int64], docnums: npt.NDArray[np.int64],
                live: npt.NDArray[np.uint8]) -> npt.NDArray[np.int32]:
    """The local numbers, ascending, of the documents of ``wanted`` (ascending document
    numbers) that a segment holds (``docnums``: its local -> global numbers, ascending) and
    that are live in its view (``live``)."""
    out = np.empty(min(wanted.shape[0], docnums.shape[0]), dtype=np.int32)
    n = 0
    if docnums.shape[0] == 0:
        return out[:0].copy()
    first, last = docnums[0], docnums[docnums.shape[0] - 1]
    i = np.searchsorted(wanted, first)
    local = 0
    while i < wanted.shape[0] and wanted[i] <= last:
        target = wanted[i]
        # Both ascending: the next match is at or after the last one (a galloping search would
        # also do; a binary search from ``local`` is simple and exact).
        lo, hi = local, docnums.shape[0]
        while lo < hi:
            mid = (lo + hi) >> 1
            if docnums[mid] < target:
                lo = mid + 1
            else:
                hi = mid
        local = lo
        if local < docnums.shape[0] and docnums[local] == target and live[local] != 0:
            out[n] = local
            n += 1
        i += 1
    return out[:n].copy()


@jit_held
def mask_of(locals_: npt.NDArray[np.int32], n_docs: int) -> npt.NDArray[np.uint8]:
    """A mask of ``n_docs`` entries, 1 at ``locals_``."""
    mask = np.zeros(n_docs, dtype=np.uint8)
    for i in range(locals_.shape[0]):
        mask[locals_[i]] = 1
    return mask
