"""Attacks on file-backed memories (issue 29): symbolic links swapped in under hydrate, links and
special files in the file base, the store's own files, oversized ranges, and references that
arrive by import. Real files, real FIFOs, a real racing thread."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from hmsengine import Engine, InvalidRequest, MemoryConfig, ProvenanceError, inspect_file

SECRET = b"the secret outside the base\n"
TIMEOUT = 10  # seconds: a FIFO that blocked an open would hang far longer


@contextlib.contextmanager
def unblocking(*fifos: Path, after: float = TIMEOUT) -> Iterator[None]:
    """If code under test blocks opening one of ``fifos`` for reading (in a worker thread that no
    cancellation reaches), open it for writing after ``after`` seconds and close it at once: the
    reader then sees an empty file and the test fails on its answer instead of hanging."""
    stop = threading.Event()

    def release() -> None:
        if stop.wait(after):
            return
        while not stop.is_set():
            for fifo in fifos:
                try:
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                except OSError as exc:  # ENXIO: nobody is reading it (the good case)
                    assert exc.errno in (errno.ENXIO, errno.ENOENT), exc
            time.sleep(0.05)

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@pytest.fixture
def base(tmp_path: Path) -> Path:
    path = tmp_path / "base"
    path.mkdir()
    (path / "inside.txt").write_bytes(b"inside the base\n")
    (tmp_path / "outside.txt").write_bytes(SECRET)
    return path


def _swap_forever(target: Path, regular: Path, link_to: Path, stop: threading.Event,
                  swaps: list[int]) -> None:
    """Replace ``target`` by turns with a regular file and a symbolic link, atomically."""
    tmp_link, tmp_file = target.with_name("swap.link"), target.with_name("swap.file")
    while not stop.is_set():
        tmp_link.unlink(missing_ok=True)
        os.symlink(link_to, tmp_link)
        os.replace(tmp_link, target)
        tmp_file.write_bytes(regular.read_bytes())
        os.replace(tmp_file, target)
        swaps[0] += 1


async def test_a_symlink_swapped_in_never_leads_out_of_the_base(base: Path) -> None:
    """A thread swaps data.txt between a regular file and a link to a file outside the base
    while hydrate runs hundreds of times: hydrate never returns the outside file's bytes."""
    outside = base.parent / "outside.txt"
    (base / "decoy.txt").write_bytes(b"a regular file inside the base\n")
    # The reference was taken of a file inside the base holding the same bytes as the outside
    # one: its checksum then vouches for those bytes wherever hydrate finds them.
    (base / "data.txt").write_bytes(SECRET)
    async with Engine.open(None) as engine:
        memory = engine.memory(MemoryConfig(file_base=str(base)))
        fact = await memory.remember_file("data.txt")
        (base / "data.txt").write_bytes((base / "decoy.txt").read_bytes())
        stop, swaps = threading.Event(), [0]
        racer = threading.Thread(target=_swap_forever, args=(
            base / "data.txt", base / "decoy.txt", outside, stop, swaps), daemon=True)
        racer.start()
        outcomes = {"leaked": 0, "outside": 0, "changed": 0, "missing": 0, "unexpected": 0}
        try:
            deadline = time.monotonic() + float(os.environ.get("HMS_SWAP_SECONDS", "2"))
            runs = 0
            while time.monotonic() < deadline or runs < 200:
                runs += 1
                try:
                    data = await memory.hydrate(fact.id)
                except InvalidRequest as exc:
                    assert "outside" in exc.message, exc.message
                    outcomes["outside"] += 1
                except ProvenanceError as exc:
                    outcomes["changed" if exc.reason == "checksum_mismatch" else "missing"] += 1
                except Exception:  # anything else (a raw OSError) is a defect too: counted
                    outcomes["unexpected"] += 1
                else:
                    assert data == SECRET
                    outcomes["leaked"] += 1
        finally:
            stop.set()
            racer.join()
    assert outcomes["leaked"] == 0 and outcomes["unexpected"] == 0, outcomes
    # Both sides of the race were seen: the link (refused) and the regular file (read, and not
    # the recorded bytes); otherwise the test proved nothing.
    assert outcomes["outside"] > 0 and outcomes["changed"] > 0 and swaps[0] > 0, outcomes


