"""The bulk write path: a batch of plain documents is checked a batch at a time and encoded in
one pass, with the same refusals, the same stored bytes and the same table as item by item."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from hmsengine import Document, Engine, InvalidRequest
from hmsengine.engine.txn import PUT_CRC, PUT_ID, PUT_LENGTH, PUT_OFFSET, PUT_TEXT, decode_transaction
from hmsengine.engine.values import (
    MAX_ID_BYTES,
    MAX_TEXT_BYTES,
    PlainPuts,
    PutOp,
    _checked_puts,
    _plain_columns,
    make_put,
    make_puts,
    put_batch,
)
from hmsengine.storage.codec import PLAIN
from hmsengine.storage.journal import scan
from hmsengine.storage.segments import decode_record, encode_record, encode_records

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from decoded import closed_views, containing, coverage, id_outside_tombstones


def journal_frames(root: str) -> list:
    """The transaction frames of a closed store's live journal (its first generation)."""
    path = os.path.join(root, "gen-00000001", "journal.log")
    with open(path, "rb") as f:
        data = f.read()
    return [f for f in scan(data, codec=PLAIN, where="j", file_label=b"gen-00000001/journal.log",
                            max_version=1).frames if f.kind == 1]


def _plain(n: int, start: int = 0) -> list[dict[str, object]]:
    return [{"id": f"doc-{i}", "text": f"text number {i} " * (1 + i % 5)} for i in range(start, start + n)]


