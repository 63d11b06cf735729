"""SIGKILL during purges, then the purges repeated: no byte derived from a purged record stays.

Each run writes one victim of every kind (purge_corpus), then a child process purges them one
after another (``delete_document(purge=True)``, ``forget(..., purge=True)`` by subject, ids and
source) while it keeps writing documents, and is killed at a random moment. The parent reopens
the store, checks that every acknowledged write and every survivor is there, repeats the purges,
closes, and scans every file decoded (decompressed, decrypted): none of the victims' markers,
values, vectors, names or unique analyzed terms; their ids only as content-free tombstones.
Search scores then equal those of a fresh store built from the survivors. Runs alternate plain
and encrypted stores. ``HMS_PURGE_KILLS`` sets the number of kills (``make stress``: 200).
"""

from __future__ import annotations

import os
import random
import sys

from hmsengine import Engine

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import purge_corpus as corpus  # noqa: E402
from decoded import closed_views, containing, coverage, id_outside_tombstones  # noqa: E402
from killing import run_and_kill  # noqa: E402
from purge_child import written_text  # noqa: E402

KILLS = int(os.environ.get("HMS_PURGE_KILLS", "4"))
FILLER = 600  # documents that make each purge's compaction take a while


async def _prepare(root: str, folder: str, key: bytes | None) -> None:
    async with Engine.open(root, key=key, embedding_dim=4) as engine:
        await corpus.write_survivors(engine, folder)
        await engine.put_documents([{"id": f"filler-{i}", "text": f"filler page {i} of the hill"}
                                    for i in range(FILLER)])


async def _one_run(root: str, folder: str, key: bytes | None, run: int,
                   rng: random.Random, acknowledged: set[str]) -> tuple[bool, bool]:
    """One kill and the repeated purges: whether the kill came inside a purge call, and
    whether inside a compaction (two generations on disk)."""
    tag = f"k{run}"
    async with Engine.open(root, key=key) as engine:
        victims = await corpus.write_victims(engine, folder, tag)
        survivors = await corpus.survivor_text(engine, victims)
        terms = {v.kind: corpus.unique_terms(engine, v, survivors) for v in victims}
    # Half the kills come at any moment of the child's work; the other half a few ms after one
    # purge (of a random kind) began, so some land inside a purge however fast the disk is.
    if run % 4 < 2:
        delay, after = rng.uniform(0.0, 0.8), "READY"
    else:
        delay, after = rng.uniform(0.0, 0.03), f"PURGING {rng.choice(corpus.KINDS)}"
    out = run_and_kill([os.path.join(HERE, "purge_child.py"), root, folder, tag,
                        "encrypted" if key else "plain"], delay, after=after)
    mid_compaction = len([n for n in os.listdir(root) if n.startswith("gen-")]) > 1
    lines = out.splitlines()
    acknowledged.update(line.split()[1] for line in lines if line.startswith("PUT "))
    started = [line.split()[1] for line in lines if line.startswith("PURGING ")]
    finished = {line.split()[1] for line in lines if line.startswith("PURGED ")}
    interrupted = [k for k in started if k not in finished]
    # The interrupted purge is repeated first and alone, then the store is scanned: any other
    # purge (a compaction with purge) would erase what the interrupted one left and hide it.
    first = [v for v in victims if v.kind in interrupted] or \
        [v for v in victims if v.kind in finished][-1:]
    for batch in (first, [v for v in victims if v not in first]):
        async with Engine.open(root, key=key) as engine:
            docs = await engine.get_documents(sorted(acknowledged))
            lost = [i for i, d in zip(sorted(acknowledged), docs, strict=True)
                    if d is None or d.text != written_text(i)]
            assert lost == [], lost
            for victim in batch:
                await corpus.purge(engine, victim)  # the purge repeated
            await corpus.scores_as_fresh(engine)
        views, report = closed_views(root, key)
        coverage(report)
        for victim in victims:
            if victim.kind in finished or victim in first or victim in batch:
                _assert_gone(views, victim, terms[victim.kind], root, key, run)
    return bool(interrupted), mid_compaction


def _assert_gone(views: dict[str, list[bytes]], victim: corpus.Victim, terms: list[bytes],
                 root: str, key: bytes | None, run: int) -> None:
    assert containing(views, list(victim.needles)) == {}, (run, victim.kind)
    assert containing(views, terms, fold=True) == {}, (run, victim.kind)
    for doc_id in victim.ids:
        assert id_outside_tombstones(views, doc_id, root, key) == [], (run, doc_id)


async def test_kill_during_purge_then_repeat(tmp_path):
    """KILLS random kills inside purges of every record kind, plain and encrypted; repeated
    purges leave 0 markers and lose no acknowledged write."""
    rng = random.Random(int(os.environ.get("HMS_CRASH_SEED", "20")))
    stores = {None: str(tmp_path / "plain"), corpus.KEY: str(tmp_path / "encrypted")}
    acknowledged: dict[bytes | None, set[str]] = {None: set(), corpus.KEY: set()}
    for key, root in stores.items():
        await _prepare(root, str(tmp_path), key)
    interrupted = compacting = 0
    for run in range(KILLS):
        key = corpus.KEY if run % 2 else None
        inside, mid = await _one_run(stores[key], str(tmp_path), key, run, rng, acknowledged[key])
        interrupted += inside
        compacting += mid
    writes = sum(len(a) for a in acknowledged.values())
    print(f"purge kills={KILLS} inside-a-purge={interrupted} inside-a-compaction={compacting} "
          f"acknowledged-writes={writes} lost=0 markers=0")
    assert interrupted > 0 or KILLS < 4  # the kills did land inside the purges
