"""The remember path: each part validated once, one representation from the input to the index."""

from __future__ import annotations

import inspect
import json
from typing import Any

import attrs
import pytest

from hmsengine import Engine, InvalidRequest, Memory, RememberInput
from hmsengine.client import MemoryClient
from hmsengine.engine import values as engine_values
from hmsengine.memory.inputs import prepare
from hmsengine.memory.stamp import STAMP_KEY, StampParser, with_stamp


async def test_remember_validates_once_and_never_parses_its_own_stamp(
        store_path: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A remember is validated by the memory layer alone (the engine checks nothing again) and
    the index takes the stamps it built, parsing no JSON; a raw put is validated and parsed."""
    engine_checks: list[str] = []
    parses: list[str | None] = []
    check_metadata = engine_values.check_metadata
    parse = StampParser.parse

    def counting_check(value: object, field: str = "metadata") -> str | None:
        engine_checks.append(field)
        return check_metadata(value, field)

    def counting_parse(self: StampParser, metadata_json: str | None) -> Any:
        parses.append(metadata_json)
        return parse(self, metadata_json)

    monkeypatch.setattr(engine_values, "check_metadata", counting_check)
    monkeypatch.setattr(StampParser, "parse", counting_parse)
    async with Engine.open(store_path) as engine:
        memory = Memory(engine)
        await memory.remember("warm up the index")  # the index is built at first use
        engine_checks.clear()
        parses.clear()
        results = await memory.remember_many([
            RememberInput(text=f"fact {i}", metadata={"n": i, "tag": "ü"}, subject=f"s{i % 2}")
            for i in range(3)])
        await memory.remember("one more", entities=("e",), importance=0.5)
        assert engine_checks == [] and parses == []
        stamps = [memory.index.facts[r.id] for r in results]
        assert [s.subject for s in stamps] == ["s0", "s1", "s0"] and stamps[0].digest == ""
        assert stamps[0] is stamps[2], "equal compact stamps of one batch are one object"
        # Positive control: a raw document write is validated by the engine and parsed.
        stamped = (await engine.get_document(results[0].id)).metadata  # type: ignore[union-attr]
        await engine.put_document("raw", "raw text", metadata=stamped)
        assert engine_checks and len(parses) == 1
        assert memory.index.facts["raw"].subject == "s0"


async def test_stored_metadata_is_the_merged_object_encoded_once(store_path: str | None) -> None:
    """A fact's stored metadata is exactly the JSON of the caller's keys then the stamp."""
    async with Engine.open(store_path) as engine:
        memory = Memory(engine)
        user = {"z": 1, "a": [1.5, "naïve \u2028"], "nested": {"k": None}}
        result = await memory.remember("metadata order", metadata=user, importance=2.0)
        doc = await engine.get_document(result.id)
        assert doc is not None and doc.metadata is not None
        assert list(doc.metadata) == ["z", "a", "nested", STAMP_KEY]
        stamp = memory.index.facts[result.id]
        expected = json.dumps({**user, STAMP_KEY: doc.metadata[STAMP_KEY]}, ensure_ascii=False,
                              separators=(",", ":"))
        assert with_stamp(json.dumps(user, ensure_ascii=False, separators=(",", ":")),
                          _full(stamp, doc.metadata[STAMP_KEY])) == expected
        assert with_stamp(None, _full(stamp, doc.metadata[STAMP_KEY])) == json.dumps(
            {STAMP_KEY: doc.metadata[STAMP_KEY]}, ensure_ascii=False, separators=(",", ":"))


def _full(compact: Any, stored: list[Any]) -> Any:
    return compact._evolve(digest=stored[1])


def test_prepared_fact_is_never_mutated() -> None:
    """Putting a prepared fact at two ingest times leaves it as it was and gives two stamps."""
    prepared = prepare(RememberInput(text="once", metadata={"a": 1}))
    first, stamp1 = prepared.put(1000)
    second, stamp2 = prepared.put(2000)
    assert prepared.stamp.ingest_time == 0
    assert (stamp1.ingest_time, stamp2.ingest_time) == (1000, 2000)
    assert first.metadata_json != second.metadata_json
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        prepared.id = "other"  # type: ignore[misc]


async def test_reserved_tombstone_key_refused_in_a_fact(store_path: str | None) -> None:
    """The engine's reserved tombstone key is refused in a fact's metadata, nothing written."""
    async with Engine.open(store_path) as engine:
        memory = Memory(engine)
        with pytest.raises(InvalidRequest, match="_hms_tombstone"):
            await memory.remember("x", metadata={"_hms_tombstone": 1})
        await memory.remember("a string value may say it", metadata={"note": '"_hms_tombstone":'})
        assert engine.revision == 1


def _keywords(fn: Any) -> dict[str, Any]:
    return {name: p.default for name, p in inspect.signature(fn).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_facade_spells_out_the_parameters_the_client_and_inputs_have() -> None:
    """Memory.remember, recall and explain take the keyword parameters (names and defaults) of
    RememberInput and of the HTTP client: the contract is visible to readers and type checkers."""
    fields = {f.name: f.default for f in attrs.fields(RememberInput) if f.name != "text"}
    assert _keywords(Memory.remember) == fields == _keywords(MemoryClient.remember)
    assert _keywords(Memory.recall) == _keywords(MemoryClient.recall)
    assert _keywords(Memory.explain) == _keywords(MemoryClient.explain)
    for method in (Memory.remember, Memory.recall, Memory.explain, Memory.remember_file):
        kinds = {p.kind for p in inspect.signature(method).parameters.values()}
        assert inspect.Parameter.VAR_POSITIONAL not in kinds


async def test_unknown_keywords_are_invalid_requests(store_path: str | None) -> None:
    """An option recall, explain or remember_file does not have is InvalidRequest naming it."""
    async with Engine.open(store_path) as engine:
        memory = Memory(engine)
        fact = await memory.remember("a fact")
        with pytest.raises(InvalidRequest, match="limit: unknown option"):
            await memory.recall("fact", limit=3)  # type: ignore[call-arg]
        with pytest.raises(InvalidRequest, match="colour: unknown option"):
            await memory.explain("fact", fact.id, colour=1)  # type: ignore[call-arg]
        with pytest.raises(InvalidRequest, match="pass summary="):
            await memory.remember_file("/nowhere", text="no")  # type: ignore[call-arg]
