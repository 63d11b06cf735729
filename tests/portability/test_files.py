"""File-backed memories: remember_file records a checked reference, hydrate reads it back."""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path

import pytest

from hmsengine import Engine, InvalidRequest, MemoryConfig, NotFound, ProvenanceError

CONTENT = b"id,name\n1,alice\n2,bob\n3,carol\n"


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_bytes(CONTENT)
    return path


async def test_whole_file_and_exact_range(data_file: Path) -> None:
    async with Engine.open(None) as engine:
        memory = engine.memory()
        whole = await memory.remember_file(str(data_file), format="csv", summary="people table")
        part = await memory.remember_file(data_file.as_uri(), byte_range=(8, 8), subject="people")
        fact = await memory.get(whole.id)
        assert fact is not None and fact.file is not None
        ref = fact.file
        assert (ref.offset, ref.length, ref.size) == (0, len(CONTENT), len(CONTENT))
        assert ref.sha256 == hashlib.sha256(CONTENT).hexdigest()
        assert ref.format == "csv" and ref.summary == "people table" and fact.text == "people table"
        assert ref.mtime == os.stat(data_file).st_mtime_ns // 1_000_000
        assert await memory.hydrate(whole.id) == CONTENT
        assert await memory.hydrate(part.id) == CONTENT[8:16] == b"1,alice\n"
        part_fact = await memory.get(part.id)
        assert part_fact is not None and part_fact.file is not None
        assert part_fact.file.uri == data_file.as_uri() and part_fact.subject == "people"
        # The same reference again is idempotent, like remember.
        again = await memory.remember_file(str(data_file), format="csv", summary="people table")
        assert again.id == whole.id and not again.created


async def test_summary_is_what_search_sees(data_file: Path) -> None:
    async with Engine.open(None) as engine:
        memory = engine.memory()
        with_summary = await memory.remember_file(str(data_file), summary="the staff roster")
        without = await memory.remember_file(str(data_file), byte_range=(0, 8))
        hits = await memory.recall("staff roster")
        assert [h.fact.id for h in hits] == [with_summary.id]
        # Stored but not searchable, and the explanation says so.
        assert (await memory.get(without.id)) is not None
        explanation = await memory.explain("alice", without.id)
        assert explanation.rank is None and explanation.note is not None
        assert "not searchable" in explanation.note
        assert (await memory.explain("staff", with_summary.id)).note is None


async def test_checksum_mismatch_missing_and_truncated(data_file: Path) -> None:
    async with Engine.open(None) as engine:
        memory = engine.memory()
        whole = await memory.remember_file(str(data_file))
        tail = await memory.remember_file(str(data_file), byte_range=(16, 8))
        data_file.write_bytes(CONTENT.replace(b"alice", b"ALICE"))  # same size, other bytes
        with pytest.raises(ProvenanceError) as mismatch:
            await memory.hydrate(whole.id)
        assert mismatch.value.reason == "checksum_mismatch" and mismatch.value.code == "provenance_error"
        data_file.write_bytes(CONTENT[:10])
        with pytest.raises(ProvenanceError) as truncated:
            await memory.hydrate(tail.id)
        assert truncated.value.reason == "truncated"
        data_file.unlink()
        with pytest.raises(ProvenanceError) as missing:
            await memory.hydrate(whole.id)
        assert missing.value.reason == "missing_file"
        # Metadata access reads no file: get, recall and history work with the file gone.
        fact = await memory.get(whole.id)
        assert fact is not None and fact.file is not None
        assert [f.id for f in await memory.history(whole.id)] == [whole.id]


async def test_a_whole_file_that_grew_or_shrank_is_a_checksum_mismatch(data_file: Path) -> None:
    """A whole-file reference names the whole file: after an append (its first bytes unchanged)
    or a shrink, hydrate is checksum_mismatch, never the old prefix; a byte range inside the
    unchanged part still hydrates."""
    async with Engine.open(None) as engine:
        memory = engine.memory()
        whole = await memory.remember_file(str(data_file))
        head = await memory.remember_file(str(data_file), byte_range=(0, 8))
        with data_file.open("ab") as f:
            f.write(b"4,dave\n")
        with pytest.raises(ProvenanceError) as grown:
            await memory.hydrate(whole.id)
        assert grown.value.reason == "checksum_mismatch"
        assert await memory.hydrate(head.id) == CONTENT[:8]
        data_file.write_bytes(CONTENT + b"4,dave\n")
        again = await memory.remember_file(str(data_file))
        data_file.write_bytes(CONTENT)
        with pytest.raises(ProvenanceError) as shrunk:
            await memory.hydrate(again.id)
        assert shrunk.value.reason == "checksum_mismatch"
        assert await memory.hydrate(whole.id) == CONTENT


