"""Run a trio event loop in a background thread so that synchronous code (a hypothesis
``RuleBasedStateMachine``) can drive an open Engine step by step."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from hmsengine import Engine

FIGURES: list[str] = []  # one line per reliability test, printed by conftest.py's summary


def report(line: str) -> None:
    """Print a figures line now (with -s) and in the terminal summary."""
    print("\n" + line)
    FIGURES.append(line)


class TrioHost:
    def __init__(self) -> None:
        self._ready = threading.Event()
        self._token: Any = None
        self._stop: trio.Event | None = None
        self._nursery: trio.Nursery | None = None
        self._close_engine: trio.Event | None = None
        self._engine_closed: trio.Event | None = None
        self.engine: Engine | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)
        self._thread.start()
        self._ready.wait()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def run(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        return trio.from_thread.run(fn, *args, trio_token=self._token)

    async def _hold(self, target: Any, options: dict[str, Any],
                    task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        self._close_engine = trio.Event()
        self._engine_closed = trio.Event()
        try:
            async with Engine.open(target, **options) as engine:
                task_status.started(engine)
                await self._close_engine.wait()
        finally:
            self._engine_closed.set()

    def open_engine(self, target: Any, **options: Any) -> Engine:
        async def start() -> Engine:
            assert self._nursery is not None
            return await self._nursery.start(self._hold, target, options)

        self.engine = self.run(start)
        return self.engine

    def close_engine(self) -> None:
        if self.engine is None:
            return

        async def close() -> None:
            assert self._close_engine is not None and self._engine_closed is not None
            self._close_engine.set()
            await self._engine_closed.wait()

        self.run(close)
        self.engine = None

    def stop(self) -> None:
        self.close_engine()

        async def stop() -> None:
            assert self._stop is not None
            self._stop.set()

        self.run(stop)
        self._thread.join(timeout=30)
