"""The store keeps its memory policies (issue 23, item 8): recorded by ``hms init`` or by the
Memory that first writes to a new store, applied by every later Memory, ``hms`` command and
server tenant; a config that contradicts the record is refused, never applied on the side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hmsengine import Engine, InvalidRequest, Memory, MemoryConfig
from hmsengine.cli import main
from hmsengine.memory.stored_policies import SECTION

LISBON = 1_704_067_200_000  # 2024-01-01
PORTO = 1_748_736_000_000  # 2025-06-01


async def _carol(memory: Memory) -> list[tuple[str, str]]:
    await memory.remember("Carol lives in Lisbon", subject="carol/city", valid_from=LISBON)
    await memory.remember("Carol lives in Porto", subject="carol/city", valid_from=PORTO)
    return [(h.fact.text, h.status) for h in await memory.recall("Carol lives", history="all")]


async def test_the_first_writers_policies_are_the_stores(tmp_path: Path) -> None:
    """A Memory made with latest-by-subject records it at its first write; a later plain
    Memory, also after a reopen, applies it: one Carol fact current, the other superseded."""
    async with Engine.open(tmp_path / "s") as engine:
        statuses = await _carol(Memory(engine, {"supersession": "latest-by-subject"}))
        assert sorted(statuses) == [("Carol lives in Lisbon", "superseded"),
                                    ("Carol lives in Porto", "current")]
        assert engine.settings[SECTION]["supersession"] == "latest-by-subject"
        assert Memory(engine).config.supersession == "latest-by-subject"
    async with Engine.open(tmp_path / "s") as engine:
        hits = await Memory(engine).recall("where does Carol live")
        assert [h.fact.text for h in hits] == ["Carol lives in Porto"]


async def test_a_config_against_the_record_is_refused(tmp_path: Path) -> None:
    """With a record, a config setting another policy value is InvalidRequest naming it (and
    how to change the record); one setting the same, or none, is accepted."""
    async with Engine.open(tmp_path / "s") as engine:
        await Memory(engine, MemoryConfig(supersession="latest-by-subject")).remember("x")
        with pytest.raises(InvalidRequest, match=r"config\.supersession") as refused:
            Memory(engine, {"supersession": "none"})
        assert "hms init" in refused.value.hint
        with pytest.raises(InvalidRequest, match=r"config\.historicalMultiplier"):
            Memory(engine, {"historicalMultiplier": 0.5})
        Memory(engine, {"supersession": "latest-by-subject", "fileBase": str(tmp_path)})
        assert Memory(engine, MemoryConfig()).config.supersession == "latest-by-subject"


async def test_without_policies_nothing_is_recorded_and_memories_agree(tmp_path: Path) -> None:
    """A Memory that sets no policy records nothing; a second one that sets one records it at
    its first write, and the first Memory over the same engine follows the record from then on."""
    async with Engine.open(tmp_path / "s") as engine:
        plain = Memory(engine)
        await plain.remember("a fact")
        assert SECTION not in engine.settings
        slot = Memory(engine, {"supersession": "latest-by-subject"})
        assert not plain.slot_policy
        await slot.remember("another fact")
        assert plain.slot_policy and engine.settings[SECTION]["supersession"] == "latest-by-subject"


def test_hms_init_records_and_every_command_applies_it(tmp_path: Path, capsys) -> None:
    """hms init --supersession latest-by-subject: two "Carol lives in" facts from the command
    line are one current, one superseded, for hms recall and for Python alike; init on the
    existing store prints and changes the record."""
    store = str(tmp_path / "s")
    assert main(["init", "--store", store, "--supersession", "latest-by-subject"]) == 0
    assert "initialized" in capsys.readouterr().out
    for text, when in (("Carol lives in Lisbon", "2024-01-01T00:00:00Z"),
                       ("Carol lives in Porto", "2025-06-01T00:00:00Z")):
        assert main(["--store", store, "remember", text, "--subject", "carol/city",
                     "--valid-from", when]) == 0
    capsys.readouterr()
    assert main(["--store", store, "--json", "recall", "Carol lives"]) == 0
    assert [h["fact"]["text"] for h in json.loads(capsys.readouterr().out)["hits"]] == [
        "Carol lives in Porto"]
    assert main(["--store", store, "--json", "init"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["created"] is False and shown["policies"]["supersession"] == "latest-by-subject"
    assert main(["--store", store, "init", "--supersession", "none"]) == 0
    capsys.readouterr()
    assert main(["--store", store, "--json", "recall", "Carol lives"]) == 0
    assert len(json.loads(capsys.readouterr().out)["hits"]) == 2
    (tmp_path / "config.json").write_text(json.dumps({"recency": {"kind": "bogus"}}))
    assert main(["--store", store, "init", "--memory-config", str(tmp_path / "config.json")]) == 2
    assert "config.recency.kind" in capsys.readouterr().err
