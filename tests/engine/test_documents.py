"""The document methods of the engine: put, get, has, delete, replace, revision, statistics."""

from __future__ import annotations

import gc
import json
import os

import pytest
import trio
import trio.testing

from hmsengine import Document, Engine, InvalidRequest, StoreLocked
from hmsengine.engine.values import PlainPuts, PutOp
from hmsengine.errors import EngineClosed


async def test_put_get_roundtrip(store_path):
    """A put document comes back with its exact text, metadata and embedding."""
    async with Engine.open(store_path) as engine:
        result = await engine.put_document(
            "doc-1", "Héllo wörld ✓ 𝄞", metadata={"a": [1, 2.5, None], "b": {"c": "d"}},
            embedding=[0.5, -1.0, 3.25],
        )
        assert result.created is True and result.revision == 1 and result.id == "doc-1"
        doc = await engine.get_document("doc-1")
        assert doc == Document(id="doc-1", text="Héllo wörld ✓ 𝄞",
                               metadata={"a": [1, 2.5, None], "b": {"c": "d"}},
                               embedding=(0.5, -1.0, 3.25))
        assert await engine.get_documents(["doc-1", "nope"]) == [doc, None]
        assert await engine.has_document("doc-1")
        assert await engine.get_document("nope") is None
        assert not await engine.has_document("nope")


async def test_replace_is_atomic_and_reports_not_created(store_path):
    """Re-putting an id replaces the document; created is False; revision grows by one."""
    async with Engine.open(store_path) as engine:
        await engine.put_document("x", "first", metadata={"v": 1})
        again = await engine.put_document("x", "second")
        assert again.created is False and again.revision == 2
        doc = await engine.get_document("x")
        assert doc is not None and doc.text == "second" and doc.metadata is None
        assert engine.statistics().documents == 1


async def test_delete(store_path):
    """Delete returns whether the document existed; an absent id writes nothing."""
    async with Engine.open(store_path) as engine:
        await engine.put_document("x", "text")
        assert await engine.delete_document("x") is True
        assert await engine.get_document("x") is None
        rev = engine.revision
        assert await engine.delete_document("x") is False
        assert engine.revision == rev


async def test_metadata_is_a_fresh_copy(store_path):
    """Mutating returned metadata does not change the stored document."""
    async with Engine.open(store_path) as engine:
        await engine.put_document("x", "t", metadata={"k": [1]})
        doc = await engine.get_document("x")
        assert doc is not None and doc.metadata is not None
        doc.metadata["k"].append(2)
        again = await engine.get_document("x")
        assert again is not None and again.metadata == {"k": [1]}


async def test_documents_survive_reopen(disk_path):
    """Everything written (puts, replaces, deletes) is there after a reopen, same revision."""
    async with Engine.open(disk_path) as engine:
        for i in range(50):
            await engine.put_document(f"d{i}", f"text number {i}", metadata={"i": i})
        await engine.put_document("d3", "replaced")
        await engine.delete_document("d4")
        rev = engine.revision
    async with Engine.open(disk_path) as engine:
        assert engine.revision == rev
        assert (await engine.get_document("d3")).text == "replaced"
        assert await engine.get_document("d4") is None
        assert (await engine.get_document("d7")).metadata == {"i": 7}
        assert engine.statistics().documents == 49


async def test_put_documents_is_one_transaction(store_path):
    """put_documents commits every item in one transaction (revision +1)."""
    async with Engine.open(store_path) as engine:
        results = await engine.put_documents(
            [{"id": "a", "text": "A"}, Document(id="b", text="B", metadata={"x": 1})]
        )
        assert [r.created for r in results] == [True, True]
        assert {r.revision for r in results} == {1} and engine.revision == 1
        assert (await engine.get_document("b")).metadata == {"x": 1}


async def test_the_writer_keeps_nothing_of_a_finished_batch(store_path):
    """Once a put_documents call has returned, no operation of it (each holds its text) stays
    referenced by the writer until the next write comes: neither when its caller committed it
    alone nor when the writer's task did (the second call finds the first in flight)."""
    async with Engine.open(store_path) as engine:
        async with trio.open_nursery() as nursery:
            for k in range(2):
                nursery.start_soon(engine.put_documents,
                                   [{"id": f"d{k}-{i}", "text": f"text {i} " * 50} for i in range(200)])
        assert (engine.statistics().commits_in_caller, engine.statistics().commits) == (1, 2)
        await trio.testing.wait_all_tasks_blocked()
        gc.collect()
        assert [o for o in gc.get_objects() if isinstance(o, (PutOp, PlainPuts))] == []
        assert (await engine.get_document("d1-7")).text == "text 7 " * 50


