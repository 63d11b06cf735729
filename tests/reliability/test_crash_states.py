"""Crash states of compaction, forget and purge: a workload runs on a PowerLossDirectory, which
freezes its files before every write, truncate and sync; every state a power loss could leave
there (unsynced writes dropped or torn) must open, hold every fact acknowledged by then, and
never show a fact whose forget (or purge) was acknowledged, nor a purged text's bytes.

``HMS_COMPACT_STATES`` sets the minimum number of states (default 1200).
"""

from __future__ import annotations

import os

import zstandard
from reliability_host import report

from hmsengine import Engine, ForgetScope, Memory
from hmsengine.storage.simulated import PowerLossDirectory

MIN_STATES = int(os.environ.get("HMS_COMPACT_STATES", "1200"))
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def holds(data: bytes, needle: bytes) -> bool:
    if needle in data:
        return True
    pos = data.find(ZSTD_MAGIC)
    while pos >= 0:
        try:
            if needle in zstandard.ZstdDecompressor().decompressobj().decompress(data[pos:]):
                return True
        except zstandard.ZstdError:
            pass
        pos = data.find(ZSTD_MAGIC, pos + 1)
    return False


async def run_workload(seed: int):
    directory = PowerLossDirectory()
    present: dict[str, str] = {}
    gone: set[str] = set()
    purged: set[bytes] = set()
    snapshots: list[tuple[dict, set, dict[str, str], set[str], set[bytes]]] = []
    phase = {"on": False}

    def hook(op: str, name: str) -> None:
        if phase["on"]:
            snapshots.append((directory.freeze(), set(directory.dirs), dict(present), set(gone),
                              set(purged)))

    async with Engine.open(directory) as engine:
        memory = Memory(engine)
        directory.hook = hook
        for i in range(8):
            text = f"crash state fact {seed} {i} " + f"word{i} " * (30 * (i % 3) + 1)
            await memory.remember(text, id=f"f{i}", subject=f"s{i % 3}",
                                  supersedes=[f"f{i - 3}"] if i >= 3 else [])
            present[f"f{i}"] = text
        phase["on"] = True
        victim = present.pop("f1")
        await memory.forget(ForgetScope.ids(["f1"]))
        gone.add("f1")
        await engine.compact()
        await memory.remember("written after compaction", id="g0")
        present["g0"] = "written after compaction"
        secret = present.pop("f4")
        await memory.forget(ForgetScope.ids(["f4"]), purge=True)
        gone.add("f4")
        purged.add(secret.encode())
        await memory.remember("written after the purge", id="g1")
        present["g1"] = "written after the purge"
        phase["on"] = False
    del victim
    return snapshots


async def test_crash_states_of_compaction_and_purge():
    states = failed_opens = lost = resurrected = leaked = seed = seen = 0
    while states < MIN_STATES:
        for index, (frozen, dirs, present, gone, purged) in enumerate(await run_workload(seed)):
            for state in PowerLossDirectory.crash_states(frozen, dirs, seed=seed * 1000 + index,
                                                         per_file=6):
                states += 1
                # The probe works: before its purge, the secret's bytes are found in the files.
                if "f4" in present:
                    seen += any(holds(bytes(d), present["f4"].encode()) for d in state.files.values())
                for needle in purged:
                    if any(holds(bytes(data), needle) for data in state.files.values()):
                        leaked += 1
                try:
                    async with Engine.open(state) as engine:
                        memory = Memory(engine)
                        for fid, text in present.items():
                            fact = await memory.get(fid)
                            lost += fact is None or fact.text != text
                        for fid in gone:
                            resurrected += await memory.get(fid) is not None
                except Exception as exc:
                    failed_opens += 1
                    print("open failed:", repr(exc))
        seed += 1
    report(f"crash states (compaction, forget, purge): {states} states, {seed} workloads, "
          f"lost={lost} resurrected={resurrected} purged-bytes={leaked} failed_opens={failed_opens}")
    assert seen > 0, "the purged-bytes probe never found the text it looks for"
    assert (lost, resurrected, leaked, failed_opens) == (0, 0, 0, 0)
