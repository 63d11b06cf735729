"""``HMSStore``: LangGraph's long-term memory store (``langgraph.store.base.BaseStore``) over
an hmsengine store. Needs ``pip install 'hmsengine[langgraph]'``.

::

    async with HMSStore.open("agent-store") as store:        # or HMSStore(memory) over an
        graph = builder.compile(store=store)                 # hmsengine.aio memory
        await graph.ainvoke(...)      # nodes use get_store(): put, get, search, ...

Mapping. An item ``(namespace, key)`` is a fact in the hmsengine namespace
``".".join(namespace)`` (LangGraph forbids "." in a label, so the join is unambiguous), whose
metadata holds the key, the value, its creation time and order, and its TTL; its text is the
value's strings (the ``index`` fields when given, else every string in it), which recall ranks.
Each item has its own subject slot, and a put on an existing key writes a new version that
supersedes the current one (``history`` shows the versions; a delete forgets them all). The
namespace and each of its prefixes are entities of the fact, so a prefix search is an entity
filter. Facts in the store that are not items are never seen.

Operations (``batch``/``abatch``; ``get``/``put``/``delete``/``search``/``list_namespaces`` and
their async forms come from the base class):

* ``search`` without ``query`` lists the items under the prefix namespace by namespace (in
  sorted order), oldest created first within one (an update keeps an item's place, a delete
  and put again moves it last), as ``InMemoryStore`` orders a store whose namespaces were made
  in sorted order. With ``query``, hmsengine's recall ranks them (BM25, and hybrid when the
  store has an embedder) and ``SearchItem.score`` is recall's score. ``filter`` matches value
  fields as ``InMemoryStore`` does (equality, nested objects, ``$eq $ne $gt $gte $lt $lte``).
* ``list_namespaces`` lists the namespaces that hold items (``InMemoryStore`` also lists those
  emptied by deletes), sorted, with prefix/suffix conditions (``*`` matches any label) and
  ``max_depth``.
* TTL (``supports_ttl``): ``put(..., ttl=minutes)`` sets the fact's ``retain_until``; past it
  the item is gone for every operation (hmsengine's retention: ``apply_retention`` or a
  compaction removes it for good). ``refresh_ttl`` on get and search moves it to now + ttl
  (rewriting the fact only when that extends it by at least 1% of the TTL).

Bad input raises LangGraph's own errors where it has one (``InvalidNamespaceError`` for an
empty namespace or a label that is empty, not a string or holds a "."), else
``hmsengine.InvalidRequest`` (a value that is not a JSON object of at most 64 KiB, ...).
Every put and delete is durable when it returns (the journal's guarantee).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from ..errors import InvalidRequest
from ..memory import Memory
from ..memory.values import Fact, ForgetScope
from ._bridge import Bridge

MARK = "langgraph"  # the metadata key of an item's record, and the entities' prefix
MAX_TEXT_CHARS = 30_000
MAX_TEXT_WORDS = 4_000
MAX_RECALL = 1000


def _check_namespace(namespace: tuple[str, ...], *, allow_empty: bool = False) -> str:
    """The hmsengine namespace of a LangGraph one (InvalidNamespaceError if it is not one)."""
    if not isinstance(namespace, tuple):
        raise InvalidNamespaceError(f"Namespace must be a tuple of strings, got {namespace!r}")
    if not namespace and not allow_empty:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels must be non-empty "
                "strings without '.' or NUL")
    return ".".join(namespace)


def _subject(namespace: tuple[str, ...], key: str) -> str:
    digest = hashlib.sha256(json.dumps([list(namespace), key]).encode("utf-8", "surrogatepass"))
    return f"{MARK}:{digest.hexdigest()[:32]}"


def _prefix_entity(prefix: tuple[str, ...]) -> str:
    return f"{MARK}:{'.'.join(prefix)}"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _field(value: Any, path: str) -> list[Any]:
    """The values at a LangGraph field path (``a.b``, ``a[*].b``, ``a[0]``; ``$`` the whole)."""
    if path == "$":
        return [value]
    current = [value]
    for part in path.replace("]", "").replace("[", ".").split("."):
        nxt: list[Any] = []
        for v in current:
            if part == "*" and isinstance(v, list):
                nxt.extend(v)
            elif part.lstrip("-").isdigit() and isinstance(v, list) and -len(v) <= int(part) < len(v):
                nxt.append(v[int(part)])
            elif isinstance(v, Mapping) and part in v:
                nxt.append(v[part])
        current = nxt
    return current


def _text(key: str, value: Mapping[str, Any], fields: list[str] | None) -> str:
    """What recall ranks an item by: the strings of its value (of ``fields`` when given)."""
    parts = _strings(value) if fields is None else [s for f in fields for v in _field(value, f)
                                                     for s in _strings(v)]
    words = " \n".join(parts).split(" ")
    text = " ".join(words[:MAX_TEXT_WORDS])[:MAX_TEXT_CHARS].strip()
    return text or key


def _matches(actual: Any, wanted: Any) -> bool:
    """A filter value against an item's value: operators, nested objects, exact lists, equality."""
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(actual, op, arg) for op, arg in wanted.items())
        return isinstance(actual, Mapping) and all(_matches(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return isinstance(actual, (list, tuple)) and len(actual) == len(wanted) and all(
            _matches(a, w) for a, w in zip(actual, wanted, strict=True))
    return bool(actual == wanted)


def _operator(actual: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(actual == arg)
    if op == "$ne":
        return bool(actual != arg)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(actual), float(arg)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise InvalidRequest(f"filter: unsupported operator {op!r}",
                         hint="use $eq, $ne, $gt, $gte, $lt or $lte")


def _record(fact: Fact) -> dict[str, Any] | None:
    record = (fact.metadata or {}).get(MARK)
    return record if isinstance(record, dict) and isinstance(record.get("key"), str) else None


def _when(ms: int) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)


def _item(fact: Fact, record: dict[str, Any], score: float | None = None,
          search: bool = False) -> Item:
    namespace = tuple(fact.namespace.split("."))
    created, updated = _when(record["created"]), _when(fact.ingest_time)
    if search:
        return SearchItem(namespace=namespace, key=record["key"], value=record["value"],
                          created_at=created, updated_at=updated, score=score)
    return Item(value=record["value"], key=record["key"], namespace=namespace,
                created_at=created, updated_at=updated)


async def _versions(memory: Memory, namespace: tuple[str, ...], key: str) -> list[Fact]:
    """The current versions of an item (one, unless two writers raced), newest first."""
    out: list[Fact] = []
    cursor = None
    while True:
        page = await memory.list(namespace=".".join(namespace), subject=_subject(namespace, key),
                                 limit=1000, cursor=cursor)
        out.extend(f for f in page.items if (_record(f) or {}).get("key") == key)
        cursor = page.next_cursor
        if cursor is None:
            return out


async def _refresh(memory: Memory, facts: list[Fact]) -> None:
    """Move the retention end of items with a TTL to now + TTL (see the module docstring)."""
    now = memory.engine.now()
    for fact in facts:
        ttl = (_record(fact) or {}).get("ttl")
        if isinstance(ttl, (int, float)) and fact.retain_until is not None:
            end = now + int(ttl * 60_000)
            if end - fact.retain_until >= max(1, int(ttl * 600)):
                await memory.retain([fact.id], end)


class _Ops:
    """The operations, run on the engine's trio loop (Bridge.call/acall)."""

    def __init__(self, index_fields: list[str] | None) -> None:
        self.index_fields = index_fields
        self.order = 0

    async def run(self, memory: Memory, ops: list[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self.get(memory, op))
            elif isinstance(op, SearchOp):
                results.append(await self.search(memory, op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self.list_namespaces(memory, op))
            elif isinstance(op, PutOp):
                await self.put(memory, op)
                results.append(None)
            else:
                raise InvalidRequest(f"ops: unknown operation {type(op).__name__}")
        return results

    async def get(self, memory: Memory, op: GetOp) -> Item | None:
        _check_namespace(op.namespace)
        versions = await _versions(memory, op.namespace, str(op.key))
        if not versions:
            return None
        if op.refresh_ttl:
            await _refresh(memory, versions[:1])
        record = _record(versions[0])
        assert record is not None
        return _item(versions[0], record)

    def _next_order(self, memory: Memory) -> int:
        # Creation order: the clock in microseconds, strictly increasing within this store
        # object (an update keeps its item's order, a new item gets a later one).
        self.order = max(self.order + 1, memory.engine.now() * 1000)
        return self.order

    async def put(self, memory: Memory, op: PutOp) -> None:
        name = _check_namespace(op.namespace)
        if op.namespace[0] == "langgraph":
            raise InvalidNamespaceError(f'Root label cannot be "langgraph", got {op.namespace}')
        key = str(op.key)
        subject = _subject(op.namespace, key)
        if op.value is None:
            await memory.forget(ForgetScope.subject(subject))
            return
        if not isinstance(op.value, Mapping):
            raise InvalidRequest(f"value: expected a mapping, got {type(op.value).__name__}")
        value = dict(op.value)
        current = await _versions(memory, op.namespace, key)
        record = _record(current[0]) if current else None
        ttl = op.ttl
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0):
            raise InvalidRequest(f"ttl: expected a positive number of minutes or None, got {ttl!r}")
        now = memory.engine.now()
        fields = None if op.index is None else ([] if op.index is False else list(op.index))
        if fields is None:
            fields = self.index_fields
        new = {"key": key, "value": value,
               "created": record["created"] if record else now,
               "order": record["order"] if record else self._next_order(memory), "ttl": ttl}
        prefixes = [_prefix_entity(op.namespace[:n]) for n in range(len(op.namespace) + 1)]
        await memory.remember(
            _text(key, value, fields), namespace=name, subject=subject, entities=prefixes,
            metadata={MARK: new}, supersedes=[f.id for f in current],
            retain_until=None if ttl is None else now + int(ttl * 60_000))

    async def _items(self, memory: Memory, prefix: tuple[str, ...]) -> list[Fact]:
        out: list[Fact] = []
        cursor = None
        while True:
            page = await memory.list(entity=_prefix_entity(prefix), limit=1000, cursor=cursor)
            out.extend(f for f in page.items if _record(f) is not None)
            cursor = page.next_cursor
            if cursor is None:
                return out

    async def search(self, memory: Memory, op: SearchOp) -> list[SearchItem]:
        _check_namespace(op.namespace_prefix, allow_empty=True)
        if op.limit < 0 or op.offset < 0:
            raise InvalidRequest("limit, offset: expected non-negative integers")
        wanted = dict(op.filter or {})
        scored: list[tuple[Fact, float | None]]
        if op.query:
            hits = await memory.recall(op.query, entity=_prefix_entity(op.namespace_prefix),
                                       k=MAX_RECALL, candidate_limit=MAX_RECALL)
            scored = [(h.fact, h.score) for h in hits if _record(h.fact) is not None]
        else:
            facts = await self._items(memory, op.namespace_prefix)
            facts.sort(key=lambda f: (tuple(f.namespace.split(".")), _record(f)["order"]))  # type: ignore[index]
            scored = [(f, None) for f in facts]
        kept: list[tuple[Fact, float | None]] = []
        seen: set[tuple[str, str]] = set()
        for fact, score in scored:
            record = _record(fact)
            assert record is not None
            if (fact.namespace, record["key"]) in seen:
                continue  # two current versions after a race: the newest only
            seen.add((fact.namespace, record["key"]))
            if all(_matches(record["value"].get(k), v) for k, v in wanted.items()):
                kept.append((fact, score))
        page = kept[op.offset:op.offset + op.limit]
        if op.refresh_ttl:
            await _refresh(memory, [f for f, _ in page])
        return [_item(f, _record(f), score, search=True) for f, score in page]  # type: ignore[arg-type,misc]

    async def list_namespaces(self, memory: Memory, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = []
        for name in await memory.namespaces(entity=_prefix_entity(())):
            labels = tuple(name.split("."))
            if all(_condition(c, labels) for c in op.match_conditions or ()):
                found.append(labels)
        if op.max_depth is not None:
            found = sorted({ns[:op.max_depth] for ns in found})
        return sorted(found)[op.offset:op.offset + op.limit]


def _condition(condition: Any, labels: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(labels) < len(path):
        return False
    pairs = zip(labels, path, strict=False) if condition.match_type == "prefix" else \
        zip(reversed(labels), reversed(path), strict=False)
    return all(p == "*" or a == p for a, p in pairs)


class HMSStore(BaseStore):
    """A LangGraph store over an hmsengine memory; see the module docstring."""

    supports_ttl: bool = True

    def __init__(self, memory: Any, *, index_fields: list[str] | None = None,
                 ttl: TTLConfig | None = None) -> None:
        """Over ``memory``: an open ``hmsengine.aio`` (or ``hmsengine.sync``) memory, which
        stays open when the store is dropped. ``index_fields``: the value fields whose strings
        recall searches (default every string); ``ttl``: LangGraph's TTLConfig (its
        ``default_ttl`` and ``refresh_on_read`` apply)."""
        self._bridge = memory if isinstance(memory, Bridge) else Bridge.of(memory)
        self._ops = _Ops(index_fields)
        self.ttl_config = ttl

    @classmethod
    @asynccontextmanager
    async def open(cls, path: str | os.PathLike[str] | None, *, config: Any = None,
                   index_fields: list[str] | None = None, ttl: TTLConfig | None = None,
                   **open_options: Any) -> AsyncIterator[HMSStore]:
        """Open the store at ``path`` (``Engine.open``'s options; None: in memory) for the block."""
        bridge = await Bridge.open(path, config, **open_options)
        try:
            yield cls(bridge, index_fields=index_fields, ttl=ttl)
        finally:
            await bridge.aclose()

    @property
    def memory(self) -> Memory:
        """The hmsengine memory underneath (a trio object: use it on the engine's loop only)."""
        return self._bridge.memory

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order, blocking (LangGraph's synchronous API)."""
        return self._bridge.call(self._ops.run, list(ops))  # type: ignore[no-any-return]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order without blocking the asyncio loop."""
        return await self._bridge.acall(self._ops.run, list(ops))  # type: ignore[no-any-return]


__all__ = ["HMSStore"]
