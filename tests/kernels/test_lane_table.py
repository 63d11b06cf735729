"""The lane kernel's table of addresses (kernels/address.py, kernels/lane.py): what it reads is
what it was given, and it refuses arrays it would read wrongly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hmsengine.kernels import bm25, lane
from hmsengine.kernels.address import address_of, array_at
from hmsengine.kernels.jit import jit
from hmsengine.kernels.norms import length_codes


@jit
def _read_back(address: int, n: int, which: int) -> np.ndarray:
    # array_at as the lane kernel uses it, compiled (plain Python without the JIT)
    if which == 0:
        return array_at(address, n, np.int64).astype(np.float64)
    if which == 1:
        return array_at(address, n, np.int32).astype(np.float64)
    if which == 2:
        return array_at(address, n, np.float32).astype(np.float64)
    if which == 3:
        return array_at(address, n, np.float64).copy()
    return array_at(address, n, np.uint8).astype(np.float64)


DTYPES = (np.int64, np.int32, np.float32, np.float64, np.uint8)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_array_at_reads_back_what_address_of_names(data) -> None:  # type: ignore[no-untyped-def]
    """Every dtype the lane reads, any length (0 included), plain and compiled: the same values,
    and the plain view shares the array's memory (no copy)."""
    which = data.draw(st.integers(0, len(DTYPES) - 1))
    dtype = DTYPES[which]
    values = data.draw(hnp.arrays(dtype, st.integers(0, 50),
                                  elements=hnp.from_dtype(np.dtype(dtype), allow_nan=False)))
    address = address_of(values)
    assert _read_back(address, values.shape[0], which).tolist() == \
        values.astype(np.float64).tolist()
    view = array_at(address, values.shape[0], dtype)
    assert view.tolist() == values.tolist()
    if values.shape[0]:
        values[0] = values[-1]
        assert view[0] == values[-1]


def _segment(n: int = 4) -> dict[str, np.ndarray]:
    lengths, codes = length_codes(np.array([3, 1, 3, 2][:n], dtype=np.int32))
    return {"offsets": np.array([0, 2, 3], dtype=np.int64),
            "doc_ids": np.array([0, 2, 1], dtype=np.int32),
            "tfs": np.array([1.0, 2.0, 1.0], dtype=np.float32),
            "norm_table": bm25.bm25_norms(lengths, 2.0), "codes": codes,
            "allowed": np.ones(n, dtype=np.uint8),
            "docnums": np.arange(n, dtype=np.int64)}


def _row(table: np.ndarray, s: dict[str, np.ndarray]) -> None:
    lane.lane_row(table, 0, 0, False, s["offsets"], s["doc_ids"], s["tfs"],
                  (s["norm_table"], s["codes"]), s["allowed"], s["docnums"])


def test_lane_row_records_the_arrays_and_their_lengths() -> None:
    s = _segment()
    table = lane.new_table(1)
    lane.lane_row(table, 0, 3, True, s["offsets"], s["doc_ids"], s["tfs"],
                  (s["norm_table"], s["codes"]), s["allowed"], s["docnums"])
    r = table[0]
    assert (r[lane.COLUMN], r[lane.N_DOCS], r[lane.CHECK]) == (3, 4, 1)
    assert (r[lane.N_OFFSETS], r[lane.N_POSTINGS], r[lane.N_LENGTHS]) == (3, 3, 3)
    for column, name in ((lane.OFFSETS, "offsets"), (lane.DOC_IDS, "doc_ids"), (lane.TFS, "tfs"),
                         (lane.NORM_TABLE, "norm_table"), (lane.CODES, "codes"),
                         (lane.ALLOWED, "allowed"), (lane.DOCNUMS, "docnums")):
        assert r[column] == address_of(s[name])


def test_lane_row_takes_read_only_arrays() -> None:
    """Persisted segments' arrays are read-only: their addresses are read like any other."""
    s = _segment()
    for array in s.values():
        array.setflags(write=False)
    table = lane.new_table(1)
    _row(table, s)
    assert table[0, lane.DOCNUMS] == address_of(s["docnums"])


@pytest.mark.parametrize("name, bad", [
    ("offsets", np.array([0, 2, 3], dtype=np.int32)),  # a dtype the kernel would misread
    ("doc_ids", np.array([0, 2, 1], dtype=np.int64)),
    ("tfs", np.array([1.0, 2.0, 1.0], dtype=np.float64)),
    ("norm_table", np.ones(8)[::2]),  # strided: the address of a view that skips elements
    ("codes", np.zeros(4, dtype=np.int64)),
    ("norm_table", np.zeros(0)),  # no norm for the codes to index
    ("allowed", np.ones(4, dtype=bool)),
    ("docnums", np.arange(8, dtype=np.int64).reshape(2, 4)),
    ("docnums", np.arange(5, dtype=np.int64)),  # not one per document
    ("tfs", np.ones(2, dtype=np.float32)),  # not one per posting
], ids=["offsets-int32", "doc_ids-int64", "tfs-float64", "norm_table-strided", "codes-int64",
        "norm_table-empty", "allowed-bool",
        "docnums-2d", "docnums-length", "tfs-length"])
def test_lane_row_refuses_what_the_kernel_would_misread(name: str, bad: np.ndarray) -> None:
    s = _segment()
    s[name] = bad
    table = lane.new_table(1)
    with pytest.raises(ValueError):
        _row(table, s)
    assert not table.any()