BAD_ITEMS = [
    ("control character in the id", {"id": "a\x00b", "text": "t"}),
    ("C1 control character in the id", {"id": "a\x85b", "text": "t"}),
    ("empty id", {"id": "", "text": "t"}),
    ("id not a string", {"id": 7, "text": "t"}),
    ("ASCII id over the limit", {"id": "i" * (MAX_ID_BYTES + 1), "text": "t"}),
    ("non-ASCII id over the limit", {"id": "é" * (MAX_ID_BYTES // 2 + 1), "text": "t"}),
    ("lone surrogate in the id", {"id": "a\ud800", "text": "t"}),
    ("duplicate id", {"id": "doc-3", "text": "t"}),
    ("text not a string", {"id": "x", "text": b"bytes"}),
    ("text None", {"id": "x", "text": None}),
    ("ASCII text over the limit", {"id": "x", "text": "t" * (MAX_TEXT_BYTES + 1)}),
    ("non-ASCII text over the limit", {"id": "x", "text": "é" * (MAX_TEXT_BYTES // 2 + 1)}),
    ("lone surrogate in the text", {"id": "x", "text": "ok \udfff"}),
    ("unknown field", {"id": "x", "text": "t", "tags": []}),
    ("missing text", {"id": "x"}),
    ("metadata not an object", {"id": "x", "text": "t", "metadata": [1]}),
    ("reserved metadata key", {"id": "x", "text": "t", "metadata": {"_hms_tombstone": 1}}),
    ("embedding with NaN", {"id": "x", "text": "t", "embedding": [1.0, float("nan")]}),
]


@pytest.mark.parametrize("bad", [item for _, item in BAD_ITEMS], ids=[name for name, _ in BAD_ITEMS])
async def test_one_bad_document_in_a_bulk_batch_refuses_it_whole(store_path, bad):
    """A batch of plain documents with one bad item in the middle is refused whole, with the
    error (class, code, message) the item-by-item checks give, and nothing is written."""
    items = [*_plain(20), bad, *_plain(20, start=20)]
    with pytest.raises(InvalidRequest) as item_by_item:
        _checked_puts(items, 64 * 1024 * 1024)
    async with Engine.open(store_path) as engine:
        await engine.put_document("before", "kept")
        with pytest.raises(InvalidRequest) as refused:
            await engine.put_documents(items)
        assert (type(refused.value), refused.value.code, str(refused.value)) == (
            type(item_by_item.value), item_by_item.value.code, str(item_by_item.value))
        assert "items[20]" in str(refused.value)
        assert engine.revision == 1 and engine.statistics().documents == 1
        assert await engine.get_document("doc-0") is None


def test_a_batch_over_the_text_limit_is_refused_as_before():
    """The batch's total text is checked on the bulk path too, with the same message."""
    items = _plain(30)
    total = sum(len(item["text"]) for item in items)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest, match=f"items: {total} characters of text in one batch"):
        make_puts(items, max_text_bytes=total - 1)
    assert len(make_puts(items, max_text_bytes=total)) == 30


@pytest.mark.parametrize("texts", [
    ["plain", "words"],
    ["naïve café", "😀 emoji", "ascii"],
    ["quote \" and backslash \\", "tab\tand newline\n", "é"],
])
def test_bulk_checks_give_the_same_puts_as_item_by_item(texts):
    """Valid plain batches (ASCII or not, with characters JSON escapes) become the same puts
    whichever way they are checked; explicit null metadata and embedding are plain too."""
    items = [{"id": f"ïd-{i}" if i % 2 else f"id-{i}", "text": text} for i, text in enumerate(texts)]
    items.append({"id": "nulls", "text": "t", "metadata": None, "embedding": None})
    columns = _plain_columns(items, 64 * 1024 * 1024)
    assert columns is not None
    fast = columns.puts()
    assert make_puts(items) == fast == _checked_puts(items, 64 * 1024 * 1024)
    assert all(type(op) is PutOp and op.metadata_json is None and op.embedding is None for op in fast)


def test_a_plain_batch_stays_two_columns():
    """``put_batch`` keeps a plain batch as one ``PlainPuts`` (the puts ``make_puts`` gives, in
    order) and any other as its PutOps; the refusals are make_puts'."""
    items = [*_plain(5), {"id": "é", "text": 'a "quoted" line\n'}]
    batch = put_batch(items)
    assert isinstance(batch, PlainPuts)
    assert batch.puts() == make_puts(items) == _checked_puts(items, 64 * 1024 * 1024)
    assert batch.chars == sum(len(item["text"]) for item in items)
    assert put_batch([*items, {"id": "m", "text": "t", "metadata": {"k": 1}}])[-1].metadata_json == '{"k":1}'
    for bad in ([], "ids", [{"id": "a", "text": "A"}, {"id": "a", "text": "B"}]):
        with pytest.raises(InvalidRequest):
            put_batch(bad)


async def test_a_plain_batch_writes_what_its_puts_one_by_one_write(tmp_path):
    """The same documents put as plain dicts (one ``PlainPuts``) and as ``Document`` values (a
    PutOp each), over a store where some of them exist: the same answers, the same journaled
    operations and the same text records, byte for byte."""
    first = [*_plain(30), {"id": "odd", "text": 'a "quoted" \\ line\nbreak é'}]
    second = [*_plain(20, start=20), {"id": "odd", "text": "replaced"}]
    out = {}
    for way in ("plain", "documents"):
        root = str(tmp_path / way)
        answers = []
        async with Engine.open(root) as engine:
            for batch in (first, second):
                items = batch if way == "plain" else [Document(id=i["id"], text=i["text"]) for i in batch]
                answers.append([(r.id, r.created, r.revision) for r in await engine.put_documents(items)])
        ops = [decode_transaction(f.payload, where="j", offset=0)[0] for f in journal_frames(root)]
        with open(os.path.join(root, "gen-00000001", "documents.text"), "rb") as f:
            out[way] = (answers, ops, f.read())
    assert out["plain"][0] == out["documents"][0]
    assert [sum(created for _, created, _ in a) for a in out["plain"][0]] == [31, 10]
    assert repr(out["plain"][1]) == repr(out["documents"][1])
    assert out["plain"][2] == out["documents"][2]


def test_mixed_batches_take_the_item_by_item_path():
    """Documents, prepared puts and dicts with metadata or embeddings still validate as before."""
    items = [{"id": "a", "text": "A", "metadata": {"k": [1, "v"]}},
             Document(id="b", text="B", embedding=[0.5, 1.0]),
             make_put("c", "C", {"x": None}),
             {"id": "d", "text": "D"}]
    ops = make_puts(items)
    assert [op.id for op in ops] == ["a", "b", "c", "d"]
    assert ops[0].metadata_json == '{"k":[1,"v"]}' and ops[2] is items[2]
    assert ops[1].embedding is not None and ops[1].embedding.dtype == np.float32


def test_records_encoded_together_are_the_records_encoded_one_by_one():
    """One pass over a batch's texts gives byte for byte the records encode_record writes at
    each running offset, small and large (compressed) texts alike."""
    raws = [b"", b"small", "é😀".encode(), b"x" * 1023, b"y" * 1024, b"long text " * 500]
    parts, lengths, crcs = encode_records(PLAIN, raws, offset=100, file_label=b"t", version=1)
    offset, expected = 100, []
    for raw in raws:
        record = encode_record(PLAIN, raw, offset=offset, file_label=b"t", version=1)
        expected.append(record)
        offset += len(record)
    assert b"".join(parts) == b"".join(expected)
    assert lengths == [len(r) for r in expected]
    blob, at = b"".join(parts), 0
    for raw, length, crc in zip(raws, lengths, crcs, strict=True):
        assert decode_record(PLAIN, blob[at:at + length], offset=100 + at, where="t",
                             file_label=b"t", version=1, expected_crc=crc) == raw
        at += length


async def test_bulk_put_journals_and_stores_every_document(disk_path):
    """A bulk batch's frame holds each document at the offset, length and crc of its text
    record, and every text reads back after a reopen."""
    items = [*_plain(50), {"id": "odd", "text": 'a "quoted" \\ line\nbreak é'}]
    async with Engine.open(disk_path) as engine:
        results = await engine.put_documents(items)
        assert [r.id for r in results] == [item["id"] for item in items]
        assert all(r.created and r.revision == 1 for r in results)
    frames = journal_frames(disk_path)
    ops, _dim = decode_transaction(frames[0].payload, where="j", offset=0)
    puts = [op for op in ops if isinstance(op, tuple)]  # txn.StoredPut
    assert [(op[PUT_ID], op[PUT_TEXT]) for op in puts] == [(item["id"], item["text"]) for item in items]
    lengths = [op[PUT_LENGTH] for op in puts]
    assert [op[PUT_OFFSET] for op in puts] == [0, *np.cumsum(lengths)[:-1].tolist()]
    async with Engine.open(disk_path) as engine:
        docs = await engine.get_documents([item["id"] for item in items])
        assert [d.text for d in docs] == [item["text"] for item in items]
        assert json.loads(frames[0].payload)["ops"][0] == {
            "o": "p", "id": "doc-0", "t": items[0]["text"], "off": 0, "len": puts[0][PUT_LENGTH],
            "crc": puts[0][PUT_CRC]}


async def test_a_puts_per_document_values_are_untracked_by_the_garbage_collector(disk_path):
    """What a committed put leaves per document until it is folded (its tail entry) and what the
    store hands the writer and the index (its journaled form) are plain tuples, which the cyclic
    garbage collector stops tracking: as named tuples, two tracked objects per document of a bulk
    put fed the full collections that read the whole heap (bench/results/lexical.notes.md)."""
    import gc

    items = [*_plain(40), {"id": "vec", "text": "with a vector", "embedding": [1.0, 0.0]},
             {"id": "meta", "text": "with metadata", "metadata": {"k": [1, 2]}}]
    async with Engine.open(disk_path) as engine:
        indexer = engine._indexer
        install = indexer.install
        seen: list[tuple[list[object], list[object]]] = []

        def recording(revision, batch):  # the real install, then what it was given and made
            install(revision, batch)
            seen.append(([op for _, ops in batch for op in ops], list(indexer.snapshot.tail)))

        indexer.install = recording
        await engine.put_documents(items)
        await engine.put_document("vec", "replaced", embedding=[0.0, 1.0])
        stored = [op for ops, _ in seen for op in ops]
        tail = seen[-1][1]
        assert len(stored) == len(items) + 1 and len(tail) == len(items) + 1
        assert all(type(x) is tuple for x in [*stored, *tail])
        gc.collect()
        assert not [x for x in [*stored, *tail] if gc.is_tracked(x)]


@pytest.mark.parametrize("key", [None, bytes(range(7, 39))], ids=["plain", "encrypted"])
async def test_purge_of_a_bulk_put_document_leaves_no_trace(disk_path, key):
    """Documents written by bulk batches (one without and one with a text JSON escapes) stay
    separately overwritable: purging one leaves its marker in no decoded view of any file and
    its id only as a tombstone, and its batch's other documents read back intact."""
    clean = [*_plain(30), {"id": "victim-a", "text": "zqxmarkeralpha secret words"}, *_plain(30, 30)]
    escaped = [*_plain(30, 60), {"id": "victim-b", "text": 'zqxmarkerbeta "quoted"\n'},
               *_plain(30, 90)]
    async with Engine.open(disk_path, key=key) as engine:
        await engine.put_documents(clean)
        await engine.put_documents(escaped)
    needles = [b"zqxmarkeralpha", b"zqxmarkerbeta"]
    views, report = closed_views(disk_path, key=key)
    coverage(report)
    assert set(containing(views, needles)) == set(needles)  # the positive control
    async with Engine.open(disk_path, key=key) as engine:
        assert await engine.delete_document("victim-a", purge=True)
        assert await engine.delete_document("victim-b", purge=True)
    views, report = closed_views(disk_path, key=key)
    coverage(report)
    assert containing(views, needles) == {}
    for doc_id in ("victim-a", "victim-b"):
        assert id_outside_tombstones(views, doc_id, disk_path, key) == []
    async with Engine.open(disk_path, key=key) as engine:
        others = [d for d in [*clean, *escaped] if not str(d["id"]).startswith("victim")]
        docs = await engine.get_documents([str(d["id"]) for d in others])
        assert [d.text if d else None for d in docs] == [d["text"] for d in others]
