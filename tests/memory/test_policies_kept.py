"""Object policies and the policies a store keeps (issues 23 and 28): an object policy has no
JSON form, so it is never recorded and applies in its own process only; it is refused over a
store that keeps another value for that policy; the importance policy is kept like the others."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from hmsengine import Engine, InvalidRequest, Memory, MemoryConfig
from hmsengine.memory.stored_policies import SECTION, change
from hmsengine.policies import FactInfo, Importance, Recency

DAY = 86_400_000


class SameKindLatest:
    """Latest by subject between facts of one kind only."""

    def supersedes(self, newer: FactInfo, older: FactInfo) -> bool:
        return newer.kind == older.kind


class Nothing:
    """Forgetting that selects nothing."""

    def select(self, facts: Sequence[FactInfo], now: int) -> list[str]:
        return []


async def _slot(memory: Memory) -> None:
    await memory.remember("Alice lives in Paris", id="f1", subject="alice", valid_from=DAY)
    await memory.remember("Alice likes Paris", id="p1", subject="alice", kind="profile",
                          valid_from=2 * DAY)
    await memory.remember("Alice lives in Rome", id="f2", subject="alice", valid_from=3 * DAY)


async def _current(memory: Memory) -> list[str]:
    return sorted(h.fact.id for h in await memory.recall("Alice", k=10))


async def test_an_object_policy_is_never_recorded(tmp_path: Path) -> None:
    """A Memory with an object supersession and a named recency records the recency at its
    first write and nothing for supersession (the default stands); the object applies in its
    process; a later plain Memory, also after a reopen, applies the record (no supersession)."""
    config = MemoryConfig(supersession=SameKindLatest(),
                          recency=Recency(kind="exponential", half_life_ms=30 * DAY))
    async with Engine.open(tmp_path / "s") as engine:
        memory = Memory(engine, config)
        await _slot(memory)
        assert await _current(memory) == ["f2", "p1"]  # the object's answer
        record = engine.settings[SECTION]
        assert record["supersession"] == "none" and record["recency"]["kind"] == "exponential"
        plain = Memory(engine)
        assert await _current(plain) == ["f1", "f2", "p1"]
        assert isinstance(plain.config.recency, Recency) and plain.config.recency.half_life_ms
        assert await _current(memory) == ["f2", "p1"]  # the object still applies here
    async with Engine.open(tmp_path / "s") as engine:
        assert await _current(Memory(engine)) == ["f1", "f2", "p1"]
        again = Memory(engine, config)  # the same config, the same record: accepted
        assert await _current(again) == ["f2", "p1"]


async def test_object_policies_alone_record_nothing(tmp_path: Path) -> None:
    """A Memory given only object policies writes no record (the defaults stand for them)."""
    async with Engine.open(tmp_path / "s") as engine:
        await Memory(engine, MemoryConfig(forgetting=Nothing())).remember("a fact")
        assert SECTION not in engine.settings


async def test_an_object_over_a_kept_policy_is_refused(tmp_path: Path) -> None:
    """Over a store that keeps latest-by-subject, an object supersession is InvalidRequest
    naming the policy and the recorded value, with a hint, before anything is written; an
    object for a policy the store keeps at its default is accepted (and the record's other
    policies apply with it)."""
    async with Engine.open(tmp_path / "s") as engine:
        await change(engine, {"supersession": "latest-by-subject"})
        revision = engine.revision
        with pytest.raises(InvalidRequest, match=r"config\.supersession: this store records the "
                                                 r"memory policy supersession = 'latest-by-subj"
                                                 r"ect'; an object policy") as refused:
            Memory(engine, MemoryConfig(supersession=SameKindLatest()))
        assert "--memory-config" in refused.value.hint
        assert engine.revision == revision
        memory = Memory(engine, MemoryConfig(forgetting=Nothing()))
        assert memory.config.forgetting.__class__ is Nothing
        assert memory.config.supersession == "latest-by-subject"
        await _slot(memory)
        assert await _current(memory) == ["f2"]
        assert engine.settings[SECTION]["supersession"] == "latest-by-subject"


async def test_the_importance_policy_is_kept(tmp_path: Path) -> None:
    """A store first written with importance linear keeps it (format.json, only when set): a
    plain Memory after a reopen ranks by it; another importance is refused; a store kept
    without importance records no importance key."""
    linear = {"importance": {"kind": "linear", "weight": 1, "missing": 0}}
    async with Engine.open(tmp_path / "s") as engine:
        memory = Memory(engine, linear, embedder=False)
        await memory.remember("deadline friday deadline", id="plain")
        await memory.remember("the deadline moved", id="vital", importance=1.0)
        assert engine.settings[SECTION]["importance"] == linear["importance"]
    async with Engine.open(tmp_path / "s") as engine:
        plain = Memory(engine, embedder=False)
        assert plain.config.importance == Importance(kind="linear", weight=1.0)
        assert (await plain.recall("deadline", k=2))[0].fact.id == "vital"
        with pytest.raises(InvalidRequest, match=r"config\.importance"):
            Memory(engine, {"importance": "none"})
        with pytest.raises(InvalidRequest, match=r"config\.importance"):
            Memory(engine, MemoryConfig(importance=Importance(kind="linear", weight=2.0)))
    async with Engine.open(tmp_path / "t") as engine:
        await Memory(engine, {"supersession": "latest-by-subject"}).remember("x")
        assert "importance" not in engine.settings[SECTION]
        assert Memory(engine, {"importance": "none"}).config.importance == Importance()
