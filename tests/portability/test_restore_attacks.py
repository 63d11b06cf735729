"""Attacks on restore and import (issue 29): symbolic links, FIFOs and devices in a snapshot
directory, sizes over the limit, a gzip bomb. Each hostile case runs ``restore`` in a child
process with a time limit and an address-space limit, so a reader that blocks on a FIFO or
reads ``/dev/zero`` for ever fails the test instead of hanging it (or the machine)."""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from hmsengine import Engine, InvalidRequest
from hmsengine.portability.snapshot import _files_digest, _manifest_digest

CHILD = """
import sys, trio
from hmsengine import Engine, HmsError
async def main():
    async with Engine.open(None) as engine:
        try:
            report = await engine.restore(sys.argv[1])
            print("restored", report.added)
        except HmsError as exc:
            print("refused", exc.code, exc.message)
trio.run(main)
"""
CHILD_SECONDS = 60
CHILD_MEMORY = 3 << 30


def _restore_in_child(tmp_path: Path, snapshot: Path) -> str:
    """What ``restore(snapshot)`` printed in a child limited in time and address space."""
    script = tmp_path / "child_restore.py"
    script.write_text(CHILD)

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))

    try:
        done = subprocess.run([sys.executable, str(script), str(snapshot)], capture_output=True,
                              text=True, timeout=CHILD_SECONDS, preexec_fn=limits,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"restore did not return within {CHILD_SECONDS} s (blocked on the snapshot)")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


async def _snapshot(tmp_path: Path, format: str = "hmsengine-v2") -> Path:
    target = tmp_path / "snap"
    async with Engine.open(None) as engine:
        memory = engine.memory()
        for i in range(5):
            await memory.remember(f"fact number {i} about restores")
        await engine.snapshot(target, format=format)
    return target


def _reseal(snapshot: Path, sizes: dict[str, int]) -> None:
    """Rewrite the manifest with these sizes, every digest recomputed (a forged manifest)."""
    path = snapshot / "manifest.json"
    manifest = json.loads(path.read_text())
    for entry in manifest["files"]:
        entry["size"] = sizes.get(entry["path"], entry["size"])
    manifest["digest"] = _files_digest(manifest["files"])
    manifest["manifestDigest"] = _manifest_digest(manifest)
    path.write_text(json.dumps(manifest))


@pytest.mark.parametrize("format,member", [("hmsengine-v2", "manifest.json"),
                                           ("hmsengine-v2", "facts.jsonl"),
                                           ("hotmem-v2", "memories.jsonl")])
@pytest.mark.parametrize("kind", ["link-to-dev-zero", "fifo", "link-to-fifo"])
async def test_special_files_in_a_snapshot_are_refused_at_once(tmp_path: Path, format: str,
                                                                 member: str, kind: str) -> None:
    """A snapshot member (ours or HotMem's) that is a FIFO, or a link to one or to /dev/zero,
    is refused at once (CorruptStore naming it); nothing blocks, nothing reads without end."""
    snapshot = await _snapshot(tmp_path, format)
    target = snapshot / member
    target.unlink()
    if kind == "link-to-dev-zero":
        os.symlink("/dev/zero", target)
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        os.mkfifo(tmp_path / "elsewhere.fifo")
        os.symlink(tmp_path / "elsewhere.fifo", target)
    answer = _restore_in_child(tmp_path, snapshot)
    # (HotMem's reader refuses a linked member as escaping the directory: invalid_request.)
    assert answer.startswith(("refused corrupt_store", "refused invalid_request")), answer
    assert member in answer


async def test_a_member_linked_to_a_copy_elsewhere_is_refused(tmp_path: Path) -> None:
    """Even with every checksum right, a member that is a symbolic link (here to an identical
    copy outside the snapshot) is refused: a snapshot is read from its own directory only."""
    snapshot = await _snapshot(tmp_path)
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes((snapshot / "facts.jsonl").read_bytes())
    (snapshot / "facts.jsonl").unlink()
    os.symlink(copy, snapshot / "facts.jsonl")
    async with Engine.open(None) as engine:
        with pytest.raises(Exception) as refused:
            await engine.restore(snapshot)
        assert getattr(refused.value, "code", None) == "corrupt_store"
        assert "symbolic link" in str(refused.value)
        assert engine.statistics().documents == 0


