"""A stored document's metadata is parsed with json's C scanner straight on the text
(engine/values.parse_metadata): exactly what json.loads gives for every text the engine stores,
and json.loads' own answer (or error) for any other text."""

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
