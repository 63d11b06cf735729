"""The trio engine, called from the asyncio and threaded code of agent frameworks.

A :class:`Bridge` holds a ``Memory`` that lives on the engine's own thread (``hmsengine.sync``'s
loop) and runs a trio coroutine function there: ``call`` blocks the calling thread (a framework's
synchronous API), ``acall`` waits in a worker thread so the asyncio loop never blocks. Errors
come back as the same ``HmsError`` subclasses. A bridge opened from a path owns its store and
closes it; one made from an open ``hmsengine.aio``/``hmsengine.sync`` memory does not.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import InvalidRequest
from ..memory import Memory
from ..sync import _Loop, loop_of


class Bridge:
    """A memory on the engine's thread; see the module docstring."""

    def __init__(self, loop: _Loop, memory: Memory, *, owned: bool) -> None:
        self._loop = loop
        self.memory = memory
        self._owned = owned

    @classmethod
    def of(cls, memory: Any) -> Bridge:
        """The bridge of an open ``hmsengine.aio`` or ``hmsengine.sync`` memory (not owned)."""
        try:
            loop, target = loop_of(memory)
        except TypeError:
            raise InvalidRequest(
                f"memory: expected a memory of hmsengine.aio.open(...) or hmsengine.sync.open"
                f"(...), got {type(memory).__name__}",
                hint="the framework runs outside the engine's trio loop: open the store with "
                     "hmsengine.aio (or pass a path)") from None
        if not isinstance(target, Memory):
            raise InvalidRequest("memory: expected engine.memory(...), got an engine")
        return cls(loop, target, owned=False)

    @classmethod
    def open_sync(cls, path: str | os.PathLike[str] | None, config: Any = None,
                  **open_options: Any) -> Bridge:
        """Open the store at ``path`` on its own thread (blocking); the bridge owns it."""
        loop = _Loop(path, open_options)
        try:
            assert loop.engine is not None
            memory = loop.call(loop.engine.memory, config)
        except BaseException:
            loop.close()
            raise
        return cls(loop, memory, owned=True)

    @classmethod
    async def open(cls, path: str | os.PathLike[str] | None, config: Any = None,
                   **open_options: Any) -> Bridge:
        """``open_sync`` without blocking the asyncio loop."""
        return await asyncio.to_thread(cls.open_sync, path, config, **open_options)

    def call(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run ``await fn(memory, *args)`` on the engine's loop, blocking this thread."""
        return self._loop.call(fn, self.memory, *args)

    async def acall(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run ``await fn(memory, *args)`` on the engine's loop, from asyncio."""
        return await asyncio.to_thread(self._loop.call, fn, self.memory, *args)

    def close(self) -> None:
        """Close the store if this bridge opened it (idempotent)."""
        if self._owned:
            self._owned = False
            self._loop.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)
