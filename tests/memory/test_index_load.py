"""The memory index built at open from packed metadata chunks equals the one built from
``scan_metadata()`` and the one the commit listener kept, on stores mixing every kind of row."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from hmsengine import Engine, ForgetScope, Memory
from hmsengine.engine import TOMBSTONE_PREFIX, MetadataChunk
from hmsengine.memory import index_load
from hmsengine.memory.index import MemoryIndex
from hmsengine.memory.index_load import blanked_rows

FIELDS = ("kind", "namespace", "subject", "entities", "event_time", "valid_from", "valid_to",
          "ingest_time", "supersedes", "sources", "actor", "importance", "file", "retain_until")
NOW = 1_800_000_000_000


def _view(index: MemoryIndex, ordered: bool = True) -> dict[str, object]:
    """Everything the index holds, comparable (stamps by their fields; facts in order unless
    not ``ordered``: the live index's order is the commits', a scan's is the table's)."""
    facts = [(i, tuple(getattr(s, f) for f in FIELDS)) for i, s in index.facts.items()]
    return {
        "facts": facts if ordered else sorted(facts),
        "slots": index.slots, "by_subject": index.by_subject, "entities": index.entities,
        "successors": index.successors,
        "kinds": {k: n for k, n in index.kind_counts.items() if n},
        "counts": (index.windows, index.shared_slots, index.links, index.retained),
    }


def _stamp(digest: str, *, ingest: int, subject: str | None = None) -> list[object]:
    return [1, digest, "fact", "default", subject, [], None, None, None, ingest, [], [], None, None]


def _odd_rows(rng: random.Random) -> list[dict[str, object]]:
    """Raw documents whose metadata is not what remember writes: stamps after caller keys,
    digests that are not hex or hold an escaped quote, a stamp-like string in caller metadata,
    a stamp of the wrong length, plain metadata, none at all."""
    out: list[dict[str, object]] = []
    for n in range(60):
        shape = n % 8
        ingest = rng.choice([100, 200])
        digest = f"{rng.getrandbits(128):032x}"
        meta: dict[str, object] | None
        if shape == 0:
            meta = {"k": n % 3, "_hms": _stamp(digest, ingest=ingest)}
        elif shape == 1:
            meta = {"_hms": _stamp("é" * 16 + "x" * 16, ingest=ingest)}  # non-ASCII window
        elif shape == 2:
            meta = {"_hms": _stamp('a"' + "b" * 29, ingest=ingest)}  # escaped quote inside
        elif shape == 3:
            meta = {"q": '"_hms":[1,"' + "y" * 32 + '"', "_hms": _stamp(digest, ingest=ingest)}
        elif shape == 4:
            meta = {"_hms": [1, digest, "fact"]}  # not a stamp: a plain document
        elif shape == 5:
            meta = {"_hms": _stamp(digest[:20], ingest=ingest, subject=f"s{n % 2}")}
        elif shape == 6:
            meta = {"plain": True, "n": n}
        else:
            meta = None
        out.append({"id": f"raw{n}", "text": f"raw document {n}", "metadata": meta})
    return out


async def _mixed_store(memory: Memory, engine: Engine, rng: random.Random) -> None:
    await memory.remember_many([{"text": f"batch fact {i}", "id": f"b{i}"} for i in range(150)])
    await memory.remember_many([
        {"text": f"rich fact {i}", "id": f"r{i}", "subject": rng.choice([None, "s1", "s2"]),
         "entities": rng.choice([[], ["e1"], ["e1", "e2"]]), "kind": rng.choice(["fact", "episode"]),
         "metadata": rng.choice([None, {"source": "x"}, {"n": i}]),
         "valid_from": rng.choice([None, NOW - 10]), "retain_until": rng.choice([None, NOW * 2])}
        for i in range(80)])
    await memory.remember("newer", id="succ", supersedes=["r1"])
    await engine.put_documents(_odd_rows(rng))
    await engine.delete_document("b7", purge=True)  # a tombstone row
    await engine.delete_document("b8")


def _both(engine: Engine, rows: int | None = None) -> tuple[MemoryIndex, MemoryIndex]:
    """(index from scan_metadata, index from metadata chunks of at most ``rows`` rows)."""
    classic = MemoryIndex()
    classic.load(engine.scan_metadata(), engine.revision)
    packed = MemoryIndex()
    chunks = (engine.scan_metadata_chunks() if rows is None
              else list(engine._core.table.entries.metadata_chunks(rows)))
    packed.load_chunks(chunks, engine.revision)
    return classic, packed


async def test_chunks_build_the_index_scan_metadata_builds(tmp_path: Path) -> None:
    """On a store mixing batch facts, rich facts, links, odd raw metadata, plain documents, a
    tombstone and a delete: the chunk-built index equals the scan-built one and the live one,
    before and after a reopen from the table snapshot, with chunks of 1, 7 and all rows."""
    rng = random.Random(11)
    store = tmp_path / "s"
    async with Engine.open(store, clock=lambda: NOW) as engine:
        memory = Memory(engine)
        await _mixed_store(memory, engine, rng)
        for rows in (None, 1, 7):
            classic, packed = _both(engine, rows)
            assert _view(packed) == _view(classic)
            assert _view(packed, False) == _view(memory.index, False)
        assert "b7" not in packed.facts and "b8" not in packed.facts
        assert packed.facts["raw4"] is packed.facts["raw7"]  # both plain: one shared stamp
    async with Engine.open(store, clock=lambda: NOW) as engine:
        assert engine.statistics().table_snapshot_documents > 0
        for rows in (None, 1, 7):
            classic, packed = _both(engine, rows)
            assert _view(packed) == _view(classic)
        assert len({id(packed.facts[f"b{i}"]) for i in range(150) if i not in (7, 8)}) == 1
        assert _view(packed) == _view(Memory(engine).index)


async def test_reopen_after_writes_deletes_and_purge_matches_a_fresh_build(tmp_path: Path) -> None:
    """After a reopen from the snapshot, replacing, deleting, purging and adding facts (base rows
    changed, rows only read, rows only the overlay holds), and again after a reopen that replays
    a journal tail past the snapshot: the chunk-built index equals the scan-built and the live
    index, and recall answers alike."""
    rng = random.Random(5)
    store = tmp_path / "s"
    async with Engine.open(store, clock=lambda: NOW) as engine:
        await _mixed_store(Memory(engine), engine, rng)
    async with Engine.open(store, clock=lambda: NOW) as engine:
        memory = Memory(engine)
        assert (await memory.get("b20")) is not None  # an overlay entry built by a read
        await engine.put_document("r3", "rich fact 3 replaced",  # a base row replaced
                                  metadata={"_hms": _stamp("f" * 32, ingest=NOW, subject="s9")})
        await memory.forget(ForgetScope.ids(["b30", "r5"]))
        await memory.forget(ForgetScope.ids(["b31"]), purge=True)
        await memory.remember_many([{"text": f"late fact {i}", "id": f"late{i}"} for i in range(20)])
        for rows in (None, 3, 64):
            classic, packed = _both(engine, rows)
            assert _view(packed) == _view(classic)
            assert _view(packed, False) == _view(memory.index, False)
        assert packed.facts["r3"].subject == "s9" and "b30" not in packed.facts
        # Die without a clean close: the next open replays the journal after the snapshot.
        engine._core.dirty = False
        engine._core.write_table_snapshot = lambda: None
        await memory.remember("after the last snapshot", id="tail1")
        await engine.delete_document("b40")
        live_hits = [(h.fact.id, h.score) for h in await memory.recall("batch fact", k=10)]
    async with Engine.open(store, clock=lambda: NOW) as engine:
        classic, packed = _both(engine)
        reopened = Memory(engine)
        assert _view(packed) == _view(classic) == _view(reopened.index)
        assert "tail1" in packed.facts and "b40" not in packed.facts
        assert [(h.fact.id, h.score) for h in await reopened.recall("batch fact", k=10)] == live_hits


def test_digest_is_blanked_only_where_the_row_starts_with_its_stamp() -> None:
    """A row starting with ``{"_hms":[1,"`` and a 32-byte quote-free string has those bytes
    zeroed; rows with caller keys first, a short, quoted or backslashed window (a backslash last
    escapes the quote after it), or no metadata are left as they are; rows split exactly where
    the chunk says."""
    digest = "0123456789abcdef" * 2
    rows = [
        json.dumps({"_hms": _stamp(digest, ingest=5)}, separators=(",", ":")),
        json.dumps({"a": 1, "_hms": _stamp(digest, ingest=5)}, separators=(",", ":")),
        '{"_hms":[1,"' + "x" * 31 + '"]}',
        '{"_hms":[1,"' + "x" * 30 + '\\"' + '"]}',
        '{"_hms":[1,"' + "é" * 16 + '"]}',
        json.dumps({"_hms": _stamp("x" * 31 + '"tail', ingest=5)}, separators=(",", ":")),
        None,
        "",
    ]
    chunk = MetadataChunk.of([(f"d{i}", r) for i, r in enumerate(rows)])
    got = blanked_rows(chunk)
    want = [(r or "").encode() for r in rows]
    want[0] = want[0].replace(digest.encode(), b"0" * 32)
    want[4] = b'{"_hms":[1,"' + b"0" * 32 + b'"]}'  # 32 bytes, no quote: one string
    assert got == want
    empty = MetadataChunk.of([])
    assert blanked_rows(empty) == [] and len(empty.bounds) == 1


def test_load_chunks_needs_an_empty_index() -> None:
    """Chunks fill a fresh index only: an index that already holds facts refuses them."""
    index = MemoryIndex()
    chunk = MetadataChunk.of([("a", None)])
    index.load_chunks([chunk], 3)
    assert index.revision == 3 and list(index.facts) == ["a"]
    with pytest.raises(RuntimeError, match="only when empty"):
        index.load_chunks([chunk], 4)
    assert np.array_equal(chunk.bounds, [0, 1])


def _runs_of_every_kind() -> list[tuple[str, str | None]]:
    """Runs of equal rows of every kind, each run as remember_many writes a batch (same stamp
    but for each fact's own digest): simple facts, facts with a subject, entities, a window or
    a link (each indexed through ``add``), tombstones, plain metadata, none; a kind of run
    comes back later (its row classified once), and two runs of equal length touch."""
    def stamped(digest: str, **extra: object) -> str:
        stamp = _stamp(digest, ingest=extra.pop("ingest", 7), subject=extra.pop("subject", None))
        for at, value in extra.items():
            stamp[int(at[1:])] = value
        return json.dumps({"_hms": stamp}, separators=(",", ":"))

    kinds: list[dict[str, object] | str | None] = [
        {}, {"subject": "s1"}, {"p5": ["e1", "e2"]}, {"p7": NOW}, {"p10": ["b0"]}, "tomb", "plain",
        None, {"ingest": 8}, {}, {"subject": "s1"}]
    rng = random.Random(4)
    items: list[tuple[str, str | None]] = []
    for run, kind in enumerate(kinds):
        for _ in range(rng.randint(9, 40)):
            doc_id = f"k{len(items)}"
            digest = f"{rng.getrandbits(128):032x}"
            if kind == "tomb":
                meta: str | None = TOMBSTONE_PREFIX + "123}"
            elif kind == "plain":
                meta = json.dumps({"n": run})
            elif kind is None:
                meta = None
            else:
                assert isinstance(kind, dict)
                meta = stamped(digest, **kind)
            items.append((doc_id, meta))
    return items


def test_runs_of_equal_rows_load_as_row_by_row_does() -> None:
    """A chunk of runs of equal rows (digests aside) is loaded a run at a time, and gives the
    index that loading the same documents one by one gives; every row distinct, it is loaded
    row by row, the same again."""
    items = _runs_of_every_kind()
    chunk = MetadataChunk.of(items)
    blanked = np.frombuffer(index_load._blanked(chunk), dtype=np.uint8)
    starts = index_load._run_starts(blanked, chunk.bounds)
    assert starts is not None and len(starts) == 11  # one per run: digests are blanked
    classic, packed = MemoryIndex(), MemoryIndex()
    classic.load(items, 5)
    packed.load_chunks([chunk], 5)
    assert _view(packed) == _view(classic) and len(packed.facts) == len(items) - sum(
        1 for _, m in items if m is not None and m.startswith(TOMBSTONE_PREFIX))
    distinct = [(doc_id, json.dumps({"n": n, "x": "y" * (n % 3)})) for n, (doc_id, _) in enumerate(items)]
    chunk = MetadataChunk.of(distinct)
    assert index_load._run_starts(np.frombuffer(index_load._blanked(chunk), dtype=np.uint8),
                                  chunk.bounds) is None
    classic, packed = MemoryIndex(), MemoryIndex()
    classic.load(distinct, 5)
    packed.load_chunks([chunk], 5)
    assert _view(packed) == _view(classic)
