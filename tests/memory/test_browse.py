"""``Memory.list``, ``count`` and ``namespaces``: pages newest first with a cursor, filters, and
one fixed view per listing (no fact skipped or repeated whatever is written between pages)."""

from __future__ import annotations

import os
import random
import sys
from collections import deque

import pytest
import trio

from hmsengine import Engine, ForgetScope, InvalidRequest, Memory, RememberInput
from hmsengine.memory.index import BORN_WINDOW_MS


class Clock:
    """A clock the test moves by hand (ms)."""

    def __init__(self, start: int = 1_700_000_000_000) -> None:
        self.t = start

    def __call__(self) -> int:
        return self.t


async def _all_pages(memory: Memory, cursor: str | None = None, **filters) -> list[str]:
    ids: list[str] = []
    while True:
        page = await memory.list(cursor=cursor, **filters)
        ids.extend(f.id for f in page.items)
        cursor = page.next_cursor
        if cursor is None:
            return ids


async def test_pages_are_newest_first_and_cover_everything_once(store_path: str | None) -> None:
    """Pages of 3 list every fact once, newest first (ties by id, descending), the last page
    has no cursor, and count agrees with the pages."""
    clock = Clock()
    async with Engine.open(store_path, clock=clock) as engine:
        memory = Memory(engine)
        expected = []
        for n in range(10):
            clock.t += n % 2  # pairs share an ingest time
            r = await memory.remember(f"fact number {n}", id=f"f{n:02d}")
            expected.append((clock.t, r.id))
        ids = await _all_pages(memory, limit=3)
        assert ids == [i for _, i in sorted(expected, reverse=True)]
        assert await memory.count() == 10
        last = await memory.list(limit=10)
        assert last.next_cursor is None and len(last.items) == 10


async def test_filters(store_path: str | None) -> None:
    """namespace, subject, entity, kind, status and metadata filter; kind and status take a
    tuple; status "all" includes every status; count follows the same filters."""
    clock = Clock()
    async with Engine.open(store_path, clock=clock) as engine:
        memory = Memory(engine)
        await memory.remember("Alice lives in Paris", id="a1", subject="alice/city",
                              entities=["Alice"], namespace="users", metadata={"src": "chat"})
        clock.t += 1
        await memory.remember("Alice lives in Rome", id="a2", subject="alice/city",
                              entities=["Alice"], namespace="users", supersedes=["a1"])
        clock.t += 1
        await memory.remember("met Bob", id="e1", kind="episode", entities=["Bob"])
        await memory.remember("old news", id="x1", valid_to=clock.t - 1)
        assert [f.id for f in (await memory.list(namespace="users")).items] == ["a2"]
        assert [f.id for f in (await memory.list(namespace="users", status="all")).items] == \
            ["a2", "a1"]
        assert [f.id for f in (await memory.list(status="superseded")).items] == ["a1"]
        assert [f.id for f in (await memory.list(status=("expired", "superseded"))).items] == \
            ["x1", "a1"]
        assert [f.id for f in (await memory.list(subject="alice/city", status="all")).items] \
            == ["a2", "a1"]
        assert [f.id for f in (await memory.list(entity="Bob")).items] == ["e1"]
        assert [f.id for f in (await memory.list(kind="episode")).items] == ["e1"]
        assert {f.id for f in (await memory.list(kind=("fact", "episode"))).items} == {"a2", "e1"}
        assert [f.id for f in (await memory.list(metadata={"src": "chat"}, status="all")).items] \
            == ["a1"]
        assert await memory.count(status="all") == 4
        assert await memory.count(namespace="users") == 1
        assert await memory.count(as_of=clock.t - 5, status="all") == 4
        assert await memory.namespaces() == {"default": 2, "users": 2}
        # known_at leaves out what was ingested after it
        assert [f.id for f in (await memory.list(known_at=clock.t - 2, status="all")).items] \
            == ["a1"]


@pytest.mark.parametrize("bad", [
    {"limit": 0}, {"limit": 1001}, {"limit": True}, {"status": "gone"}, {"status": ()},
    {"kind": "thought"}, {"namespace": ""}, {"metadata": {}}, {"cursor": "not a cursor"},
    {"cursor": 5}, {"as_of": "yesterday"},
])
async def test_bad_input_is_invalid_request(bad: dict) -> None:
    """Each bad option is InvalidRequest naming the field."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        with pytest.raises(InvalidRequest) as caught:
            await memory.list(**bad)
        assert next(iter(bad)) in caught.value.message


async def test_a_cursor_belongs_to_its_filters() -> None:
    """A cursor passed with other filters is refused, and says so."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        for n in range(3):
            await memory.remember(f"fact {n}", namespace="a")
        page = await memory.list(namespace="a", limit=1)
        with pytest.raises(InvalidRequest, match="other filters"):
            await memory.list(namespace="b", cursor=page.next_cursor)


async def test_a_listing_evaluates_statuses_at_its_first_page() -> None:
    """A fact that expires between two pages still comes in the second: the cursor keeps the
    first page's evaluation time."""
    clock = Clock()
    async with Engine.open(None, clock=clock) as engine:
        memory = Memory(engine)
        await memory.remember("expires soon", id="old", valid_to=clock.t + 10)
        clock.t += 1
        await memory.remember("stays", id="new")
        page = await memory.list(limit=1)
        assert [f.id for f in page.items] == ["new"]
        clock.t += 100
        rest = await memory.list(limit=1, cursor=page.next_cursor)
        assert [f.id for f in rest.items] == ["old"]
        assert [f.id for f in (await memory.list()).items] == ["new"]


