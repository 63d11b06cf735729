"""Continuous replication to a real S3 server (moto on 127.0.0.1) and restores from it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trio
from markers import files_containing
from replicas import options, snapshot_of, wait_shipped
from s3server import S3Server, decoded_scan

from hmsengine import Conflict, CorruptStore, Engine, ForgetScope, InvalidRequest, WrongKey
from hmsengine.cli import main as hms
from hmsengine.engine import restore_from_bucket
from hmsengine.engine.check import check_store

KEY = "correct horse battery staple"


async def test_restore_equals_original(s3: S3Server, tmp_path: Path) -> None:
    """Puts, replacements, deletes, batches and a compaction all ship; a restore elsewhere
    holds the same documents, revision, search results and tombstones."""
    url = f"s3://{s3.bucket()}/one"
    original = tmp_path / "a"
    async with Engine.open(original, replicate_to=options(url)) as engine:
        for i in range(30):
            await engine.put_document(f"d{i}", f"the quick brown fox {i}", metadata={"n": i},
                                      embedding=[1.0, float(i)])
        await engine.put_documents([{"id": f"b{i}", "text": f"batch quick {i}"} for i in range(5)])
        await engine.put_document("d3", "replaced quick fox")
        await engine.delete_document("d4")
        await engine.compact()
        await engine.put_document("after", "after the compaction, a quick fox")
        await engine.delete_document("d5", purge=True)
        await wait_shipped(engine)
        stats = engine.statistics()
        assert stats.replication_state == "ok" and stats.replication_objects >= 2
    reports = await restore_from_bucket(url, tmp_path / "b")
    assert reports[0].revision == (await snapshot_of(original))["revision"]
    assert await snapshot_of(tmp_path / "b") == await snapshot_of(original)
    report = await trio.to_thread.run_sync(lambda: check_store(tmp_path / "b"))
    assert report.ok and report.frames > 0 and report.segments > 0, report


async def test_point_in_time_restore_answers_as_the_original_did(s3: S3Server, tmp_path: Path) -> None:
    """A restore as known at T answers recall, history and explain exactly as the original
    did at T (recorded then), for two points in time, through `hms restore --known-at`."""
    url = f"s3://{s3.bucket()}/pitr"
    now = [1_700_000_000_000]
    queries = ["where does alice live", "favourite colour", "alice"]

    async def answers(memory: object, as_of: int) -> list[object]:
        out: list[object] = []
        for q in queries:
            hits = await memory.recall(q, k=5, as_of=as_of, history="all")  # type: ignore[attr-defined]
            out.append([(h.fact.id, h.score, h.status) for h in hits])
            for h in hits:
                out.append([f.id for f in await memory.history(h.fact.id)])  # type: ignore[attr-defined]
                ex = await memory.explain(q, h.fact.id, as_of=as_of, history="all")  # type: ignore[attr-defined]
                out.append((ex.rank, ex.score, ex.chain, ex.status))
        return out

    recorded = {}
    async with Engine.open(tmp_path / "a", clock=lambda: now[0], replicate_to=options(url)) as engine:
        memory = engine.memory()
        await memory.remember("alice lives in Paris", id="city1", subject="alice/city")
        await memory.remember("alice's favourite colour is green", id="colour1", subject="alice/colour")
        now[0] += 60_000
        t1 = now[0]
        recorded[t1] = await answers(memory, t1)
        now[0] += 60_000
        await memory.remember("alice lives in Berlin", id="city2", subject="alice/city",
                              supersedes=["city1"])
        await memory.remember("bob lives in Rome", id="bob1", subject="bob/city")
        now[0] += 60_000
        t2 = now[0]
        recorded[t2] = await answers(memory, t2)
        now[0] += 60_000
        await memory.remember("alice's favourite colour is blue", id="colour2",
                              subject="alice/colour", supersedes=["colour1"])
        await engine.delete_document("bob1")
        await wait_shipped(engine)
    for when, expected in recorded.items():
        dest = tmp_path / f"at-{when}"
        argv = ["restore", "--from", url, "--store", str(dest), "--known-at", str(when), "--json"]
        assert await trio.to_thread.run_sync(hms, argv) == 0
        async with Engine.open(dest) as engine:
            assert await answers(engine.memory(), when) == expected


async def test_outage_writes_go_on_lag_grows_then_catches_up(s3: S3Server, tmp_path: Path) -> None:
    """With the S3 server stopped, writes still succeed, the lag and the pending bytes grow
    and the state says retrying; restarted, shipping catches up and a restore has them all."""
    url = f"s3://{s3.bucket()}/outage"
    async with Engine.open(tmp_path / "a", replicate_to=options(url)) as engine:
        await engine.put_document("before", "before the outage")
        await wait_shipped(engine)
        s3.stop()
        try:
            for i in range(40):
                await engine.put_document(f"o{i}", f"written during the outage {i}")
                await trio.sleep(0.02)
            await trio.sleep(1.0)
            stats = engine.statistics()
            assert stats.replication_state == "retrying", stats
            assert stats.replication_lag_ms >= 1000 and stats.replication_pending_bytes > 0
            assert stats.replication_errors >= 1
        finally:
            s3.start()
        await wait_shipped(engine, timeout=20)
        assert engine.statistics().replication_state == "ok"
    await restore_from_bucket(url, tmp_path / "b")
    async with Engine.open(tmp_path / "b") as restored:
        assert restored.revision == 41
        for i in range(40):
            doc = await restored.get_document(f"o{i}")
            assert doc is not None and doc.text == f"written during the outage {i}"


async def test_damaged_or_missing_object_is_corrupt_store(s3: S3Server, tmp_path: Path) -> None:
    """A flipped byte in a segment, or a segment deleted from the middle, makes the restore
    raise CorruptStore naming that object, and nothing is written."""
    bucket = s3.bucket()
    url = f"s3://{bucket}/dmg"
    async with Engine.open(tmp_path / "a", replicate_to=options(url)) as engine:
        for i in range(3):
            await engine.put_document(f"d{i}", f"document {i}")
            await wait_shipped(engine)
    segments = sorted(k for k in s3.objects(bucket) if k.endswith(".hjs"))
    assert len(segments) >= 3
    victim = segments[1]
    data = bytearray(s3.s3.get_object(Bucket=bucket, Key=victim)["Body"].read())
    data[len(data) // 2] ^= 0x40
    s3.s3.put_object(Bucket=bucket, Key=victim, Body=bytes(data))
    with pytest.raises(CorruptStore) as raised:
        await restore_from_bucket(url, tmp_path / "b")
    assert victim in str(raised.value)
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())
    s3.s3.delete_object(Bucket=bucket, Key=victim)  # now a gap in the middle
    with pytest.raises(CorruptStore):
        await restore_from_bucket(url, tmp_path / "c")


async def test_encrypted_store_ships_ciphertext_only(s3: S3Server, tmp_path: Path) -> None:
    """No object of an encrypted store holds a marker, even decompressed; decoded with the
    key the markers are there (the positive control); a restore needs the key."""
    bucket = s3.bucket()
    url = f"s3://{bucket}/enc"
    needles = [b"SECRET-MARKER-TEXT", b"SECRET-META-VALUE", b"secret-id-42"]
    async with Engine.open(tmp_path / "a", key=KEY, replicate_to=options(url)) as engine:
        await engine.put_document("secret-id-42", "SECRET-MARKER-TEXT " * 80,
                                  metadata={"m": "SECRET-META-VALUE"})
        await engine.put_document("small", "SECRET-MARKER-TEXT small")
        await wait_shipped(engine)
    objects = s3.objects(bucket, "enc/")
    index_objects = [k for k in objects if "/index/" in k]
    assert index_objects  # the index persisted at close shipped before the lease was released
    raw = {k: v for k, v in objects.items()}
    assert not any(n in view for n in needles for view in raw.values())
    found = decoded_scan(objects, "enc", needles, key=KEY)
    assert found.keys() == set(needles)
    assert set(found[b"secret-id-42"]) & set(index_objects)  # decoded index files: the control
    with pytest.raises(WrongKey):
        await restore_from_bucket(url, tmp_path / "nokey")
    await restore_from_bucket(url, tmp_path / "b", key=KEY)
    async with Engine.open(tmp_path / "b", key=KEY) as restored:
        doc = await restored.get_document("small")
        assert doc is not None and doc.text == "SECRET-MARKER-TEXT small"


@pytest.mark.parametrize("key", [None, KEY])
async def test_purge_propagates_to_the_bucket(s3: S3Server, tmp_path: Path, key: str | None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """After forget(purge=True) and a plain compaction before it, no object in the bucket,
    decoded with the key, holds the purged text, and neither does a store restored after."""
    bucket = s3.bucket()
    url = f"s3://{bucket}/purge"
    gone, kept = b"PURGED-ALPHA-TEXT", b"KEPT-OMEGA-TEXT"
    async with Engine.open(tmp_path / "a", key=key, replicate_to=options(url)) as engine:
        memory = engine.memory()
        await memory.remember(f"{gone.decode()} the first quokkasecret", id="f1", subject="s")
        await memory.remember(f"{kept.decode()} stays", id="f2", subject="k")
    # The close persisted (and shipped) the index; the reopen adopts it.
    async with Engine.open(tmp_path / "a", key=key, replicate_to=options(url)) as engine:
        memory = engine.memory()
        await engine.compact()  # an older generation that holds the text too, and its index
        await memory.remember(f"{gone.decode()} again", id="f3", subject="s")
        await wait_shipped(engine)
        # Words only the purged facts had, as the index holds them (analyzed; not "purg",
        # which the lease's holder name has: the store's path names this test).
        terms = [t.encode() for t in engine.analyze("alpha quokkasecret")]
        before = decoded_scan(s3.objects(bucket, "purge/"), "purge", [gone, kept, *terms],
                              key=key, fold=True)
        assert set(before) == {gone, kept, *terms}  # the positive control
        assert any("/index/" in k for t in terms for k in before[t])  # the index objects too
        report = await memory.forget(ForgetScope.subject("s"), purge=True)
        assert set(report.removed) == {"f1", "f3"}
        await wait_shipped(engine)
        await trio.sleep(0.2)
    objects = s3.objects(bucket, "purge/")
    after = decoded_scan(objects, "purge", [gone, kept, *terms], key=key, fold=True)
    assert after.keys() == {kept}, after
    assert all("gen-00000001/" not in k and "gen-00000002/" not in k for k in objects)
    await restore_from_bucket(url, tmp_path / "b", key=key)
    async with Engine.open(tmp_path / "b", key=key) as restored:
        memory = restored.memory()
        assert await memory.get("f1") is None and await memory.get("f2") is not None
        assert set(restored.tombstones()) == {"f1", "f3"}
    # hms check on the restored store: every checksum verified, and no decoded byte of any
    # file holds the purged text or its words (exit 0); the kept text is found (exit 1).
    argv = ["check", "--store", str(tmp_path / "b"), "--absent", gone.decode(),
            *[a for t in terms for a in ("--absent", t.decode())]]
    keyed = ["--key-env", "HMS_TEST_KEY"] if key else []
    if key:
        monkeypatch.setenv("HMS_TEST_KEY", key)
    assert await trio.to_thread.run_sync(hms, [*argv, *keyed]) == 0
    argv = ["check", "--store", str(tmp_path / "b"), "--absent", kept.decode(), *keyed]
    assert await trio.to_thread.run_sync(hms, argv) == 1
    if key is None:  # every file of the restored store, zstd frames decompressed too
        assert files_containing(str(tmp_path / "b"), [gone, kept]).keys() == {kept}


async def test_stale_copy_and_foreign_store_are_refused(s3: S3Server, tmp_path: Path) -> None:
    """A directory the bucket is ahead of (an older copy) and another store under the same
    prefix are refused at open, before anything is written."""
    url = f"s3://{s3.bucket()}/stale"
    opts = options(url)
    async with Engine.open(tmp_path / "a", replicate_to=opts) as engine:
        await engine.put_document("x", "one")
        await wait_shipped(engine)
    await restore_from_bucket(url, tmp_path / "copy")
    async with Engine.open(tmp_path / "a", replicate_to=opts) as engine:
        await engine.put_document("y", "two")
    with pytest.raises(Conflict):
        async with Engine.open(tmp_path / "copy", replicate_to=opts):
            pass
    with pytest.raises(Conflict):
        async with Engine.open(tmp_path / "other", replicate_to=opts):
            pass


async def test_bad_targets_are_invalid_requests(tmp_path: Path) -> None:
    """Malformed URLs and an in-memory store are InvalidRequest naming the option."""
    for url in ("http://x/y", "s3://", "s3://UPPER/x", "s3://bucket//x", "s3://bucket/../x", 42):
        with pytest.raises(InvalidRequest):
            Engine.open(tmp_path / "a", replicate_to=url)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest):
        Engine.open(None, replicate_to="s3://bucket/x")


def test_restore_command_reports_json(s3: S3Server, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`hms restore --from` prints one JSON report per store; bad combinations and a replica
    over --max-bytes exit 2."""
    url = f"s3://{s3.bucket()}/cli"

    async def write() -> None:
        async with Engine.open(tmp_path / "a", replicate_to=options(url)) as engine:
            await engine.put_document("x", "hello")
    trio.run(write)
    assert hms(["restore", "--from", url, "--store", str(tmp_path / "b"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)[0]
    assert report["documents"] == 1 and report["revision"] == 1 and report["tenant"] is None
    assert hms(["stats", "--store", str(tmp_path / "a"), "--replicate-to", url, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["replication_target"] == url and stats["replication_state"] == "ok"
    assert hms(["restore", "--store", str(tmp_path / "c"), "--known-at", "5"]) == 2
    assert hms(["restore", "--from", url, "--store", str(tmp_path / "b")]) == 2  # not empty
    assert hms(["restore", "--from", "s3://nobucket-here/x", "--store", str(tmp_path / "d")]) == 4
    # --max-bytes bounds what one store's restore downloads: refused, nothing written.
    assert hms(["restore", "--from", url, "--store", str(tmp_path / "e"), "--max-bytes", "100"]) == 2
    assert "--max-bytes" in capsys.readouterr().err
    assert not (tmp_path / "e").exists() or not any((tmp_path / "e").iterdir())


async def test_missing_extra_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Without obstore installed, replication is an InvalidRequest naming the install command,
    and `hms restore --from` prints it on one line (exit 2)."""
    monkeypatch.setitem(sys.modules, "obstore", None)  # what an absent package looks like
    with pytest.raises(InvalidRequest) as raised:
        async with Engine.open(tmp_path / "a", replicate_to="s3://bucket1/x"):
            pass
    assert raised.value.hint == "pip install 'hmsengine[replicate]'"
    assert not (tmp_path / "a").exists()  # refused before anything was touched
    argv = ["restore", "--from", "s3://bucket1/x", "--store", str(tmp_path / "b")]
    assert await trio.to_thread.run_sync(hms, argv) == 2
    err = capsys.readouterr().err
    assert "replicate" in err and "pip install 'hmsengine[replicate]'" in err


async def test_frames_without_commit_time_take_the_next_stamped_time(s3: S3Server,
                                                                      tmp_path: Path) -> None:
    """Transactions journaled without a commit time (as builds before it wrote them) count as
    committed when the next stamped one was: in a restore as known at a time before that, they
    are left out, at or after it they are in; unstamped ones at the end only in a latest one."""
    url = f"s3://{s3.bucket()}/old"
    now = [1_700_000_000_000]
    async with Engine.open(tmp_path / "a", clock=lambda: now[0], replicate_to=options(url)) as engine:
        engine._core.clock = None  # an older build: no "ts" in the frames
        await engine.put_document("old1", "written by an older build")
        engine._core.clock = lambda: now[0]
        now[0] += 1000
        await engine.put_document("new1", "stamped")  # ts = start + 1000
        engine._core.clock = None
        await engine.put_document("old2", "unstamped at the end")
        await wait_shipped(engine)
    cases = {now[0] - 1: set(), now[0]: {"old1", "new1"}, None: {"old1", "new1", "old2"}}
    for n, (when, expected) in enumerate(cases.items()):
        await restore_from_bucket(url, tmp_path / f"r{n}", known_at=when)
        async with Engine.open(tmp_path / f"r{n}") as restored:
            assert {d for d, _ in restored.scan_metadata()} == expected, when


async def test_an_index_upload_racing_a_purge_leaves_nothing(s3: S3Server, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """An index file of the old generation whose upload was under way when a purge switched
    generations (so it lands after the purge deleted that generation) is deleted by the shipper:
    no object of the old generation, and no purged text in any object, remains."""
    import threading

    from hmsengine.replication import shipper

    bucket = s3.bucket()
    url = f"s3://{bucket}/race"
    gone = b"RACED-PURGE-TEXT"
    held, release = threading.Event(), threading.Event()
    original = shipper.Shipper._put_checked

    def slow_put(self: shipper.Shipper, key: str, data: bytes, create: bool) -> None:
        if key.startswith("gen-00000002/index/") and not release.is_set():
            held.set()
            release.wait(30)  # a slow upload: the purge runs meanwhile
        original(self, key, data, create)

    monkeypatch.setattr(shipper.Shipper, "_put_checked", slow_put)
    async with Engine.open(tmp_path / "a", replicate_to=options(url)) as engine:
        await engine.put_document("victim", f"{gone.decode()} quokkarace")
        await engine.put_document("kept", "kept text")
    async with Engine.open(tmp_path / "a", replicate_to=options(url)) as engine:
        await engine.compact()  # gen 2, whose index (holding the victim) uploads slowly
        with trio.fail_after(10):
            while not held.is_set():
                await trio.sleep(0.02)
        await engine.delete_document("victim", purge=True)  # gen 3
        with trio.fail_after(10):
            while any(k.startswith("race/gen-00000002/") and k.endswith(".hjs")
                      for k in s3.objects(bucket, "race/")):
                await trio.sleep(0.05)  # the purge's sweep deleted gen 2
        release.set()
        await wait_shipped(engine)
    objects = s3.objects(bucket, "race/")
    assert not [k for k in objects if k.startswith(("race/gen-00000001/", "race/gen-00000002/"))]
    terms = [t.encode() for t in ("quokkarac", "quokkarace")]
    assert decoded_scan(objects, "race", [gone, *terms], fold=True) == {}
