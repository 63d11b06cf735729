"""Purge erases everything derived from what it removes, in every state a store can be in.

The matrix: purge {right after the writes, after a close and reopen, after a restore from a
snapshot} x {plain, encrypted} x {a document, a document of a batch of plain documents (the
bulk path's two columns), a memory, a memory with an embedding, a file-backed memory, a loaded
Markdown document's episodes} (the fourth state, SIGKILL during the
purge then the purge repeated, is tests/crash/test_purge_kill.py). Each victim is purged on its
own; before its purge the decoded scan must find every needle (the positive control), after it
none: not its marker, metadata, names, vectors, file name or checksum, nor the analyzed terms
only it had ("alic", "berlin"), in any file, decoded and decrypted; its ids only as content-free
tombstones. Search scores afterwards equal those of a fresh store holding only the survivors.
"""

from __future__ import annotations

import os
import sys

import pytest
import trio

from hmsengine import Engine

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from decoded import (
    closed_views,
    containing,
    coverage,
    id_outside_tombstones,
    open_views,
)
from purge_corpus import (
    KEY,
    Victim,
    purge,
    scores_as_fresh,
    survivor_text,
    unique_terms,
    write_survivors,
    write_victims,
)


def _check_gone(views: dict[str, list[bytes]], victim: Victim, terms: list[bytes], root: str,
                key: bytes | None, *, before: bool) -> None:
    """Before the purge every needle and term is found (the positive control); after it none,
    and the victim's ids only as tombstones."""
    exact = containing(views, list(victim.needles))
    folded = containing(views, terms, fold=True)
    if before:
        persisted = any(f.endswith("table.snap") for f in views) and \
            any("/index/seg-" in f for f in views)
        expected = set(victim.needles) - (set() if persisted else set(victim.late))
        assert expected <= set(exact), (victim.kind, expected - set(exact))
        assert set(folded) == set(terms), (victim.kind, terms, folded)
        assert all(containing(views, [i.encode()]) for i in victim.ids), victim.kind
        return
    assert exact == {}, (victim.kind, exact)
    assert folded == {}, (victim.kind, folded)
    for doc_id in victim.ids:
        assert id_outside_tombstones(views, doc_id, root, key) == [], (victim.kind, doc_id)


async def _fold(engine: Engine) -> None:
    """Wait until the index builder folded the writes into segments (the state in which a
    persisted segment could carry dead documents)."""
    while engine.statistics().index_tail:
        await trio.sleep(0.01)


async def _write(root: str, folder: str, key: bytes | None) -> list[Victim]:
    async with Engine.open(root, key=key, embedding_dim=4) as engine:
        await write_survivors(engine, folder)
        return await write_victims(engine, folder, "t1")


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "encrypted"])
async def test_purge_right_after_the_writes(tmp_path, key):
    """In the session that wrote them (index folded, nothing reopened), each purge erases its victim."""
    root, folder = str(tmp_path / "store"), str(tmp_path)
    async with Engine.open(root, key=key, embedding_dim=4) as engine:
        await write_survivors(engine, folder)
        victims = await write_victims(engine, folder, "t1")
        await _fold(engine)
        for victim in victims:
            terms = unique_terms(engine, victim, await survivor_text(engine, victims))
            views, report = await open_views(engine, root)
            coverage(report)
            _check_gone(views, victim, terms, root, key, before=True)
            await purge(engine, victim)
            views, report = await open_views(engine, root)
            coverage(report)
            _check_gone(views, victim, terms, root, key, before=False)
            await scores_as_fresh(engine)
    views, report = closed_views(root, key)
    coverage(report)
    for victim in victims:
        _check_gone(views, victim, [], root, key, before=False)


async def _purge_each_after_reopen(root: str, victims: list[Victim], key: bytes | None) -> None:
    """Each victim purged in a session of its own, the store closed and scanned after each."""
    for victim in victims:
        async with Engine.open(root, key=key) as engine:
            terms = unique_terms(engine, victim, await survivor_text(engine, victims))
        views, report = closed_views(root, key)
        coverage(report)
        _check_gone(views, victim, terms, root, key, before=True)
        async with Engine.open(root, key=key) as engine:
            await purge(engine, victim)
            await scores_as_fresh(engine)
        views, report = closed_views(root, key)
        coverage(report)
        _check_gone(views, victim, terms, root, key, before=False)
        async with Engine.open(root, key=key) as engine:  # the index as persisted by the purge
            assert engine.statistics().index_documents_tokenized == 0
            await scores_as_fresh(engine)


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "encrypted"])
async def test_purge_after_close_and_reopen(tmp_path, key):
    """After a close and reopen (index loaded from its files), each purge erases its victim."""
    root = str(tmp_path / "store")
    victims = await _write(root, str(tmp_path), key)
    await _purge_each_after_reopen(root, victims, key)


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "encrypted"])
async def test_purge_after_a_restore(tmp_path, key):
    """In a store restored from a snapshot, each purge erases its victim."""
    source, root = str(tmp_path / "source"), str(tmp_path / "store")
    victims = await _write(source, str(tmp_path), None)
    async with Engine.open(source) as engine:
        await engine.snapshot(str(tmp_path / "snap"))
    async with Engine.open(root, key=key, embedding_dim=4) as engine:
        await engine.restore(str(tmp_path / "snap"))
    await _purge_each_after_reopen(root, victims, key)
