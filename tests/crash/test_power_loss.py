"""Simulated power loss: every state a crash could leave opens, loses nothing acknowledged,
and recovers a prefix of the commit order."""

from __future__ import annotations

import os
import random

import trio

from hmsengine import Engine
from hmsengine.engine.values import DeleteOp
from hmsengine.storage.simulated import PowerLossDirectory

MIN_STATES = int(os.environ.get("HMS_POWER_LOSS_STATES", "1000"))


async def run_workload(seed: int):
    """Concurrent puts, replaces, deletes and batches on a power-loss directory.

    Returns the snapshots taken at every sync (with how many revisions were acknowledged then)
    and the committed transactions by revision.
    """
    rng = random.Random(seed)
    directory = PowerLossDirectory()
    snapshots: list[tuple[dict, set, int]] = []
    acked = {"max": 0}
    by_revision: dict[int, list[tuple[str, str | None]]] = {}

    def hook(op: str, name: str) -> None:
        # Before every sync (the moment with the most unsynced data) and at random writes.
        if op == "sync" or rng.random() < 0.2:
            snapshots.append((directory.freeze(), set(directory.dirs), acked["max"]))

    async def task(engine, k: int) -> None:
        for i in range(12):
            roll = rng.random()
            if roll < 0.15 and i:
                doc_id = f"t{k}-{rng.randrange(i)}"
                # The internal form of delete_document, which also reports the revision.
                (result,) = await engine._submit([DeleteOp(id=doc_id)])
                if result.existed:
                    by_revision[result.revision] = [(doc_id, None)]
                    acked["max"] = max(acked["max"], result.revision)
                continue
            if roll < 0.3:
                items = [{"id": f"t{k}-b{i}-{j}", "text": f"batch {k} {i} {j} " * rng.randrange(1, 40)}
                         for j in range(3)]
                results = await engine.put_documents(items)
                by_revision[results[0].revision] = [(it["id"], it["text"]) for it in items]
                acked["max"] = max(acked["max"], results[0].revision)
                continue
            doc_id = f"t{k}-{i}" if roll < 0.85 else f"t{k}-0"
            text = f"task {k} item {i} " * rng.randrange(1, 60)
            result = await engine.put_document(doc_id, text)
            by_revision[result.revision] = [(doc_id, text)]
            acked["max"] = max(acked["max"], result.revision)

    async with Engine.open(directory) as engine:
        directory.hook = hook
        async with trio.open_nursery() as nursery:
            for k in range(6):
                nursery.start_soon(task, engine, k)
        final_revision = engine.revision
    return snapshots, by_revision, final_revision


def expected_at(by_revision, revision: int) -> dict[str, str]:
    state: dict[str, str] = {}
    for rev in range(1, revision + 1):
        for doc_id, text in by_revision[rev]:
            if text is None:
                state.pop(doc_id, None)
            else:
                state[doc_id] = text
    return state


async def test_power_loss_states():
    """>= 1000 crash states: 0 acknowledged lost, 0 non-prefix recoveries, 0 failed opens."""
    states = lost = not_prefix = failed_opens = 0
    seed = 0
    while states < MIN_STATES:
        snapshots, by_revision, final = await run_workload(seed)
        # Every revision must be known for the prefix check.
        assert sorted(by_revision) == list(range(1, final + 1)), "workload bookkeeping is incomplete"
        for index, (frozen, dirs, acked) in enumerate(snapshots):
            for state in PowerLossDirectory.crash_states(frozen, dirs, seed=seed * 1000 + index):
                states += 1
                try:
                    async with Engine.open(state) as engine:
                        revision = engine.revision
                        expected = expected_at(by_revision, revision)
                        if revision < acked:
                            lost += acked - revision
                        got = {}
                        for doc_id in list(engine._core.table.entries):
                            got[doc_id] = (await engine.get_document(doc_id)).text
                        if got != expected:
                            not_prefix += 1
                except Exception as exc:
                    failed_opens += 1
                    print("open failed:", repr(exc))
        seed += 1
    print(f"power-loss states={states} lost={lost} not_prefix={not_prefix} failed_opens={failed_opens}")
    assert (lost, not_prefix, failed_opens) == (0, 0, 0)
    assert states >= MIN_STATES
