"""Values the engine checks and parses on its hot paths (engine/values.py): a stored document's
metadata is parsed with json's C scanner straight on the text (``parse_metadata``): exactly what
json.loads gives for every text the engine stores, and json.loads' own answer (or error) for any
other text; an embedding's items are checked for booleans by their types in one pass."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hmsengine import Engine
from hmsengine.engine.values import check_metadata, parse_metadata

_SCALARS = st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=False,
                                                                             allow_infinity=False)
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=10), _JSON, max_size=6))
def test_stored_metadata_parses_as_json_loads_does(value: dict) -> None:  # type: ignore[type-arg]
    text = check_metadata(value)
    assert text is not None
    got = parse_metadata(text)
    assert got == json.loads(text) and json.dumps(got) == json.dumps(json.loads(text))


@pytest.mark.parametrize("text", [' {"a":1}', '{"a":1} ', '{"a":1}x', '{"a":1}{"b":2}', "",
                                  "nope", '{"a":', "[1,2]", "3"])
def test_other_texts_get_json_loads_answer(text: str) -> None:
    try:
        want = json.loads(text)
    except json.JSONDecodeError as exc:
        with pytest.raises(json.JSONDecodeError) as got:
            parse_metadata(text)
        assert str(got.value) == str(exc)
    else:
        assert parse_metadata(text) == want


async def test_documents_read_back_their_metadata() -> None:
    meta = {"k": [1, 2.5, None, True, "é"], "nested": {"a": {"b": []}}, "": 0}
    async with Engine.open(None) as engine:
        await engine.put_document("a", "text", metadata=meta)
        await engine.put_document("b", "text")
        a, b = await engine.get_documents(["a", "b"])
        assert a is not None and a.metadata == meta and b is not None and b.metadata is None
        assert (await engine.get_document("a")).metadata == meta  # type: ignore[union-attr]


async def test_an_embedding_of_booleans_is_refused_and_numbers_are_kept() -> None:
    """A bool is not a number here, wherever it sits in the sequence (checked by the items'
    types in one pass); ints and floats, and numpy arrays, are taken."""
    from hmsengine import InvalidRequest

    async with Engine.open(None) as engine:
        for bad in ([True, 0.0], [0.0, 1.0, False], (1, True)):
            with pytest.raises(InvalidRequest, match="booleans"):
                await engine.put_document("x", "t", embedding=bad)
        await engine.put_document("a", "t", embedding=[1, 0.0])
        import numpy as np

        await engine.put_document("b", "t", embedding=np.asarray([0.0, 1.0], dtype=np.float32))
        hits = await engine.search_documents("", embedding=[0, 1], k=2)
        assert [h.id for h in hits] == ["b", "a"]
