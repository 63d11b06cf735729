"""``Engine.check`` and ``hms check``: every byte read, every checksum and tag verified.

A pristine store checks clean (open or closed, plain or encrypted); a byte flipped in the middle
of any file (journal, a checkpoint frame, the journal prefix a table snapshot lets open skip,
text records, index segment, manifest, table snapshot, CURRENT) is a finding naming that file;
``absent`` strings are searched in decoded content; a closed store is never modified by a check;
a live check runs beside writers; bad input is a clear error.
"""

from __future__ import annotations

import functools
import json
import os
import shutil

import pytest
import trio

from hmsengine import CorruptStore, Engine, InvalidRequest, Memory, StoreLocked, WrongKey
from hmsengine.cli import main
from hmsengine.engine.check import check_store
from hmsengine.storage.journal import KIND_CHECKPOINT, iter_frame_offsets

KEY = bytes(range(32))
MARKER = "ZQXCHECKMARK"


async def _fill(root: str, key: bytes | None, *, compact: bool = False) -> None:
    """A store with every kind of file: many frames and checkpoints, text records (some zeroed),
    a table snapshot, index segments and their manifest."""
    async with Engine.open(root, key=key) as engine:
        memory = Memory(engine)
        for i in range(40):
            await memory.remember(f"fact {i} about the garden and its tea, number {i}",
                                  subject=f"s{i}")
        await engine.put_document("marked", f"{MARKER} a document with a marker",
                                  metadata={"v": "METAVALUE"})
        for i in range(0, 40, 7):
            await engine.put_document(f"gone-{i}", f"short lived {i}")
            await engine.delete_document(f"gone-{i}")
        await engine.sync()  # a checkpoint in the middle of the journal
        await engine.put_documents([{"id": f"d{i}", "text": f"bulk document {i} " * 30}
                                    for i in range(60)])
        if compact:
            await engine.compact()
            await engine.put_document("after", "written after the compaction")


def _files(root: str) -> dict[str, bytes]:
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            out[os.path.relpath(path, root)] = open(path, "rb").read()
    return out


def _flip(root: str, rel: str, offset: int) -> None:
    path = os.path.join(root, rel)
    data = bytearray(open(path, "rb").read())
    data[offset] ^= 0x40
    open(path, "wb").write(bytes(data))


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "encrypted"])
@pytest.mark.parametrize("compact", [False, True], ids=["first-generation", "compacted"])
async def test_a_pristine_store_checks_clean_open_and_closed(tmp_path, key, compact):
    """No finding on a whole store, with counts of what was verified, live and closed."""
    root = str(tmp_path / "s")
    await _fill(root, key, compact=compact)
    report = check_store(root, key=key)
    assert report.ok and report.findings == (), report.findings
    assert report.frames >= (4 if compact else 10) and report.records > 90 and report.segments >= 1
    assert report.files >= 7 and report.bytes == sum(len(b) for b in _files(root).values())
    async with Engine.open(root, key=key) as engine:
        live = await engine.check()
        assert live.ok, live.findings
        assert live.frames >= report.frames and live.records >= report.records - 5


def _checkpoint_offset(root: str, generation: str) -> int:
    data = open(os.path.join(root, generation, "journal.log"), "rb").read()
    for start, _end in iter_frame_offsets(data, 1):
        if data[start + 6] == KIND_CHECKPOINT and start > 0:
            return start + 40  # inside its payload
    raise AssertionError("no checkpoint frame")


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> dict[bytes | None, str]:
    """One filled store per key, built once and copied by the tests that damage it."""
    out = {}
    for key in (None, KEY):
        root = str(tmp_path_factory.mktemp("filled") / "s")
        trio.run(functools.partial(_fill, root, key))
        out[key] = root
    return out


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "encrypted"])
@pytest.mark.parametrize("target", ["journal.log", "checkpoint", "documents.text", "table.snap",
                                    "index/seg", "index/MANIFEST", "CURRENT"])