async def test_a_batch_answers_each_transaction_with_its_own_results(store_path):
    """Transactions the writer commits together get their own answers, made after the commit
    (writer._answers): each put's created flag and its transaction's revision, a delete whether
    the document existed, and a delete made a no-op by an earlier one in the batch False."""
    async with Engine.open(store_path) as engine:
        await engine.put_document("old", "there before")
        await engine.put_document("victim", "to be deleted")
        out: dict[str, object] = {}
        deletes: list[bool] = []

        async def put(name: str, doc_id: str) -> None:
            out[name] = await engine.put_document(doc_id, f"text of {doc_id}")

        async def bulk() -> None:  # large enough to commit in a worker thread: others queue
            out["bulk"] = await engine.put_documents(
                [{"id": f"b{i}", "text": f"text {i} " * 60} for i in range(200)])

        async def delete() -> None:
            deletes.append(await engine.delete_document("victim"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(bulk)
            nursery.start_soon(put, "replace", "old")
            nursery.start_soon(put, "new", "new")
            nursery.start_soon(delete)
            nursery.start_soon(delete)
        stats = engine.statistics()
        bulk_results = out["bulk"]
        assert isinstance(bulk_results, list) and len({r.revision for r in bulk_results}) == 1
        assert all(r.created for r in bulk_results)
        replace, fresh = out["replace"], out["new"]
        assert replace.created is False and fresh.created is True
        revisions = [bulk_results[0].revision, replace.revision, fresh.revision]
        assert len(set(revisions)) == 3 and max(revisions) <= engine.revision == 6
        assert sorted(deletes) == [False, True]
        # Some of those five calls met in one batch (fewer commits than writing transactions).
        assert stats.transactions == 6 and stats.commits < 6
        assert (await engine.get_document("old")).text == "text of old"
        assert not await engine.has_document("victim")


async def test_put_documents_all_or_none(store_path):
    """One bad item rejects the whole batch: nothing is written."""
    async with Engine.open(store_path) as engine:
        with pytest.raises(InvalidRequest, match=r"items\[1\]\.text"):
            await engine.put_documents([{"id": "a", "text": "A"}, {"id": "b", "text": 5}])
        with pytest.raises(InvalidRequest, match="appears twice"):
            await engine.put_documents([{"id": "a", "text": "A"}, {"id": "a", "text": "B"}])
        with pytest.raises(InvalidRequest, match="unknown field"):
            await engine.put_documents([{"id": "a", "text": "A", "colour": "red"}])
        assert engine.revision == 0 and not await engine.has_document("a")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"id": "", "text": "t"}, "id"),
        ({"id": "x" * 513, "text": "t"}, "id"),
        ({"id": 7, "text": "t"}, "id"),
        ({"id": "a\nb", "text": "t"}, "id"),
        ({"id": "ok", "text": b"bytes"}, "text"),
        ({"id": "ok", "text": None}, "text"),
        ({"id": "ok", "text": "x" * (1024 * 1024 + 1)}, "text"),
        ({"id": "ok", "text": "bad \ud800 surrogate"}, "text"),
        ({"id": "ok", "text": "t", "metadata": {"f": float("nan")}}, "metadata"),
        ({"id": "ok", "text": "t", "metadata": {"s": {1, 2}}}, "metadata"),
        ({"id": "ok", "text": "t", "metadata": {1: "int key"}}, "metadata"),
        ({"id": "ok", "text": "t", "metadata": ["not", "an", "object"]}, "metadata"),
        ({"id": "ok", "text": "t", "metadata": {"big": "x" * 70000}}, "metadata"),
        ({"id": "ok", "text": "t", "embedding": [1.0, float("nan")]}, "embedding"),
        ({"id": "ok", "text": "t", "embedding": []}, "embedding"),
        ({"id": "ok", "text": "t", "embedding": "1,2"}, "embedding"),
        ({"id": "ok", "text": "t", "embedding": [[1.0], [2.0]]}, "embedding"),
    ],
)
async def test_bad_input_names_the_field_and_writes_nothing(store_path, kwargs, field):
    """Malformed input raises InvalidRequest naming the field, and nothing is written."""
    async with Engine.open(store_path) as engine:
        kwargs = dict(kwargs)
        doc_id = kwargs.pop("id")
        text = kwargs.pop("text")
        with pytest.raises(InvalidRequest) as info:
            await engine.put_document(doc_id, text, **kwargs)
        assert info.value.code == "invalid_request"
        assert str(info.value.message).startswith(field)
        assert engine.revision == 0 and engine.statistics().documents == 0


