"""Retention: ``retain_until`` per fact and a default per namespace; a fact past it is not
recalled or listed, shows ``expired-retention`` in history "all" and explain, and
``apply_retention`` (dry run first; also run by every compaction) forgets it; older builds
refuse a store that holds retention."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from test_browse import Clock

from hmsengine import Engine, IncompatibleStore, InvalidRequest, Memory
from hmsengine.storage import manifest


async def test_a_fact_past_its_retention_is_not_recalled_or_listed(store_path: str | None) -> None:
    """Until its retain_until it is like any fact; from then on recall and list leave it out,
    history "all" and explain show expired-retention, get still finds it until applied."""
    clock = Clock()
    async with Engine.open(store_path, clock=clock) as engine:
        memory = Memory(engine)
        brief = await memory.remember("the wifi password is tulip", retain_until=clock.t + 100)
        await memory.remember("the office opens at nine")
        assert [h.fact.id for h in await memory.recall("wifi password")] == [brief.id]
        assert (await memory.get(brief.id)).retain_until == clock.t + 100
        clock.t += 100
        assert await memory.recall("wifi password") == []
        everything = await memory.recall("wifi password", history="all")
        assert [(h.fact.id, h.status) for h in everything] == [(brief.id, "expired-retention")]
        assert (await memory.explain("wifi password", brief.id)).status == "expired-retention"
        assert brief.id not in {f.id for f in (await memory.list()).items}
        assert [f.id for f in (await memory.list(status="expired-retention")).items] == [brief.id]
        assert await memory.count() == 1
        assert await memory.get(brief.id) is not None


async def test_apply_retention_dry_run_first(store_path: str | None) -> None:
    """apply_retention reports without removing by default; dry_run=False forgets exactly the
    facts past their retention; a second run removes nothing."""
    clock = Clock()
    async with Engine.open(store_path, clock=clock) as engine:
        memory = Memory(engine)
        gone = await memory.remember("temporary", retain_until=clock.t + 1)
        kept = await memory.remember("permanent")
        later = await memory.remember("later", retain_until=clock.t + 1000)
        clock.t += 5
        report = await memory.apply_retention()
        assert report.dry_run and report.removed == (gone.id,)
        assert await memory.get(gone.id) is not None
        report = await memory.apply_retention(dry_run=False)
        assert report.removed == (gone.id,) and not report.dry_run
        assert await memory.get(gone.id) is None
        assert await memory.get(kept.id) is not None and await memory.get(later.id) is not None
        assert (await memory.apply_retention(dry_run=False)).removed == ()


async def test_namespace_default_applies_to_stored_facts_and_persists(disk_path: str) -> None:
    """set_retention keeps a namespace's facts that long after their ingest time (those already
    there too, other namespaces untouched, a fact's own retain_until first); it is persisted and
    raises the store's min_reader_version to 2; None removes it."""
    clock = Clock()
    async with Engine.open(disk_path, clock=clock) as engine:
        memory = Memory(engine)
        chat = await memory.remember("said hello", namespace="chat")
        await memory.remember("a durable fact", namespace="facts")
        assert engine.min_reader_version == 1
        own = await memory.remember("keep me longer", namespace="chat",
                                    retain_until=clock.t + 10 * 86_400_000)
        assert engine.min_reader_version == 2
        await memory.set_retention("chat", dt.timedelta(days=1))
        assert memory.retention == {"chat": 86_400_000}
        assert (await memory.get(chat.id)).retain_until == chat_time(memory, chat.id) + 86_400_000
    fmt = json.loads((Path(disk_path) / "format.json").read_text())
    assert fmt["min_reader_version"] == 2 and fmt["settings"]["retention"] == {
        "namespaces": {"chat": 86_400_000}}
    clock.t += 2 * 86_400_000
    async with Engine.open(disk_path, clock=clock) as engine:
        memory = Memory(engine)
        assert memory.retention == {"chat": 86_400_000}
        assert [f.id for f in (await memory.list(namespace="chat")).items] == [own.id]
        assert await memory.count(namespace="facts") == 1
        await memory.set_retention("chat", None)
        assert memory.retention == {}
        assert await memory.count(namespace="chat") == 2