def test_a_flipped_byte_in_the_middle_of_any_file_is_reported(tmp_path, filled, key, target):
    """A byte flipped in the middle of a file is a finding naming that file (and the CLI exits 1)."""
    root = str(tmp_path / "s")
    shutil.copytree(filled[key], root)
    gen = "gen-00000001"
    names = {"index/seg": next(n for n in _files(root) if "/index/seg-" in n),
             "index/MANIFEST": f"{gen}/index/MANIFEST", "CURRENT": "CURRENT",
             "checkpoint": f"{gen}/journal.log"}
    rel = names.get(target, f"{gen}/{target}")
    size = os.path.getsize(os.path.join(root, rel))
    _flip(root, rel, _checkpoint_offset(root, gen) if target == "checkpoint" else size // 2)
    report = check_store(root, key=key)
    assert not report.ok
    assert rel in {f.file for f in report.findings}, report.findings
    # Everything else was verified (with CURRENT damaged, the newest generation).
    assert report.generation == gen and report.frames > 10 and report.records > 90, report
    assert all(f.rebuildable == (target not in ("journal.log", "checkpoint", "CURRENT"))
               for f in report.findings if f.file == rel), report.findings
    if key is None:  # (a raw key cannot travel through --key-env; passphrases: below)
        assert main(["check", "--store", root]) == 1


async def test_damage_in_the_journal_prefix_open_skips_is_found_only_by_check(tmp_path):
    """A flipped byte in the journal prefix a table snapshot lets open skip: open succeeds (it
    does not read there), check reports it."""
    root = str(tmp_path / "s")
    await _fill(root, None)
    rel = "gen-00000001/journal.log"
    _flip(root, rel, 100)  # inside the first frame's payload
    async with Engine.open(root) as engine:
        assert engine.statistics().table_snapshot_documents > 0  # the prefix was not replayed
    report = check_store(root)
    assert [f.file for f in report.findings] == [rel]
    assert report.findings[0].offset == 0 and "checksum" in report.findings[0].what


async def test_absent_searches_decoded_content_of_an_encrypted_store(tmp_path):
    """``absent`` finds strings inside sealed, compressed records (never only raw bytes), ASCII
    case-insensitively; a string that is not there is not reported."""
    root = str(tmp_path / "s")
    await _fill(root, KEY)
    raw = b"".join(_files(root).values())
    assert MARKER.encode() not in raw and b"METAVALUE" not in raw  # sealed on disk
    report = check_store(root, key=KEY, absent=[MARKER.lower(), "METAVALUE", "nowhere-zq"])
    found = {(f.absent, f.file.split("/")[-1]) for f in report.findings}
    assert {(MARKER.lower(), "journal.log"), (MARKER.lower(), "documents.text"),
            ("METAVALUE", "journal.log"), ("METAVALUE", "table.snap")} <= found
    assert not any(f.absent == "nowhere-zq" for f in report.findings)
    assert all(f.absent is not None for f in report.findings)  # nothing damaged
    async with Engine.open(root, key=KEY) as engine:
        live = await engine.check(absent=[MARKER])
        assert not live.ok and {f.absent for f in live.findings} == {MARKER}


async def test_a_closed_check_writes_nothing_even_on_a_crashed_store(tmp_path):
    """On a store left by a crash (torn journal tail, a stray generation), check reports and
    changes no byte, no name: recovery is left to the next open."""
    root = str(tmp_path / "s")
    await _fill(root, None)
    with open(os.path.join(root, "gen-00000001", "journal.log"), "ab") as f:
        f.write(b"HMJ1" + b"\x07" * 50)  # a torn frame
    os.makedirs(os.path.join(root, "gen-00000002"))
    with open(os.path.join(root, "gen-00000002", "journal.log"), "wb") as f:
        f.write(b"half written")
    before = _files(root)
    stamps = {n: os.stat(os.path.join(root, n)).st_mtime_ns for n in before}
    report = check_store(root)
    assert _files(root) == before
    assert {n: os.stat(os.path.join(root, n)).st_mtime_ns for n in before} == stamps
    assert [(f.file, "torn" in f.what) for f in report.findings] == [
        ("gen-00000001/journal.log", True)]
    assert any(n.startswith("gen-00000002") for n in report.notes)


async def test_a_live_check_runs_beside_writers(tmp_path):
    """While check reads, puts, deletes and a compaction go on; the report is whole."""
    root = str(tmp_path / "s")
    await _fill(root, None)
    async with Engine.open(root) as engine:
        done = trio.Event()
        puts = 0

        async def writer() -> None:
            nonlocal puts
            i = 0
            while not done.is_set():
                await engine.put_document(f"live-{i}", f"written during the check {i} " * 5)
                if i % 3 == 0:
                    await engine.delete_document(f"live-{i // 2}")
                puts += 1
                i += 1

        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer)
            await trio.sleep(0.02)
            await engine.compact()
            reports = [await engine.check(absent=["nowhere-zq"]) for _ in range(3)]
            done.set()
        assert puts > 0
        for report in reports:
            assert report.ok, report.findings


