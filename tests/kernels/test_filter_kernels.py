"""kernels/filters.py: a filter's document numbers located in a segment, as the numpy code it
replaced located them (np.unique, np.searchsorted, a live mask)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hmsengine.kernels import filters


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(-3, 60), max_size=80))
def test_sorted_numbers_are_the_distinct_non_negative_ones(values) -> None:  # type: ignore[no-untyped-def]
    """sorted_numbers gives np.unique of the values >= 0, ascending, as int64."""
    got = filters.sorted_numbers(np.asarray(values, dtype=np.int64))
    expected = np.unique(np.asarray([v for v in values if v >= 0], dtype=np.int64))
    assert got.dtype == np.int64 and got.tolist() == expected.tolist()


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_live_locals_are_the_live_local_numbers_of_the_wanted(data) -> None:  # type: ignore[no-untyped-def]
    """For a segment's ascending document numbers and a live mask, live_locals of ascending
    wanted numbers (inside, before, after and between the segment's) gives the local numbers a
    searchsorted look-up gives, live ones only, ascending; mask_of marks exactly them."""
    docnums = np.asarray(sorted(data.draw(st.sets(st.integers(0, 200), max_size=60))), dtype=np.int64)
    live = np.asarray(data.draw(st.lists(st.integers(0, 1), min_size=len(docnums),
                                         max_size=len(docnums))), dtype=np.uint8)
    wanted = np.asarray(sorted(data.draw(st.sets(st.integers(0, 220), max_size=80))), dtype=np.int64)
    local = np.searchsorted(docnums, wanted)
    inside = local < len(docnums)
    local, match = local[inside], wanted[inside]
    local = local[docnums[local] == match]
    expected = local[live[local] != 0]
    for numbers in (docnums, _readonly(docnums)):
        got = filters.live_locals(wanted, numbers, live)
        assert got.dtype == np.int32 and got.tolist() == expected.tolist()
    mask = filters.mask_of(expected.astype(np.int32), len(docnums))
    assert mask.dtype == np.uint8 and np.flatnonzero(mask).tolist() == expected.tolist()


def _readonly(a: np.ndarray) -> np.ndarray:
    b = a.copy()
    b.flags.writeable = False
    return b
