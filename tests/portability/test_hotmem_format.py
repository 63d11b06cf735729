"""HotMem Snapshot v2 interop, checked against the real ``hotmem`` package (no mocks, no network)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hotmem")

from hotmem.db import MemoryDB
from hotmem.memory import FileRef, add_file_backed, hydrate_memory_detailed
from hotmem.search import search_memories
from hotmem.snapshot import hydrate, snapshot, verify
from hotmem.swap import add_memory

from hmsengine.errors import CorruptStore, IncompatibleStore, InvalidRequest
from hmsengine.portability.hotmem import (
    HOTMEM_FORMAT,
    is_hotmem_snapshot,
    read_hotmem_snapshot,
)
from hmsengine.portability.hotmem_write import write_hotmem_snapshot

CONTENT = b"ledger,2024\nrevenue,42\nexpenses,17\n"
RANGE = CONTENT[:12]


@pytest.fixture
def hotmem_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A hotmem store in tmp_path with its default (hash) embedder, whatever the environment says."""
    for name in ("HOTMEM_EMBEDDER", "HOTMEM_EMBEDDER_MODEL_PATH", "HOTMEM_RERANKER"):
        monkeypatch.delenv(name, raising=False)
    db = MemoryDB(tmp_path / "source.sqlite")
    yield db
    db.close()


def fresh_db(tmp_path: Path, name: str) -> MemoryDB:
    return MemoryDB(tmp_path / f"{name}.sqlite")


def ms(created_at: str) -> int:
    moment = dt.datetime.fromisoformat(created_at)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def fact(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "type": "fact", "id": "", "text": "", "kind": "fact", "namespace": "default", "subject": None,
        "entities": [], "metadata": None, "embedding": None, "eventTime": None, "validFrom": None,
        "validTo": None, "ingestTime": 0, "supersedes": [], "sources": [], "actor": None,
        "importance": None, "file": None,
    }
    return {**base, **fields}


def populate(db: MemoryDB, tmp_path: Path) -> dict[str, str]:
    """Records of every shape, added through hotmem's own Python API; returns name -> hotmem id."""
    data = tmp_path / "ledger.csv"
    data.write_bytes(CONTENT)
    ids = {}
    ids["alice"], _ = add_memory(db, "alice", "Alice prefers oolong tea", importance=0.9,
                                 metadata={"team": "red", "n": 1}, ttl_seconds=3600)
    ids["bob"], _ = add_memory(db, "bob", "Bob rides a unicycle to work")
    ids["zoe"] = "0000zoe"
    db.insert(id="0000zoe", identifier="zoe", fact_text="Zoë orders crème brûlée ☕", embedding=b"",
              namespace="work", tier="warm", tags='["dessert", "cafe"]', source="cli",
              created_at="2024-01-02T03:04:05Z", content_hash="zoe-hash",
              provenance_json='{"origin": "import"}', importance=0.25)
    ids["ledger"], _ = add_file_backed(
        db, "ledger", FileRef(str(data), 0, len(RANGE), "csv", hashlib.sha256(RANGE).hexdigest()),
        summary="quarterly ledger spreadsheet", importance=0.7, metadata={"kind": "csv"})
    ids["raw"], _ = add_file_backed(db, "rawfile", FileRef(str(data), 12, 11, "csv"))
    return ids


