"""The client-side vector mask: an orthogonal, key-derived, dense map; exactly the map of the
TypeScript client (the shared fixture); refuses bad keys and vectors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hmsengine import InvalidRequest
from hmsengine.vectormask import VectorMask, rounds_for

FIXTURE = Path(__file__).resolve().parents[1] / "clients/typescript/test/fixtures/vector-mask-v1.json"


def _key(text: str) -> str | bytes:
    return bytes.fromhex(text[4:]) if text.startswith("hex:") else text


def _matrix(mask: VectorMask, dim: int) -> np.ndarray:
    """The map as a matrix: the images of the basis vectors, as columns."""
    return np.column_stack([mask.mask(np.eye(dim)[i]) for i in range(dim)])


def test_the_map_is_orthogonal_and_keeps_every_inner_product():
    """Masked vectors have the raw vectors' inner products and norms (so cosine scores and
    rankings), unmask inverts mask, and the matrix of the map is orthogonal."""
    rng = np.random.default_rng(7)
    mask = VectorMask("a passphrase")
    for dim in (2, 3, 16, 384, 385):
        raw = rng.standard_normal((6, dim))
        masked = np.array([mask.mask(v) for v in raw])
        assert np.allclose(masked @ masked.T, raw @ raw.T, rtol=1e-12, atol=1e-12)
        assert not np.allclose(masked, raw)
        back = np.array([mask.unmask(v) for v in masked])
        assert np.allclose(back, raw, rtol=0, atol=1e-12)
    m = _matrix(mask, 24)
    assert np.allclose(m.T @ m, np.eye(24), atol=1e-12)


def test_the_map_is_dense_deterministic_and_secret():
    """Every masked coordinate depends on every raw one (no zero in the matrix after the
    rounds), the same key gives the same bits in a new object, another key another map."""
    dim = 96
    m = _matrix(VectorMask(b"k" * 16), dim)
    assert np.count_nonzero(np.abs(m) > 1e-9) == dim * dim
    assert rounds_for(dim) == 16 and rounds_for(2) == 4
    v = np.linspace(-1, 1, dim)
    assert VectorMask(b"k" * 16).mask(v) == VectorMask(b"k" * 16).mask(v)
    other = np.array(VectorMask(b"j" * 16).mask(v))
    assert not np.allclose(other, VectorMask(b"k" * 16).mask(v))
    assert VectorMask("k" * 16).mask(v) != VectorMask(b"k" * 16).mask(v)  # passphrase != bytes
    assert "zq" not in repr(VectorMask("zq" * 8))


def test_the_shared_fixture_fixes_the_map_bit_for_bit():
    """The fixture the TypeScript client's tests also read: the Python client gives exactly its
    numbers, so both clients mask alike (a change of the map must be a new version)."""
    doc = json.loads(FIXTURE.read_text())
    assert doc["version"] == 1 and len(doc["cases"]) >= 5
    for case in doc["cases"]:
        assert list(VectorMask(_key(case["key"])).mask(case["vector"])) == case["masked"]


def test_bad_keys_and_vectors_are_refused():
    """Short raw keys, empty passphrases, other key types, vectors of fewer than 2 numbers,
    non-finite numbers and non-vectors are InvalidRequest naming the field."""
    with pytest.raises(InvalidRequest, match="at least 16 bytes"):
        VectorMask(b"short")
    with pytest.raises(InvalidRequest, match="empty passphrase"):
        VectorMask("")
    with pytest.raises(InvalidRequest, match="expected a passphrase"):
        VectorMask(42)  # type: ignore[arg-type]
    mask = VectorMask("key")
    with pytest.raises(InvalidRequest, match=r"embedding: a masked vector has 2"):
        mask.mask([1.0])
    with pytest.raises(InvalidRequest, match=r"inputs\[0\]\.embedding: expected finite"):
        mask.mask([1.0, float("nan")], "inputs[0].embedding")
    with pytest.raises(InvalidRequest, match="expected a vector"):
        mask.mask("12")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest, match="expected a vector"):
        mask.mask([[1.0, "x"]])  # type: ignore[list-item]
