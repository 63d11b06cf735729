"""A loop of searches answered inline stays cancellable and lets other tasks run
(engine/pacing.py).

Searches the plain lane answers return without a schedule point, for speed. These tests pin that
a tight loop of them can still be cancelled promptly and still lets the index builder work. Each
loop is bounded, so that a regression fails instead of hanging."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import pytest
import trio

from hmsengine import Engine
from hmsengine.engine import indexer as indexer_module
from hmsengine.engine import pacing

TEXTS = [f"apple banana w{i % 7} w{i % 11} cherry" for i in range(200)]


async def _tail_of_200(engine: Engine) -> None:
    await engine.search_documents("apple")  # the kernels warm first (the search awaits them)
    await engine.put_documents([{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)])
    assert engine.statistics().index_tail == 200  # under FOLD_AT: it folds once writes pause


def _calls(engine: Engine) -> list[Callable[[], Awaitable[object]]]:
    # The plain lane, the general path (a metadata filter), and ids only.
    return [lambda: engine.search_documents("apple w2", k=3),
            lambda: engine.search_documents("apple w2", k=3, metadata={}),
            lambda: engine.search_ids("apple w2", k=3)]


class _Loop:
    """A loop of searches bounded to 5 s (so that a regression fails rather than hangs), which
    remembers how far it got when a Cancelled ends it."""

    def __init__(self) -> None:
        self.searches = 0
        self.started = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started

    async def run(self, call: Callable[[], Awaitable[object]]) -> None:
        while self.seconds < 5.0:
            await call()
            self.searches += 1


async def test_a_tight_loop_of_searches_lets_the_builder_fold() -> None:
    """Only searches run after the writes; the builder's fold, due after FOLD_IDLE_SECONDS
    of quiet, still lands within the loop (a schedule point every SEARCH_YIELD_SECONDS).
    With one every 1 ms it never did: the builder's worker thread never got the GIL."""
    assert indexer_module.FOLD_AT > 200
    async with Engine.open(None, analyzer="simple") as engine:
        await _tail_of_200(engine)
        deadline = time.perf_counter() + 20 * pacing.SEARCH_YIELD_SECONDS + 2.0
        searches = 0
        hits = []
        while engine.statistics().index_tail and time.perf_counter() < deadline:
            hits = await engine.search_documents("banana w3", k=5)
            assert len(hits) == 5
            searches += 1
        assert engine.statistics().index_tail == 0, f"no fold during {searches} searches"
        assert engine.statistics().index_segments == 1
        assert await engine.search_ids("banana w3", k=5) == [(h.id, h.score) for h in hits]


async def test_a_deadline_ends_a_tight_loop_of_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 50 ms deadline around a loop of searches ends it: cancellation is checked every
    SEARCH_CANCEL_CHECK_SECONDS, not only when the loop yields (set 60 s away here)."""
    async with Engine.open(None, analyzer="simple") as engine:
        await _tail_of_200(engine)
        await _next_yield_in_a_minute(engine, monkeypatch)
        for call in _calls(engine):
            loop = _Loop()
            with trio.move_on_after(0.05) as scope:
                await loop.run(call)
            assert scope.cancelled_caught, f"{loop.searches} searches ran past their deadline"
            assert loop.searches > 0 and loop.seconds < 2.0


async def test_a_cancelled_scope_ends_a_loop_of_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scope cancelled before the loop: a search raises Cancelled within one check, with no
    yield due (60 s away)."""
    async with Engine.open(None, analyzer="simple") as engine:
        await _tail_of_200(engine)
        await _next_yield_in_a_minute(engine, monkeypatch)
        for call in _calls(engine):
            loop = _Loop()
            with trio.CancelScope() as scope:
                scope.cancel()
                await loop.run(call)
            assert scope.cancelled_caught, f"{loop.searches} searches ran in a cancelled scope"
            assert loop.seconds < 2.0


async def test_searches_between_schedule_points_do_not_yield(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Between two schedule points a search does not yield: a task started meanwhile does not
    run until the loop awaits something else."""
    async with Engine.open(None, analyzer="simple") as engine:
        await _tail_of_200(engine)
        await _next_yield_in_a_minute(engine, monkeypatch)
        ran: list[bool] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_append, ran)
            started = time.perf_counter()
            while time.perf_counter() - started < 3 * pacing.SEARCH_CANCEL_CHECK_SECONDS:
                await engine.search_documents("cherry w1", k=3)
            assert ran == []
        assert ran == [True]


async def _next_yield_in_a_minute(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pacing, "SEARCH_YIELD_SECONDS", 60.0)
    await trio.sleep(0.15)  # past any yield due under the real interval
    await engine.search_documents("cherry")  # yields, and sets the next one 60 s away


async def _append(into: list[bool]) -> None:
    into.append(True)