def test_reads_every_record_hotmem_wrote(hotmem_db, tmp_path):
    """A snapshot written by hotmem's own API comes back with every record mapped field by field."""
    ids = populate(hotmem_db, tmp_path)
    snap = tmp_path / "snap"
    snapshot(hotmem_db, snap, copy_attachments=True)
    rows = {name: hotmem_db.get_memory(mid) for name, mid in ids.items()}
    t = {name: ms(row["created_at"]) for name, row in rows.items()}
    data = str(tmp_path / "ledger.csv")

    assert is_hotmem_snapshot(snap)
    result = read_hotmem_snapshot(snap)

    range_sha = hashlib.sha256(RANGE).hexdigest()
    expected = [
        fact(id=ids["alice"], text="Alice prefers oolong tea", subject="alice", importance=0.9,
             metadata={"team": "red", "n": 1}, validFrom=t["alice"], ingestTime=t["alice"],
             validTo=t["alice"] + 3_600_000),
        fact(id=ids["bob"], text="Bob rides a unicycle to work", subject="bob", importance=0.5,
             validFrom=t["bob"], ingestTime=t["bob"]),
        fact(id="0000zoe", text="Zoë orders crème brûlée ☕", subject="zoe", namespace="work",
             importance=0.25, validFrom=ms("2024-01-02T03:04:05Z"), ingestTime=ms("2024-01-02T03:04:05Z"),
             metadata={"hotmem": {"tier": "warm", "tags": ["dessert", "cafe"], "source": "cli",
                                  "provenance": {"origin": "import"}}}),
        fact(id=ids["ledger"], text="quarterly ledger spreadsheet", subject="ledger", importance=0.7,
             metadata={"kind": "csv"}, validFrom=t["ledger"], ingestTime=t["ledger"],
             file={"uri": data, "offset": 0, "length": 12, "format": "csv", "sha256": range_sha,
                   "size": 0, "mtime": 0, "summary": "quarterly ledger spreadsheet"}),
        fact(id=ids["raw"], text="", subject="rawfile", importance=0.5, validFrom=t["raw"],
             ingestTime=t["raw"],
             file={"uri": data, "offset": 12, "length": 11, "format": "csv",
                   "sha256": hashlib.sha256(CONTENT[12:23]).hexdigest(), "size": 0, "mtime": 0,
                   "summary": None}),
    ]
    assert result.records == tuple(sorted(expected, key=lambda r: r["id"]))
    # Small ranges were copied in as attachments, keyed (and named) by their sha256.
    raw_sha = hashlib.sha256(CONTENT[12:23]).hexdigest()
    assert result.attachments == {range_sha: RANGE, raw_sha: CONTENT[12:23]}
    assert result.manifest == json.loads((snap / "manifest.json").read_text())
    assert read_hotmem_snapshot(snap).records == result.records  # same ids on a repeated read


def test_raw_file_without_checksum_or_attachment_has_empty_sha(hotmem_db, tmp_path):
    """A file reference hotmem stored without a checksum (and no attachment) maps to sha256 ""."""
    populate(hotmem_db, tmp_path)
    snapshot(hotmem_db, tmp_path / "snap")
    refs = [r["file"] for r in read_hotmem_snapshot(tmp_path / "snap").records if r["file"]]
    assert sorted(r["sha256"] for r in refs) == ["", hashlib.sha256(RANGE).hexdigest()]


def written_facts(tmp_path: Path) -> list[dict[str, Any]]:
    data = tmp_path / "ledger.csv"
    data.write_bytes(CONTENT)
    return [
        fact(id="f-zeta", text="The staging cluster runs on kestrel nodes", subject="infra",
             namespace="ops", importance=0.8, metadata={"ticket": 7}, validFrom=1_700_000_000_000,
             ingestTime=1_700_000_000_500),
        fact(id="f-alpha", text="Ünïcode cafés serve naïve crème brûlée ☕ with marzipan",
             subject="menu", validFrom=1_700_000_001_234, ingestTime=1_700_000_001_234),
        fact(id="f-mid", text="Quokkas are nocturnal marsupials", subject=None, kind="profile",
             entities=["quokka"], sources=["f-alpha"], actor="agent-1", eventTime=1_600_000_000_000,
             supersedes=["f-old"], ingestTime=1_700_000_002_000,
             validTo=4_000_000_000_123,
             metadata={"hotmem": {"tier": "cold", "tags": ["zoo"], "source": "mcp"}, "x": [1, 2]}),
        fact(id="f-file", text="archived harpsichord invoice", subject="billing", importance=0.4,
             validFrom=1_700_000_003_000, ingestTime=1_700_000_003_000,
             file={"uri": str(data), "offset": 0, "length": len(RANGE), "format": "csv",
                   "sha256": hashlib.sha256(RANGE).hexdigest(), "size": len(CONTENT),
                   "mtime": 1_690_000_000_000, "summary": "archived harpsichord invoice"}),
    ]


