"""HotMem interop end to end, through the engine: data added and snapshotted by the real hotmem
restores into hmsengine with every record, and our hotmem-v2 snapshot is hydrated and searched
by hotmem itself."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

pytest.importorskip("hotmem")

from hotmem.db import MemoryDB
from hotmem.memory import FileRef as HotmemFileRef
from hotmem.memory import add_file_backed
from hotmem.search import search_memories
from hotmem.snapshot import hydrate, snapshot
from hotmem.swap import add_memory

from hmsengine import Engine

WORDS = ("oolong", "unicycle", "marmalade", "accordion", "lighthouse", "pelican")


@pytest.fixture(autouse=True)
def _plain_hotmem(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HOTMEM_EMBEDDER", "HOTMEM_EMBEDDER_MODEL_PATH", "HOTMEM_RERANKER"):
        monkeypatch.delenv(name, raising=False)


async def test_hotmem_snapshot_restores_every_record(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.csv"
    ledger.write_bytes(b"ledger,2024\nrevenue,42\n")
    db = MemoryDB(tmp_path / "hotmem.sqlite")
    try:
        ids = {}
        for n, word in enumerate(WORDS):
            ids[word], _ = add_memory(db, f"person-{n}", f"person {n} loves the {word}",
                                      importance=0.1 * (n + 1), metadata={"n": n})
        digest = hashlib.sha256(b"ledger,2024\n").hexdigest()
        ids["ledger"], _ = add_file_backed(db, "ledger", HotmemFileRef(str(ledger), 0, 12, "csv", digest),
                                           summary="the ledger spreadsheet")
        count = db.count()
        snapshot(db, tmp_path / "hm-snap", copy_attachments=True)
    finally:
        db.close()
    assert count == len(WORDS) + 1
    async with Engine.open(tmp_path / "store") as engine:
        report = await engine.restore(tmp_path / "hm-snap")
        assert (report.added, report.skipped) == (count, 0)
        memory = engine.memory()
        for n, word in enumerate(WORDS):
            fact = await memory.get(ids[word])
            assert fact is not None and fact.text == f"person {n} loves the {word}"
            assert fact.subject == f"person-{n}" and fact.metadata == {"n": n}
            assert fact.importance == pytest.approx(0.1 * (n + 1))
            assert fact.valid_from is not None
            hits = await memory.recall(word)
            assert [h.fact.id for h in hits] == [ids[word]]
        file_fact = await memory.get(ids["ledger"])
        assert file_fact is not None and file_fact.file is not None
        assert (file_fact.file.offset, file_fact.file.length) == (0, 12)
        assert await memory.hydrate(ids["ledger"]) == b"ledger,2024\n"
        again = await engine.restore(tmp_path / "hm-snap")
        assert (again.added, again.skipped) == (0, count)


async def test_our_hotmem_v2_snapshot_is_hydrated_and_searched_by_hotmem(tmp_path: Path) -> None:
    async with Engine.open(None) as engine:
        memory = engine.memory()
        facts = {}
        for n, word in enumerate(WORDS):
            facts[word] = (await memory.remember(f"user {n} collects {word} stamps", subject=f"user-{n}",
                                                 importance=0.5, metadata={"rank": n})).id
        await engine.put_document("plain", "a plain document about a zeppelin")
        manifest = await engine.snapshot(tmp_path / "for-hotmem", format="hotmem-v2")
    assert manifest["format"] == "hotmem-snapshot-v2" and manifest["memory_count"] == len(WORDS) + 1
    db = MemoryDB(tmp_path / "target.sqlite")
    try:
        result = hydrate(db, tmp_path / "for-hotmem")
        assert result.loaded == len(WORDS) + 1 and not result.invalid
        for n, word in enumerate(WORDS):
            found = search_memories(db, word, top_k=5)
            assert found and found[0]["memory_id"] == facts[word], word
            stored = db.get_memory(facts[word])
            assert stored is not None and stored["fact_text"] == f"user {n} collects {word} stamps"
            assert stored["identifier"] == f"user-{n}"
        assert search_memories(db, "zeppelin", top_k=5)[0]["memory_id"] == "plain"
    finally:
        db.close()
