"""The kernel warm-up at open (kernels/warmup.py, engine/lifecycle.py): the open does not wait
for it, the first search does, closing stops it, and no warm-up thread outlives the engine."""

from __future__ import annotations

import threading
import time

import pytest
import trio

from hmsengine import Engine
from hmsengine.errors import WrongKey
from hmsengine.kernels import warmup


def _warm_up_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "hmsengine-warm-up" and t.is_alive()]


@pytest.fixture
def held_warm_up(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[str]]:
    """The engine's warm-up replaced by one that runs until ``release`` is set or it is asked
    to stop; what ended it is recorded ("released" or "stopped")."""
    from hmsengine.engine import lifecycle

    release = threading.Event()
    ended: list[str] = []

    def held(stop):  # type: ignore[no-untyped-def]
        while not release.is_set():
            if stop():
                ended.append("stopped")
                return
            time.sleep(0.002)
        ended.append("released")

    monkeypatch.setattr(lifecycle, "warm_up", held)
    monkeypatch.setattr(lifecycle, "is_warm", lambda: False)  # as in a fresh process
    return release, ended


async def test_open_and_writes_do_not_wait_for_the_warm_up_the_first_search_does(
        tmp_path, held_warm_up):
    """Engine.open returns and a write is acknowledged while the warm-up still runs; a search
    waits for the warm-up to finish (its kernels run on the event loop), then answers."""
    release, ended = held_warm_up
    async with Engine.open(str(tmp_path / "store")) as engine:
        await engine.put_documents([{"id": "a", "text": "alpha beta"}, {"id": "b", "text": "gamma"}])
        assert engine._indexer.warming is not None and not ended
        found: list[list[str]] = []

        async def search() -> None:
            found.append([h.id for h in await engine.search_documents("alpha", k=5)])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(search)
            await trio.sleep(0.1)
            assert not found and not ended  # the search is waiting for the warm-up
            release.set()
        assert found == [["a"]] and ended == ["released"]
        assert [doc_id for doc_id, _ in await engine.search_ids("gamma")] == ["b"]
        assert engine._indexer.warming is None  # later searches do not ask again


async def test_closing_stops_a_running_warm_up(tmp_path, held_warm_up):
    """An engine closed before its warm-up finished stops it (a short command line call does
    not wait for the whole warm-up) and leaves no warm-up thread behind; its write is kept."""
    _, ended = held_warm_up
    path = str(tmp_path / "store")
    async with Engine.open(path) as engine:
        await engine.put_document("a", "alpha")
    assert ended == ["stopped"] and not _warm_up_threads()
    async with Engine.open(path) as engine:
        assert (await engine.get_document("a")).text == "alpha"
    assert ended == ["stopped", "stopped"]


async def test_a_failed_open_stops_the_warm_up(tmp_path, held_warm_up):
    """An open refused at recovery (an encrypted store and the wrong key: WrongKey) leaves no
    warm-up thread running."""
    _, ended = held_warm_up
    path = str(tmp_path / "store")
    async with Engine.open(path, key="correct horse"):
        pass
    assert ended == ["stopped"]
    with pytest.raises(WrongKey):
        await Engine.open(path, key="wrong horse").__aenter__()
    assert ended == ["stopped", "stopped"] and not _warm_up_threads()


def test_warm_up_stops_between_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """warm_up asks ``stop`` after each kernel and returns as soon as it says True; once it has
    run to its end, a later call has nothing to do (asks nothing)."""
    monkeypatch.setattr(warmup, "_complete", False)  # as in a fresh process
    asked: list[int] = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) >= 3

    warmup.warm_up(stop)
    assert len(asked) == 3
    calls: list[int] = []
    assert not warmup.is_warm()
    warmup.warm_up(lambda: bool(calls.append(1)))
    asked_in_full = len(calls)
    assert asked_in_full > 20 and warmup.is_warm()  # every kernel, each followed by a question
    warmup.warm_up(lambda: bool(calls.append(1)))
    assert len(calls) == asked_in_full  # warm already: nothing run, nothing asked


async def test_an_engine_opened_in_a_warm_process_starts_no_warm_up() -> None:
    """Once a warm-up ran to its end in this process, a later engine starts no warm-up thread
    and its first search waits for nothing."""
    warmup.warm_up()
    async with Engine.open(None) as engine:
        assert engine._indexer.warming is None and not _warm_up_threads()
        await engine.put_document("a", "alpha")
        assert [h.id for h in await engine.search_documents("alpha")] == ["a"]
