"""The document table's column-backed entries behave exactly like the dict they replace."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hmsengine.engine.state import (
    CRC,
    EMBEDDING,
    KEY,
    LENGTH,
    METADATA,
    OFFSET,
    REVISION,
    DocEntry,
    DocTable,
    Entries,
)


def _entry(rng: random.Random, key: int) -> DocEntry:
    meta = rng.choice([None, '{"a":1}', '{"_hms_tombstone":5}', f'{{"n":{key}}}'])
    emb = None if rng.random() < 0.5 else np.full(3, key, dtype=np.float32)
    return (rng.randrange(1 << 30), rng.randrange(1, 500), rng.randrange(1 << 32), meta, emb,
            key >> 14, key)


def _base(rng: random.Random, n: int) -> tuple[list[str], np.ndarray, list, list]:
    ids = [f"b{i}" for i in range(n)]
    entries = [_entry(rng, (i + 1) << 14) for i in range(n)]
    cols = np.asarray([(e[OFFSET], e[LENGTH], e[CRC], e[REVISION], e[KEY]) for e in entries], dtype=np.int64)
    return ids, cols.reshape(n, 5), [e[METADATA] for e in entries], [e[EMBEDDING] for e in entries]


def _same(a: DocEntry | None, b: DocEntry | None) -> bool:
    if a is None or b is None:
        return a is b
    return ((a[OFFSET], a[LENGTH], a[CRC], a[METADATA], a[REVISION], a[KEY])
            == (b[OFFSET], b[LENGTH], b[CRC], b[METADATA], b[REVISION], b[KEY])
            and (a[EMBEDDING] is None) == (b[EMBEDDING] is None)
            and (a[EMBEDDING] is None or np.array_equal(a[EMBEDDING], b[EMBEDDING])))


@pytest.mark.parametrize("seed", range(8))
def test_entries_match_a_dict_under_random_operations(seed: int) -> None:
    rng = random.Random(seed)
    ids, cols, metas, embs = _base(rng, rng.randrange(0, 60))
    entries = Entries()
    entries.install(list(ids), cols, list(metas), list(embs))
    model: dict[str, DocEntry] = {
        i: (*map(int, cols[r][:3]), metas[r], embs[r], int(cols[r][3]), int(cols[r][4]))
        for r, i in enumerate(ids)}
    names = ids + [f"n{i}" for i in range(30)]
    key = 1 << 30
    for _ in range(400):
        doc_id = rng.choice(names)
        op = rng.random()
        if op < 0.4:
            key += 1 << 14
            e = _entry(rng, key)
            entries[doc_id] = e
            model[doc_id] = e
        elif op < 0.6:
            assert (doc_id in entries) == (doc_id in model)
            if doc_id in model:
                del entries[doc_id]
                del model[doc_id]
            else:
                with pytest.raises(KeyError):
                    del entries[doc_id]
        elif op < 0.8:
            got = entries.get(doc_id)
            assert _same(got, model.get(doc_id))
            assert entries.get(doc_id) is got  # the same object every time
            if got is not None and rng.random() < 0.3:  # recovery repairs an entry: a new one
                repaired = (got[OFFSET] + 1, *got[LENGTH:])
                assert entries.replace(doc_id, repaired) is got
                model[doc_id] = repaired
        else:
            probe = rng.sample(names, k=min(len(names), 10))
            want = [model[i][KEY] if i in model else -1 for i in probe]
            assert entries.keys_of(probe).tolist() == want
        assert len(entries) == len(model)
    assert sorted(entries) == sorted(model)
    assert sorted(entries.metadata_items()) == sorted((i, e[METADATA]) for i, e in model.items())
    got_ids, got_cols, got_meta, got_embs = entries.snapshot_columns()
    assert sorted(got_ids) == sorted(model)
    for row, doc_id in enumerate(got_ids):
        e = model[doc_id]
        assert got_cols[row].tolist() == [e[OFFSET], e[LENGTH], e[CRC], e[REVISION], e[KEY]]
        assert got_meta[row] == e[METADATA]
        assert (got_embs[row] is None) == (e[EMBEDDING] is None)


def test_install_only_into_an_empty_table_and_ids_are_distinct() -> None:
    entries = Entries()
    entries["x"] = (0, 1, 2, None, None, 1, 1 << 14)
    with pytest.raises(RuntimeError):
        entries.install(["a"], np.zeros((1, 5), dtype=np.int64), [None], [None])
    with pytest.raises(ValueError):
        Entries().install(["a", "a"], np.zeros((2, 5), dtype=np.int64), [None, None], [None, None])


def test_doc_table_tracks_tombstones_over_a_base() -> None:
    table = DocTable()
    table.entries.install(["a", "b"], np.asarray([[0, 1, 0, 1, 1 << 14], [1, 1, 0, 1, (1 << 14) + 1]],
                                                 dtype=np.int64), [None, None], [None, None])
    old = table.put("a", (0, 0, 0, '{"_hms_tombstone":7}', None, 2, 2 << 14))
    assert old is not None and old[KEY] == 1 << 14
    assert table.tombstones == {"a"}
    assert table.delete("a") is not None and table.tombstones == set()
    assert table.delete("a") is None
    assert len(table) == 1 and "b" in table.entries and "a" not in table.entries


def test_reopen_adopts_persisted_segments_over_a_column_table(tmp_path, monkeypatch) -> None:
    """A store reopened from its table snapshot takes its persisted segments in one vectorised
    pass (replaced, deleted and purged documents included) and answers exactly as before; after
    more writes a second reopen does too."""
    import trio

    from hmsengine import Engine
    from hmsengine.engine import indexer as indexer_module

    path = tmp_path / "store"
    queries = ["alpha", "beta gamma", "delta", "word7", "word13 alpha"]

    async def answers(engine: Engine) -> list[list[tuple[str, float]]]:
        return [[(h.id, h.score) for h in await engine.search_documents(q, k=20)] for q in queries]

    async def main() -> None:
        async with Engine.open(path) as engine:
            await engine.put_documents([{"id": f"d{i}", "text": f"alpha word{i % 17} beta",
                                         "metadata": {"n": i}} for i in range(300)])
            await engine.put_documents([{"id": f"d{i}", "text": f"gamma delta word{i}"}
                                        for i in range(0, 300, 7)])
            for i in range(1, 300, 11):
                await engine.delete_document(f"d{i}")
            await engine.transact(tombstones=["d5"])
            before = await answers(engine)
            count = engine.statistics().documents
        def per_segment(table: object, docnum_of: object, segment: object) -> list[int]:
            raise AssertionError("the reopen fell back to the per-segment check")

        monkeypatch.setattr(indexer_module, "adopt", per_segment)
        for round_ in range(2):
            async with Engine.open(path) as engine:
                stats = engine.statistics()
                assert stats.table_snapshot_documents > 0
                assert stats.index_documents_tokenized == 0
                assert stats.index_documents_loaded == count
                assert await answers(engine) == before
                assert await engine.get_document("d5") is None
                assert (await engine.get_document("d7")).text == "gamma delta word7"
                if round_ == 0:
                    await engine.put_documents([{"id": "late", "text": "alpha alpha delta"}])
                    await engine.delete_document("d14")
                    before = await answers(engine)
                    count = engine.statistics().documents

    trio.run(main)


def test_lookups_from_another_thread_never_bring_back_a_replaced_or_deleted_version() -> None:
    """A worker thread building entries for base rows (Indexer.load_texts does) while the writer
    replaces and deletes the same ids: afterwards every id holds exactly the writer's last word."""
    import sys
    import threading

    rng = random.Random(11)
    ids, cols, metas, embs = _base(rng, 3000)
    entries = Entries()
    entries.install(list(ids), cols, list(metas), list(embs))
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            for doc_id in ids:
                entries.get(doc_id)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows
    thread = threading.Thread(target=reader)
    thread.start()
    try:
        final: dict[str, DocEntry | None] = {}
        key = 1 << 40
        for doc_id in ids:
            if rng.random() < 0.5:
                key += 1 << 14
                final[doc_id] = e = _entry(rng, key)
                entries[doc_id] = e
            else:
                final[doc_id] = None
                del entries[doc_id]
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
    for doc_id, want in final.items():
        assert entries.get(doc_id) is want
    assert len(entries) == sum(e is not None for e in final.values())