async def test_links_inside_the_base_are_followed_and_leaving_ones_refused(base: Path) -> None:
    """A link that stays inside the base is followed; one that leaves it (absolute target, '..'
    above the base, a linked directory, a chain ending outside) is refused; a loop is an error."""
    outside = base.parent / "outside.txt"
    (base / "sub").mkdir()
    (base / "sub" / "deep.txt").write_bytes(b"deep\n")
    os.symlink("inside.txt", base / "rel-link")
    os.symlink(base / "sub" / "deep.txt", base / "abs-link")
    os.symlink("sub", base / "dir-link")
    os.symlink(outside, base / "out-abs")
    os.symlink("../outside.txt", base / "out-rel")
    os.symlink(base.parent, base / "out-dir")
    os.symlink("out-rel", base / "chain")
    os.symlink("loop-b", base / "loop-a")
    os.symlink("loop-a", base / "loop-b")
    async with Engine.open(None) as engine:
        memory = engine.memory(MemoryConfig(file_base=str(base)))
        for uri, expected in (("rel-link", b"inside the base\n"), ("abs-link", b"deep\n"),
                              ("dir-link/deep.txt", b"deep\n"), ("sub/../inside.txt",
                                                                 b"inside the base\n")):
            fact = await memory.remember_file(uri)
            assert await memory.hydrate(fact.id) == expected, uri
        for uri in ("out-abs", "out-rel", "out-dir/outside.txt", "chain", "sub/../../outside.txt",
                    "dir-link/../../outside.txt", str(outside)):
            with pytest.raises(InvalidRequest, match="outside") as refused:
                await memory.remember_file(uri)
            assert SECRET.decode().strip() not in refused.value.message
        with pytest.raises(InvalidRequest, match="cannot be opened"):
            await memory.remember_file("loop-a")


async def test_special_files_are_refused_at_once(base: Path, tmp_path: Path) -> None:
    """A FIFO (which would block an open for ever), a device and a directory are refused
    without blocking, by remember_file, by hydrate (the file replaced after) and by inspect_file."""
    fifo = base / "pipe.csv"
    os.mkfifo(fifo)
    with unblocking(fifo, base / "later.csv"):
        await _special_files(base, fifo)


async def _special_files(base: Path, fifo: Path) -> None:
    async with Engine.open(None) as engine:
        for config in (MemoryConfig(file_base=str(base)), MemoryConfig()):
            memory = engine.memory(config)
            with trio.fail_after(TIMEOUT):
                with pytest.raises(InvalidRequest, match="FIFO"):
                    await memory.remember_file(str(fifo) if config.file_base is None else "pipe.csv")
        memory = engine.memory()
        with pytest.raises(InvalidRequest, match="device"):
            await memory.remember_file("/dev/zero")
        with pytest.raises(InvalidRequest, match="directory"):
            await memory.remember_file(str(base))
        (base / "later.csv").write_bytes(b"a,b\n")
        fact = await memory.remember_file(str(base / "later.csv"))
        (base / "later.csv").unlink()
        os.mkfifo(base / "later.csv")
        with trio.fail_after(TIMEOUT):
            with pytest.raises(InvalidRequest, match="FIFO"):
                await memory.hydrate(fact.id)
    with trio.fail_after(TIMEOUT):
        with pytest.raises(InvalidRequest, match="FIFO"):
            await trio.to_thread.run_sync(inspect_file, fifo)
        with pytest.raises(InvalidRequest, match="device"):
            await trio.to_thread.run_sync(inspect_file, "/dev/zero")


async def test_no_reference_reaches_into_the_store_directory(tmp_path: Path) -> None:
    """A file base that holds the store, a link into the store, an absolute path without a base,
    and a base inside the store: none reads a file of the store itself."""
    store = tmp_path / "store"
    async with Engine.open(store) as engine:
        await engine.put_document("d", "stored text")
        journal = next(store.glob("gen-*/journal.log"))
        os.symlink(store, tmp_path / "store-link")
        wide = engine.memory(MemoryConfig(file_base=str(tmp_path)))
        for uri in (str(journal.relative_to(tmp_path)), "store-link/CURRENT", str(journal)):
            with pytest.raises(InvalidRequest, match="store directory"):
                await wide.remember_file(uri)
        with pytest.raises(InvalidRequest, match="store directory"):
            await engine.memory().remember_file(str(journal))
        inner = engine.memory(MemoryConfig(file_base=str(journal.parent)))
        with pytest.raises(InvalidRequest, match="store directory"):
            await inner.remember_file("journal.log")
        assert engine.statistics().documents == 1


