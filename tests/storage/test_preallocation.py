"""The journal's preallocated tail of zeros, fdatasync failures, and the inline group commit."""

from __future__ import annotations

import errno
import json
import os
import shutil

import pytest
import trio

from hmsengine import CorruptStore, DurabilityError, Engine
from hmsengine.engine.txn import StoredDelete, StoredOp, encode_transaction, stored_put
from hmsengine.storage.directory import MemoryDirectory, MemoryFile
from hmsengine.storage.journal import PREALLOCATE_MIN, JournalFile, iter_frame_offsets

JOURNAL = os.path.join("gen-00000001", "journal.log")


def journal_frames_end(path: str) -> tuple[int, int]:
    """(end of the last valid frame, file size) of a store's journal on disk."""
    data = open(os.path.join(path, JOURNAL), "rb").read()
    ends = [end for _, end in iter_frame_offsets(data, 1)]
    return (ends[-1] if ends else 0), len(data)


def test_journal_file_keeps_zeros_past_its_frames_and_cuts_them_at_close():
    """Appends land at the logical end, a stretch of zeros follows them, close cuts it off."""
    directory = MemoryDirectory()
    inner = directory.open_file("j", create=True)
    journal = JournalFile(inner, preallocate=True)
    assert journal.append(b"abc") == 0 and journal.append(b"defg") == 3
    assert journal.size() == 7
    assert inner.size() >= PREALLOCATE_MIN and inner.size() % 4096 == 0
    assert bytes(directory.files["j"][7:]) == bytes(inner.size() - 7)
    assert journal.read_at(0, 1 << 20) == b"abcdefg"  # reads stop at the logical end
    journal.truncate(2)
    assert journal.size() == inner.size() == 2
    journal.append(b"Z")
    journal.close()
    assert bytes(directory.files["j"]) == b"abZ"


def test_journal_file_without_preallocation_is_the_plain_file():
    """In memory the journal is not padded: the file is exactly its frames."""
    inner = MemoryFile("j", bytearray(b"old"))
    journal = JournalFile(inner, preallocate=False)
    assert journal.size() == 3
    journal.append(b"new")
    assert inner.size() == journal.size() == 6


def test_transaction_payload_is_the_documented_json():
    """The hand-assembled payload equals json.dumps of the documented body, byte for byte."""
    import numpy as np

    ops = [stored_put('a"\\é\n', "t\u2028😀\x01", '{"k":[1,2.5,null],"é":"x"}',
                      np.array([1.0, 0.5], dtype=np.float32), 7, 40, 9, key=123),
           stored_put("b", "", None, None, 47, 20, 0),
           StoredDelete(id="c")]
    body = {"ops": [{"o": "p", "id": 'a"\\é\n', "t": "t\u2028😀\x01", "m": {"k": [1, 2.5, None], "é": "x"},
                     "e": "AACAPwAAAD8=", "off": 7, "len": 40, "crc": 9, "k": 123},
                    {"o": "p", "id": "b", "t": "", "off": 47, "len": 20, "crc": 0},
                    {"o": "d", "id": "c"}], "dim": 2}
    expected = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert encode_transaction(ops, embedding_dim=2) == expected


@pytest.mark.parametrize("odd", [None, *map(chr, range(0x20)), '"', "\\", "\x7f", "\u2028", "é"])
def test_plain_puts_payload_is_the_documented_json(odd):
    """Puts without metadata are the documented JSON whether or not one text holds a
    character JSON escapes (the batch's texts are checked once, not one by one)."""
    texts = ["plain words", "naïve café 😀", "x" * 300, "clean" if odd is None else f"a{odd}b", ""]
    ops: list[StoredOp] = [stored_put(f'id"{i}\\', text, None, None, 10 * i, 20 + i, 2**32 - 1 - i)
                           for i, text in enumerate(texts)]
    ops.insert(2, StoredDelete(id="gone"))
    body = {"ops": [{"o": "d", "id": op.id} if isinstance(op, StoredDelete) else
                    {"o": "p", "id": op[0], "t": op[1], "off": op[4], "len": op[5], "crc": op[6]}
                    for op in ops], "ts": 17}
    expected = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert encode_transaction(ops, embedding_dim=None, commit_ms=17) == expected


async def test_open_store_has_a_zero_tail_and_a_clean_close_cuts_it(disk_path):
    """While open the journal ends in zeros; after a clean close it ends at its last frame."""
    async with Engine.open(disk_path) as engine:
        for i in range(20):
            await engine.put_document(f"d{i}", f"document {i} " * 10)
        end, size = journal_frames_end(disk_path)
        assert size >= end + 1 and size >= PREALLOCATE_MIN
        data = open(os.path.join(disk_path, JOURNAL), "rb").read()
        assert data[end:] == bytes(size - end)
    end, size = journal_frames_end(disk_path)
    assert end == size


async def _copy_taken_while_open(disk_path: str, tmp_path: object, *, puts: int,
                                 repeat: int) -> str:
    """Put ``puts`` documents, then copy the store's files while it is still open (what a
    kill -9 would leave, preallocated zeros included); return the copy's path."""
    copy = os.path.join(str(tmp_path), "crashed")
    async with Engine.open(disk_path) as engine:
        for i in range(puts):
            await engine.put_document(f"d{i}", f"document {i} " * repeat)
        shutil.copytree(disk_path, copy, ignore=shutil.ignore_patterns("LOCK"))
    return copy