async def test_a_snapshot_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    """max_bytes bounds what a restore reads: a snapshot (or a forged manifest) that lists
    more is refused before any file is read; at the limit it restores."""
    snapshot = await _snapshot(tmp_path)
    size = (snapshot / "facts.jsonl").stat().st_size
    async with Engine.open(None) as engine:
        with pytest.raises(InvalidRequest, match="over the limit"):
            await engine.restore(snapshot, max_bytes=size - 1)
        assert (await engine.restore(snapshot, max_bytes=size)).added == 5
    _reseal(snapshot, {"facts.jsonl": 1 << 40})
    (snapshot / "facts.jsonl").unlink()
    os.mkfifo(snapshot / "facts.jsonl")  # were it read, the restore would block here
    async with Engine.open(None) as engine:
        with pytest.raises(InvalidRequest, match="over the limit"):
            await engine.restore(snapshot)


async def test_import_reads_regular_files_within_its_limit(tmp_path: Path) -> None:
    """import_jsonl refuses a FIFO and a device at once, and a file (or a gzip stream, counted
    decompressed) over max_bytes, writing nothing."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    os.symlink("/dev/zero", tmp_path / "zero.jsonl")
    lines = "".join(json.dumps({"type": "document", "id": f"d{i}", "text": "x" * 100}) + "\n"
                    for i in range(1000))
    (tmp_path / "big.jsonl").write_text(lines)
    (tmp_path / "bomb.jsonl.gz").write_bytes(gzip.compress(lines.encode()))
    assert (tmp_path / "bomb.jsonl.gz").stat().st_size < 10_000
    async with Engine.open(None) as engine:
        with pytest.raises(InvalidRequest, match="FIFO"):
            await engine.import_jsonl(fifo)
        with pytest.raises(InvalidRequest, match="device"):
            await engine.import_jsonl(tmp_path / "zero.jsonl")
        for name in ("big.jsonl", "bomb.jsonl.gz"):
            with pytest.raises(InvalidRequest, match="more than 50000 bytes"):
                await engine.import_jsonl(tmp_path / name, max_bytes=50_000)
        assert engine.statistics().documents == 0
        assert (await engine.import_jsonl(tmp_path / "bomb.jsonl.gz")).added == 1000


IMPORT_CHILD = """
import resource, sys, trio
from hmsengine import Engine, HmsError
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024  # MiB (ru_maxrss is KiB)
async def main():
    async with Engine.open(None) as engine:
        before = peak()
        try:
            await engine.import_jsonl(sys.argv[1])
            print("imported", before, peak())
        except HmsError as exc:
            print("refused", before, peak(), exc.message)
trio.run(main)
"""
LONG_LINE_BYTES = 400 << 20


def _one_long_line_gz(path: Path) -> None:
    """A .jsonl.gz whose one line decompresses to 400 MiB (a few hundred KiB on disk)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip container
    block = b"a" * (1 << 20)
    with open(path, "wb") as out:
        out.write(packer.compress(b'{"type": "document", "id": "x", "text": "'))
        for _ in range(LONG_LINE_BYTES >> 20):
            out.write(packer.compress(block))
        out.write(packer.compress(b'"}\n') + packer.flush())


def test_import_refuses_a_long_line_while_it_is_read(tmp_path: Path) -> None:
    """A .jsonl.gz of one 400 MiB line is refused ("over 8388608 bytes") after reading at most
    that much of it: the child's peak RSS grows by far less than the line (issue 23)."""
    source = tmp_path / "one-line.jsonl.gz"
    _one_long_line_gz(source)
    assert source.stat().st_size < 2 << 20
    script = tmp_path / "child_import.py"
    script.write_text(IMPORT_CHILD)

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))

    done = subprocess.run([sys.executable, str(script), str(source)], capture_output=True,
                          text=True, timeout=CHILD_SECONDS, preexec_fn=limits,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    verdict, before, after, *message = done.stdout.split(maxsplit=3)
    assert verdict == "refused" and "over 8388608 bytes" in " ".join(message), done.stdout
    growth = int(after) - int(before)
    print(f"\nimport of one 400 MiB line: refused, peak RSS grew by {growth} MiB")
    assert growth < 64, f"peak RSS grew by {growth} MiB while refusing a 400 MiB line"