async def test_hydrate_refuses_a_range_over_its_limit_before_reading(base: Path) -> None:
    """A recorded range over max_hydrate_bytes is refused before the file is even opened (the
    file is gone, yet the answer is the limit); within the limit it is read."""
    (base / "big.bin").write_bytes(b"x" * 1000)
    async with Engine.open(None) as engine:
        memory = engine.memory(MemoryConfig(file_base=str(base), max_hydrate_bytes=999))
        big = await memory.remember_file("big.bin")
        small = await memory.remember_file("big.bin", byte_range=(0, 999))
        assert await memory.hydrate(small.id) == b"x" * 999
        (base / "big.bin").unlink()
        with pytest.raises(InvalidRequest, match="over the limit of 999"):
            await memory.hydrate(big.id)
        body = await engine.memory({"fileBase": str(base), "maxHydrateBytes": 10}).call(
            "get", {"id": big.id})
        assert body["file"]["length"] == 1000
    assert MemoryConfig().max_hydrate_bytes == 64 * 1024 * 1024
    assert MemoryConfig.from_json({"maxHydrateBytes": 5}).to_json()["maxHydrateBytes"] == 5
    for bad in (0, -1, True, "5"):
        with pytest.raises(InvalidRequest, match="maxHydrateBytes"):
            MemoryConfig.from_json({"maxHydrateBytes": bad})


def _fact_record(doc_id: str, uri: str, data: bytes, length: int | None = None) -> dict:
    return {"type": "fact", "id": doc_id, "text": "t", "kind": "fact", "namespace": "default",
            "subject": None, "entities": [], "metadata": None, "embedding": None,
            "eventTime": None, "validFrom": None, "validTo": None, "ingestTime": 1,
            "supersedes": [], "sources": [], "actor": None, "importance": None,
            "file": {"uri": uri, "offset": 0, "length": len(data) if length is None else length,
                     "format": None, "sha256": hashlib.sha256(data).hexdigest(), "size": 0,
                     "mtime": 0, "summary": None}}


def _write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


async def test_imported_references_are_checked_like_new_ones(base: Path, tmp_path: Path) -> None:
    """A reference arriving by import: another scheme is refused at import (naming the line);
    outside the base it is refused by hydrate without touching the file (a FIFO there would
    hang), the same whether the file exists or not; inside, hydrate tells no file's size."""
    bad = _write_jsonl(tmp_path / "bad.jsonl", [_fact_record("s", "https://example.com/x", b"x")])
    with contextlib.ExitStack() as stack:
        await _imported(base, tmp_path, bad, stack)


async def _imported(base: Path, tmp_path: Path, bad: Path, stack: contextlib.ExitStack) -> None:
    async with Engine.open(None) as engine:
        with pytest.raises(InvalidRequest, match=r"bad\.jsonl:1: file\.uri: the scheme 'https'"):
            await engine.import_jsonl(bad)
        os.mkfifo(tmp_path / "outside.fifo")
        stack.enter_context(unblocking(tmp_path / "outside.fifo"))
        (base / "sized.txt").write_bytes(b"0123456789" * 7)  # 70 bytes
        good = _write_jsonl(tmp_path / "refs.jsonl", [
            _fact_record("exists", str(tmp_path / "outside.txt"), SECRET),
            _fact_record("absent", str(tmp_path / "no-such-file.txt"), SECRET),
            _fact_record("fifo", str(tmp_path / "outside.fifo"), SECRET),
            _fact_record("climb", "../outside.txt", SECRET),
            _fact_record("sized", "sized.txt", b"y" * 100),
        ])
        await engine.import_jsonl(good)
        memory = engine.memory(MemoryConfig(file_base=str(base)))
        messages = []
        for doc_id in ("exists", "absent", "fifo", "climb"):
            with trio.fail_after(TIMEOUT):
                with pytest.raises(InvalidRequest, match="outside") as refused:
                    await memory.hydrate(doc_id)
            messages.append(refused.value.message.split(":", 2)[-1].split("' ", 1)[-1])
        assert messages[0] == messages[1] == messages[2], messages  # existence tells nothing
        with pytest.raises(ProvenanceError) as truncated:
            await memory.hydrate("sized")
        assert truncated.value.reason == "truncated" and "70" not in truncated.value.message
