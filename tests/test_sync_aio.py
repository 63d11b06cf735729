"""The same memory scenario through ``hmsengine.sync`` (plain code), ``hmsengine.aio`` (under
``asyncio.run``) and ``Engine`` (under ``trio.run``): remember, supersede, recall as_of, forget.
Plus: errors keep their class, a second open of the same store is StoreLocked, close is clean."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime

import pytest
import trio

from hmsengine import Engine, ForgetScope, NotFound, StoreLocked, aio, sync
from hmsengine.errors import EngineClosed, InvalidRequest

T2020 = int(datetime(2020, 1, 1, tzinfo=UTC).timestamp() * 1000)
T2022 = int(datetime(2022, 6, 1, tzinfo=UTC).timestamp() * 1000)
T2025 = int(datetime(2025, 1, 1, tzinfo=UTC).timestamp() * 1000)


def _engine_threads() -> list[threading.Thread]:
    """The engine threads still alive (trio's idle worker-thread cache is not counted)."""
    return [t for t in threading.enumerate() if t.name == "hmsengine-sync"]


def _check_recalls(now, past, forgotten_now, history) -> None:
    assert [h.fact.id for h in now] == ["berlin"]
    assert [h.fact.id for h in past] == ["paris"] and past[0].status == "current"
    assert [f.id for f in history] == ["paris", "berlin"]
    assert forgotten_now == []


def test_scenario_through_sync(tmp_path):
    """Plain blocking code: every call returns its value; leaving the block joins the thread."""
    with sync.open(tmp_path / "s") as engine:
        memory = engine.memory()
        assert memory.remember("Alice lives in Paris", id="paris", subject="alice/city",
                               valid_from=T2020).created
        r = memory.remember("Alice lives in Berlin", id="berlin", subject="alice/city",
                            valid_from=T2025, supersedes=["paris"])
        assert r.superseded == ("paris",)
        now = memory.recall("Alice lives", k=5)
        past = memory.recall("Alice lives", k=5, as_of=T2022)
        history = memory.history("berlin")
        report = memory.forget(ForgetScope.subject("alice/city"), purge=True)
        assert set(report.removed) == {"paris", "berlin"}
        _check_recalls(now, past, memory.recall("Alice lives", history="all"), history)
        assert engine.statistics().documents == 0
        assert engine.revision >= 3
        assert engine.put_document("d", "a document").created
        assert engine.get_document("d").text == "a document"
        assert [h.id for h in engine.search_documents("document", k=3)] == ["d"]
        assert engine.delete_document("d") is True
        engine.compact(purge=True)
        with pytest.raises(NotFound):
            memory.history("nobody")
        with pytest.raises(InvalidRequest):
            memory.recall("x", k=0)
    assert not _engine_threads()
    with pytest.raises(EngineClosed):
        engine.get_document("d")


def test_scenario_through_aio(tmp_path):
    """Under asyncio.run: the same methods as coroutines, the same results."""

    async def scenario():
        async with aio.open(tmp_path / "s") as engine:
            memory = engine.memory()
            await memory.remember("Alice lives in Paris", id="paris", subject="alice/city",
                                  valid_from=T2020)
            r = await memory.remember("Alice lives in Berlin", id="berlin", subject="alice/city",
                                      valid_from=T2025, supersedes=["paris"])
            assert r.superseded == ("paris",)
            now, past = await asyncio.gather(memory.recall("Alice lives", k=5),
                                             memory.recall("Alice lives", k=5, as_of=T2022))
            history = await memory.history("berlin")
            report = await memory.forget(ForgetScope.ids(["paris"]), include_chain=True)
            assert set(report.removed) == {"paris", "berlin"}
            _check_recalls(now, past, await memory.recall("Alice lives", history="all"), history)
            assert (await engine.statistics()).documents == 0
            assert (await engine.put_document("d", "text")).created
            with pytest.raises(NotFound):
                await memory.history("nobody")

    asyncio.run(scenario())


def test_scenario_through_trio(tmp_path):
    """The reference: the trio Engine itself under trio.run."""

    async def scenario():
        async with Engine.open(tmp_path / "s") as engine:
            memory = engine.memory()
            await memory.remember("Alice lives in Paris", id="paris", subject="alice/city",
                                  valid_from=T2020)
            await memory.remember("Alice lives in Berlin", id="berlin", subject="alice/city",
                                  valid_from=T2025, supersedes=["paris"])
            now = await memory.recall("Alice lives", k=5)
            past = await memory.recall("Alice lives", k=5, as_of=T2022)
            history = await memory.history("berlin")
            await memory.forget(ForgetScope.subject("alice/city"), purge=True)
            _check_recalls(now, past, await memory.recall("Alice lives", history="all"), history)

    trio.run(scenario)


def test_second_open_is_store_locked(tmp_path):
    """Another open of the same store in the process, sync or aio, is StoreLocked; after the
    first closes, the store opens again."""
    with sync.open(tmp_path / "s") as engine:
        engine.put_document("a", "kept")
        with pytest.raises(StoreLocked), sync.open(tmp_path / "s"):
            pass

        async def again():
            async with aio.open(tmp_path / "s"):
                pass

        with pytest.raises(StoreLocked):
            asyncio.run(again())
    with sync.open(tmp_path / "s") as engine:
        assert engine.get_document("a").text == "kept"


def test_bad_open_option_raises_in_caller():
    """An error while opening reaches the caller with its own class, and leaves no thread."""
    with pytest.raises(InvalidRequest), sync.open(None, dim=3):
        pass
    assert not _engine_threads()


def test_aio_open_cancelled_while_opening_releases_the_store(tmp_path):
    """Cancelling a task inside aio.open's opening step leaves no open store behind."""
    import asyncio

    from hmsengine import aio

    path = str(tmp_path / "store")

    async def scenario():
        async def opener():
            async with aio.open(path):
                await asyncio.sleep(10)

        task = asyncio.ensure_future(opener())
        await asyncio.sleep(0)  # let it start opening
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        async with aio.open(path) as engine:  # would be StoreLocked if the first were leaked
            await engine.put_document("a", "reopened")

    asyncio.run(scenario())
