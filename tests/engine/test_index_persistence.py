"""Persisted index segments: a reopen loads them instead of re-tokenizing; damaged or stale
ones are detected and rebuilt, never trusted; results equal a full rebuild."""

from __future__ import annotations

import os
import random
import shutil
import threading

import attrs
import pytest
import trio

from hmsengine import Engine
from hmsengine.engine import indexer as indexer_module
from hmsengine.engine import opening as opening_module
from hmsengine.errors import CorruptStore
from hmsengine.index.persist import PersistedIndex

WORDS = [f"w{i}" for i in range(3000)]
QUERIES = ["w1 w2", "w10 w300 w2999", "w7", "w42 w43 w44 w45", "w0 w1 w2 w3 w4"]


def corpus(n: int, seed: int = 5) -> list[dict]:
    rng = random.Random(seed)
    # Zipf-like: low word numbers are common, so queries have ties and long postings.
    return [{"id": f"d{i}", "text": " ".join(WORDS[int(rng.paretovariate(1.1)) % 3000]
                                              for _ in range(rng.randint(3, 12)))}
            for i in range(n)]


async def results(engine) -> list:
    return [await engine.search_documents(q, k=25) for q in QUERIES] + [
        await engine.search_documents("w1 w5", k=10, semantic="ngram")]


def index_dir(path: str) -> str:
    return os.path.join(path, "gen-00000001", "index")


async def full_rebuild_results(path: str) -> list:
    shutil.rmtree(index_dir(path))
    async with Engine.open(path) as engine:
        stats = engine.statistics()
        assert stats.index_documents_loaded == 0 and stats.index_documents_tokenized == stats.documents
        return await results(engine)


async def test_reopen_of_200k_documents_uses_persisted_segments(disk_path):
    """200,000 documents: the reopen tokenizes nothing and answers exactly like a full rebuild."""
    docs = corpus(200_000)
    async with Engine.open(disk_path) as engine:
        for start in range(0, len(docs), 10_000):
            await engine.put_documents(docs[start:start + 10_000])
        for i in range(0, 200_000, 997):
            await engine.delete_document(f"d{i}")
        before = await results(engine)
    async with Engine.open(disk_path) as engine:
        stats = engine.statistics()
        print(f"reopen: loaded={stats.index_documents_loaded} tokenized={stats.index_documents_tokenized}")
        assert stats.index_documents_tokenized == 0
        assert stats.index_documents_loaded == stats.documents == 200_000 - len(range(0, 200_000, 997))
        reopened = await results(engine)
    assert reopened == before
    assert await full_rebuild_results(disk_path) == before


