"""An embedding's checks, for a put and for a vector query: one kernel call each
(``kernels/cosine.py``: ``checked_float32``, ``unit_float32``) after the Python-level type and
shape checks, with the same errors in the same order as the numpy steps they replace."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InvalidRequest
from ..kernels.cosine import VECTOR_NOT_FINITE, VECTOR_OVERFLOWS, checked_float32, unit_float32

MAX_EMBEDDING_DIM = 65536


def check_embedding(value: object, field: str = "embedding") -> np.ndarray | None:
    """Validate an embedding: a non-empty sequence of finite numbers; returns float32."""
    array = _embedding_array(value, field)
    if array is None:
        return None
    code, checked = checked_float32(array)
    _raise_for(code, field)
    return checked


def check_query_embedding(value: object, dim: int | None,
                          field: str = "embedding") -> np.ndarray | None:
    """``check_embedding``, then of ``dim`` dimensions when the store has any (``dim`` not
    None), scaled to unit length as the store's rows are (``l2_normalise``, the same bits): a
    vector query's one kernel call for checks and normalising (``unit_float32``)."""
    array = _embedding_array(value, field)
    if array is None:
        return None
    code, unit = unit_float32(array)
    _raise_for(code, field)
    if dim is not None and unit.shape[0] != dim:
        raise InvalidRequest(f"{field}: {unit.shape[0]} dimensions, but this store's "
                             f"embeddings have {dim}")
    return unit


def _embedding_array(value: object, field: str) -> np.ndarray | None:
    """``value`` as a flat float64 array of 1 to ``MAX_EMBEDDING_DIM`` numbers, or None."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise InvalidRequest(f"{field}: expected a sequence of numbers, got {type(value).__name__}")
    # One pass in C over the items' types (bool has no subclasses, so this is isinstance):
    # ~7 against ~16 us for the generator over a 384-number list, on every vector query.
    if not isinstance(value, np.ndarray) and bool in set(map(type, value)):
        raise InvalidRequest(f"{field}: booleans are not numbers here")
    try:
        # Always a new array: the kernels are compiled for a writable contiguous one (a
        # read-only or strided caller's array would compile another signature inline).
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidRequest(f"{field}: expected a flat sequence of numbers") from None
    if array.ndim != 1 or array.size == 0:
        raise InvalidRequest(f"{field}: expected a non-empty flat sequence of numbers")
    if array.size > MAX_EMBEDDING_DIM:
        raise InvalidRequest(f"{field}: {array.size} dimensions is over the limit of {MAX_EMBEDDING_DIM}")
    return array


def _raise_for(code: int, field: str) -> None:
    if code == VECTOR_NOT_FINITE:
        raise InvalidRequest(f"{field}: contains NaN or infinity")
    # Refused above float32's largest value, not where rounding would make it infinite: a
    # value a hair above it would round down to it and be stored as another number.
    if code == VECTOR_OVERFLOWS:
        raise InvalidRequest(f"{field}: a value overflows float32")