async def test_embedding_dimension_fixed_by_first_and_persisted(disk_path):
    """The first embedding fixes the store's dimension, also after a reopen."""
    async with Engine.open(disk_path) as engine:
        await engine.put_document("a", "t", embedding=[1.0, 2.0, 3.0])
        with pytest.raises(InvalidRequest, match="3"):
            await engine.put_document("b", "t", embedding=[1.0, 2.0])
        assert not await engine.has_document("b")
    async with Engine.open(disk_path) as engine:
        assert engine.statistics().embedding_dim == 3
        with pytest.raises(InvalidRequest):
            await engine.put_document("b", "t", embedding=[1.0])


async def test_embedding_dim_recorded_at_creation(disk_path):
    """An explicit embedding_dim is recorded; reopening with a different one is refused."""
    async with Engine.open(disk_path, embedding_dim=4) as engine:
        with pytest.raises(InvalidRequest):
            await engine.put_document("a", "t", embedding=[1.0])
    with pytest.raises(InvalidRequest, match="created with 4"):
        async with Engine.open(disk_path, embedding_dim=5):
            pass
    async with Engine.open(disk_path) as engine:
        await engine.put_document("a", "t", embedding=[1.0, 2.0, 3.0, 4.0])


async def test_format_records_analyzer_and_dim(disk_path):
    """format.json records analyzer and dim at creation; a reopen uses the recorded ones."""
    async with Engine.open(disk_path, analyzer="simple", dim=256) as engine:
        assert engine.analyzer == "simple" and engine.dim == 256
    with open(os.path.join(disk_path, "format.json")) as f:
        fmt = json.load(f)
    assert fmt["analyzer"] == "simple" and fmt["dim"] == 256 and fmt["version"] == 1
    async with Engine.open(disk_path) as engine:
        assert engine.analyzer == "simple" and engine.dim == 256


async def test_second_open_is_locked(disk_path):
    """A second open of the same store raises StoreLocked; after close it opens again."""
    async with Engine.open(disk_path):
        with pytest.raises(StoreLocked) as info:
            async with Engine.open(disk_path):
                pass
        assert info.value.code == "store_locked"
    async with Engine.open(disk_path):
        pass


async def test_lock_held_against_another_process(disk_path):
    """Another process cannot open a store this process holds."""
    import sys

    code = (
        "import trio, sys\nfrom hmsengine import Engine, StoreLocked\n"
        "async def main():\n"
        "    try:\n"
        f"        async with Engine.open({disk_path!r}): print('opened')\n"
        "    except StoreLocked: print('locked')\n"
        "trio.run(main)\n"
    )
    async with Engine.open(disk_path):
        out = await trio.run_process([sys.executable, "-c", code], capture_stdout=True)
    assert out.stdout.decode().strip() == "locked"


async def test_no_exception_group_escapes(store_path):
    """An error raised in the body comes out as itself, not wrapped in an ExceptionGroup."""
    with pytest.raises(KeyError, match="boom"):
        async with Engine.open(store_path) as engine:
            await engine.put_document("a", "t")
            raise KeyError("boom")


async def test_closed_engine_refuses_calls(store_path):
    """Using an engine after its block ended raises EngineClosed (an HmsError)."""
    async with Engine.open(store_path) as engine:
        pass
    with pytest.raises(EngineClosed):
        await engine.put_document("a", "t")
    with pytest.raises(EngineClosed):
        await engine.get_document("a")


async def test_leaving_the_block_finishes_in_flight_writes(disk_path):
    """Writes already sent when the block ends are committed before the engine closes."""
    results = []

    async def writer(engine, i):
        results.append(await engine.put_document(f"w{i}", "text"))

    async with Engine.open(disk_path) as engine, trio.open_nursery() as nursery:
        for i in range(20):
            nursery.start_soon(writer, engine, i)
    assert len(results) == 20
    async with Engine.open(disk_path) as engine:
        assert engine.statistics().documents == 20


