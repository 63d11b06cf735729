"""The I/O fault loop (SQLite's discipline): run a fixed workload of remembers, forgets, a
compaction and a purge once to count its I/O calls N, then again with the nth call failing, for
n in 1..N (a stride when N is large), with EIO, ENOSPC and a short write in turn.

Every run: the failure surfaces as an ``HmsError`` (never a raw ``OSError``), nothing
acknowledged before it is lost after a reopen with a clean directory, the store opens, and no
file handle leaks. Every point gets every error (N is about a hundred, a run takes milliseconds);
``HMS_FAULT_STRIDE`` (default 1) thins the points for a longer workload.
"""

from __future__ import annotations

import errno
import os
import shutil

from reliability_host import report

from hmsengine import Engine, ForgetScope, HmsError, Memory
from hmsengine.storage.directory import FsDirectory
from hmsengine.storage.simulated import FaultyDirectory

OPS = ("open", "write", "sync", "truncate", "rename", "remove", "atomic_write", "sync_dir")
ERRORS: tuple[int | str, ...] = (errno.EIO, errno.ENOSPC, "short")
T0 = 1_700_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        self.now += 1
        return self.now


def open_files(under: str) -> list[str]:
    """The descriptors of this process open on files under ``under`` (the stores' directory):
    the handles the engine could leak. Other descriptors are left out: libraries loaded by
    earlier tests in the same process (onnxruntime's telemetry database, say) may open and
    close theirs while the workload runs."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor)
        if target.startswith(under):
            out.append(target)
    return sorted(out)


class Ledger:
    """What the workload was told succeeded."""

    def __init__(self) -> None:
        self.present: dict[str, str] = {}
        self.gone: set[str] = set()

    def forgetting(self, fid: str) -> None:
        """A forget in flight: until it returns, the fact may or may not survive."""
        self.present.pop(fid)


async def workload(target, ledger: Ledger) -> None:
    async with Engine.open(target, clock=Clock()) as engine:
        memory = Memory(engine)
        for i in range(6):
            text = f"fault loop fact {i} " + "padding " * (40 * i)
            await memory.remember(text, id=f"f{i}", subject=f"s{i % 2}",
                                  supersedes=[f"f{i - 2}"] if i >= 2 else [])
            ledger.present[f"f{i}"] = text
        ledger.forgetting("f1")
        await memory.forget(ForgetScope.ids(["f1"]))
        ledger.gone.add("f1")
        await engine.compact()
        await memory.remember("after compaction", id="g0")
        ledger.present["g0"] = "after compaction"
        ledger.forgetting("f2")
        await memory.forget(ForgetScope.ids(["f2"]), purge=True)
        ledger.gone.add("f2")
        await memory.remember("after purge", id="g1")
        ledger.present["g1"] = "after purge"


async def verify(path: str, ledger: Ledger) -> list[str]:
    problems = []
    async with Engine.open(FsDirectory(path)) as engine:
        memory = Memory(engine)
        for fid, text in ledger.present.items():
            fact = await memory.get(fid)
            if fact is None or fact.text != text:
                problems.append(f"acknowledged {fid} lost")
        for fid in ledger.gone:
            if await memory.get(fid) is not None:
                problems.append(f"forgotten {fid} back")
        await memory.remember("the store still takes writes", id="probe")
    return problems


async def test_fault_loop(tmp_path):
    base = str(tmp_path / "store")
    counter = FaultyDirectory(FsDirectory(base))
    counter.arm(10**9, ops=OPS)
    ledger = Ledger()
    await workload(counter, ledger)
    total = counter.calls
    assert not await verify(base, ledger)
    stride = int(os.environ.get("HMS_FAULT_STRIDE", "1"))
    points = list(range(1, total + 1, stride))
    if points[-1] != total:
        points.append(total)
    violations: list[str] = []
    kinds: set[str] = set()
    covered = 0
    for n, error in [(n, e) for n in points for e in ERRORS]:
        path = str(tmp_path / f"run{n}-{error}")
        faulty = FaultyDirectory(FsDirectory(path))
        faulty.arm(n, ops=OPS, error=error)
        ledger = Ledger()
        before = open_files(str(tmp_path))
        raised: BaseException | None = None
        try:
            await workload(faulty, ledger)
        except BaseException as exc:
            raised = exc
        where = f"n={n} error={error} failed={faulty.failed}"
        if faulty.failed:
            kinds.add(faulty.failed[0][0])
            covered += 1
            if raised is None:
                # A failure the engine absorbed (cleanup of a replaced file, say) is fine only
                # if everything still checks out below.
                pass
            elif not isinstance(raised, HmsError):
                violations.append(f"{where}: raised {type(raised).__name__}: {raised}")
        elif raised is not None:
            violations.append(f"{where}: raised without a fault: {raised!r}")
        if faulty.open_handles != 0:
            violations.append(f"{where}: {faulty.open_handles} handles left open")
        after = open_files(str(tmp_path))
        if after != before:
            violations.append(f"{where}: descriptors open before {before}, after {after}")
        try:
            violations += [f"{where}: {p}" for p in await verify(path, ledger)]
        except HmsError as exc:
            violations.append(f"{where}: reopen failed: {exc!r}")
        shutil.rmtree(path, ignore_errors=True)
    report(f"fault loop: {total} I/O calls, {len(points)} points x {len(ERRORS)} errors, "
          f"{covered} faults injected (stride {stride}), kinds {sorted(kinds)}, "
          f"{len(violations)} violations")
    assert not violations, "\n".join(violations[:20])
