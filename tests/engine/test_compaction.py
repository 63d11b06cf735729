"""Compaction, purge and encryption: what "gone" means on disk, and what survives."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import trio

from hmsengine import CorruptStore, Engine, InvalidRequest, WrongKey

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from markers import files_containing

KEY = bytes(range(32))


def marker(i: int) -> bytes:
    return f"MARKER-{i:05d}-ZQX".encode()


async def fill(engine, n: int = 200) -> None:
    await engine.put_documents([
        {"id": f"d{i}", "text": f"{marker(i).decode()} the quick brown fox number {i}",
         "metadata": {"secret": f"META-{i:05d}-VALUE"}} for i in range(n)])


async def test_compaction_keeps_everything_live(disk_path):
    """After compaction: same documents, revision, search results; deletes stay gone."""
    async with Engine.open(disk_path) as engine:
        await fill(engine)
        for i in range(0, 200, 4):
            await engine.delete_document(f"d{i}")
        await engine.put_document("d1", "replaced text for d1")
        before = await engine.search_documents("quick fox", k=50)
        revision = engine.revision
        report = await engine.compact()
        assert report.generation == "gen-00000002" and report.documents == 150
        assert report.generations_removed == ("gen-00000001",) and not report.purged
        assert engine.revision == revision
        assert await engine.search_documents("quick fox", k=50) == before
        assert (await engine.get_document("d1")).text == "replaced text for d1"
        assert await engine.get_document("d4") is None
        await engine.put_document("later", "written after the compaction")
        after = await engine.search_documents("quick fox", k=50)
    assert sorted(os.listdir(disk_path)) == ["CURRENT", "LOCK", "format.json", "gen-00000002"]
    async with Engine.open(disk_path) as engine:
        assert engine.revision == revision + 1
        assert engine.statistics().index_documents_tokenized == 0
        assert (await engine.get_document("later")).text == "written after the compaction"
        assert await engine.search_documents("quick fox", k=50) == after


async def test_delete_zeroes_text_and_purge_erases_everywhere(disk_path):
    """After delete no marker is in documents.text; after a purge none is in any file."""
    async with Engine.open(disk_path) as engine:
        await fill(engine)
        deleted = [marker(i) for i in range(0, 200, 2)]
        for i in range(0, 200, 2):
            await engine.delete_document(f"d{i}")
        found = files_containing(disk_path, deleted)
        assert not any(f.endswith("documents.text") for files in found.values() for f in files)
        # The one bounded exception before a purge: the journal still has the old frames.
        assert any(f.endswith("journal.log") for files in found.values() for f in files)
        await engine.compact(purge=True)
        assert files_containing(disk_path, deleted) == {}
        kept = files_containing(disk_path, [marker(1), marker(199)])
        assert set(kept) == {marker(1), marker(199)}
    assert files_containing(disk_path, deleted) == {}


async def test_delete_with_purge(disk_path):
    """delete_document(id, purge=True) leaves no byte of that document in any file."""
    async with Engine.open(disk_path) as engine:
        await fill(engine, 20)
        assert await engine.delete_document("d7", purge=True)
        assert files_containing(disk_path, [marker(7), b"META-00007-VALUE"]) == {}
        assert (await engine.get_document("d8")).metadata == {"secret": "META-00008-VALUE"}


async def test_encrypted_store_hides_everything(disk_path):
    """No marker, metadata value or embedding bytes in any file (zstd frames decompressed too);
    wrong or missing keys raise WrongKey; the right key returns everything."""
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((30, 16)).astype(np.float32)
    async with Engine.open(disk_path, key=KEY) as engine:
        await fill(engine, 30)
        for i in range(30):
            await engine.put_document(f"v{i}", f"vector doc {marker(1000 + i).decode()}",
                                      embedding=vectors[i].tolist())
        await engine.delete_document("d3")
        await engine.compact()
    needles = [marker(i) for i in range(30)] + [marker(1000 + i) for i in range(30)]
    needles += [f"META-{i:05d}-VALUE".encode() for i in range(30)]
    needles += [vectors[i].tobytes()[:16] for i in range(30)]
    assert files_containing(disk_path, needles) == {}
    for wrong in (None, bytes(32), "a passphrase"):
        with pytest.raises(WrongKey):
            async with Engine.open(disk_path, key=wrong):
                pass
    async with Engine.open(disk_path, key=KEY) as engine:
        assert engine.statistics().documents == 59
        doc = await engine.get_document("v5")
        assert doc.text == f"vector doc {marker(1005).decode()}"
        assert doc.embedding == tuple(float(x) for x in vectors[5])
        assert (await engine.get_document("d4")).metadata == {"secret": "META-00004-VALUE"}
        # The cosine signal alone: the decrypted vectors rank v5 first (every v document matches
        # "vector doc" equally, so BM25 has no say).
        hits = await engine.search_documents("vector doc", embedding=vectors[5].tolist(), k=1,
                                             lexical_weight=0.0)
        assert hits[0].id == "v5"


async def test_passphrase_store(tmp_path):
    """A passphrase (Argon2id) opens the store and another does not; a plain store refuses a
    key; an in-memory store accepts one."""
    path = str(tmp_path / "enc")
    async with Engine.open(path, key="correct horse battery staple") as engine:
        await engine.put_document("a", "secret text")
    with pytest.raises(WrongKey):
        async with Engine.open(path, key="wrong horse"):
            pass
    async with Engine.open(path, key="correct horse battery staple") as engine:
        assert (await engine.get_document("a")).text == "secret text"
    plain = str(tmp_path / "plain")
    async with Engine.open(plain) as engine:
        await engine.put_document("a", "plain text")
    with pytest.raises(WrongKey, match="not encrypted"):
        async with Engine.open(plain, key=KEY):
            pass
    async with Engine.open(None, key=KEY) as engine:
        await engine.put_document("m", "in memory")
        assert (await engine.get_document("m")).text == "in memory"


async def test_bad_keys_are_invalid_requests():
    """A key of the wrong size or type is InvalidRequest."""
    for key in (b"short", 42, ""):
        with pytest.raises(InvalidRequest):
            async with Engine.open(None, key=key):
                pass


@pytest.mark.parametrize("target", ["journal.log", "documents.text"])
async def test_flipped_ciphertext_byte_is_corrupt_store(disk_path, target):
    """A flipped byte inside a sealed record raises CorruptStore, never returns garbage."""
    async with Engine.open(disk_path, key=KEY) as engine:
        await fill(engine, 20)
        await engine.put_document("last", "the final document")
    path = os.path.join(disk_path, "gen-00000001", target)
    data = bytearray(open(path, "rb").read())
    data[40] ^= 0x04  # inside the first record's ciphertext (after its header)
    open(path, "wb").write(bytes(data))
    with pytest.raises(CorruptStore):
        async with Engine.open(disk_path, key=KEY) as engine:
            for i in range(20):
                await engine.get_document(f"d{i}")


async def test_readers_keep_working_during_compaction(disk_path):
    """Gets and searches run concurrently with a compaction and always see every document."""
    async with Engine.open(disk_path) as engine:
        await fill(engine, 2000)
        errors: list[str] = []
        done = trio.Event()

        async def reader():
            n = 0
            while not done.is_set() or n < 50:
                doc = await engine.get_document(f"d{n % 2000}")
                if doc is None or marker(n % 2000).decode() not in doc.text:
                    errors.append(f"d{n % 2000}")
                if len(await engine.search_documents("quick", k=5)) != 5:
                    errors.append("search")
                n += 1
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            for _ in range(4):
                nursery.start_soon(reader)
            await engine.compact(purge=True)
            done.set()
        assert errors == []