async def test_cancelled_body_still_closes_cleanly(disk_path):
    """Cancelling the block's scope mid-way closes the store; what was acknowledged survives."""
    i = 0  # (an open slower than the deadline acknowledges nothing)
    with trio.move_on_after(0.2):
        async with Engine.open(disk_path) as engine:
            while True:
                await engine.put_document(f"c{i}", "text")
                i += 1
    acked = i
    async with Engine.open(disk_path) as engine:
        assert engine.statistics().documents >= acked


async def test_cancelled_puts_are_all_or_nothing_and_the_writer_goes_on(disk_path):
    """A put cancelled before it is sent writes nothing; one cancelled while it waits for the
    writer commits wholly or not at all, and later writes and the reopen are unaffected."""
    async with Engine.open(disk_path) as engine:
        with trio.CancelScope() as scope:
            scope.cancel()
            await engine.put_document("never", "text")
        assert not await engine.has_document("never")
        for i in range(50):
            scope = trio.CancelScope()

            async def put(i: int = i, scope: trio.CancelScope = scope) -> None:
                with scope:
                    await engine.put_documents([{"id": f"c{i}-a", "text": "x"},
                                                {"id": f"c{i}-b", "text": "y"}])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(put)
                for _ in range(i % 4):  # the cancel lands before, during or after the commit
                    await trio.lowlevel.checkpoint()
                scope.cancel()
        await engine.put_document("after", "text")  # the writer answered every one of them
        landed = {i for i in range(50) if await engine.has_document(f"c{i}-a")}
        assert {i for i in range(50) if await engine.has_document(f"c{i}-b")} == landed
        print(f"{len(landed)} of 50 cancelled puts landed")
    async with Engine.open(disk_path) as engine:
        assert await engine.has_document("after") and not await engine.has_document("never")
        assert {i for i in range(50) if await engine.has_document(f"c{i}-a")} == landed
        assert engine.statistics().documents == 1 + 2 * len(landed)


async def test_concurrent_writers_group_commit(store_path):
    """64 tasks x 200 puts: all present (after reopen on disk), far fewer fsyncs than writes;
    nearly every write finds another in flight, so few commit alone (test_commit_alone.py)."""
    async def writer(engine, k):
        for i in range(200):
            await engine.put_document(f"w{k}-{i}", f"writer {k} document {i}")

    async with Engine.open(store_path) as engine:
        async with trio.open_nursery() as nursery:
            for k in range(64):
                nursery.start_soon(writer, engine, k)
        stats = engine.statistics()
        assert stats.documents == 64 * 200 and stats.transactions == 64 * 200
        assert stats.fsyncs * 4 < stats.transactions, stats
        assert stats.commits_in_caller * 4 < stats.commits, stats
        if store_path is None:
            assert (await engine.get_document("w63-199")).text == "writer 63 document 199"
    if store_path is not None:
        async with Engine.open(store_path) as engine:
            assert engine.statistics().documents == 64 * 200
            for k in (0, 31, 63):
                assert (await engine.get_document(f"w{k}-199")).text == f"writer {k} document 199"


async def test_statistics_counts(store_path):
    """statistics() reports writes, transactions, commits, fsyncs and bytes written."""
    async with Engine.open(store_path) as engine:
        await engine.put_document("a", "t")
        await engine.put_documents([{"id": "b", "text": "t"}, {"id": "c", "text": "t"}])
        await engine.delete_document("a")
        s = engine.statistics()
        assert (s.writes, s.transactions, s.documents, s.revision) == (4, 3, 2, 3)
        assert s.fsyncs >= 3 and s.bytes_written > 0 and s.records_zeroed == 1


async def test_open_refuses_foreign_directory(tmp_path):
    """A non-empty directory that is not a store is refused, untouched: not even a LOCK file
    is made in it (issue 23)."""
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(InvalidRequest, match="not an hmsengine store"):
        async with Engine.open(str(tmp_path)):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


async def test_open_validates_options():
    """Bad open options are InvalidRequest."""
    for kwargs in ({"analyzer": "klingon"}, {"dim": 0}, {"embedding_dim": 0}, {"dim": True}):
        with pytest.raises(InvalidRequest):
            async with Engine.open(None, **kwargs):
                pass
