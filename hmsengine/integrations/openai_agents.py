"""``HMSSession``: the OpenAI Agents SDK's ``Session`` protocol over an hmsengine store. Needs
``pip install 'hmsengine[openai-agents]'``.

::

    session = HMSSession("user-42", "agent-store")            # or over an hmsengine.aio memory
    result = await Runner.run(agent, "hello", session=session)
    session.close()                                          # or: async with HMSSession(...)

Each conversation item is an episode (recall skips episodes unless asked) in the namespace
``session:<session_id>``, numbered in the order added; its JSON is kept in the fact's metadata
(split across several facts written in one transaction when it is longer than 48 KiB) and its
text is the item's words, so ``hms list --namespace session:user-42`` and recall with
``kinds="episode"`` find them. Every ``add_items`` is one journal transaction: durable when it
returns, all of the items or none after a crash (kill -9 included); ``pop_item`` and
``clear_session`` are durable forgets (the text is zeroed before they return).

Semantics follow the SDK's ``SQLiteSession``: ``get_items(limit)`` gives the latest ``limit``
items in chronological order (all for None or a negative limit, none for 0; ``session_settings``
supplies the default limit), ``pop_item`` removes and returns the newest item (None when the
session is empty), ``clear_session`` removes every item. ``retain_for`` (a ``timedelta``) gives
each item added a retention end: past it, it is no longer returned (hmsengine's retention).

The SDK runs under asyncio: every call waits on the engine's thread from a worker thread, so
the asyncio loop never blocks. Items are plain JSON values (dicts); anything else is
``InvalidRequest``.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import json
import os
import weakref
from typing import Any

import trio

from ..errors import InvalidRequest
from ..memory import Memory
from ..memory.values import ForgetScope, RememberInput
from ._bridge import Bridge

MARK = "agents"  # the metadata key of an item's record
PART_CHARS = 48 * 1024  # the JSON of an item is cut into parts of at most this many characters
MAX_TEXT_CHARS = 30_000
MAX_TEXT_WORDS = 4_000
NAMESPACE_PREFIX = "session:"
_LOCKS: weakref.WeakKeyDictionary[Any, trio.Lock] = weakref.WeakKeyDictionary()


def _words(item: Any) -> str:
    """The searchable text of an item: its strings (content, arguments, outputs)."""
    parts: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            parts.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(item)
    text = " ".join(" ".join(parts).split(" ")[:MAX_TEXT_WORDS])[:MAX_TEXT_CHARS].strip()
    return text or "(item)"


class _Items:
    """The session's operations, run on the engine's trio loop."""

    def __init__(self, session_id: str, retain_for: _dt.timedelta | None) -> None:
        self.namespace = NAMESPACE_PREFIX + session_id
        self.retain_for = retain_for
        # Fact ids: a digest of the session id (any length), the item's number and part.
        self.prefix = "as-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]

    async def _all(self, memory: Memory) -> list[tuple[int, list[tuple[int, str, str]]]]:
        """Every item as (seq, [(part, fact id, json part)]), oldest first."""
        parts: dict[int, list[tuple[int, str, str]]] = {}
        cursor = None
        while True:
            page = await memory.list(namespace=self.namespace, kind="episode", limit=1000,
                                     cursor=cursor)
            for fact in page.items:
                record = (fact.metadata or {}).get(MARK)
                if isinstance(record, dict) and isinstance(record.get("seq"), int):
                    parts.setdefault(record["seq"], []).append(
                        (record.get("part", 0), fact.id, record.get("json", "")))
            cursor = page.next_cursor
            if cursor is None:
                break
        return [(seq, sorted(parts[seq])) for seq in sorted(parts)]

    @staticmethod
    def _decode(parts: list[tuple[int, str, str]]) -> Any:
        return json.loads("".join(p for _, _, p in parts))

    async def get(self, memory: Memory, limit: int | None) -> list[Any]:
        items = await self._all(memory)
        if limit is not None and limit >= 0:
            items = items[max(0, len(items) - limit):] if limit else []
        return [self._decode(parts) for _, parts in items]

    async def add(self, memory: Memory, items: list[Any]) -> None:
        # Numbering reads the session, so adds to one store take turns (also from two
        # HMSSession objects of one session id).
        lock = _LOCKS.get(memory.engine)
        if lock is None:
            lock = _LOCKS[memory.engine] = trio.Lock()
        async with lock:
            existing = await self._all(memory)
            await self._add(memory, items, existing[-1][0] + 1 if existing else 1)

    async def _add(self, memory: Memory, items: list[Any], seq: int) -> None:
        now = memory.engine.now()
        until = None if self.retain_for is None else now + int(self.retain_for.total_seconds() * 1000)
        inputs: list[RememberInput] = []
        for item in items:
            try:
                encoded = json.dumps(item, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise InvalidRequest(f"items: not a JSON value ({exc})") from None
            chunks = [encoded[i:i + PART_CHARS] for i in range(0, len(encoded), PART_CHARS)]
            for part, chunk in enumerate(chunks):
                inputs.append(RememberInput(
                    text=_words(item) if part == 0 else f"(part {part + 1} of item {seq})",
                    id=f"{self.prefix}-{seq:012d}-{part:04d}", kind="episode",
                    namespace=self.namespace, event_time=now, retain_until=until,
                    metadata={MARK: {"seq": seq, "part": part, "json": chunk}}))
            seq += 1
        if inputs:
            await memory.remember_many(inputs)

    async def pop(self, memory: Memory) -> Any:
        items = await self._all(memory)
        if not items:
            return None
        _, parts = items[-1]
        await memory.forget(ForgetScope.ids([fact_id for _, fact_id, _ in parts]))
        return self._decode(parts)

    async def clear(self, memory: Memory) -> None:
        await memory.forget(ForgetScope.namespace(self.namespace))


class HMSSession:
    """An Agents SDK session stored in hmsengine; see the module docstring."""

    session_settings: Any = None

    def __init__(self, session_id: str, path_or_memory: Any, *,
                 retain_for: _dt.timedelta | None = None, session_settings: Any = None,
                 config: Any = None, **open_options: Any) -> None:
        """``path_or_memory``: a store directory (opened on first use and closed by ``close``),
        or an open ``hmsengine.aio``/``hmsengine.sync`` memory (left open)."""
        if not isinstance(session_id, str) or not session_id:
            raise InvalidRequest("session_id: expected a non-empty string")
        if retain_for is not None and (not isinstance(retain_for, _dt.timedelta)
                                       or retain_for.total_seconds() <= 0):
            raise InvalidRequest("retain_for: expected a positive timedelta or None")
        self.session_id = session_id
        self.session_settings = session_settings
        self._items = _Items(session_id, retain_for)
        self._bridge: Bridge | None = None
        self._path: str | os.PathLike[str] | None = None
        self._open_options = dict(open_options)
        self._config = config
        self._opening: asyncio.Lock | None = None  # made in the running loop, on first use
        if isinstance(path_or_memory, (str, os.PathLike)):
            self._path = path_or_memory
        else:
            self._bridge = path_or_memory if isinstance(path_or_memory, Bridge) else \
                Bridge.of(path_or_memory)

    async def _run(self, fn: Any, *args: Any) -> Any:
        if self._bridge is None:
            if self._opening is None:
                self._opening = asyncio.Lock()
            async with self._opening:
                if self._bridge is None:
                    self._bridge = await Bridge.open(self._path, self._config,
                                                     **self._open_options)
        return await self._bridge.acall(fn, *args)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The latest ``limit`` items, oldest first (all when None: ``session_settings.limit``)."""
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise InvalidRequest(f"limit: expected an integer or None, got {limit!r}")
        return await self._run(self._items.get, limit)  # type: ignore[no-any-return]

    async def add_items(self, items: list[Any]) -> None:
        """Append ``items`` in one transaction (durable when it returns)."""
        if not isinstance(items, list):
            raise InvalidRequest("items: expected a list")
        if items:
            await self._run(self._items.add, items)

    async def pop_item(self) -> Any:
        """Remove and return the newest item (None if the session is empty)."""
        return await self._run(self._items.pop)

    async def clear_session(self) -> None:
        """Remove every item of this session."""
        await self._run(self._items.clear)

    def close(self) -> None:
        """Close the store if this session opened it."""
        if self._bridge is not None and self._path is not None:
            self._bridge.close()
            self._bridge = None

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> HMSSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = ["HMSSession"]
