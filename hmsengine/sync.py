"""The engine from plain (blocking) Python: ``hmsengine.sync.open``.

``with hmsengine.sync.open(path) as engine:`` runs the trio engine in a dedicated thread (its own
``trio.run``) and gives back a blocking object with the engine's methods: ``put_document``,
``get_document``, ``search_documents``, ``delete_document``, ``compact``, ``statistics``,
``revision``, ... and ``memory(config)``, a blocking ``Memory`` with ``remember``, ``recall``,
``explain``, ``forget``, ``history``, ``get``, ``load``, ... Each call crosses to the engine's
thread with ``trio.from_thread`` and blocks until it returns; an error is re-raised in the
caller as the same ``HmsError`` subclass. Leaving the ``with`` closes the store and joins the
thread. A second open of the same store in the same process raises ``StoreLocked``.

The object is safe to share between threads (each call is handed to the one trio loop).
"""

from __future__ import annotations

import inspect
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import trio

from .errors import EngineClosed
from .facade import Engine

__all__ = ["SyncEngine", "SyncMemory", "open"]


class _Loop:
    """A trio loop in its own thread, holding one open Engine until ``close``."""

    def __init__(self, path: Any, options: dict[str, Any]) -> None:
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.engine: Engine | None = None
        self.token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._thread = threading.Thread(target=self._main, args=(path, options),
                                        name="hmsengine-sync", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            error, self._error = self._error, None
            raise error

    def _main(self, path: Any, options: dict[str, Any]) -> None:
        try:
            trio.run(self._hold, path, options)
        except BaseException as exc:  # a failed open or close: re-raised in the caller
            self._error = exc
            self._ready.set()

    async def _hold(self, path: Any, options: dict[str, Any]) -> None:
        async with Engine.open(path, **options) as engine:
            self.engine = engine
            self.token = trio.lowlevel.current_trio_token()
            self._stop = trio.Event()
            self._ready.set()
            await self._stop.wait()

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` on the engine's loop (awaited if it is a coroutine)."""
        if self.token is None or self._stop is None or self._stop.is_set():
            raise EngineClosed("the engine is closed")

        async def run() -> Any:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            return result

        try:
            return trio.from_thread.run(run, trio_token=self.token)
        except trio.RunFinishedError:
            raise EngineClosed("the engine is closed") from None

    def close(self) -> None:
        if self.token is not None and self._stop is not None:
            stop = self._stop
            try:
                trio.from_thread.run_sync(stop.set, trio_token=self.token)
            except trio.RunFinishedError:
                pass
        self._thread.join()
        self.token = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error


class _Proxy:
    """Every method of the wrapped trio object, blocking; attributes read on its loop."""

    def __init__(self, loop: _Loop, target: Any) -> None:
        self._loop = loop
        self._target = target

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        attr = inspect.getattr_static(self._target, name)
        if isinstance(attr, property):
            return self._loop.call(getattr, self._target, name)
        value = getattr(self._target, name)
        if not callable(value):
            return value
        method = self._wrap(value)
        method.__name__ = name
        method.__doc__ = getattr(value, "__doc__", None)
        return method

    def _wrap(self, value: Any) -> Any:
        """The callable that runs ``value`` on the engine's thread (blocking here; the asyncio
        proxy returns a coroutine function instead)."""

        def method(*args: Any, **kwargs: Any) -> Any:
            return self._loop.call(value, *args, **kwargs)

        return method

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | {n for n in dir(self._target) if not n.startswith("_")})


class SyncMemory(_Proxy):
    """A ``Memory`` whose methods block: ``remember``, ``recall``, ``explain``, ``forget``,
    ``history``, ``get``, ``load``, ``capture``, ``profile``, ``call``, ..."""


class SyncEngine(_Proxy):
    """An ``Engine`` whose methods block; see the module's docstring."""

    def memory(self, config: Any = None, *, embedder: Any = None) -> SyncMemory:
        """A blocking ``Memory`` over this engine."""
        memory = self._loop.call(self._target.memory, config, embedder=embedder)
        return SyncMemory(self._loop, memory)


@contextmanager
def open(path: str | os.PathLike[str] | None = None, **open_options: Any) -> Iterator[SyncEngine]:
    """Open the store at ``path`` (as ``Engine.open``, same options) for blocking use."""
    loop = _Loop(path, open_options)
    try:
        assert loop.engine is not None
        yield SyncEngine(loop, loop.engine)
    finally:
        loop.close()


def loop_of(proxy: Any) -> tuple[_Loop, Any]:
    """The engine thread's loop and the trio object behind a sync or asyncio proxy (for the
    integrations, which run their own trio coroutines on that loop)."""
    if not isinstance(proxy, _Proxy):
        raise TypeError(f"expected an hmsengine.sync or hmsengine.aio object, got {type(proxy).__name__}")
    return proxy._loop, proxy._target
