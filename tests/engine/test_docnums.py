"""``DocnumMap`` behaves as the dict it replaces, with a base adopted from the table's rows or
not, through every mutation the indexer makes."""

from __future__ import annotations

import contextlib
import random

import numpy as np
import pytest

from hmsengine.engine.docnums import DocnumMap


def test_a_base_map_and_its_changes_behave_as_a_dict() -> None:
    """Random gets, sets, pops, deletes and membership tests on a map holding an adopted base
    (some table rows left out) agree with a plain dict at every step, as do len and iteration."""
    rng = random.Random(4)
    ids = [f"d{i}" for i in range(300)]
    row_of = {doc_id: row for row, doc_id in enumerate(ids)}
    rows = np.asarray([r for r in range(300) if r % 7], dtype=np.int64)
    docnums = rows * 10 + 5
    mapping, plain = DocnumMap(), {}
    mapping.adopt_base(row_of, rows, docnums)
    plain.update({ids[r]: int(d) for r, d in zip(rows.tolist(), docnums.tolist(), strict=True)})
    names = [*ids, *(f"new{i}" for i in range(40))]
    for step in range(3000):
        doc_id = rng.choice(names)
        action = rng.randrange(5)
        if action == 0:
            mapping[doc_id] = plain[doc_id] = 100_000 + step
        elif action == 1:
            assert mapping.pop(doc_id, None) == plain.pop(doc_id, None)
        elif action == 2 and doc_id in plain:
            del mapping[doc_id]
            del plain[doc_id]
        elif action == 3:
            with pytest.raises(KeyError) if doc_id not in plain else contextlib.nullcontext():
                assert mapping[doc_id] == plain[doc_id]
        assert (doc_id in mapping) == (doc_id in plain)
        assert mapping.get(doc_id) == plain.get(doc_id)
        assert len(mapping) == len(plain)
        if step % 100 == 0:  # the batch look-up agrees too (-1 for the absent)
            asked = [*rng.sample(names, 60), "never"]
            assert mapping.get_many(asked).tolist() == [plain.get(i, -1) for i in asked]
    assert sorted(mapping) == sorted(plain) and dict(mapping.items()) == plain
    with pytest.raises(KeyError):
        del mapping["never"]
    with pytest.raises(KeyError):
        mapping.pop("never")
    with pytest.raises(RuntimeError, match="empty map"):
        mapping.adopt_base(row_of, rows, docnums)


def test_without_a_base_it_is_a_plain_dict() -> None:
    """No base adopted (an in-memory store, a first open): every id lives in the dict part."""
    mapping = DocnumMap()
    assert not mapping and mapping.get("a") is None and mapping.pop("a", 7) == 7
    mapping.update({"a": 1, "b": 2})
    assert mapping == {"a": 1, "b": 2} and "a" in mapping and mapping.pop("a") == 1
    assert list(mapping) == ["b"]
    with pytest.raises(KeyError):
        mapping.pop("a")
    assert mapping.get_many(["b", "a", "b"]).tolist() == [2, -1, 2]
    assert mapping.get_many([]).dtype == np.int64
    with pytest.raises(TypeError):
        mapping.get_many([["unhashable"]])