def chat_time(memory: Memory, doc_id: str) -> int:
    return memory.index.facts[doc_id].ingest_time


async def test_every_compaction_applies_retention(disk_path: str) -> None:
    """engine.compact forgets what is past its retention before it rewrites the store, so the
    new generation holds none of it."""
    clock = Clock()
    async with Engine.open(disk_path, clock=clock) as engine:
        memory = Memory(engine)
        gone = await memory.remember("a secret to drop", retain_until=clock.t + 1)
        await memory.remember("a fact to keep")
        clock.t += 2
        report = await engine.compact(purge=True)
        assert report.documents == 1
        assert await memory.get(gone.id) is None


async def test_remembering_again_changes_the_retention_only(store_path: str | None) -> None:
    """The same fact remembered with another retain_until keeps its id and ingest time,
    creates nothing, and takes the new retention end; retain() sets or clears it."""
    clock = Clock()
    async with Engine.open(store_path, clock=clock) as engine:
        memory = Memory(engine)
        first = await memory.remember("rotating key 7", retain_until=clock.t + 10)
        clock.t += 3
        again = await memory.remember("rotating key 7", retain_until=clock.t + 500)
        assert again.id == first.id and not again.created
        fact = await memory.get(first.id)
        assert fact.retain_until == clock.t + 500 and fact.ingest_time == clock.t - 3
        assert await memory.retain([first.id], None) == (first.id,)
        assert (await memory.get(first.id)).retain_until is None
        assert await memory.retain([first.id], None) == ()


@pytest.mark.parametrize("call", [
    lambda m: m.remember("x", retain_until="tomorrow"),
    lambda m: m.remember("x", retain_until=dt.datetime(2030, 1, 1)),
    lambda m: m.set_retention("chat", 0),
    lambda m: m.set_retention("chat", -5),
    lambda m: m.set_retention("", 1000),
    lambda m: m.set_retention("chat", 1.5),
    lambda m: m.apply_retention(dry_run="no"),
    lambda m: m.retain("not-a-list", None),
])
async def test_bad_retention_input_is_invalid_request(call) -> None:
    """A bad time, duration, namespace or flag is InvalidRequest; nothing is written."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        with pytest.raises(InvalidRequest):
            await call(memory)
        assert engine.settings == {} and engine.revision == 0


async def test_an_older_build_refuses_a_store_with_retention(disk_path: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A store without retention stays readable by a format-1 build; once it holds a retention
    end, a build that reads only format 1 refuses it (IncompatibleStore), changing nothing."""
    async with Engine.open(disk_path) as engine:
        await Memory(engine).remember("plain")
    monkeypatch.setattr(manifest, "READER_VERSION", 1)
    async with Engine.open(disk_path) as engine:
        assert engine.min_reader_version == 1
    monkeypatch.undo()
    async with Engine.open(disk_path) as engine:
        await Memory(engine).remember("short", retain_until=2**40)
    before = {p.name: p.read_bytes() for p in Path(disk_path).rglob("*") if p.is_file()}
    monkeypatch.setattr(manifest, "READER_VERSION", 1)
    with pytest.raises(IncompatibleStore):
        async with Engine.open(disk_path):
            pass
    assert {p.name: p.read_bytes() for p in Path(disk_path).rglob("*") if p.is_file()} == before


async def test_export_and_import_keep_the_retention(tmp_path: Path) -> None:
    """An export carries retainUntil (only for facts that have one); importing it elsewhere
    keeps it and marks the new store as format 2."""
    clock = Clock()
    async with Engine.open(tmp_path / "a", clock=clock) as engine:
        memory = Memory(engine)
        short = await memory.remember("short", retain_until=clock.t + 50)
        await memory.remember("long")
        await engine.export_jsonl(tmp_path / "out.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted("retainUntil" in r for r in lines if r.get("type") == "fact") == [False, True]
    async with Engine.open(tmp_path / "b", clock=clock) as engine:
        await engine.import_jsonl(tmp_path / "out.jsonl")
        assert engine.min_reader_version == 2
        assert (await Memory(engine).get(short.id)).retain_until == clock.t + 50