def test_written_snapshot_hydrates_in_hotmem_and_is_searchable(hotmem_db, tmp_path):
    """hotmem verifies and hydrates a snapshot we wrote, then its own search finds every record."""
    facts = written_facts(tmp_path)
    out = tmp_path / "out"
    manifest = write_hotmem_snapshot(out, facts, attachments={hashlib.sha256(RANGE).hexdigest(): RANGE},
                                     created_at=1_700_000_009_000)
    assert manifest["format"] == HOTMEM_FORMAT and manifest["memory_count"] == 4
    assert verify(out)["valid"] is True

    result = hydrate(hotmem_db, out)
    assert (result.loaded, result.skipped_dupes, result.invalid) == (4, 0, 0)
    for word, fid in [("kestrel", "f-zeta"), ("marzipan", "f-alpha"), ("quokkas", "f-mid"),
                      ("harpsichord", "f-file")]:
        hits = search_memories(hotmem_db, word, top_k=10)
        assert hits[0]["memory_id"] == fid, (word, hits)

    zeta = hotmem_db.get_memory("f-zeta")
    assert (zeta["identifier"], zeta["namespace"], zeta["importance"]) == ("infra", "ops", 0.8)
    assert zeta["created_at"] == "2023-11-14T22:13:20Z"
    mid = hotmem_db.get_memory("f-mid")
    assert (mid["identifier"], mid["namespace"], mid["tier"], json.loads(mid["tags"])) == (
        "f-mid", "", "cold", ["zoo"])
    # hotmem reads the referenced range itself and verifies it against the checksum we wrote.
    content = hydrate_memory_detailed(hotmem_db, "f-file")
    assert (content.content, content.verified) == (RANGE, True)
    # Hydrating again skips every record as an equivalent memory.
    assert hydrate(hotmem_db, out).skipped_dupes == 4


