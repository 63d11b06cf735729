"""``HMSStore`` against langgraph's own ``InMemoryStore`` (random operation sequences give the
same items, values and order), inside a real LangGraph graph, with TTL, on disk across a
reopen, and with LangGraph's own errors for bad namespaces."""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import InvalidNamespaceError
from langgraph.store.memory import InMemoryStore

from hmsengine import InvalidRequest
from hmsengine.integrations._bridge import Bridge
from hmsengine.integrations.langgraph import HMSStore

SEQUENCES = int(os.environ.get("HMS_LANGGRAPH_SEQUENCES", "500"))
LABELS = ("users", "u1", "u2", "docs", "x")
KEYS = ("k1", "k2", "k3", "pref", "a.b")
WORDS = ("tea", "coffee", "rain", "maps", "Lisbon", "blue")


def _value(rng: random.Random) -> dict[str, Any]:
    value: dict[str, Any] = {"n": rng.randint(0, 5), "text": " ".join(rng.sample(WORDS, 2))}
    if rng.random() < 0.4:
        value["meta"] = {"tag": rng.choice(["a", "b"]), "score": rng.random()}
    if rng.random() < 0.3:
        value["list"] = [rng.randint(0, 2) for _ in range(rng.randint(0, 2))]
    return value


def _filter(rng: random.Random) -> dict[str, Any] | None:
    return rng.choice([None, {"n": rng.randint(0, 5)}, {"meta": {"tag": "a"}},
                       {"n": {"$gte": 2}}, {"n": {"$ne": 3}, "text": {"$ne": "x"}},
                       {"list": [0]}])


def _items(found) -> list[tuple]:
    return [(i.namespace, i.key, i.value) for i in found]


def _sequence(rng: random.Random, root: str, hms: HMSStore, ref: InMemoryStore) -> int:
    """One random sequence under the namespace root ``root``; the number of operations."""
    spaces = sorted({(root,)} | {(root, *rng.sample(LABELS, rng.randint(1, 2)))
                                 for _ in range(3)})
    for ns in spaces:  # InMemoryStore orders namespaces by first touch: touch them sorted
        ref.get(ns, "none")
    steps = rng.randint(4, 14)
    for _ in range(steps):
        ns, key = rng.choice(spaces), rng.choice(KEYS)
        action = rng.random()
        if action < 0.45:
            value = _value(rng)
            hms.put(ns, key, value)
            ref.put(ns, key, value)
        elif action < 0.55:
            hms.delete(ns, key)
            ref.delete(ns, key)
        elif action < 0.7:
            got, want = hms.get(ns, key), ref.get(ns, key)
            assert (got and (got.namespace, got.key, got.value)) == \
                (want and (want.namespace, want.key, want.value))
        elif action < 0.9:
            prefix = rng.choice([(root,), ns, ns[:2]])
            options = {"filter": _filter(rng), "limit": rng.randint(1, 8),
                       "offset": rng.randint(0, 3)}
            assert _items(hms.search(prefix, **options)) == _items(ref.search(prefix, **options))
        else:
            depth = rng.choice([None, 2])
            options = {"prefix": (root,), "suffix": rng.choice([None, (rng.choice(LABELS),)])}
            limit = rng.randint(1, 5)
            got = hms.list_namespaces(**options, max_depth=depth, limit=limit)
            # InMemoryStore also lists namespaces emptied by deletes: the expected answer is its
            # matching namespaces that hold items, then cut to max_depth
            holding = {k for k, items in ref._data.items() if items}
            matching = [n for n in ref.list_namespaces(**options, limit=10_000) if n in holding]
            want = sorted({n[:depth] for n in matching} if depth else matching)
            assert got == want[:limit]
    return steps


def test_random_sequences_match_in_memory_store() -> None:
    """HMS_LANGGRAPH_SEQUENCES (500) random sequences of put, delete, get, search (prefix,
    filter, limit, offset) and list_namespaces (prefix, suffix, max depth) give the same items,
    values and order as InMemoryStore; each sequence under its own namespace root."""
    rng = random.Random(20240522)
    bridge = Bridge.open_sync(None, {"embedder": "none"})
    try:
        hms = HMSStore(bridge)
        ref = InMemoryStore()
        started = time.monotonic()
        ops = sum(_sequence(rng, f"s{n}", hms, ref) for n in range(SEQUENCES))
        # a final whole-store comparison
        for root in (f"s{n}" for n in range(0, SEQUENCES, 97)):
            assert _items(hms.search((root,), limit=1000)) == _items(ref.search((root,), limit=1000))
        print(f"{SEQUENCES} sequences, {ops} operations in {time.monotonic() - started:.1f} s")
    finally:
        bridge.close()