async def test_other_schemes_are_refused_without_any_network(data_file: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    async with Engine.open(None) as engine:
        memory = engine.memory()
        for uri in ("https://example.com/data.csv", "http://127.0.0.1/x", "s3://bucket/key",
                    "ftp://host/file", "file://otherhost/etc/passwd", "data:text/plain,hi"):
            with pytest.raises(InvalidRequest) as refused:
                await memory.remember_file(uri)
            assert refused.value.code == "invalid_request"
        assert engine.statistics().documents == 0


async def test_relative_paths_need_a_base_and_stay_inside_it(tmp_path: Path, data_file: Path) -> None:
    async with Engine.open(None) as engine:
        with pytest.raises(InvalidRequest, match="relative"):
            await engine.memory().remember_file("people.csv")
        memory = engine.memory(MemoryConfig(file_base=str(tmp_path)))
        result = await memory.remember_file("people.csv", summary="relative")
        fact = await memory.get(result.id)
        assert fact is not None and fact.file is not None and fact.file.uri == "people.csv"
        assert await memory.hydrate(result.id) == CONTENT
        for outside in ("../people.csv", "/etc/hostname"):
            with pytest.raises(InvalidRequest, match="outside"):
                await memory.remember_file(outside)


async def test_bad_input(data_file: Path, tmp_path: Path) -> None:
    async with Engine.open(None) as engine:
        memory = engine.memory()
        for kwargs in ({"byte_range": (0, 10_000)}, {"byte_range": (-1, 2)}, {"byte_range": "0-4"},
                       {"format": ""}, {"text": "x"}):
            with pytest.raises(InvalidRequest):
                await memory.remember_file(str(data_file), **kwargs)  # type: ignore[arg-type]
        for missing in (str(tmp_path / "nope.csv"), str(tmp_path)):
            with pytest.raises(InvalidRequest):
                await memory.remember_file(missing)
        plain = await memory.remember("not a file")
        with pytest.raises(NotFound, match="no file-backed fact"):
            await memory.hydrate(plain.id)
        with pytest.raises(NotFound):
            await memory.hydrate("m-nothing")
        assert engine.statistics().documents == 1


async def test_file_reference_survives_reopen(tmp_path: Path, data_file: Path) -> None:
    store = tmp_path / "store"
    async with Engine.open(store) as engine:
        result = await engine.memory().remember_file(str(data_file), byte_range=(8, 8), summary="alice row")
    async with Engine.open(store) as engine:
        memory = engine.memory()
        fact = await memory.get(result.id)
        assert fact is not None and fact.file is not None and fact.file.length == 8
        assert await memory.hydrate(result.id) == b"1,alice\n"


async def test_json_contract_reads_files_only_inside_file_base(tmp_path: Path, data_file: Path) -> None:
    import base64

    async with Engine.open(None) as engine:
        with pytest.raises(InvalidRequest, match="fileBase"):
            await engine.memory().call("rememberFile", {"uri": str(data_file)})
        memory = engine.memory({"fileBase": str(tmp_path)})
        result = await memory.call("rememberFile", {"uri": "people.csv", "byteRange": [8, 8],
                                                    "summary": "alice row", "subject": "people"})
        body = await memory.call("hydrate", {"id": result["id"]})
        assert base64.b64decode(body["base64"]) == b"1,alice\n" and body["length"] == 8
        fact = await memory.call("get", {"id": result["id"]})
        assert fact["file"]["uri"] == "people.csv" and fact["file"]["length"] == 8
        with pytest.raises(InvalidRequest, match="outside"):
            await memory.call("rememberFile", {"uri": "/etc/hostname"})
        with pytest.raises(InvalidRequest, match="unknown field"):
            await memory.call("rememberFile", {"uri": "people.csv", "text": "no"})
