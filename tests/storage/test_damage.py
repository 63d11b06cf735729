"""Damage that is not a torn tail (issue 29): a closed store whose journal was cut, deleted or
changed, a lost documents.text or format.json, and a forged index segment. Each is refused with
CorruptStore naming the file, and an open that refuses changes no byte of the store."""

from __future__ import annotations

import os
import struct
import tracemalloc
import zlib
from pathlib import Path

import pytest

from hmsengine import CorruptStore, Engine
from hmsengine.storage.journal import iter_frame_offsets

GEN = "gen-00000001"
N = 200


async def _closed_store(path: Path, *, key: str | None = None) -> None:
    async with Engine.open(path, key=key) as engine:
        for start in range(0, N, 20):
            await engine.put_documents([{"id": f"d{i}", "text": f"document number {i} " * 8}
                                        for i in range(start, start + 20)])
        await engine.delete_document("d7")


def _files(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (LOCK included) by relative name, with its bytes."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


async def _refused_unchanged(path: Path, names: str, *, key: str | None = None) -> CorruptStore:
    """Open ``path``, expect CorruptStore naming ``names``; check that no byte changed."""
    before = _files(path)
    with pytest.raises(CorruptStore) as refused:
        async with Engine.open(path, key=key):
            pass
    assert refused.value.file is not None and refused.value.file.endswith(names), refused.value
    after = _files(path)
    assert after.keys() == before.keys() and after == before
    return refused.value


async def _count(path: Path) -> int:
    async with Engine.open(path) as engine:
        return engine.statistics().documents


def _journal(path: Path) -> Path:
    return path / GEN / "journal.log"


@pytest.mark.parametrize("cut", ["half", "mid-frame", "frame-boundary", "empty"])
async def test_a_cut_journal_of_a_closed_store_is_refused_unchanged(tmp_path: Path, cut: str) -> None:
    """A closed store's journal cut anywhere (mid-frame like a torn tail, on a frame boundary,
    to nothing) is CorruptStore naming journal.log; nothing is truncated; the whole journal put
    back opens with every document."""
    store = tmp_path / "s"
    await _closed_store(store)
    journal = _journal(store)
    whole = journal.read_bytes()
    frames = list(iter_frame_offsets(whole, 1))
    at = {"half": len(whole) // 2, "mid-frame": (frames[-3][0] + frames[-3][1]) // 2,
          "frame-boundary": frames[-3][1], "empty": 0}[cut]
    journal.write_bytes(whole[:at])
    refused = await _refused_unchanged(store, "journal.log")
    assert "cut" in refused.message
    journal.write_bytes(whole)
    assert await _count(store) == N - 1


@pytest.mark.parametrize("lost", ["journal.log", "documents.text"])
async def test_a_deleted_generation_file_is_refused_unchanged(tmp_path: Path, lost: str) -> None:
    """A deleted journal.log or documents.text of the live generation is CorruptStore naming it;
    the file is not created again and nothing else changes."""
    store = tmp_path / "s"
    await _closed_store(store)
    kept = (store / GEN / lost).read_bytes()
    (store / GEN / lost).unlink()
    (store / GEN / "table.snap").unlink()  # also without the witness of the last close
    await _refused_unchanged(store, lost)
    assert not (store / GEN / lost).exists()
    (store / GEN / lost).write_bytes(kept)
    assert await _count(store) == N - 1


async def test_a_changed_last_frame_of_a_closed_store_is_refused(tmp_path: Path) -> None:
    """A byte changed in the last frame after a clean close is no torn write: CorruptStore,
    and the frame is not truncated away."""
    store = tmp_path / "s"
    await _closed_store(store)
    journal = _journal(store)
    data = bytearray(journal.read_bytes())
    start, end = list(iter_frame_offsets(bytes(data), 1))[-1]
    data[(start + end) // 2] ^= 0x01
    journal.write_bytes(bytes(data))
    await _refused_unchanged(store, "journal.log")


async def test_damage_found_after_the_scan_still_changes_nothing(tmp_path: Path) -> None:
    """A torn journal tail and a documents.text shorter than a checkpoint says: the open refuses
    (documents.text) without first cutting the journal's tail."""
    store = tmp_path / "s"
    await _closed_store(store)
    with open(_journal(store), "ab") as f:
        f.write(b"HMJ1" + b"\xff" * 40)  # a torn frame after the last one
    text = store / GEN / "documents.text"
    text.write_bytes(text.read_bytes()[:100])
    await _refused_unchanged(store, "documents.text")


@pytest.mark.parametrize("key", [None, "a passphrase"])
async def test_a_store_without_format_json_is_refused_and_gets_none(tmp_path: Path,
                                                                    key: str | None) -> None:
    """A store whose format.json is gone is CorruptStore naming it, with or without a key; no
    new (unencrypted) format.json is written."""
    store = tmp_path / "s"
    await _closed_store(store, key=key)
    kept = (store / "format.json").read_bytes()
    (store / "format.json").unlink()
    for attempt in (None, key):
        await _refused_unchanged(store, "format.json", key=attempt)
        assert not (store / "format.json").exists()
    (store / "format.json").write_bytes(kept)
    async with Engine.open(store, key=key) as engine:
        assert engine.statistics().documents == N - 1


def _forged_segment(content_size: int) -> bytes:
    """A segment file whose zstd frame claims ``content_size`` bytes of zeros, in RLE blocks of
    128 KiB (4 bytes each), behind a valid crc and footer: ~32 KiB that decompress to 1 GiB."""
    block = 128 * 1024
    frame = bytearray(b"\x28\xb5\x2f\xfd\xe0" + struct.pack("<Q", content_size))  # FCS 8 bytes
    blocks = content_size // block
    for i in range(blocks):
        last = 1 if i == blocks - 1 else 0
        frame += ((block << 3) | (1 << 1) | last).to_bytes(3, "little") + b"\x00"
    stored = bytes(frame)
    prefix = struct.pack("<4sHBBQII", b"HMSI", 1, 0x01, 1, len(stored),
                         zlib.crc32(stored) & 0xFFFFFFFF, 0)
    return stored + prefix + struct.pack("<I", (zlib.crc32(prefix) ^ 0x1D3C5EA1) & 0xFFFFFFFF)


async def test_a_forged_index_segment_costs_no_memory(tmp_path: Path) -> None:
    """An index segment forged to expand 32 KiB into 1 GiB is dropped before anything is
    allocated for it (peak traced memory of the open stays small); the index is rebuilt."""
    store = tmp_path / "s"
    await _closed_store(store)
    segments = sorted((store / GEN / "index").glob("seg-*.hsi"))
    assert segments
    forged = _forged_segment(1 << 30)
    assert len(forged) < 40_000
    for segment in segments:
        segment.write_bytes(forged)
    tracemalloc.start()
    try:
        async with Engine.open(store) as engine:
            stats = engine.statistics()
            hits = await engine.search_documents("number 42", k=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200 * 1024 * 1024, peak
    assert stats.index_segments_rejected == len(segments) and stats.documents == N - 1
    assert hits and hits[0].id == "d42"
    assert os.path.exists(store / GEN / "index" / "MANIFEST")