def test_snapshot_columns_are_in_commit_order() -> None:
    """The table snapshot's rows come in key order whether or not the overlay already is (a
    replaced id keeps its place in the dict, so a replace puts it out of order)."""
    entries = Entries()
    for i in range(5):
        entries[f"d{i}"] = (10 * i, 10, i, None if i % 2 else f'{{"i":{i}}}', None, 1, (1 << 14) + i)
    ids, cols, meta, _ = entries.snapshot_columns()
    assert ids == [f"d{i}" for i in range(5)] and cols[:, 4].tolist() == [(1 << 14) + i for i in range(5)]
    assert meta == ['{"i":0}', None, '{"i":2}', None, '{"i":4}']
    entries["d1"] = (99, 11, 7, '{"new":1}', np.ones(2, dtype=np.float32), 2, 2 << 14)
    ids, cols, meta, embs = entries.snapshot_columns()
    assert ids == ["d0", "d2", "d3", "d4", "d1"]
    assert cols[-1].tolist() == [99, 11, 7, 2, 2 << 14] and meta[-1] == '{"new":1}'
    assert embs[-1] is not None and all(e is None for e in embs[:-1])


def test_put_many_is_put_one_by_one() -> None:
    """A transaction's puts installed together give the table, tombstones and replaced
    entries that putting them one at a time gives."""
    from hmsengine.engine.txn import stored_put

    def filled() -> DocTable:
        table = DocTable()
        table.entries.install(["a", "b"], np.asarray([[0, 1, 0, 1, 1 << 14], [1, 1, 0, 1, (1 << 14) + 1]],
                                                     dtype=np.int64), [None, None], [None, None])
        table.put("t", (5, 5, 5, '{"_hms_tombstone":3}', None, 2, 2 << 14))
        return table

    puts = [stored_put("a", "", '{"_hms_tombstone":9}', None, 10, 20, 1),
            stored_put("t", "back", None, None, 30, 20, 2),
            stored_put("new", "n", '{"k":1}', None, 50, 20, 3)]
    one, many = filled(), filled()
    olds = [one.put(op_id, (offset, length, crc, meta, None, 3, (3 << 14) + i))
            for i, (op_id, _, meta, _, offset, length, crc, _) in enumerate(puts)]
    got = many.put_many(3, puts)
    assert [(o[OFFSET], o[KEY]) if o else None for o in got] == \
        [(o[OFFSET], o[KEY]) if o else None for o in olds]
    assert many.tombstones == one.tombstones == {"a"}
    assert {k: vars_of(many.get(k)) for k in many.entries} == {k: vars_of(one.get(k)) for k in one.entries}


def vars_of(entry: DocEntry | None) -> tuple[object, ...]:
    assert entry is not None
    return (entry[OFFSET], entry[LENGTH], entry[CRC], entry[METADATA], entry[REVISION], entry[KEY])


def test_entries_are_untracked_by_the_garbage_collector() -> None:
    """The table's entries, one per document written or read since the open, are tuples the
    cyclic garbage collector stops tracking (numbers, strings, None, numpy arrays): full
    collections then do not traverse them (bench/results/lexical.notes.md)."""
    import gc

    from hmsengine.engine.txn import stored_put

    table = DocTable()
    table.put("a", (0, 10, 1, '{"k":1}', np.ones(3, dtype=np.float32), 1, 1 << 14))
    table.put_many(2, [stored_put(f"d{i}", "t", None, None, 10 * i, 10, i) for i in range(20)])
    gc.collect()
    assert not any(gc.is_tracked(table.get(doc_id)) for doc_id in table.entries)