async def test_idle_consolidation_persists_what_it_merged(disk_path, monkeypatch, no_merges):
    """An idle builder's consolidation is written to disk while the store stays idle (not left
    for the next commit or the close), and the next open loads it without tokenizing."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    monkeypatch.setattr(indexer_module, "PERSIST_AT", 1000)
    async with Engine.open(disk_path) as engine:
        docs = corpus(3000)
        for start in range(0, 3000, 1000):
            await engine.put_documents(docs[start:start + 1000])
        indexer = engine._indexer
        with trio.fail_after(60):
            while indexer.snapshot.tail or indexer._unpersisted_documents():
                await trio.sleep(0.02)
        assert len(indexer.snapshot.segments) > 1 and indexer.consolidations == 0
        monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 0.05)
        indexer._wake.set()  # the builder now waits 0.05 s of quiet, not an hour
        with trio.fail_after(20):
            while indexer.consolidations == 0 or indexer._unpersisted_documents():
                await trio.sleep(0.02)
        (merged,) = indexer.snapshot.segments
        assert os.path.exists(os.path.join(index_dir(disk_path), indexer.files.persisted[merged.segment]))
        before = await results(engine)
    async with Engine.open(disk_path) as engine:
        stats = engine.statistics()
        assert stats.index_segments == 1 and stats.index_documents_tokenized == 0
        assert await results(engine) == before


async def test_damaged_segment_is_rejected_and_rebuilt(disk_path, monkeypatch, no_merges):
    """A flipped byte in a segment file: the file is rejected, its documents re-indexed."""
    # Three segments, three files (an idle builder would consolidate them into one, and the
    # merge policy would merge them as they come: no_merges).
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    async with Engine.open(disk_path) as engine:
        docs = corpus(3000)
        for start in range(0, 3000, 1000):
            await engine.put_documents(docs[start:start + 1000])
        before = await results(engine)
    files = sorted(f for f in os.listdir(index_dir(disk_path)) if f.endswith(".hsi"))
    assert len(files) > 1  # so some documents stay loaded from intact files
    target = os.path.join(index_dir(disk_path), files[0])
    data = bytearray(open(target, "rb").read())
    data[len(data) // 3] ^= 0x01
    open(target, "wb").write(bytes(data))
    async with Engine.open(disk_path) as engine:
        stats = engine.statistics()
        assert stats.index_segments_rejected == 1
        assert 0 < stats.index_documents_tokenized < stats.documents
        assert await results(engine) == before
    assert await full_rebuild_results(disk_path) == before


def footer_versions(path: str) -> list[int]:
    """The format version in the footer of each index file of the live generation."""
    from hmsengine.index import persist

    out = []
    for file in sorted(f for f in os.listdir(index_dir(path)) if f.endswith(".hsi")):
        data = open(os.path.join(index_dir(path), file), "rb").read()
        out.append(persist.FOOTER.unpack(data[-persist.FOOTER_SIZE:])[1])
    return out


async def test_index_files_of_format_version_1_are_read(disk_path, monkeypatch, no_merges):
    """A store whose index files an earlier build wrote (format version 1: ids and terms as
    header JSON) reopens from them, tokenizing nothing, and answers as before; the files
    written after are of version 2, beside the old ones, and the next reopen reads both."""
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)
    async with Engine.open(disk_path) as engine:
        docs = corpus(3000)
        for start in range(0, 3000, 1000):
            await engine.put_documents(docs[start:start + 1000])
        await engine.delete_document("d7")
        before = await results(engine)
    rewrite_as_version_1(disk_path)
    async with Engine.open(disk_path) as engine:
        stats = engine.statistics()
        assert stats.index_segments_rejected == 0 and stats.index_documents_tokenized == 0
        assert stats.index_documents_loaded == stats.documents == 2999
        assert await results(engine) == before
        await engine.put_documents([{**d, "id": f"e{d['id']}"} for d in corpus(500, seed=9)])
        after = await results(engine)
    assert set(footer_versions(disk_path)) == {1, 2}
    async with Engine.open(disk_path) as engine:
        stats = engine.statistics()
        assert stats.index_segments_rejected == 0 and stats.index_documents_tokenized == 0
        assert await results(engine) == after
    assert await full_rebuild_results(disk_path) == after


def rewrite_as_version_1(path: str) -> None:
    """Rewrite every index file of the live generation as an earlier build wrote it."""
    from segment_v1 import version_1_file

    from hmsengine.index.persist import decode_segment
    from hmsengine.storage.codec import Codec

    for file in sorted(f for f in os.listdir(index_dir(path)) if f.endswith(".hsi")):
        target = os.path.join(index_dir(path), file)
        segment = decode_segment(open(target, "rb").read(), Codec(), file, target)
        open(target, "wb").write(version_1_file(segment, Codec(), file))
    assert set(footer_versions(path)) == {1}


async def test_a_purge_after_reopening_version_1_files_erases_the_index_too(disk_path, no_merges):
    """A store whose index files an earlier build wrote, reopened by this one, then a document
    deleted with purge: its unique word, found in a version 1 index file before (the positive
    control), is in no decoded file after, and a reopen loads the index the purge rewrote."""
    from decoded import closed_views, containing, coverage

    async with Engine.open(disk_path) as engine:
        await engine.put_documents(corpus(1000))
        await engine.put_document("victim", "w1 zqxupgradeword w2")
    rewrite_as_version_1(disk_path)
    views, report = closed_views(disk_path)
    coverage(report)
    found = containing(views, [b"zqxupgradeword"]).get(b"zqxupgradeword", [])
    assert any("/index/seg-" in f for f in found), found
    async with Engine.open(disk_path) as engine:
        assert engine.statistics().index_documents_tokenized == 0
        assert await engine.delete_document("victim", purge=True)
    views, report = closed_views(disk_path)
    coverage(report)
    assert containing(views, [b"zqxupgradeword"]) == {}
    async with Engine.open(disk_path) as engine:
        assert await engine.search_documents("zqxupgradeword") == []
        assert engine.statistics().index_documents_tokenized == 0


async def test_stale_segments_only_contribute_current_versions(disk_path):
    """Segments written before later replaces and deletes (as after a crash) are corrected per
    document: replaced or deleted versions are dead, newer documents re-indexed."""
    async with Engine.open(disk_path) as engine:
        await engine.put_documents(corpus(2000))
    stale = index_dir(disk_path) + ".stale"
    shutil.copytree(index_dir(disk_path), stale)
    async with Engine.open(disk_path) as engine:
        await engine.put_document("d5", "w1 w2 w1 w2 replaced")
        await engine.delete_document("d6")
        await engine.put_documents([{"id": f"n{i}", "text": "w1 w7 fresh"} for i in range(50)])
        before = await results(engine)
    shutil.rmtree(index_dir(disk_path))
    shutil.move(stale, index_dir(disk_path))
    async with Engine.open(disk_path) as engine:
        stats = engine.statistics()
        assert stats.index_documents_loaded == 1998  # d5 (old version) and d6 are dead there
        assert stats.index_documents_tokenized == 51  # the new d5 and the 50 new documents
        assert await results(engine) == before
    assert await full_rebuild_results(disk_path) == before


async def test_garbage_manifest_means_full_rebuild(disk_path):
    """An unreadable manifest is ignored (never an error): everything is re-indexed."""
    async with Engine.open(disk_path) as engine:
        await engine.put_documents(corpus(500))
        before = await results(engine)
    open(os.path.join(index_dir(disk_path), "MANIFEST"), "w").write("not a manifest")
    async with Engine.open(disk_path) as engine:
        assert engine.statistics().index_documents_tokenized == 500
        assert await results(engine) == before


async def test_index_files_are_read_beside_recovery(disk_path, monkeypatch):
    """The reopen reads the persisted segments in a thread of their own started before recovery
    ends, and adopts them (nothing tokenized, answers as before); segments read for another
    generation are never adopted: the live generation's are read again."""
    from hmsengine.engine import lifecycle

    async with Engine.open(disk_path) as engine:
        await engine.put_documents(corpus(800))
        before = await results(engine)
    seen: list[str] = []
    reading = threading.Event()
    during: list[bool] = []
    real_read, real_recover = lifecycle.read_persisted, opening_module.recover

    def read(*args, **kwargs):
        seen.append(threading.current_thread().name)
        reading.set()
        return real_read(*args, **kwargs)

    def recover(*args, **kwargs):
        during.append(reading.wait(10))  # the read has started while recovery runs
        real_recover(*args, **kwargs)

    monkeypatch.setattr(lifecycle, "read_persisted", read)
    monkeypatch.setattr(opening_module, "recover", recover)
    async with Engine.open(disk_path) as engine:
        assert seen == ["hmsengine-index-read"] and during == [True]
        stats = engine.statistics()
        assert stats.index_documents_tokenized == 0 and stats.index_documents_loaded == 800
        assert await results(engine) == before
        indexer = engine._indexer
        assert len(indexer.docnum_of) == 800 and not indexer.docnum_of._over  # the base column
        other = PersistedIndex(generation="gen-99999999", loaded=[], rejected=0,
                                              last_number=0)
        again = indexer._load_persisted(other)
        assert sum(s.n_docs for s, _ in again) == 800


