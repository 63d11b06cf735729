"""SIGKILL in the middle of bulk puts: every acknowledged batch survives whole with its exact
texts, and no batch is ever half there (the bulk path writes one transaction per batch)."""

from __future__ import annotations

import os
import random
import sys

from hmsengine import Engine

sys.path.insert(0, os.path.dirname(__file__))
from bulk_child import batch_for
from killing import run_and_kill

KILLS = int(os.environ.get("HMS_BULK_KILLS", "6"))
SIZE = 2000
CHILD = os.path.join(os.path.dirname(__file__), "bulk_child.py")


async def test_bulk_put_killed_mid_batch_recovers_a_prefix_of_batches(disk_path):
    """KILLS SIGKILLs while put_documents batches of 2,000 are written: after each, the store
    holds whole batches only, every acknowledged one with its exact texts, in commit order."""
    rng = random.Random(int(os.environ.get("HMS_CRASH_SEED", "4321")))
    written: list[tuple[str, int]] = []  # every batch the store holds, in commit order
    for run in range(KILLS):
        # Killed from 0 to 60 ms after the child announced a batch (a second or later one,
        # sometimes): inside its validation, its commit or its acknowledgement.
        after = f"PUT r{run} {rng.choice([0, 1, 2])}"
        out = run_and_kill([CHILD, disk_path, f"r{run}", str(SIZE)], rng.uniform(0.0, 0.06),
                           after=after)
        acked = [int(line.split()[2]) for line in out.splitlines() if line.startswith("ACK ")]
        async with Engine.open(disk_path) as engine:
            revision, documents = engine.revision, engine.statistics().documents
            # One transaction per batch, all or none: whole batches only.
            assert documents == SIZE * revision, (documents, revision)
            held = revision - len(written)
            assert held >= len(acked), (held, acked)  # every acknowledged batch is there
            written.extend((f"r{run}", k) for k in range(held))
            for run_name, k in written[-held:] if held else []:
                docs = batch_for(run_name, k, SIZE)
                got = await engine.get_documents([d["id"] for d in docs])
                assert [g.text if g else None for g in got] == [d["text"] for d in docs]
    assert written, "no batch was ever acknowledged"
