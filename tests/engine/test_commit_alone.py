"""A write with nothing else in flight is committed by its caller (writer.py, WriterActor._commit_alone).

The path must keep every promise of the writer actor: one owner of the journal at a time, group
commit for concurrent callers, a batch committed whole even if its caller is cancelled, and a
close that waits for it.
"""

from __future__ import annotations

import random
import string
import threading
from typing import Any

import trio
import trio.testing

from hmsengine import Engine
from hmsengine.engine.writer import INLINE_COMMIT_CHARS, INLINE_ZERO_BYTES
from hmsengine.storage import manifest
from hmsengine.storage.directory import FileHandle, FsDirectory


class _GatedFile:
    """A file handle whose ``sync`` waits for the test's gate while the gate is armed."""

    def __init__(self, inner: FileHandle, owner: GatedDirectory) -> None:
        self._inner = inner
        self._owner = owner
        self.name = inner.name

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)

    def sync(self) -> None:
        owner = self._owner
        if owner.armed:
            owner.entered.set()
            assert owner.gate.wait(timeout=30), "the test never opened the gate"
        self._inner.sync()


class GatedDirectory(FsDirectory):
    """A real directory whose journal syncs can be held in their worker thread."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.armed = False
        self.entered = threading.Event()
        self.gate = threading.Event()

    def open_file(self, name: str, *, create: bool = False) -> Any:
        handle = super().open_file(name, create=create)
        return _GatedFile(handle, self) if name.endswith(manifest.JOURNAL_FILE) else handle


def _large_batch(prefix: str, seed: int = 0) -> list[dict[str, str]]:
    """Documents enough to send their commit to a worker thread (the path that can wait), and
    incompressible enough that replacing them sends the zeroing of the old records to one too."""
    rng = random.Random(seed)
    texts = [" ".join("".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(3600))
             for _ in range(24)]
    # Random letters keep more than half their size through zstd.
    assert sum(map(len, texts)) > max(INLINE_COMMIT_CHARS, 2 * INLINE_ZERO_BYTES)
    return [{"id": f"{prefix}{i}", "text": text} for i, text in enumerate(texts)]


async def test_a_lone_writer_commits_in_its_own_task(store_path):
    """Sequential writes each commit alone; each is durable and readable when it returns."""
    async with Engine.open(store_path) as engine:
        for i in range(40):
            result = await engine.put_document(f"d{i}", f"text {i}")
            assert result.revision == i + 1
            assert (await engine.get_document(f"d{i}")).text == f"text {i}"
            assert [h.id for h in await engine.search_documents(f"text {i}", k=1)] == [f"d{i}"]
        await engine.put_documents([{"id": "x", "text": "one"}, {"id": "y", "text": "two"}])
        assert await engine.delete_document("x")
        s = engine.statistics()
        assert s.commits_in_caller == s.commits == s.transactions == 42 and s.fsyncs >= 42
    if store_path is not None:
        async with Engine.open(store_path) as engine:
            assert engine.statistics().documents == 41
            assert (await engine.get_document("d39")).text == "text 39"


async def test_a_caller_committing_alone_in_a_thread_keeps_the_store_to_itself(tmp_path):
    """While a lone large batch waits for its fsync in a worker thread, another write queues
    behind it (never interleaves), and cancelling the first caller does not split its batch
    (whose replaced records are then zeroed in a worker thread too)."""
    directory = GatedDirectory(str(tmp_path / "store"))
    old, big = _large_batch("big", seed=1), _large_batch("big", seed=2)
    outcome: dict[str, Any] = {}
    async with Engine.open(directory) as engine:
        await engine.put_documents(old)
        scope = trio.CancelScope()

        async def alone() -> None:
            with scope:
                outcome["big"] = await engine.put_documents(big)

        async def second() -> None:
            outcome["small"] = await engine.put_document("small", "after the big batch")

        directory.armed = True
        async with trio.open_nursery() as nursery:
            nursery.start_soon(alone)
            await trio.to_thread.run_sync(directory.entered.wait)
            nursery.start_soon(second)
            scope.cancel()
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
            assert outcome == {} and not await engine.has_document("small")
            # Not durable yet, so not visible: readers still see the old version.
            assert (await engine.get_document("big0")).text == old[0]["text"]
            directory.armed = False
            directory.gate.set()
        assert [(r.revision, r.created) for r in outcome["big"]] == [(2, False)] * len(big)
        assert outcome["small"].revision == 3
        s = engine.statistics()
        assert not s.broken and s.documents == len(big) + 1
        assert s.commits_in_caller == 2 and s.commits == 3 and s.records_zeroed == len(old)
    async with Engine.open(str(tmp_path / "store")) as engine:
        assert engine.statistics().documents == len(big) + 1
        assert (await engine.get_document("big0")).text == big[0]["text"]
        assert (await engine.get_document("small")).text == "after the big batch"


async def test_closing_waits_for_a_caller_committing_alone(tmp_path):
    """The store closes after a batch its caller is still committing, never under it."""
    directory = GatedDirectory(str(tmp_path / "store"))
    big = _large_batch("big")
    results: list[Any] = []

    async def alone(engine: Engine) -> None:
        results.extend(await engine.put_documents(big))

    async with trio.open_nursery() as outer:
        async with Engine.open(directory) as engine:
            directory.armed = True
            outer.start_soon(alone, engine)
            await trio.to_thread.run_sync(directory.entered.wait)
            directory.armed = False
            threading.Timer(0.2, directory.gate.set).start()
        # The block has closed the engine: the batch finished first.
        assert len(results) == len(big)
    async with Engine.open(str(tmp_path / "store")) as engine:
        assert engine.statistics().documents == len(big)
        assert (await engine.get_document(f"big{len(big) - 1}")).text == big[-1]["text"]
