"""Regression tests for defects the reliability tests found, each named after what it protects."""

from __future__ import annotations

from hmsengine import Engine, Memory

T0 = 1_700_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = T0 + 500

    def __call__(self) -> int:
        return self.now


async def test_lone_slot_fact_status_does_not_depend_on_known_at():
    """Under latest-by-subject, a lone slot fact that has not begun (event_time ahead, or as_of
    before its ingest) had status "current" on recall's fast path but "not-yet-valid" as soon as
    a no-op known_at was passed. Both paths now agree: a lone slot fact is plain."""
    async with Engine.open(None, clock=Clock()) as engine:
        memory = Memory(engine, {"supersession": "latest-by-subject"})
        await memory.remember("zebu lives in Paris", id="f0", subject="alice/city",
                              event_time=T0 + 900)
        plain = await memory.recall("zebu", history="all")
        known = await memory.recall("zebu", history="all", known_at=T0 + 10_000)
        assert [(h.fact.id, h.status) for h in plain] == [("f0", "current")]
        assert [(h.fact.id, h.status) for h in known] == [("f0", "current")]
        early = await memory.recall("zebu", history="all", as_of=T0, known_at=T0 + 10_000)
        assert [(h.fact.id, h.status) for h in early] == [("f0", "current")]
        # With a second fact the slot is policy-linked: not begun means not yet valid.
        await memory.remember("zebu lives in Rome", id="f1", subject="alice/city",
                              event_time=T0 + 2000)
        both = await memory.recall("zebu", history="all", as_of=T0 + 700)
        assert sorted((h.fact.id, h.status) for h in both) == \
            [("f0", "not-yet-valid"), ("f1", "not-yet-valid")]


async def test_failed_open_of_text_segment_does_not_leak_journal_handle(tmp_path):
    """Opening a generation opens its journal, then its text segment; when the second open
    failed (EMFILE, ENOSPC, EIO) the journal's descriptor stayed open, at store open and at
    compaction. Both now close it."""
    import errno
    import os

    import pytest

    from hmsengine import HmsError
    from hmsengine.storage.directory import FsDirectory
    from hmsengine.storage.simulated import FaultyDirectory

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    path = str(tmp_path / "store")
    async with Engine.open(path) as engine:
        await engine.put_document("a", "text")
    before = fds()
    hit = 0
    for n in range(1, 20):  # the nth open that reaches the text segment, at store open
        faulty = FaultyDirectory(FsDirectory(path))
        faulty.arm(n, ops=("open",), error=errno.EMFILE)
        with pytest.raises(HmsError):
            async with Engine.open(faulty):
                pass
        assert fds() == before and faulty.open_handles == 0
        hit += faulty.failed[0][1].endswith("documents.text")
        if hit:
            break
    assert hit

    hit = 0
    for n in range(1, 20):  # and at compaction
        faulty = FaultyDirectory(FsDirectory(path))
        async with Engine.open(faulty) as engine:
            faulty.arm(n, ops=("open",), error=errno.EIO)
            with pytest.raises(HmsError):
                await engine.compact()
            hit += faulty.failed[0][1].endswith("documents.text")
        assert fds() == before and faulty.open_handles == 0
        if hit:
            break
    assert hit


def test_malformed_index_segment_header_is_corrupt_store():
    """A segment whose checksums are right but whose header names a dtype numpy cannot parse
    (numpy runs ast on it: SyntaxError), or holds a list where a mapping belongs
    (AttributeError), raised those instead of CorruptStore."""
    import json
    import struct
    import zlib

    import pytest

    from hmsengine import CorruptStore
    from hmsengine.index import persist
    from hmsengine.storage.codec import PLAIN

    def sealed(header: object) -> bytes:
        blob = json.dumps(header).encode()
        raw = struct.pack("<I", len(blob)) + blob + bytes((-len(blob) - 4) % 8) + bytes(64)
        flags, stored = PLAIN.encode(raw, aad=b"")
        prefix = struct.pack("<4sHBBQII", persist.MAGIC, persist.VERSION, flags, 1, len(stored),
                             zlib.crc32(stored) & 0xFFFFFFFF, 0)
        crc = (zlib.crc32(prefix) ^ persist.FOOTER_CRC_XOR) & 0xFFFFFFFF
        return stored + prefix + struct.pack("<I", crc)

    for header in ({"arrays": {"docnums": [",", [1], 0]}, "n_docs": 1, "ids": ["a"]},
                   {"arrays": [], "n_docs": 0, "ids": []},
                   {"arrays": {"docnums": ["<i8"]}, "n_docs": 0, "ids": []},
                   [1, 2]):
        with pytest.raises(CorruptStore):
            persist.decode_segment(sealed(header), PLAIN, "seg", "seg")


def test_snapshot_manifest_with_malformed_files_entry_is_corrupt_store(tmp_path):
    """Found by the manifest fuzzer: a manifest (with a valid manifestDigest) whose ``files``
    held an object without ``path`` raised KeyError from restore. It is CorruptStore now,
    naming the manifest, and nothing is written."""
    import json

    import pytest
    import trio

    from hmsengine import CorruptStore
    from hmsengine.portability.snapshot import _manifest_digest

    async def make() -> None:
        async with Engine.open(None) as engine:
            await Memory(engine).remember("a fact", id="a")
            await engine.snapshot(tmp_path / "snap")

    trio.run(make)
    manifest = json.loads((tmp_path / "snap" / "manifest.json").read_text())
    manifest["files"] = [{"size": 1}]
    del manifest["manifestDigest"]
    manifest["manifestDigest"] = _manifest_digest(manifest)
    (tmp_path / "snap" / "manifest.json").write_text(json.dumps(manifest))

    async def restore() -> None:
        async with Engine.open(None) as engine:
            with pytest.raises(CorruptStore, match="manifest"):
                await engine.restore(tmp_path / "snap")
            assert engine.revision == 0

    trio.run(restore)
