"""Damage on disk: refused with file and offset before the tail, truncated at the tail."""

from __future__ import annotations

import json
import os

import pytest

from hmsengine import CorruptStore, Engine, IncompatibleStore

JOURNAL = os.path.join("gen-00000001", "journal.log")


async def make_store(path: str, n: int = 10) -> None:
    async with Engine.open(path) as engine:
        for i in range(n):
            await engine.put_document(f"d{i}", f"document {i} " * 20)


async def test_flipped_byte_in_middle_frame_is_corrupt_store(disk_path):
    """A flipped byte inside a committed frame mid-journal raises CorruptStore (file, offset)."""
    await make_store(disk_path)
    journal = os.path.join(disk_path, JOURNAL)
    data = bytearray(open(journal, "rb").read())
    from hmsengine.storage.journal import iter_frame_offsets

    frames = list(iter_frame_offsets(bytes(data), 1))
    start, end = frames[4]
    data[(start + end) // 2] ^= 0x10
    open(journal, "wb").write(bytes(data))
    with pytest.raises(CorruptStore) as info:
        async with Engine.open(disk_path):
            pass
    assert info.value.offset == start and info.value.file.endswith("journal.log")
    assert f"offset {start}" in str(info.value)
    # Nothing was changed by the refused open: the damaged journal is still all there.
    assert os.path.getsize(journal) == len(data)


@pytest.mark.parametrize("tail", [bytes(4096), os.urandom(333), b"HMJ1"])
async def test_tail_garbage_is_truncated_at_open(disk_path, tail):
    """Zeros or garbage appended to the journal are truncated at open; the data is intact."""
    await make_store(disk_path)
    journal = os.path.join(disk_path, JOURNAL)
    size = os.path.getsize(journal)
    with open(journal, "ab") as f:
        f.write(tail)
    async with Engine.open(disk_path) as engine:
        assert engine.statistics().documents == 10
        assert (await engine.get_document("d9")).text == "document 9 " * 20
        await engine.put_document("after", "written after the repair")
    assert os.path.getsize(journal) > size
    async with Engine.open(disk_path) as engine:
        assert (await engine.get_document("after")).text == "written after the repair"


async def test_damaged_text_record_is_repaired_from_the_journal(disk_path):
    """A text record lost after the last checkpoint is rewritten from the journal at open."""
    async with Engine.open(disk_path) as engine:
        await engine.put_document("keep", "kept text")
    text = os.path.join(disk_path, "gen-00000001", "documents.text")
    # Simulate a crash that lost unsynced text: append a journal transaction whose record
    # never reached documents.text, by truncating the text file after a fresh put.
    async with Engine.open(disk_path) as engine:
        await engine.put_document("lost", "this record will be cut")
        size_before_close = os.path.getsize(text)
        os.truncate(text, size_before_close - 5)  # tear the last record while open
        # As if the process died: no checkpoint and no table snapshot at close.
        engine._core.dirty = False
        engine._core.write_table_snapshot = lambda: None
    async with Engine.open(disk_path) as engine:
        assert (await engine.get_document("lost")).text == "this record will be cut"
        assert (await engine.get_document("keep")).text == "kept text"


async def test_newer_format_is_refused_unchanged(disk_path):
    """A store whose format.json needs a newer reader raises IncompatibleStore, untouched."""
    await make_store(disk_path, 2)
    fmt_path = os.path.join(disk_path, "format.json")
    fmt = json.load(open(fmt_path))
    fmt["version"] = fmt["min_reader_version"] = 99
    open(fmt_path, "w").write(json.dumps(fmt))
    before = {n: open(os.path.join(disk_path, JOURNAL), "rb").read() for n in [JOURNAL]}
    with pytest.raises(IncompatibleStore) as info:
        async with Engine.open(disk_path):
            pass
    assert info.value.code == "incompatible_store"
    assert open(os.path.join(disk_path, JOURNAL), "rb").read() == before[JOURNAL]


async def test_damaged_current_is_corrupt(disk_path):
    """A damaged CURRENT pointer is refused, not guessed."""
    await make_store(disk_path, 1)
    open(os.path.join(disk_path, "CURRENT"), "w").write("gen-00000001 deadbeef\n")
    with pytest.raises(CorruptStore, match="CURRENT"):
        async with Engine.open(disk_path):
            pass


async def test_deleted_text_is_zeroed_in_place(disk_path):
    """Deleting or replacing a document overwrites its text record with zeros."""
    async with Engine.open(disk_path) as engine:
        await engine.put_document("a", "MARKER-ALPHA " * 50)
        await engine.put_document("b", "MARKER-BRAVO " * 50)
        await engine.delete_document("a")
        await engine.put_document("b", "something else")
        entry_size = os.path.getsize(os.path.join(disk_path, "gen-00000001", "documents.text"))
        assert entry_size > 0
    import zstandard

    raw = open(os.path.join(disk_path, "gen-00000001", "documents.text"), "rb").read()
    # The records are compressed: decompress every surviving record to look for the text.
    from hmsengine.storage.segments import RECORD_HEADER_SIZE, TEXT_MAGIC

    texts = []
    pos = raw.find(TEXT_MAGIC)
    while pos >= 0:
        n = int.from_bytes(raw[pos + 8:pos + 12], "little")
        start = pos + RECORD_HEADER_SIZE
        texts.append(zstandard.ZstdDecompressor().decompress(raw[start:start + n]))
        pos = raw.find(TEXT_MAGIC, pos + 1)
    assert texts == [b"something else"]


async def test_encrypted_store_is_refused_clearly(disk_path):
    """A store whose format.json says it is encrypted is refused with WrongKey, untouched."""
    from hmsengine import WrongKey

    await make_store(disk_path, 1)
    fmt_path = os.path.join(disk_path, "format.json")
    fmt = json.load(open(fmt_path))
    fmt["encryption"] = {"kdf": "argon2id"}
    open(fmt_path, "w").write(json.dumps(fmt))
    with pytest.raises(WrongKey):
        async with Engine.open(disk_path):
            pass
