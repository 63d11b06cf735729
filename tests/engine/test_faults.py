"""Injected I/O failures: a failed fsync or write latches the writer broken until reopen."""

from __future__ import annotations

import errno

import pytest

from hmsengine import DurabilityError, Engine
from hmsengine.storage.directory import FsDirectory
from hmsengine.storage.simulated import FaultyDirectory


@pytest.mark.parametrize(
    ("op", "error"),
    [("sync", errno.EIO), ("sync", errno.ENOSPC), ("write", errno.EIO), ("write", errno.ENOSPC),
     ("write", "short")],
)
async def test_failed_io_latches_broken_and_keeps_acknowledged(disk_path, op, error):
    """The failing write raises DurabilityError, every later write too; earlier ones survive."""
    faulty = FaultyDirectory(FsDirectory(disk_path))
    async with Engine.open(faulty) as engine:
        for i in range(5):
            await engine.put_document(f"ok{i}", f"acknowledged {i}")
        faulty.arm(1, ops=(op,), error=error)
        with pytest.raises(DurabilityError) as info:
            await engine.put_document("bad", "this write fails")
        assert info.value.code == "durability_error"
        faulty.disarm()
        # Latched: the disk works again, but the store refuses until reopened (no fsync retry).
        with pytest.raises(DurabilityError):
            await engine.put_document("later", "refused")
        with pytest.raises(DurabilityError):
            await engine.delete_document("ok0")
        assert engine.statistics().broken
        # Reads keep working.
        assert (await engine.get_document("ok3")).text == "acknowledged 3"
        assert await engine.get_document("bad") is None
    async with Engine.open(disk_path) as engine:
        for i in range(5):
            assert (await engine.get_document(f"ok{i}")).text == f"acknowledged {i}"
        assert await engine.get_document("later") is None
        await engine.put_document("after-reopen", "works again")
        assert (await engine.get_document("after-reopen")).text == "works again"


async def test_concurrent_callers_of_a_failed_batch_all_fail(disk_path):
    """Every caller whose transaction was in the failed group commit gets DurabilityError."""
    import trio

    faulty = FaultyDirectory(FsDirectory(disk_path))
    outcomes: list[str] = []

    async def put(engine, i):
        try:
            await engine.put_document(f"c{i}", "text")
            outcomes.append("ok")
        except DurabilityError:
            outcomes.append("failed")

    async with Engine.open(faulty) as engine:
        await engine.put_document("first", "before the fault")
        faulty.arm(1, ops=("sync",))
        async with trio.open_nursery() as nursery:
            for i in range(16):
                nursery.start_soon(put, engine, i)
    assert outcomes.count("failed") == 16
    async with Engine.open(disk_path) as engine:
        assert (await engine.get_document("first")).text == "before the fault"


async def test_noop_delete_answered_with_its_batch(disk_path):
    """A delete that is a no-op only because of an earlier transaction in the same failed batch
    reports the failure, never False for a document that still exists."""
    import trio

    faulty = FaultyDirectory(FsDirectory(disk_path))
    outcomes: list[object] = []

    async def delete(engine):
        try:
            outcomes.append(await engine.delete_document("x"))
        except DurabilityError:
            outcomes.append("failed")

    async with Engine.open(faulty) as engine:
        await engine.put_document("x", "still here")
        faulty.arm(1, ops=("sync",))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(delete, engine)
            nursery.start_soon(delete, engine)
        assert outcomes == ["failed", "failed"]
        assert await engine.has_document("x")


async def test_oversized_batch_is_invalid_and_latches_nothing(monkeypatch):
    """A batch over the text limit is InvalidRequest; the store keeps accepting writes."""
    from hmsengine import InvalidRequest
    from hmsengine.engine import values

    monkeypatch.setattr(values, "MAX_BATCH_TEXT_BYTES", 1000)
    async with Engine.open(None) as engine:
        with pytest.raises(InvalidRequest, match="split the batch"):
            await engine.put_documents([{"id": f"d{i}", "text": "x" * 600} for i in range(2)])
        await engine.put_document("ok", "fine")
        assert not engine.statistics().broken


async def test_faulty_commit_listener_does_not_break_writes():
    """A commit listener that raises is logged; the write still succeeds and the store stays
    writable."""
    async with Engine.open(None) as engine:
        def broken(revision, changes):
            raise RuntimeError("listener bug")

        engine.add_commit_listener(broken)
        result = await engine.put_document("a", "text")
        assert result.created and not engine.statistics().broken
        engine.remove_commit_listener(broken)
        await engine.put_document("b", "more")
        assert engine.statistics().documents == 2