async def test_bad_input_is_a_clear_error(tmp_path):
    """Empty or non-string ``absent``, no store, a wrong or missing key, a key for a plain
    store, and a store open elsewhere: HmsErrors (and CLI exit 2 for usage), no traceback."""
    plain, sealed = str(tmp_path / "p"), str(tmp_path / "e")
    await _fill(plain, None)
    await _fill(sealed, KEY)
    with pytest.raises(InvalidRequest, match="non-empty"):
        check_store(plain, absent=[""])
    with pytest.raises(InvalidRequest, match="list of strings"):
        check_store(plain, absent="text")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest, match="no store at"):
        check_store(str(tmp_path / "missing"))
    with pytest.raises(WrongKey):
        check_store(sealed)
    with pytest.raises(WrongKey):
        check_store(sealed, key=bytes(32))
    with pytest.raises(WrongKey):
        check_store(plain, key=KEY)
    async with Engine.open(plain) as engine:
        with pytest.raises(StoreLocked):
            check_store(plain)
        with pytest.raises(InvalidRequest):
            await engine.check(absent=[""])
    assert main(["check", "--store", plain, "--absent", ""]) == 2
    assert main(["check", "--store", str(tmp_path / "missing")]) == 2
    os.environ["HMS_TEST_NOT_THE_KEY"] = "not the key"
    assert main(["check", "--store", sealed, "--key-env", "HMS_TEST_NOT_THE_KEY"]) == 2
    assert main(["check", "--store", plain]) == 0
    assert main(["check", "--store", plain, "--absent", MARKER]) == 1


async def test_cli_check_output(tmp_path, capsys):
    """``hms check`` prints what it verified and each finding; ``--json`` is the report."""
    root = str(tmp_path / "s")
    await _fill(root, None)
    assert main(["check", "--store", root]) == 0
    out = capsys.readouterr().out
    assert "journal frames" in out and "whole" in out
    assert main(["check", "--store", root, "--json", "--absent", MARKER]) == 1
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is False and body["absent"] == [MARKER]
    assert {f["file"] for f in body["findings"]} >= {"gen-00000001/journal.log"}
    _flip(root, "gen-00000001/documents.text", os.path.getsize(
        os.path.join(root, "gen-00000001/documents.text")) // 2)
    assert main(["check", "--store", root]) == 1
    out = capsys.readouterr().out
    assert "DAMAGED gen-00000001/documents.text" in out and "[rebuildable]" in out


async def test_cli_checks_a_passphrase_store(tmp_path, monkeypatch, capsys):
    """``--key-env`` gives the passphrase: whole is exit 0, a found ``--absent`` string exit 1."""
    root = str(tmp_path / "s")
    async with Engine.open(root, key="correct horse") as engine:
        await engine.put_document("a", f"{MARKER} sealed text")
    monkeypatch.setenv("HMS_TEST_PASSPHRASE", "correct horse")
    assert main(["check", "--store", root, "--key-env", "HMS_TEST_PASSPHRASE"]) == 0
    assert main(["check", "--store", root, "--key-env", "HMS_TEST_PASSPHRASE",
                 "--absent", "sealed TEXT"]) == 1
    assert "FOUND gen-00000001/journal.log" in capsys.readouterr().out


async def test_a_damaged_format_json_is_a_finding(tmp_path):
    """format.json that is not JSON: reported (not rebuildable), not raised."""
    root = str(tmp_path / "s")
    await _fill(root, None)
    path = os.path.join(root, "format.json")
    open(path, "wb").write(open(path, "rb").read()[:-20])
    report = check_store(root)
    assert not report.ok
    assert ("format.json", False) in {(f.file, f.rebuildable) for f in report.findings}
    with pytest.raises(CorruptStore):
        async with Engine.open(root):
            pass