SEEDS = int(os.environ.get("HMS_BROWSE_SEEDS", "12"))


@pytest.mark.parametrize("seed", range(SEEDS))
async def test_no_fact_skipped_or_repeated_under_concurrent_writes(seed: int) -> None:
    """While a listing pages through the store (pages of 1 to 7), other tasks remember new
    facts (also in the same millisecond), forget some, rewrite others (a forgotten middle
    version re-links its successor; retention changes): every fact present at the start and
    never forgotten comes exactly once, nothing created after the first page comes at all."""
    rng = random.Random(seed)
    clock = Clock()
    async with Engine.open(None, clock=clock) as engine:
        memory = Memory(engine)
        for n in range(60):
            if n < 45 and rng.random() < 0.5:
                clock.t += 1  # the newest 15 share one millisecond (so will the first new ones)
            links = [f"f{n - 1:03d}"] if n and rng.random() < 0.2 else []
            await memory.remember(f"fact {n} about {rng.choice(['tea', 'rain', 'maps'])}",
                                  id=f"f{n:03d}", supersedes=links)
        start = {f.id for f in (await memory.list(status="all", limit=1000)).items}
        forgotten: set[str] = set()
        listed: list[str] = []

        async def writer() -> None:
            for n in range(40):
                choice = rng.random()
                if choice < 0.4:
                    if n > 20 and rng.random() < 0.5:
                        clock.t += 1
                    # ids that sort before the old ones: in the same millisecond they would
                    # land after a cursor, were creations after the first page not left out
                    await memory.remember_many([RememberInput(text=f"new {n} {k}", id=f"a{n}-{k}")
                                                for k in range(rng.randint(1, 3))])
                elif choice < 0.7:
                    victim = rng.choice(sorted(start - forgotten))
                    await memory.forget(ForgetScope.ids([victim]))
                    forgotten.add(victim)
                else:
                    await memory.retain([rng.choice(sorted(start))], clock.t + 10_000_000)
                await trio.sleep(0)

        async def reader() -> None:
            cursor = None
            while True:
                page = await memory.list(status="all", limit=rng.randint(1, 7), cursor=cursor)
                listed.extend(f.id for f in page.items)
                cursor = page.next_cursor
                if cursor is None:
                    return
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer)
            nursery.start_soon(reader)
        assert len(listed) == len(set(listed)), "a fact was repeated"
        assert set(listed) <= start, "a fact created after the first page was listed"
        assert start - forgotten <= set(listed), "a fact present throughout was skipped"


async def test_listing_after_reopen_knows_retention(disk_path: str) -> None:
    """A reopened store's index knows each fact's retention (a fact past it is not listed)."""
    clock = Clock()
    async with Engine.open(disk_path, clock=clock) as engine:
        memory = Memory(engine)
        await memory.remember("short lived", id="s", retain_until=clock.t + 5)
        await memory.remember("long lived", id="l")
    clock.t += 10
    async with Engine.open(disk_path, clock=clock) as engine:
        memory = Memory(engine)
        assert [f.id for f in (await memory.list()).items] == ["l"]
        assert [f.id for f in (await memory.list(status="expired-retention")).items] == ["s"]
        assert await memory.namespaces() == {"default": 1}


def _deep_size(value: object) -> int:
    """Bytes of the containers and tuples reachable from ``value`` (strs and ints not counted:
    the ids are the index's own objects, the revisions and times one per commit)."""
    if isinstance(value, (str, int)):
        return 0
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        return size + sum(_deep_size(v) for v in value.values())
    if isinstance(value, (list, tuple, deque)):
        return size + sum(_deep_size(v) for v in value)
    return size


async def test_creations_are_remembered_for_an_hour_at_a_few_bytes_a_fact() -> None:
    """A listing leaves out what was created after its first page for BORN_WINDOW_MS (here
    20,000 facts of the same millisecond whose ids sort after its cursor), at most 16 bytes a
    created fact (a bulk load keeps them all for the hour); a listing resumed after the hour
    shows them (still skipping and repeating none), but not what the latest commit created."""
    clock = Clock()
    async with Engine.open(None, clock=clock) as engine:
        memory = Memory(engine, embedder=False)
        await memory.remember_many([RememberInput(text=f"old {n}", id=f"old{n:02d}")
                                    for n in range(10)])
        first = await memory.list(limit=5)
        for start in (0, 10_000):  # in the same millisecond, with ids sorting before the old
            await memory.remember_many([RememberInput(text=f"new {n}", id=f"a{n:05d}")
                                        for n in range(start, start + 10_000)])
        born = memory.core.index.born
        assert _deep_size(born) <= 16 * 20_010, _deep_size(born)
        resumed = await _all_pages(memory, cursor=first.next_cursor, limit=5)
        assert resumed == [f"old{n:02d}" for n in range(4, -1, -1)]
        clock.t += BORN_WINDOW_MS + 1
        await memory.remember("a later fact", id="later")  # a commit expires the window
        assert len(born) == 1
        late = await _all_pages(memory, cursor=first.next_cursor, limit=1000)
        assert late == [f"old{n:02d}" for n in range(4, -1, -1)] + \
            [f"a{n:05d}" for n in range(19_999, -1, -1)]
