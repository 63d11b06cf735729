"""The purge bugs of issue 20, as a user met them, and the repeated purge that finishes an
interrupted one (the decoded scan of tests/decoded.py; a positive control before each purge)."""

from __future__ import annotations

import os
import sys

from hmsengine import Engine, ForgetScope, Memory

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from decoded import closed_views, containing, coverage, id_outside_tombstones

NEEDLES = [b"ZQXMARK20", b"alic", b"berlin"]


async def _remember(root: str) -> str:
    async with Engine.open(root) as engine:
        memory = Memory(engine)
        result = await memory.remember("Alice lives in Berlin ZQXMARK20", subject="alice/city")
        await memory.remember("Bob lives in Lisbon", subject="bob/city")
        return result.id


async def test_forget_with_purge_after_a_reopen_erases_the_index_too(tmp_path):
    """Remember, close, reopen, forget by subject with purge, close: the marker, the terms only
    that memory had ("alic", "berlin") and its id are in no decoded file (they were in the
    persisted index segment before the fix)."""
    root = str(tmp_path / "s")
    fact_id = await _remember(root)
    views, report = closed_views(root)
    coverage(report)
    assert set(containing(views, NEEDLES, fold=True)) == set(NEEDLES)  # the positive control
    assert any("/index/seg-" in f for f in containing(views, [b"alic"])[b"alic"])
    async with Engine.open(root) as engine:
        report_ = await Memory(engine).forget(ForgetScope.subject("alice/city"), purge=True)
        assert report_.removed == (fact_id,)
    views, report = closed_views(root)
    coverage(report)
    assert containing(views, NEEDLES, fold=True) == {}
    assert id_outside_tombstones(views, fact_id, root) == []
    assert containing(views, [b"lisbon"], fold=True)  # the survivor is still there


async def test_a_repeated_forget_finishes_a_purge_interrupted_before_its_compaction(tmp_path):
    """A crash between a purge's tombstones and its compaction (the tombstones durable, the
    journal still holding the text): the same forget repeated removes nothing but compacts, and
    then nothing of the memory is left."""
    root = str(tmp_path / "s")
    fact_id = await _remember(root)
    async with Engine.open(root) as engine:
        await engine.transact(tombstones=[fact_id])  # what forget(purge=True) writes first
        assert engine.statistics().purge_pending
    views, _ = closed_views(root)
    assert b"ZQXMARK20" in containing(views, NEEDLES)  # the journal still holds it
    async with Engine.open(root) as engine:
        assert engine.statistics().purge_pending  # known again at open (from the journal)
        report = await Memory(engine).forget(ForgetScope.subject("alice/city"), purge=True)
        assert report.removed == ()
        assert not engine.statistics().purge_pending
    views, report = closed_views(root)
    coverage(report)
    assert containing(views, NEEDLES, fold=True) == {}
    assert id_outside_tombstones(views, fact_id, root) == []
    async with Engine.open(root) as engine:  # the tombstone now lives in the base frames
        assert not engine.statistics().purge_pending
        assert (await Memory(engine).forget(ForgetScope.subject("alice/city"),
                                            purge=True)).removed == ()
        assert engine.statistics().revision == engine.revision


async def test_a_plain_compaction_completes_a_pending_purge(tmp_path):
    """While tombstones wait for their purge, compact() erases the old generation too."""
    root = str(tmp_path / "s")
    fact_id = await _remember(root)
    async with Engine.open(root) as engine:
        await engine.transact(tombstones=[fact_id])
        report = await engine.compact()
        assert report.purged and not engine.statistics().purge_pending
    views, report = closed_views(root)
    coverage(report)
    assert containing(views, NEEDLES, fold=True) == {}
