"""What a restore carries besides the journal: the store's settings (the embedder's identity) as
they were at the restored point, and the persisted index, which the first open adopts."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import trio
from replicas import options, snapshot_of, wait_shipped
from s3server import S3Server

from hmsengine import Engine, InvalidRequest, Memory, RememberInput
from hmsengine.cli import main as hms
from hmsengine.engine import restore_from_bucket
from hmsengine.engine.check import check_store

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from needs_embedder import require_bundled_embedder

WORDS = ("quick", "brown", "fox", "lazy", "dog", "river", "stone", "garden", "winter", "lamp")


def text(i: int) -> str:
    return " ".join(WORDS[(i * k + k) % len(WORDS)] for k in range(1, 6)) + f" item{i}"


class ToyEmbedder:
    """A deterministic embedder with an identity: vectors seeded by the model name and text."""

    dim = 8

    def __init__(self, model: str) -> None:
        self.identity = {"model": model, "dim": 8, "version": "1"}

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 8), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(f"{self.identity['model']}|{t}".encode()).digest()[:8],
                                  "little")
            out[i] = np.random.default_rng(seed).standard_normal(8)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


async def test_first_open_of_a_restored_store_adopts_the_shipped_index(s3: S3Server,
                                                                        tmp_path: Path) -> None:
    """The index persisted at close ships with the journal: a restore copies it and the first
    open tokenizes only what was committed after it (none, then the 5 later puts); a restore as
    known before it was persisted leaves it out; every restore answers as the original and
    checks clean (`hms check`)."""
    url = f"s3://{s3.bucket()}/idx"
    now = [1_700_000_000_000]
    original = tmp_path / "a"
    async with Engine.open(original, clock=lambda: now[0], replicate_to=options(url)) as engine:
        await engine.put_documents([{"id": f"d{i}", "text": text(i)} for i in range(400)])
        early = now[0]
        now[0] += 60_000
        await engine.put_documents([{"id": f"e{i}", "text": text(i + 400)} for i in range(200)])
    reports = await restore_from_bucket(url, tmp_path / "latest")
    assert reports[0].index_files >= 1 and reports[0].index_note is None, reports[0]
    async with Engine.open(tmp_path / "latest") as restored:
        stats = restored.statistics()
        assert (stats.index_documents_loaded, stats.index_documents_tokenized) == (600, 0)
    assert await snapshot_of(tmp_path / "latest", query="fox item7") == \
        await snapshot_of(original, query="fox item7")

    async with Engine.open(original, clock=lambda: now[0], replicate_to=options(url)) as engine:
        now[0] += 60_000
        for i in range(5):
            await engine.put_document(f"later{i}", f"a later fox {i}")
        await wait_shipped(engine)
        restored_while_open = await restore_from_bucket(url, tmp_path / "open")
        expected = {"hits": [(h.id, h.score) for h in await engine.search_documents("later fox", k=10)],
                    "revision": engine.revision}
    assert restored_while_open[0].index_files >= 1
    async with Engine.open(tmp_path / "open") as restored:
        stats = restored.statistics()
        assert (stats.index_documents_loaded, stats.index_documents_tokenized) == (600, 5)
        assert {"hits": [(h.id, h.score) for h in await restored.search_documents("later fox", k=10)],
                "revision": restored.revision} == expected

    reports = await restore_from_bucket(url, tmp_path / "early", known_at=early)
    assert reports[0].index_files == 0 and "later state" in (reports[0].index_note or "")
    async with Engine.open(tmp_path / "early") as restored:
        stats = restored.statistics()
        assert (stats.documents, stats.index_documents_tokenized) == (400, 400)
    for name in ("latest", "open", "early"):
        report = await trio.to_thread.run_sync(lambda n=name: check_store(tmp_path / n))
        assert report.ok, (name, report.findings)
        assert await trio.to_thread.run_sync(hms, ["check", "--store", str(tmp_path / name)]) == 0


async def test_a_damaged_index_object_is_left_out(s3: S3Server, tmp_path: Path) -> None:
    """An index file damaged in the bucket is not written into the restored store: the report
    names it, the first open re-indexes, the answers are the original's, the store checks
    clean. (The journal is the truth; a damaged segment of it is CorruptStore instead.)"""
    bucket = s3.bucket()
    url = f"s3://{bucket}/dmgidx"
    async with Engine.open(tmp_path / "a", replicate_to=options(url)) as engine:
        await engine.put_documents([{"id": f"d{i}", "text": text(i)} for i in range(300)])
    victim = next(k for k in s3.objects(bucket, "dmgidx/") if "/index/" in k)
    data = bytearray(s3.s3.get_object(Bucket=bucket, Key=victim)["Body"].read())
    data[len(data) // 3] ^= 0x01
    s3.s3.put_object(Bucket=bucket, Key=victim, Body=bytes(data))
    reports = await restore_from_bucket(url, tmp_path / "b")
    assert reports[0].index_files == 0 and victim in (reports[0].index_note or "")
    assert not (tmp_path / "b" / reports[0].generation / "index").exists() or not any(
        (tmp_path / "b").glob("gen-*/index/*.hsi"))
    async with Engine.open(tmp_path / "b") as restored:
        assert restored.statistics().index_documents_tokenized == 300
    assert await snapshot_of(tmp_path / "b", query="fox") == await snapshot_of(tmp_path / "a", query="fox")
    assert (await trio.to_thread.run_sync(lambda: check_store(tmp_path / "b"))).ok


async def _answers(memory: Memory, as_of: int) -> list[Any]:
    out: list[Any] = []
    for query in ("a fox in the garden", "winter lamp", "river stone"):
        hits = await memory.recall(query, k=4, as_of=as_of, explain=True)
        out.append([(h.fact.id, h.score, h.status, h.explanation.semantic if h.explanation else None)
                    for h in hits])
    return out


async def test_settings_follow_the_store_into_every_restore(s3: S3Server, tmp_path: Path) -> None:
    """The embedder's identity lives in format.json, not the journal: a store that recorded
    embedder A, then was re-embedded with B, restores with B's record (latest) or A's (as
    known before the re-embedding, also when the first record was made before replication
    began); there a Memory with that embedder answers exactly as the original did, and one with
    the other embedder is refused, as it was by the original."""
    url = f"s3://{s3.bucket()}/settings"
    now = [1_700_000_000_000]
    a, b = ToyEmbedder("toy-a"), ToyEmbedder("toy-b")
    recorded: dict[str, Any] = {}
    async with Engine.open(tmp_path / "o", clock=lambda: now[0]) as engine:  # not replicated yet
        await Memory(engine, embedder=a).remember(text(0), id="f0")
    async with Engine.open(tmp_path / "o", clock=lambda: now[0], replicate_to=options(url)) as engine:
        memory = Memory(engine, embedder=a)
        for i in range(1, 12):
            await memory.remember(text(i), id=f"f{i}")
        now[0] += 60_000
        t1 = now[0]
        recorded["a"] = (engine.settings, await _answers(memory, t1))
        now[0] += 60_000
        memory_b = Memory(engine, embedder=b)
        await memory_b.reembed(embedder=b)
        await memory_b.remember(text(12), id="f12")
        now[0] += 60_000
        t2 = now[0]
        recorded["b"] = (engine.settings, await _answers(memory_b, t2))
        with pytest.raises(InvalidRequest):
            await Memory(engine, embedder=a).recall("fox")
        await wait_shipped(engine)
    assert recorded["a"][0]["embedder"]["model"] == "toy-a"
    assert recorded["b"][0]["embedder"] == {**b.identity, "state": "ready"}
    for name, when, right, wrong in (("b", None, b, a), ("a", t1, a, b)):
        dest = tmp_path / f"r-{name}"
        await restore_from_bucket(url, dest, known_at=when)
        settings, answers = recorded[name]
        async with Engine.open(dest) as restored:
            assert restored.settings == settings
            assert await _answers(Memory(restored, embedder=right), t1 if name == "a" else t2) == answers
            with pytest.raises(InvalidRequest):
                await Memory(restored, embedder=wrong).recall("fox")


async def test_a_default_hybrid_store_restores_hybrid(s3: S3Server, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """With the bundled embedder (the default, which the suite otherwise turns off), a store
    restored from the bucket is hybrid with the same identity: recall there gives the same
    facts, scores and semantic signal as the original's."""
    require_bundled_embedder()
    monkeypatch.delenv("HMS_EMBEDDER", raising=False)
    url = f"s3://{s3.bucket()}/hybrid"
    async with Engine.open(tmp_path / "o", replicate_to=options(url)) as engine:
        memory = engine.memory()
        await memory.remember_many([RememberInput(text=text(i)) for i in range(20)])
        identity = memory.embedder_identity
        assert identity is not None
        expected = await _answers(memory, engine.now())
        assert any(hit[3] is not None for hits in expected for hit in hits)  # hybrid: cosine ran
        when = engine.now()
    await restore_from_bucket(url, tmp_path / "r")
    async with Engine.open(tmp_path / "r") as restored:
        memory = restored.memory()
        assert memory.embedder_identity == identity and memory.embedder_problem is None
        assert restored.settings["embedder"] == {**identity, "state": "ready"}
        assert await _answers(memory, when) == expected