async def test_failed_open_leaves_no_index_reader_behind(disk_path):
    """A store refused at recovery (its journal cut after a clean close) raises CorruptStore
    with no thread left reading its index files, and opens again once the journal is back."""
    async with Engine.open(disk_path) as engine:
        await engine.put_documents(corpus(300))
    journal = os.path.join(disk_path, "gen-00000001", "journal.log")
    whole = open(journal, "rb").read()
    open(journal, "wb").write(whole[:len(whole) // 2])
    with pytest.raises(CorruptStore):
        async with Engine.open(disk_path):
            pass
    assert not [t for t in threading.enumerate() if t.name == "hmsengine-index-read"]
    open(journal, "wb").write(whole)
    async with Engine.open(disk_path) as engine:
        assert engine.statistics().index_documents_loaded == 300


def swap_ids_in_segment(path: str, first: str, second: str) -> None:
    """Rewrite the persisted segment holding ``first`` and ``second`` (a valid file, checksums
    and all) with the two ids swapped: each id now sits under the other's document number, as
    only damage or a bug could leave it."""
    from hmsengine.index.persist import decode_segment, encode_segment
    from hmsengine.storage.codec import Codec

    for file in sorted(f for f in os.listdir(index_dir(path)) if f.endswith(".hsi")):
        target = os.path.join(index_dir(path), file)
        segment = decode_segment(open(target, "rb").read(), Codec(), file, target)
        if first in segment.ids and second in segment.ids:
            swap = {first: second, second: first}
            ids = tuple(swap.get(doc_id, doc_id) for doc_id in segment.ids)
            open(target, "wb").write(encode_segment(attrs.evolve(segment, ids=ids), Codec(), file))
            return
    raise AssertionError("no persisted segment holds both ids")


@pytest.mark.parametrize("stale", [False, True])
async def test_segment_with_ids_swapped_under_their_keys_is_not_adopted(disk_path, stale):
    """A persisted segment whose ids sit under each other's document numbers (same keys, other
    ids) is caught by the exact id check of the whole-store adoption, kept whole or (stale: a
    document deleted since) not: those documents are re-indexed and every answer is a full
    rebuild's."""
    docs = [*corpus(600), {"id": "x1", "text": "alpha onlyone"}, {"id": "x2", "text": "beta onlytwo"}]
    async with Engine.open(disk_path) as engine:
        await engine.put_documents(docs)
    stale_copy = index_dir(disk_path) + ".stale"
    if stale:
        shutil.copytree(index_dir(disk_path), stale_copy)
        async with Engine.open(disk_path) as engine:
            await engine.delete_document("d7")
        shutil.rmtree(index_dir(disk_path))
        shutil.move(stale_copy, index_dir(disk_path))
    async with Engine.open(disk_path) as engine:
        before = await results(engine) + [await engine.search_documents(q, k=5)
                                          for q in ("onlyone", "onlytwo")]
    swap_ids_in_segment(disk_path, "x1", "x2")
    async with Engine.open(disk_path) as engine:
        stats = engine.statistics()
        assert stats.index_documents_tokenized == 2  # x1 and x2, nothing else
        assert stats.index_documents_loaded == stats.documents - 2 == len(docs) - 2 - stale
        assert [h.id for h in await engine.search_documents("onlyone", k=5)] == ["x1"]
        after = await results(engine) + [await engine.search_documents(q, k=5)
                                         for q in ("onlyone", "onlytwo")]
    assert after == before
