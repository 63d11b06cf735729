"""Injected I/O failures: a failed fsync or write latches the writer broken until reopen."""

from __future__ import annotations

import errno

import pytest

from hmsengine import DurabilityError, Engine
from hmsengine.storage.directory import FsDirectory
from hmsengine.storage.simulated import FaultyDirectory


@pytest.mark.parametrize("error", [errno.EIO, errno.ENOSPC, "short"])
@pytest.mark.parametrize("op", ["sync", "write"])
async def test_failed_io_latches_broken_and_keeps_acknowledged(disk_path, op, error):
    """The failing write raises DurabilityError, every later write too; earlier ones survive."""
    if error == "short" and op != "write":
        pytest.skip("a short write is a write failure")
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
