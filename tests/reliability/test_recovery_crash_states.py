"""Crash states of recovery itself: a power loss while an open truncates a torn journal tail,
rewrites lost text records and checkpoints must leave a store that the next open recovers, with
every acknowledged write present.

A commit workload runs on a PowerLossDirectory; a sample of the states a power loss leaves during
it (torn tails, dropped unsynced writes) are each loaded into a fresh PowerLossDirectory and
opened (recovery runs) while every write, truncate and sync of that recovery is recorded; every
state a second power loss could leave during the recovery is then opened again and checked.

``HMS_RECOVERY_STATES`` sets the minimum number of second-loss states (default 600).
"""

from __future__ import annotations

import os
import random

from reliability_host import report

from hmsengine import Engine, Memory
from hmsengine.storage.simulated import PowerLossDirectory, _SimFile

MIN_STATES = int(os.environ.get("HMS_RECOVERY_STATES", "600"))


def _as_power_loss(files: dict[str, bytearray], dirs: set[str]) -> PowerLossDirectory:
    """A PowerLossDirectory whose files are exactly ``files``, all durable."""
    directory = PowerLossDirectory()
    directory.dirs = set(dirs)
    for name, data in files.items():
        sim = _SimFile()
        sim.durable = bytearray(data)
        sim.current = bytearray(data)
        directory.sim[name] = sim
    return directory


async def first_losses(seed: int) -> list[tuple[dict, set[str], dict[str, str]]]:
    """States during a commit workload (with the facts acknowledged at each)."""
    directory = PowerLossDirectory()
    acknowledged: dict[str, str] = {}
    frozen: list[tuple[dict, set[str], dict[str, str]]] = []

    def hook(op: str, name: str) -> None:
        frozen.append((directory.freeze(), set(directory.dirs), dict(acknowledged)))

    async with Engine.open(directory) as engine:
        memory = Memory(engine)
        directory.hook = hook
        for i in range(10):
            text = f"recovery fact {seed} {i} " + "padding " * (40 * (i % 4))
            await memory.remember(text, id=f"r{i}", subject=f"s{i % 2}")
            acknowledged[f"r{i}"] = text
        directory.hook = None
    return frozen


async def test_crash_states_of_recovery():
    states = failed = lost = recoveries = seed = truncations = 0
    while states < MIN_STATES:
        rng = random.Random(seed)
        snapshots = await first_losses(seed)
        for index in rng.sample(range(len(snapshots)), min(6, len(snapshots))):
            frozen, dirs, acknowledged = snapshots[index]
            for first in PowerLossDirectory.crash_states(frozen, dirs, seed=seed * 100 + index,
                                                         per_file=3):
                directory = _as_power_loss(first.files, first.dirs)
                during: list[tuple[dict, set[str]]] = []
                ops: list[str] = []

                def hook(op: str, name: str, d: PowerLossDirectory = directory,
                         out: list = during, seen: list[str] = ops) -> None:
                    seen.append(op)
                    out.append((d.freeze(), set(d.dirs)))

                directory.hook = hook
                try:
                    async with Engine.open(directory):  # recovery runs, then a clean close
                        pass
                except Exception as exc:
                    failed += 1
                    print("first recovery failed:", repr(exc))
                    continue
                recoveries += 1
                truncations += "truncate" in ops
                for k, (rec_frozen, rec_dirs) in enumerate(during):
                    for second in PowerLossDirectory.crash_states(rec_frozen, rec_dirs,
                                                                  seed=seed * 7919 + k, per_file=2):
                        states += 1
                        try:
                            async with Engine.open(second) as engine:
                                memory = Memory(engine)
                                for fid, text in acknowledged.items():
                                    fact = await memory.get(fid)
                                    lost += fact is None or fact.text != text
                        except Exception as exc:
                            failed += 1
                            print("open after a loss during recovery failed:", repr(exc))
        seed += 1
    report(f"crash states (recovery): {states} second-loss states over {recoveries} recoveries, "
           f"{seed} workloads ({truncations} recoveries truncated a torn tail), lost={lost} "
           f"failed_opens={failed}")
    # The probe works: some first losses left a torn tail that recovery had to cut.
    assert recoveries > 0 and truncations > 0
    assert (lost, failed) == (0, 0)