async def test_crash_with_a_zero_tail_keeps_every_acknowledged_put(disk_path, tmp_path):
    """A copy of the files taken while open (a kill -9) reopens with every put and no zeros."""
    copy = await _copy_taken_while_open(disk_path, tmp_path, puts=50, repeat=10)
    assert journal_frames_end(copy)[1] > journal_frames_end(copy)[0]
    async with Engine.open(copy) as engine:
        assert engine.statistics().documents == 50
        assert (await engine.get_document("d49")).text == "document 49 " * 10
        await engine.put_document("after", "written after the crash")
    async with Engine.open(copy) as engine:
        assert (await engine.get_document("after")).text == "written after the crash"
    end, size = journal_frames_end(copy)
    assert end == size


async def test_flipped_byte_mid_journal_with_a_zero_tail_is_corrupt_store(disk_path, tmp_path):
    """Damage inside a committed middle frame is CorruptStore even with zeros after the frames."""
    copy = await _copy_taken_while_open(disk_path, tmp_path, puts=10, repeat=20)
    journal = os.path.join(copy, JOURNAL)
    data = bytearray(open(journal, "rb").read())
    start, end = list(iter_frame_offsets(bytes(data), 1))[4]
    data[(start + end) // 2] ^= 0x10
    open(journal, "wb").write(bytes(data))
    with pytest.raises(CorruptStore) as info:
        async with Engine.open(copy):
            pass
    assert info.value.offset == start
    assert os.path.getsize(journal) == len(data)  # the refused open changed nothing


async def test_failed_fdatasync_on_disk_latches_durability_error(disk_path, monkeypatch):
    """An EIO from the real fdatasync fails that put and every later one (never retried)."""
    async with Engine.open(disk_path) as engine:
        await engine.put_document("before", "acknowledged")
        calls = []

        def failing(fd: int) -> None:
            calls.append(fd)
            raise OSError(errno.EIO, "injected EIO")

        monkeypatch.setattr(os, "fdatasync", failing)
        with pytest.raises(DurabilityError):
            await engine.put_document("failed", "never acknowledged")
        monkeypatch.undo()
        with pytest.raises(DurabilityError):
            await engine.put_document("later", "refused")
        assert len(calls) == 1
    async with Engine.open(disk_path) as engine:
        assert (await engine.get_document("before")).text == "acknowledged"
        assert await engine.get_document("later") is None


async def test_many_writers_share_fsyncs_with_inline_commits(disk_path):
    """64 concurrent writers on disk: far fewer fdatasyncs than transactions."""
    async with Engine.open(disk_path) as engine:
        async def writer(k: int) -> None:
            for i in range(30):
                await engine.put_document(f"w{k}-{i}", f"writer {k} item {i}")

        async with trio.open_nursery() as nursery:
            for k in range(64):
                nursery.start_soon(writer, k)
        stats = engine.statistics()
        assert stats.documents == 64 * 30
        assert stats.fsyncs * 8 < stats.transactions, stats


async def test_lone_writer_commits_inline_and_large_batches_in_a_thread(disk_path, monkeypatch):
    """A lone writer's small commits skip the worker thread; a large batch still uses one."""
    from hmsengine.engine import writer as writer_module

    hops: list[object] = []
    real = trio.to_thread.run_sync

    async def counting(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        hops.append(fn)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(writer_module, "INLINE_SYNC_MAX_S", 10.0)  # however slow this disk is
    async with Engine.open(disk_path) as engine:
        monkeypatch.setattr(writer_module.trio.to_thread, "run_sync", counting)
        for i in range(20):
            await engine.put_document(f"d{i}", f"small document {i}")
        assert not [fn for fn in hops if getattr(fn, "__name__", "") == "commit"]
        await engine.put_documents([{"id": f"b{i}", "text": f"batch document {i}"}
                                    for i in range(writer_module.INLINE_COMMIT_OPS + 1)])
        assert [fn for fn in hops if getattr(fn, "__name__", "") == "commit"]
        monkeypatch.setattr(writer_module.trio.to_thread, "run_sync", real)
        assert engine.statistics().documents == 20 + writer_module.INLINE_COMMIT_OPS + 1


async def test_slow_syncs_send_commits_to_a_thread(disk_path, monkeypatch):
    """While journal syncs are slow on average, even a lone writer commits in a worker thread."""
    from hmsengine.engine import writer as writer_module

    monkeypatch.setattr(writer_module, "INLINE_SYNC_MAX_S", 0.0)
    hops: list[object] = []
    real = trio.to_thread.run_sync

    async def counting(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        hops.append(fn)
        return await real(fn, *args, **kwargs)

    async with Engine.open(disk_path) as engine:
        monkeypatch.setattr(writer_module.trio.to_thread, "run_sync", counting)
        for i in range(5):
            await engine.put_document(f"d{i}", f"small document {i}")
        monkeypatch.setattr(writer_module.trio.to_thread, "run_sync", real)
        # The first commit runs inline (no sync measured yet); the later ones see its time.
        assert len([fn for fn in hops if getattr(fn, "__name__", "") == "commit"]) >= 4
