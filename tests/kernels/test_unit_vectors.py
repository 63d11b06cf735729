"""An embedding's checks and a query vector's normalising in one kernel call each
(``kernels/cosine.py``: ``checked_float32``, ``unit_float32``): the same bits as the numpy steps
they replace (``astype(np.float32)``, ``l2_normalise``, whose sum of squares is numpy's pairwise
``np.sum``), the same refusals in the same order, through the engine's query and put paths."""

from __future__ import annotations

import numpy as np
import pytest

from hmsengine import Engine, InvalidRequest
from hmsengine.engine.vectors import check_embedding, check_query_embedding
from hmsengine.kernels import cosine


def _lengths(rng: np.random.Generator) -> list[int]:
    # Every length up to 300 (each of numpy's leaf sizes and remainders), then random ones and
    # large ones (several levels of halving; the largest an embedding may have).
    return [*range(1, 301), *rng.integers(301, 5000, 300).tolist(), 16_384, 40_001, 65_536]


def test_unit_vectors_have_l2_normalise_bits() -> None:
    rng = np.random.default_rng(11)
    for d in _lengths(rng):
        scale = 10.0 ** float(rng.integers(-30, 30))
        values = rng.standard_normal(d) * scale
        if d % 5 == 0:
            values[rng.integers(0, d, max(1, d // 3))] = 0.0
        code, unit = cosine.unit_float32(values)
        want = cosine.l2_normalise(values.astype(np.float32))
        assert code == cosine.VECTOR_OK
        assert unit.dtype == np.float32 and unit.tobytes() == want.tobytes(), d


def test_checked_values_are_astype_float32() -> None:
    rng = np.random.default_rng(12)
    for d in (1, 7, 384, 1000):
        values = rng.standard_normal(d) * 1e30
        code, checked = cosine.checked_float32(values)
        assert code == cosine.VECTOR_OK and checked.tobytes() == values.astype(np.float32).tobytes()


def test_a_zero_vector_stays_zero_and_refusals_name_non_finite_first() -> None:
    code, unit = cosine.unit_float32(np.zeros(5))
    assert code == cosine.VECTOR_OK and unit.tolist() == [0.0] * 5
    big = float(np.finfo(np.float32).max)
    for kernel in (cosine.unit_float32, cosine.checked_float32):
        assert kernel(np.array([1.0, big]))[0] == cosine.VECTOR_OK  # at the limit: kept
        assert kernel(np.array([1.0, big * 1.0000001]))[0] == cosine.VECTOR_OVERFLOWS
        assert kernel(np.array([-big * 2, 1.0]))[0] == cosine.VECTOR_OVERFLOWS
        assert kernel(np.array([1e300, np.nan]))[0] == cosine.VECTOR_NOT_FINITE
        assert kernel(np.array([np.inf, 1e300]))[0] == cosine.VECTOR_NOT_FINITE


def test_the_checks_refuse_as_before_and_take_any_array() -> None:
    for bad, message in (([1.0, float("nan")], "NaN or infinity"), ([1e39], "overflows float32"),
                         ([], "non-empty"), ([[1.0]], "flat"), ("ab", "sequence of numbers"),
                         ([True, 1.0], "booleans"), (["x"], "flat sequence")):
        for check in (check_embedding, lambda v: check_query_embedding(v, None)):
            with pytest.raises(InvalidRequest, match=message):
                check(bad)
    with pytest.raises(InvalidRequest, match="3 dimensions, but this store's embeddings have 4"):
        check_query_embedding([1.0, 2.0, 3.0], 4)
    # Read-only, strided, float32, int and list inputs: one answer (the kernels get a new array).
    base = np.arange(1.0, 9.0)
    readonly = base.copy()
    readonly.flags.writeable = False
    want = cosine.l2_normalise(base[::2].astype(np.float32))
    for value in (base[::2], readonly[::2], base[::2].astype(np.float32), [1, 3, 5, 7],
                  [1.0, 3.0, 5.0, 7.0]):
        got = check_query_embedding(value, 4)
        assert got is not None and got.tobytes() == want.tobytes()
        checked = check_embedding(value)
        assert checked is not None and checked.tolist() == [1.0, 3.0, 5.0, 7.0]


async def test_a_document_queried_by_its_own_vector_scores_as_before() -> None:
    """The store normalises rows with ``l2_normalise_rows`` and the query with the kernel: the
    same bits, so a document found by its own embedding scores its row's exact self-product."""
    rng = np.random.default_rng(13)
    vectors = rng.standard_normal((20, 48)).astype(np.float32) * 3
    async with Engine.open(None) as engine:
        await engine.put_documents([{"id": f"d{i}", "text": "t", "embedding": v}
                                    for i, v in enumerate(vectors)])
        for i in (0, 7, 19):
            hits = await engine.search_documents("", embedding=vectors[i].tolist(), k=1)
            row = cosine.l2_normalise(vectors[i]).astype(np.float64)
            assert hits[0].id == f"d{i}" and hits[0].semantic == float(sum(row * row))