def test_round_trip_gives_back_the_same_records(tmp_path):
    """records -> write -> read returns the records (sorted by id, embeddings not carried)."""
    facts = written_facts(tmp_path)
    facts[1]["embedding"] = [0.1, 0.2]
    atts = {hashlib.sha256(RANGE).hexdigest(): RANGE}
    write_hotmem_snapshot(tmp_path / "a", facts, attachments=atts, created_at=5)
    back = read_hotmem_snapshot(tmp_path / "a")
    facts[1]["embedding"] = None
    assert back.records == tuple(sorted(facts, key=lambda r: r["id"]))
    assert back.attachments == atts
    # The "hotmem" metadata went back to hotmem's own fields, not into hotmem's metadata.
    lines = [json.loads(line) for line in (tmp_path / "a" / "memories.jsonl").read_text().splitlines()]
    assert [r["id"] for r in lines] == sorted(f["id"] for f in facts)
    mid = next(r for r in lines if r["id"] == "f-mid")
    assert (mid["tier"], mid["tags"], mid["source"]) == ("cold", ["zoo"], "mcp")
    assert "hotmem" not in mid["metadata"]
    # Deterministic: the same records in another order give the same bytes.
    write_hotmem_snapshot(tmp_path / "b", list(reversed(facts)), attachments=atts, created_at=5)
    for name in ("manifest.json", "memories.jsonl", "metadata.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_hotmem_to_hmsengine_to_hotmem_keeps_hotmem_fields(hotmem_db, tmp_path):
    """A hotmem store read and written back hydrates into hotmem with the same rows (bar vectors)."""
    ids = populate(hotmem_db, tmp_path)
    snapshot(hotmem_db, tmp_path / "snap")
    first = read_hotmem_snapshot(tmp_path / "snap")
    write_hotmem_snapshot(tmp_path / "again", first.records)
    copy = fresh_db(tmp_path, "copy")
    try:
        assert hydrate(copy, tmp_path / "again").loaded == len(ids)
        cols = ("identifier", "fact_text", "fact_summary", "importance", "metadata_json", "ttl_seconds",
                "created_at", "namespace", "tier", "tags", "source", "memory_type", "source_uri",
                "byte_offset", "byte_length", "source_format", "source_checksum", "provenance_json",
                "content_hash")
        for mid in ids.values():
            old, new = hotmem_db.get_memory(mid), copy.get_memory(mid)
            if mid == "0000zoe":  # a hand-made hash: ours is hotmem's canonical one
                old["content_hash"] = new["content_hash"]
            for row in (old, new):  # the same object; hotmem's snapshot sorts its keys
                row["metadata_json"] = json.loads(row["metadata_json"])
            assert {c: new[c] for c in cols} == {c: old[c] for c in cols}, mid
        snapshot(copy, tmp_path / "snap2")
        assert read_hotmem_snapshot(tmp_path / "snap2").records == first.records
    finally:
        copy.close()


# ── damage and malformed input ────────────────────────────────────────────────────────────────


@pytest.fixture
def snap(hotmem_db, tmp_path) -> Path:
    populate(hotmem_db, tmp_path)
    path = tmp_path / "snap"
    snapshot(hotmem_db, path, copy_attachments=True)
    return path


def reseal(path: Path, edit=None) -> None:
    """Recompute the manifest's checksums after a deliberate edit of the data (a forged snapshot)."""
    manifest = json.loads((path / "manifest.json").read_text())
    for rel, entry in manifest["files"].items():
        data = (path / rel).read_bytes()
        entry.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    shas = [manifest["files"][rel]["sha256"] for rel in sorted(manifest["files"])]
    manifest["overall_sha256"] = hashlib.sha256("".join(shas).encode()).hexdigest()
    if edit is not None:
        edit(manifest)
    (path / "manifest.json").write_text(json.dumps(manifest))


def flip(path: Path, at: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    i = len(data) // 2 if at is None else at
    data[i] ^= 0x01
    path.write_bytes(bytes(data))


def test_flipped_byte_in_each_data_file_is_corrupt_store(snap):
    """A flipped byte in memories.jsonl or an attachment is CorruptStore naming that file."""
    targets = ["memories.jsonl", *(f"attachments/{p.name}" for p in (snap / "attachments").iterdir())]
    assert len(targets) == 3
    for rel in targets:
        original = (snap / rel).read_bytes()
        flip(snap / rel)
        with pytest.raises(CorruptStore) as err:
            read_hotmem_snapshot(snap)
        assert err.value.file == str(snap / rel) and rel in str(err.value)
        (snap / rel).write_bytes(original)
    read_hotmem_snapshot(snap)


def test_truncated_or_missing_file_is_corrupt_store(snap):
    """A shortened data file (size check) or a deleted one is CorruptStore naming it."""
    data = (snap / "memories.jsonl").read_bytes()
    (snap / "memories.jsonl").write_bytes(data[:-5])
    with pytest.raises(CorruptStore, match="size") as err:
        read_hotmem_snapshot(snap)
    assert err.value.file == str(snap / "memories.jsonl")
    (snap / "memories.jsonl").unlink()
    with pytest.raises(CorruptStore, match="missing") as err:
        read_hotmem_snapshot(snap)
    assert err.value.file == str(snap / "memories.jsonl")
    (snap / "manifest.json").unlink()
    with pytest.raises(CorruptStore, match=r"manifest\.json"):
        read_hotmem_snapshot(snap)
    assert not is_hotmem_snapshot(snap)


@pytest.mark.parametrize("edit, names", [
    (lambda m: m.update(memory_count=m["memory_count"] + 1), "manifest.json"),
    (lambda m: m.update(inline_count=0), "manifest.json"),
    (lambda m: m.update(snapshot_id="0" * 64), "manifest.json"),
    (lambda m: m.update(overall_sha256="f" * 64), "manifest.json"),
    (lambda m: m["file_backed_references"][0].update(byte_offset=3), "manifest.json"),
    (lambda m: m["file_backed_references"].pop(), "manifest.json"),
    (lambda m: m["files"]["memories.jsonl"].update(sha256="a" * 64), "memories.jsonl"),
])
def test_edited_manifest_is_corrupt_store(snap, edit, names):
    """Any edit of the manifest's checksums, counts, snapshot id or references is CorruptStore."""
    manifest = json.loads((snap / "manifest.json").read_text())
    edit(manifest)
    (snap / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CorruptStore) as err:
        read_hotmem_snapshot(snap)
    assert err.value.file == str(snap / names)


def test_flipped_byte_in_manifest_is_refused(snap):
    """A flipped byte in any line of manifest.json (a key, a value's first or last byte) is refused.

    CorruptStore, or InvalidRequest for bad JSON; only what hotmem itself leaves unverified is
    skipped: the informational created_at and hotmem_version, and the schema_version line (a
    missing version means 2, as in hotmem; 3 is IncompatibleStore, tested below).
    """
    original = (snap / "manifest.json").read_bytes()
    accepted, start = [], 0
    for line in original.splitlines(keepends=True):
        body = line.rstrip(b",\n")
        spots = {len(line) - len(line.lstrip()) + 1, len(body) - 1, body.find(b": ") + 2}
        if not any(key in line for key in (b'"created_at"', b'"hotmem_version"', b'"schema_version"')):
            for at in sorted(start + i for i in spots if 0 <= i < len(body)):
                flip(snap / "manifest.json", at)
                try:
                    read_hotmem_snapshot(snap)
                    accepted.append(at)
                except (CorruptStore, InvalidRequest) as exc:
                    assert getattr(exc, "file", None) or "manifest.json" in str(exc), at
                (snap / "manifest.json").write_bytes(original)
        start += len(line)
    assert accepted == []


def test_other_format_and_newer_schema(snap):
    """A manifest of another format is InvalidRequest; a newer schema version is IncompatibleStore."""
    manifest = json.loads((snap / "manifest.json").read_text())
    (snap / "manifest.json").write_text(json.dumps({**manifest, "format": "something-else"}))
    assert not is_hotmem_snapshot(snap)
    with pytest.raises(InvalidRequest, match="something-else"):
        read_hotmem_snapshot(snap)
    (snap / "manifest.json").write_text(json.dumps({**manifest, "schema_version": 3}))
    with pytest.raises(IncompatibleStore, match="schema_version 3"):
        read_hotmem_snapshot(snap)


@pytest.mark.parametrize("line, message", [
    ("[1, 2, 3]", "expected a JSON object"),
    ('"just text"', "expected a JSON object"),
    ('{"id": "x1", "identifier": "a"}', "missing text"),
    ('{"id": "x2", "identifier": "a", "fact_text": 5}', "fact_text"),
    ('{"id": "x3", "fact_text": "t", "importance": "high"}', "importance"),
    ('{"id": "x4", "fact_text": "t", "created_at": "yesterday"}', "created_at"),
    ('{"id": "x5", "memory_type": "file", "identifier": "a"}', "source_uri"),
    ('{"id": "x6", "fact_text": "t", "importance": NaN}', "NaN"),
    ('{"fact_text": "no id"}', "id"),
    ("{not json", "JSON"),
])
def test_malformed_data_line_names_file_and_line(snap, line, message):
    """A data line that is not an object, lacks text or has a wrong type is InvalidRequest (file, line)."""
    memories = snap / "memories.jsonl"
    lines = memories.read_text(encoding="utf-8").splitlines()
    lines.insert(1, line)
    memories.write_text("\n".join(lines) + "\n", encoding="utf-8")
    reseal(snap)
    with pytest.raises(InvalidRequest, match=message) as err:
        read_hotmem_snapshot(snap)
    assert f"{memories}, line 2" in str(err.value)


def test_manifest_paths_may_not_escape(snap, tmp_path):
    """A manifest listing a path outside the snapshot directory is refused before anything is read."""
    (tmp_path / "outside").write_bytes(b"x")
    manifest = json.loads((snap / "manifest.json").read_text())
    manifest["files"]["../outside"] = {"size": 1, "sha256": hashlib.sha256(b"x").hexdigest()}
    (snap / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InvalidRequest, match="escapes"):
        read_hotmem_snapshot(snap)


def test_writer_refuses_bad_targets_and_records(tmp_path):
    """A non-empty target, a duplicate id, a non-fact record or a wrong attachment key is InvalidRequest."""
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    ok = fact(id="a", text="alpha", ingestTime=1)
    with pytest.raises(InvalidRequest, match="not an empty directory"):
        write_hotmem_snapshot(tmp_path / "full", [ok])
    with pytest.raises(InvalidRequest, match="duplicate id"):
        write_hotmem_snapshot(tmp_path / "dup", [ok, fact(id="b", text="b"), ok])
    with pytest.raises(InvalidRequest, match=r"records\[1\]"):
        write_hotmem_snapshot(tmp_path / "kind", [ok, {"type": "document", "id": "d"}])
    with pytest.raises(InvalidRequest, match=r"records\[0\].*text"):
        write_hotmem_snapshot(tmp_path / "text", [fact(id="a", text=None)])
    with pytest.raises(InvalidRequest, match="sha256"):
        write_hotmem_snapshot(tmp_path / "att", [ok], attachments={"0" * 64: b"x"})
    for name in ("dup", "kind", "text", "att"):
        assert not (tmp_path / name).exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    (tmp_path / "empty").mkdir()
    assert write_hotmem_snapshot(tmp_path / "empty", [ok], created_at=0)["memory_count"] == 1
    assert is_hotmem_snapshot(tmp_path / "empty") and os.listdir(tmp_path / "empty")


def test_empty_store_both_ways(hotmem_db, tmp_path):
    """An empty hotmem snapshot reads as no records; an empty one we write hydrates as nothing."""
    snapshot(hotmem_db, tmp_path / "empty")
    assert read_hotmem_snapshot(tmp_path / "empty").records == ()
    write_hotmem_snapshot(tmp_path / "ours", [], created_at=0)
    assert hydrate(hotmem_db, tmp_path / "ours").loaded == 0
    assert not is_hotmem_snapshot(tmp_path / "missing")
    with pytest.raises(InvalidRequest, match="not a directory"):
        read_hotmem_snapshot(tmp_path / "missing")
