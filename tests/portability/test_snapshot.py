"""Export, import, snapshot and restore: every answer preserved, tampering found, nothing purged
brought back, and bad input refused with nothing written."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

from hmsengine import (
    Conflict,
    CorruptStore,
    Engine,
    ForgetScope,
    IncompatibleStore,
    InvalidRequest,
    Memory,
)
from hmsengine.memory.jsonapi import to_json

DAY = 86_400_000
T0 = 1_700_000_000_000


class Clock:
    def __init__(self, start: int) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 1_000
        return self.now


async def populate(engine: Engine, clock: Clock, files: Path) -> dict[str, str]:
    """A store with windows, supersession (explicit and by slot), knowledge-time gaps, plain
    documents, file-backed facts, embeddings and a purged fact."""
    memory = engine.memory({"supersession": "latest-by-subject"})
    ids: dict[str, str] = {}
    ids["paris"] = (await memory.remember("Alice lives in Paris", subject="alice/city",
                                          valid_from=T0 - 400 * DAY, entities=["alice", "paris"])).id
    clock.now += 10 * DAY
    ids["rome"] = (await memory.remember("Alice lives in Rome", subject="alice/city",
                                         valid_from=T0 - 200 * DAY, entities=["alice", "rome"])).id
    clock.now += 10 * DAY
    ids["oslo"] = (await memory.remember("Alice moved to Oslo for work", subject="alice/city",
                                         valid_from=T0 - 100 * DAY, metadata={"source": "email"},
                                         importance=0.7, actor="agent-1")).id
    ids["job"] = (await memory.remember("Bob works as a baker", subject="bob/job",
                                        valid_from=T0 - 300 * DAY, valid_to=T0 - 50 * DAY,
                                        embedding=[0.1, 0.2, 0.3, 0.4])).id
    ids["job2"] = (await memory.remember("Bob works as a pilot now", subject="bob/job",
                                         supersedes=[ids["job"]], event_time=T0 - 40 * DAY,
                                         embedding=[0.4, 0.3, 0.2, 0.1], sources=[ids["job"]])).id
    ids["proc"] = (await memory.remember("To deploy, run make release", kind="procedure",
                                         namespace="ops")).id
    clock.now += 5 * DAY
    ids["secret"] = (await memory.remember("Carol's password is hunter2", id="carol-secret")).id
    (files / "notes.txt").write_bytes(b"alice likes tea\nbob likes coffee\n")
    ids["file"] = (await memory.remember_file(str(files / "notes.txt"), byte_range=(0, 16),
                                              summary="what alice drinks", format="text")).id
    await engine.put_document("plain-1", "a plain document about tea", metadata={"k": [1, 2]})
    report = await memory.forget(ForgetScope.ids([ids["secret"]]), purge=True)
    assert report.removed == (ids["secret"],)
    return ids


QUERIES = ("Alice lives", "Bob works", "tea", "deploy release", "Oslo")


async def answers(engine: Engine, ids: dict[str, str]) -> str:
    """Every recall (several as_of and known_at, each history mode) and every history, as JSON."""
    memory: Memory = engine.memory({"supersession": "latest-by-subject"})
    out: list[Any] = []
    # "Now" is the answering store's clock, so every moment is explicit (T0 + DAY stands for now).
    moments = (T0 - 350 * DAY, T0 - 150 * DAY, T0 - 45 * DAY, T0 + DAY)
    knowledge = (None, T0 + 5 * DAY, T0 + 15 * DAY, T0 + 40 * DAY)
    for query in QUERIES:
        for as_of in moments:
            for known_at in knowledge:
                for history in ("current", "all", "historical"):
                    hits = await memory.recall(query, as_of=as_of, known_at=known_at,
                                               history=history, kinds=("fact", "procedure"),
                                               explain=True)
                    out.append([query, as_of, known_at, history, to_json(hits)])
    for name, doc_id in sorted(ids.items()):
        if name != "secret":
            out.append([name, to_json(await memory.history(doc_id))])
    return json.dumps(out, sort_keys=True)


async def test_snapshot_round_trip_preserves_every_answer(tmp_path: Path) -> None:
    clock = Clock(T0)
    async with Engine.open(tmp_path / "a", clock=clock) as engine:
        ids = await populate(engine, clock, tmp_path)
        before = await answers(engine, ids)
        manifest = await engine.snapshot(tmp_path / "snap")
        await engine.export_jsonl(tmp_path / "a.jsonl.gz")
    assert manifest["format"] == "hmsengine-snapshot-v2" and manifest["counts"] == {
        "facts": 7, "documents": 1, "tombstones": 1}
    later = Clock(T0 + 400 * DAY)  # the restoring store's clock is far later: times must not move
    async with Engine.open(tmp_path / "b", clock=later) as engine:
        report = await engine.restore(tmp_path / "snap")
        assert (report.added, report.skipped, report.tombstones, report.refused) == (8, 0, 1, ())
        assert await answers(engine, ids) == before
        await engine.export_jsonl(tmp_path / "b.jsonl.gz")
        again = await engine.restore(tmp_path / "snap")
        assert (again.added, again.skipped) == (0, 9)
        assert engine.statistics().documents == 8
    # Equal stores give byte-identical exports, gzip included.
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()
    async with Engine.open(tmp_path / "b", clock=later) as engine:  # and after a reopen
        assert await answers(engine, ids) == before


async def test_export_import_round_trip_and_determinism(tmp_path: Path) -> None:
    clock = Clock(T0)
    async with Engine.open(None, clock=clock) as engine:
        ids = await populate(engine, clock, tmp_path)
        before = await answers(engine, ids)
        counts = await engine.export_jsonl(tmp_path / "x.jsonl")
        await engine.export_jsonl(tmp_path / "y.jsonl")
        await engine.export_jsonl(tmp_path / "x.jsonl.gz")
    assert counts == {"facts": 7, "documents": 1, "tombstones": 1}
    plain = (tmp_path / "x.jsonl").read_bytes()
    assert plain == (tmp_path / "y.jsonl").read_bytes()
    assert gzip.decompress((tmp_path / "x.jsonl.gz").read_bytes()) == plain
    assert b"hunter2" not in plain and b"carol-secret" in plain  # the tombstone has no content
    lines = plain.decode().splitlines()
    assert json.loads(lines[0])["format"] == "hmsengine-jsonl"
    # Commit order: the order search breaks score ties by, so the import ranks ties the same way.
    assert [json.loads(line)["id"] for line in lines[1:]][-2:] == ["plain-1", "carol-secret"]
    async with Engine.open(None, clock=Clock(T0 + 999 * DAY)) as engine:
        report = await engine.import_jsonl(tmp_path / "x.jsonl.gz")
        assert (report.added, report.tombstones) == (8, 1)
        assert await answers(engine, ids) == before
        assert (await engine.import_jsonl(tmp_path / "x.jsonl")).added == 0


async def test_purged_fact_is_not_resurrected(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "s") as engine:
        memory = engine.memory()
        keep = await memory.remember("the sky is blue")
        gone = await memory.remember("the launch code is 0000", id="code")
        await engine.export_jsonl(tmp_path / "old.jsonl")  # before the purge
        await engine.snapshot(tmp_path / "old-snap")
        await memory.forget(ForgetScope.ids(["code"]), purge=True)
        for restore in (engine.import_jsonl(tmp_path / "old.jsonl"), engine.restore(tmp_path / "old-snap")):
            report = await restore
            assert report.refused == ("code",) and report.added == 0 and report.skipped == 1
            assert await memory.get(gone.id) is None
            assert await memory.recall("launch code") == []
        assert await memory.get(keep.id) is not None
    for path in (tmp_path / "s").rglob("*"):
        if path.is_file():
            assert b"launch code" not in path.read_bytes(), path


async def test_tombstones_in_a_file_purge_the_target(tmp_path: Path) -> None:
    async with Engine.open(None) as source:
        await source.memory().remember("a private note", id="note")
        await source.memory().forget(ForgetScope.ids(["note"]), purge=True)
        await source.export_jsonl(tmp_path / "forgotten.jsonl")
    async with Engine.open(tmp_path / "t") as target:
        await target.memory().remember("a private note", id="note")
        report = await target.import_jsonl(tmp_path / "forgotten.jsonl")
        assert (report.tombstones, report.purged) == (1, 1)
        assert await target.memory().get("note") is None and "note" in target.tombstones()
    for path in (tmp_path / "t").rglob("*"):
        if path.is_file():
            assert b"private note" not in path.read_bytes(), path


async def test_conflicting_ids_write_nothing(tmp_path: Path) -> None:
    async with Engine.open(None) as engine:
        await engine.memory().remember("version one", id="same")
        await engine.export_jsonl(tmp_path / "one.jsonl")
    async with Engine.open(None) as engine:
        await engine.memory().remember("version two", id="same")
        revision = engine.revision
        with pytest.raises(Conflict, match="same"):
            await engine.import_jsonl(tmp_path / "one.jsonl")
        assert engine.revision == revision


async def make_snapshot(tmp_path: Path, **options: Any) -> Path:
    (tmp_path / "small.txt").write_bytes(b"small attached bytes")
    async with Engine.open(None) as engine:
        memory = engine.memory()
        await memory.remember("first fact", subject="s")
        await memory.remember("second fact", valid_from=T0)
        await memory.remember_file(str(tmp_path / "small.txt"), summary="a small file")
        await engine.snapshot(tmp_path / "snap", **options)
    return tmp_path / "snap"


async def test_every_tampered_file_is_found_and_nothing_written(tmp_path: Path) -> None:
    snap = await make_snapshot(tmp_path, attachments=True)
    manifest = json.loads((snap / "manifest.json").read_text())
    attached = [f["path"] for f in manifest["files"] if f["path"].startswith("attachments/")]
    assert len(attached) == 1 and (snap / attached[0]).read_bytes() == b"small attached bytes"
    members = [f["path"] for f in manifest["files"]] + ["manifest.json"]
    for member in members:
        path = snap / member
        original = path.read_bytes()
        for position in (0, len(original) // 2, len(original) - 2):
            damaged = bytearray(original)
            damaged[position] ^= 0x01
            path.write_bytes(bytes(damaged))
            async with Engine.open(None) as engine:
                with pytest.raises((CorruptStore, InvalidRequest)) as caught:
                    await engine.restore(snap)
                assert member.split("/")[-1] in str(caught.value)
                assert engine.revision == 0
        path.write_bytes(original)
    (snap / "facts.jsonl").unlink()
    async with Engine.open(None) as engine:
        with pytest.raises(CorruptStore, match=r"facts\.jsonl"):
            await engine.restore(snap)
        assert engine.revision == 0


async def test_manifest_edits_are_found(tmp_path: Path) -> None:
    snap = await make_snapshot(tmp_path)
    original = json.loads((snap / "manifest.json").read_text())
    edits = [("createdAt", 1), ("counts", {"facts": 99}), ("snapshotId", "0" * 64)]
    for key, value in edits:
        (snap / "manifest.json").write_text(json.dumps({**original, key: value}))
        async with Engine.open(None) as engine:
            with pytest.raises(CorruptStore, match="manifest"):
                await engine.restore(snap)


def _rewrite_manifest(snap: Path, **changes: Any) -> None:
    from hmsengine.portability.snapshot import _manifest_digest

    manifest = json.loads((snap / "manifest.json").read_text())
    manifest.update(changes)
    manifest["manifestDigest"] = _manifest_digest(manifest)
    (snap / "manifest.json").write_text(json.dumps(manifest))


async def test_other_formats_and_newer_versions_are_refused(tmp_path: Path) -> None:
    snap = await make_snapshot(tmp_path)
    _rewrite_manifest(snap, format="somebody-else-v1")
    async with Engine.open(None) as engine:
        with pytest.raises(InvalidRequest, match=r"manifest\.json.*somebody-else-v1"):
            await engine.restore(snap)
    _rewrite_manifest(snap, format="hmsengine-snapshot-v2", schemaVersion=99)
    async with Engine.open(None) as engine:
        with pytest.raises(IncompatibleStore, match=r"manifest\.json"):
            await engine.restore(snap)
        assert engine.revision == 0
    async with Engine.open(None) as engine:
        with pytest.raises(InvalidRequest, match="not a snapshot"):
            await engine.restore(tmp_path)
        with pytest.raises(InvalidRequest, match="not an empty directory"):
            await engine.snapshot(snap)


HEADER = '{"type":"header","format":"hmsengine-jsonl","schemaVersion":1}'
GOOD = '{"type":"fact","id":"f1","text":"a good fact","ingestTime":5}'


@pytest.mark.parametrize(("lines", "message"), [
    ([HEADER, GOOD, "[1, 2, 3]"], r"bad\.jsonl:3: expected a JSON object"),
    ([HEADER, GOOD, '{"type":"fact","id":"f2","ingestTime":5}'], r"bad\.jsonl:3: text: required"),
    ([HEADER, "{not json"], r"bad\.jsonl:2: not valid JSON"),
    ([GOOD, '{"type":"fact","id":"f1","text":"again","ingestTime":5}'], r"bad\.jsonl:2: id 'f1' already"),
    ([HEADER, '{"type":"fact","id":"f3","text":"x","ingestTime":5,"colour":"red"}'],
     r"bad\.jsonl:2: colour: unknown field"),
    ([HEADER, '{"type":"fact","id":"f3","text":"x"}'], r"bad\.jsonl:2: ingestTime"),
    ([HEADER, '{"type":"fact","id":"f3","text":"x","ingestTime":1,"validFrom":9,"validTo":3}'],
     r"bad\.jsonl:2: valid_to"),
    ([HEADER, '{"type":"memo","id":"f3","text":"x"}'], r"bad\.jsonl:2: type"),
    (['{"type":"header","format":"other-jsonl","schemaVersion":1}', GOOD], r"bad\.jsonl:1: the format"),
])
async def test_bad_jsonl_names_file_and_line_and_writes_nothing(tmp_path: Path, lines: list[str],
                                                                 message: str) -> None:
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    async with Engine.open(None) as engine:
        with pytest.raises(InvalidRequest, match=message):
            await engine.import_jsonl(tmp_path / "bad.jsonl")
        assert engine.revision == 0


async def test_newer_jsonl_schema_and_bad_paths(tmp_path: Path) -> None:
    (tmp_path / "new.jsonl").write_text('{"type":"header","format":"hmsengine-jsonl","schemaVersion":2}\n')
    async with Engine.open(None) as engine:
        with pytest.raises(IncompatibleStore, match=r"new\.jsonl:1"):
            await engine.import_jsonl(tmp_path / "new.jsonl")
        with pytest.raises(InvalidRequest, match="no file"):
            await engine.import_jsonl(tmp_path / "missing.jsonl")
        with pytest.raises(InvalidRequest, match=r"\.jsonl or \.jsonl\.gz"):
            await engine.export_jsonl(tmp_path / "out.json")
        (tmp_path / "broken.jsonl.gz").write_bytes(b"\x1f\x8b" + b"garbage")
        with pytest.raises(InvalidRequest, match="gzip"):
            await engine.import_jsonl(tmp_path / "broken.jsonl.gz")


def _open_files() -> set[str]:
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return out


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
@pytest.mark.parametrize("content", [
    '{"type":"header","format":"hmsengine-jsonl","schemaVersion":2}\n',  # refused at the header
    '{"type":"document","id":"d1","text":"fine"}\nnot json\n',  # refused mid-file
])
async def test_a_refused_import_leaves_no_file_open(tmp_path: Path, content: str) -> None:
    """The error is kept (as a caller may) while the file is checked: it must be closed already,
    not when the error's traceback is collected."""
    path = tmp_path / "refused.jsonl"
    path.write_text(content)
    async with Engine.open(None) as engine:
        with pytest.raises((IncompatibleStore, InvalidRequest)) as caught:
            await engine.import_jsonl(path)
        assert str(path) not in _open_files(), caught.value


async def test_headerless_jsonl_of_facts_imports(tmp_path: Path) -> None:
    (tmp_path / "hand.jsonl").write_text(
        '{"type":"fact","id":"h1","text":"handwritten fact about owls","ingestTime":1000,"subject":"owls"}\n'
        '{"type":"document","id":"d1","text":"a document about owls"}\n')
    async with Engine.open(None) as engine:
        report = await engine.import_jsonl(tmp_path / "hand.jsonl")
        assert report.added == 2
        fact = await engine.memory().get("h1")
        assert fact is not None and fact.subject == "owls" and fact.ingest_time == 1000
