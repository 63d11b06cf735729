"""The table keeps a snapshot's metadata packed (one UTF-8 blob, rows decoded when read): the
same values come back as the snapshot held, and the packed form is smaller than a str per row."""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from hmsengine import Engine, Memory
from hmsengine.storage.tablesnap import PackedText

ROWS = ['{"a":1}', None, '{"name":"Zoë ✓"}', "", '{"_tombstone":1}', '{"x":"\\n"}', None]


def test_rows_round_trip_and_bad_blobs_are_refused():
    """Rows (ASCII, non-ASCII, None, an escaped newline) come back as given (an empty string
    reads as None, as the snapshot stores it); a blob with another number of rows, or that is
    not UTF-8, is ValueError; prefix search finds rows without decoding them."""
    packed = PackedText.of(ROWS)
    assert len(packed) == len(ROWS)
    assert [packed[i] for i in range(len(ROWS))] == [r or None for r in ROWS]
    assert list(packed) == [r or None for r in ROWS]
    assert packed.rows_starting_with('{"_tomb') == [4]
    assert packed.rows_starting_with('{"') == [0, 2, 4, 5]
    with pytest.raises(IndexError):
        packed[len(ROWS)]
    assert len(PackedText()) == 0 and list(PackedText()) == []
    with pytest.raises(ValueError, match="rows expected"):
        PackedText(b"a\nb", 3)
    with pytest.raises(ValueError):
        PackedText(b"\xff\xfe", 1)
    with pytest.raises(ValueError):
        PackedText(b"x", 0)


def test_packed_rows_cost_less_than_strings():
    """100,000 fact stamps of ~117 characters: packed, about 126 bytes a row; as strs, 166."""
    stamp = '{"_hms":[1,"%032x","fact","default",null,[],null,null,null,1764800000000,[],[],null,null]}'
    rows = [stamp % i for i in range(100_000)]
    packed = PackedText.of(rows)
    as_strings = sum(sys.getsizeof(r) for r in rows) + 8 * len(rows)
    assert packed.nbytes / len(rows) < 130 < as_strings / len(rows) - 40


def test_prefix_search_matches_whole_rows_only():
    """A prefix matches at a row's start only (the first row, after an empty or None row, the
    last row), never inside a row; an empty prefix or one holding a newline is ValueError."""
    packed = PackedText.of(['{"_tomb":1}', None, "", '{"_tomb":2}', 'x{"_tomb":3}', '{"_tomb"'])
    assert packed.rows_starting_with('{"_tomb') == [0, 3, 5]
    assert packed.rows_starting_with('{"_tomb":1}') == [0]
    assert packed.rows_starting_with("x") == [4]
    assert packed.rows_starting_with("nothing") == []
    assert PackedText().rows_starting_with("x") == []
    for bad in ("", 'a\n{"'):
        with pytest.raises(ValueError, match="non-empty line"):
            packed.rows_starting_with(bad)


def test_prefix_search_allocates_per_match_not_per_row():
    """Finding 10 tombstones among 100,000 rows (as a reopen does) allocates well under a
    megabyte: no Python object per row (a list of 100,001 bounds would be ~3.6 MB)."""
    stamp = '{"_hms":[1,"%032x","fact","default",null,[],null,null,null,1764800000000,[],[],null,null]}'
    rows: list[str | None] = [stamp % i for i in range(100_000)]
    for i in range(0, 100_000, 10_000):
        rows[i] = f'{{"_tombstone":{i}}}'
    packed = PackedText.of(rows)
    tracemalloc.start()
    try:
        found = packed.rows_starting_with('{"_tombstone"')
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == list(range(0, 100_000, 10_000))
    assert peak < 256 * 1024, peak


async def test_a_reopened_store_reads_the_same_metadata(tmp_path: Path):
    """After a clean close and reopen (the table from its snapshot, metadata packed), every
    document's metadata, the scan the memory index is built from, recall and a purged id's
    tombstone are what they were before the close."""
    store = tmp_path / "store"
    async with Engine.open(store) as engine:
        memory = Memory(engine)
        await memory.remember("Zoë lives in Zürich", id="z", subject="zoë/city",
                              metadata={"note": "ünïcode ✓"})
        await memory.remember("Bob lives in Oslo", id="b", metadata={"k": [1, 2]})
        await engine.put_document("plain", "no metadata at all")
        await engine.put_document("gone", "to be purged", metadata={"x": 1})
        await engine.delete_document("gone", purge=True)
        before_scan = sorted(engine.scan_metadata())
        before = {i: (await engine.get_document(i)) for i in ("z", "b", "plain")}
        hits = [(h.fact.id, h.score) for h in await memory.recall("lives")]
    async with Engine.open(store) as engine:
        assert engine.statistics().documents == 3
        assert sorted(engine.scan_metadata()) == before_scan
        for doc_id, doc in before.items():
            assert (await engine.get_document(doc_id)) == doc
        memory = Memory(engine)
        assert [(h.fact.id, h.score) for h in await memory.recall("lives")] == hits
        assert (await memory.get("z")).metadata == {"note": "ünïcode ✓"}  # type: ignore[union-attr]
        assert await engine.get_document("gone") is None
        assert "gone" in engine.tombstones()


def test_newline_scan_in_pieces_matches_one_pass(monkeypatch):
    """The blob is scanned a piece at a time (pieces cut after a newline): with pieces of a few
    bytes, rows of multi-byte characters, rows longer than a piece and empty rows come back
    whole; a blob that is not UTF-8 in a later piece is still refused; ``span`` hands out a
    run of rows in the column's form without decoding them."""
    from hmsengine.storage import tablesnap

    rows = ["é✓" * 7, None, "a" * 40, "", '{"k":"Zoë"}', "✓", "b" * 3]
    monkeypatch.setattr(tablesnap, "_SCAN_BYTES", 5)
    packed = PackedText.of(rows)
    assert list(packed) == [r or None for r in rows]
    blob = "\n".join(r or "" for r in rows).encode()
    one_pass = np.flatnonzero(np.frombuffer(blob, dtype=np.uint8) == 0x0A)
    assert np.array_equal(tablesnap._newlines(blob), one_pass)
    bad = blob + b"\n" + b"x" * 20 + b"\xff"
    with pytest.raises(ValueError):
        PackedText(bad, len(rows) + 1)
    part, bounds = packed.span(2, 5)
    assert bytes(part) == "\n".join(["a" * 40, "", '{"k":"Zoë"}']).encode()
    assert [bytes(part)[bounds[i]:bounds[i + 1] - 1].decode() for i in range(3)] == \
        ["a" * 40, "", '{"k":"Zoë"}']
    assert bytes(packed.span(3, 3)[0]) == b"" and list(packed.span(3, 3)[1]) == [0]
    with pytest.raises(IndexError):
        packed.span(5, 8)