def test_query_search_uses_recall_and_bad_input_uses_langgraph_errors() -> None:
    """A query ranks by recall's score (the matching item first); an empty namespace, an empty
    label or one with a "." is InvalidNamespaceError; a value that is no mapping is
    InvalidRequest."""
    bridge = Bridge.open_sync(None, {"embedder": "none"})
    try:
        store = HMSStore(bridge)
        store.put(("notes", "alice"), "trip", {"text": "Alice flies to Lisbon in May"})
        store.put(("notes", "alice"), "food", {"text": "Alice likes green tea"})
        store.put(("notes", "bob"), "food", {"text": "Bob likes coffee"})
        hits = store.search(("notes",), query="Lisbon flight")
        assert [h.key for h in hits] == ["trip"] and hits[0].score and hits[0].score > 0
        assert [h.key for h in store.search(("notes", "bob"), query="likes")] == ["food"]
        for bad in ((), ("a.b",), ("",), ("ok", 5)):
            with pytest.raises(InvalidNamespaceError):
                store.put(bad, "k", {"v": 1})  # type: ignore[arg-type]
        with pytest.raises(InvalidNamespaceError):
            store.batch([__import__("langgraph.store.base", fromlist=["PutOp"]).PutOp(
                ("x.y",), "k", {"v": 1})])
        with pytest.raises(InvalidRequest):
            store.batch([__import__("langgraph.store.base", fromlist=["PutOp"]).PutOp(
                ("x",), "k", ["not", "a", "mapping"])])  # type: ignore[arg-type]
    finally:
        bridge.close()


def test_ttl_expires_and_refreshes() -> None:
    """An item put with a TTL is gone once it passes (for get, search and list_namespaces);
    reading it with refresh_ttl moves its end; history keeps the versions."""
    now = [1_700_000_000_000]
    bridge = Bridge.open_sync(None, {"embedder": "none"}, clock=lambda: now[0])
    try:
        store = HMSStore(bridge)
        store.put(("s",), "short", {"v": 1}, ttl=1.0)  # one minute
        store.put(("s",), "kept", {"v": 2})
        now[0] += 50_000
        assert store.get(("s",), "short", refresh_ttl=True) is not None  # now ends at +110 s
        now[0] += 50_000
        assert store.get(("s",), "short", refresh_ttl=False) is not None
        now[0] += 61_000
        assert store.get(("s",), "short") is None
        assert [i.key for i in store.search(("s",))] == ["kept"]
        store.put(("s",), "kept", {"v": 3})
        item = store.get(("s",), "kept")
        assert item is not None and item.value == {"v": 3} and item.created_at < item.updated_at
    finally:
        bridge.close()


def test_a_graph_uses_the_store_on_disk(tmp_path) -> None:
    """A LangGraph graph whose node reads and writes memories through get_store() runs under
    asyncio (ainvoke) and synchronously (invoke); the memories survive closing the store."""
    from typing import TypedDict

    from langgraph.config import get_store
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        user: str
        said: str
        known: list[str]

    def remember(state: State) -> dict[str, Any]:
        store = get_store()
        count = len(store.search(("memories", state["user"]), limit=100))
        store.put(("memories", state["user"]), f"m{count}", {"text": state["said"]})
        found = store.search(("memories", state["user"]), limit=100)
        return {"known": [i.value["text"] for i in found]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    path = tmp_path / "store"

    async def run() -> list[str]:
        async with HMSStore.open(path, config={"embedder": "none"}) as store:
            graph = builder.compile(store=store)
            await graph.ainvoke({"user": "ana", "said": "I live in Porto", "known": []})
            out = await asyncio.to_thread(graph.invoke, {"user": "ana", "said": "I like figs",
                                                         "known": []})
            return out["known"]

    assert asyncio.run(run()) == ["I live in Porto", "I like figs"]

    async def reopened() -> list[str]:
        async with HMSStore.open(path, config={"embedder": "none"}) as store:
            return [i.value["text"] for i in await store.asearch(("memories", "ana"))]

    assert asyncio.run(reopened()) == ["I live in Porto", "I like figs"]
