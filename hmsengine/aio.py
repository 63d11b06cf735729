"""The engine from asyncio: ``hmsengine.aio.open``.

``async with hmsengine.aio.open(path) as engine:`` runs the trio engine in a dedicated thread
(as ``hmsengine.sync`` does) and gives back an object whose methods are coroutines for asyncio:
``await engine.put_document(...)``, ``engine.memory(config)`` with ``await memory.remember(...)``,
``await memory.recall(...)``, ... Each call waits in a worker thread (``asyncio.to_thread``), so
the asyncio loop never blocks. Errors are re-raised as the same ``HmsError`` subclasses; leaving
the block closes the store; a second open of the same store in the process is ``StoreLocked``.
Properties (``revision``) are read without awaiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from .sync import _Loop, _Proxy

__all__ = ["AsyncEngine", "AsyncMemory", "open"]


class _AsyncProxy(_Proxy):
    def _wrap(self, value: Any) -> Any:
        async def method(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(self._loop.call, value, *args, **kwargs)

        return method


class AsyncMemory(_AsyncProxy):
    """A ``Memory`` whose methods are asyncio coroutines."""


class AsyncEngine(_AsyncProxy):
    """An ``Engine`` whose methods are asyncio coroutines; see the module's docstring."""

    def memory(self, config: Any = None, *, embedder: Any = None) -> AsyncMemory:
        """A ``Memory`` over this engine for asyncio (creating it does not block on I/O)."""
        memory = self._loop.call(self._target.memory, config, embedder=embedder)
        return AsyncMemory(self._loop, memory)


@asynccontextmanager
async def open(path: str | os.PathLike[str] | None = None, **open_options: Any) -> AsyncIterator[AsyncEngine]:
    """Open the store at ``path`` (as ``Engine.open``, same options) for asyncio."""
    opening = asyncio.ensure_future(asyncio.to_thread(_Loop, path, open_options))
    try:
        loop = await asyncio.shield(opening)
    except asyncio.CancelledError:
        # The open goes on in its thread regardless: close what it opens (releasing the store's
        # lock) before letting the cancellation through.
        with contextlib.suppress(Exception):
            opened = await opening
            await asyncio.to_thread(opened.close)
        raise
    try:
        assert loop.engine is not None
        yield AsyncEngine(loop, loop.engine)
    finally:
        await asyncio.to_thread(loop.close)
