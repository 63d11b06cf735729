"""SIGKILL at random moments: every acknowledged document survives with its exact text, and
what recovers is a gap-free prefix of the commit order."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from hmsengine import Engine

sys.path.insert(0, os.path.dirname(__file__))
from kill_child import text_for

KILLS = int(os.environ.get("HMS_CRASH_KILLS", "50"))
CHILD = os.path.join(os.path.dirname(__file__), "kill_child.py")


def run_and_kill(store: str, run: int, rng: random.Random) -> list[tuple[str, int]]:
    """Start a writer child, SIGKILL it at a random moment, return what it acknowledged."""
    proc = subprocess.Popen(
        [sys.executable, CHILD, store, f"r{run}", str(rng.choice([1, 4, 16]))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        if rng.random() < 0.2:
            time.sleep(rng.uniform(0.0, 0.6))  # sometimes during start-up and recovery
        else:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # READY: the store is open
            assert line.startswith(b"READY"), (line, proc.stderr.read() if proc.stderr else b"")
            time.sleep(rng.uniform(0.0, 0.25))
    finally:
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, err.decode(errors="replace")[-2000:]
    acks = []
    for line in out.decode().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "ACK":
            acks.append((parts[1], int(parts[2])))
    return acks


async def test_kill_minus_nine(disk_path):
    """KILLS random SIGKILLs of a writing child: lost must be 0, recovery a prefix."""
    rng = random.Random(int(os.environ.get("HMS_CRASH_SEED", "1234")))
    acknowledged: dict[str, int] = {}
    lost = 0
    for run in range(KILLS):
        acks = run_and_kill(disk_path, run, rng)
        acknowledged.update(acks)
        async with Engine.open(disk_path) as engine:
            revision = engine.revision
            stats = engine.statistics()
            # Every transaction of the child creates exactly one new document, so the store holds
            # a gap-free prefix of the commit order exactly when it has one document per revision.
            assert stats.documents == revision, (stats.documents, revision)
            for doc_id, rev in acks:
                doc = await engine.get_document(doc_id)
                if doc is None or rev > revision:
                    lost += 1
                elif doc.text != text_for(doc_id):
                    raise AssertionError(f"{doc_id}: text differs after recovery")
    # A final full check of everything ever acknowledged, after all the kills.
    async with Engine.open(disk_path) as engine:
        missing = [d for d in acknowledged if not await engine.has_document(d)]
        total = engine.statistics().documents
    print(f"kills={KILLS} acknowledged={len(acknowledged)} lost={lost + len(missing)} documents={total}")
    assert lost == 0 and not missing
    assert len(acknowledged) > 0
