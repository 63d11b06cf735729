"""The default recall is hybrid with the bundled embedder, the store keeps the embedder's identity
in its settings, and a store never mixes two embedders' vectors (memory/embedding.py)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

import numpy as np
import pytest
import trio

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from needs_embedder import require_bundled_embedder

require_bundled_embedder()

from hmsengine import Engine, InvalidRequest, Memory, embedders  # noqa: E402
from hmsengine.memory.config import parse_config  # noqa: E402
from hmsengine.memory.embedding import SECTION  # noqa: E402

ADOPTION = "Caroline: I'm looking into agencies to adopt a kid"
OTHERS = ("Melanie: the pottery class starts on Tuesday", "Caroline: my car broke down again",
          "Melanie: we went camping by the lake with the kids")


@pytest.fixture(autouse=True)
def default_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests exercise the default the suite turns off (tests/conftest.py)."""
    monkeypatch.delenv("HMS_EMBEDDER", raising=False)


class HashEmbedder:
    """A deterministic stand-in with another identity (same dimension as the bundled model)."""

    dim = 384

    def __init__(self, version: str = "1") -> None:
        self.identity = {"model": "test-hash", "dim": 384, "version": version}

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            out[i] = np.random.default_rng(seed).standard_normal(384)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


async def _fill(memory: Memory) -> str:
    for text in OTHERS:
        await memory.remember(text)
    return (await memory.remember(ADOPTION)).id


async def test_a_new_store_recalls_by_meaning_by_default(store_path: str | None) -> None:
    """A store made with the default configuration embeds with the bundled model and fuses BM25
    with cosine: a question sharing no content word with the fact still finds it first."""
    async with Engine.open(store_path) as engine:
        memory = Memory(engine)
        assert memory.embedder_identity == embedders.bundled_embedder().identity
        adopted = await _fill(memory)
        hits = await memory.recall("what are her plans for adoption?", k=1, explain=True)
        assert hits[0].fact.id == adopted
        assert hits[0].explanation is not None and hits[0].explanation.fusion == "rrf"
        assert engine.settings[SECTION] == {**embedders.bundled_embedder().identity, "state": "ready"}


async def test_the_identity_survives_a_reopen_and_picks_the_embedder(disk_path: str) -> None:
    """The identity is in format.json after the first embedded fact, and a reopened store's
    default Memory embeds with the recorded embedder."""
    async with Engine.open(disk_path) as engine:
        await _fill(Memory(engine))
    with open(os.path.join(disk_path, "format.json")) as f:
        recorded = json.load(f)["settings"][SECTION]
    assert recorded["model"] == embedders.DEFAULT_MODEL and recorded["dim"] == 384
    async with Engine.open(disk_path) as engine:
        memory = Memory(engine)
        assert memory.embedder is embedders.bundled_embedder()
        hits = await memory.recall("adoption agencies", k=1)
        assert hits[0].fact.text == ADOPTION


async def test_search_documents_with_the_query_vector_equals_recall(store_path: str | None) -> None:
    """recall(q) is search_documents(q, embedding=embed_query(q)): same ids, order and scores."""
    async with Engine.open(store_path) as engine:
        memory = Memory(engine)
        await _fill(memory)
        for query in ("adopt", "what did Caroline say about her adoption plans?", "kids lake"):
            hits = await memory.recall(query, k=3)
            vector = await memory.embed_query(query)
            docs = await engine.search_documents(query, k=3, embedding=vector)
            assert [(h.fact.id, h.score) for h in hits] == [(d.id, d.score) for d in docs]


async def test_another_embedder_is_refused_with_a_hint(store_path: str | None) -> None:
    """Once a store records the bundled embedder, an embedder of another identity (or of none)
    is refused at its first use, never mixed in; reads and a lexical Memory still work."""
    async with Engine.open(store_path) as engine:
        await _fill(Memory(engine))
        other = Memory(engine, embedder=HashEmbedder())
        with pytest.raises(InvalidRequest, match="test-hash") as caught:
            await other.recall("adoption")
        assert "reembed" in caught.value.hint
        with pytest.raises(InvalidRequest, match="vectors come from"):
            await other.remember("Melanie paints sunrises")
        anonymous = Memory(engine, embedder=lambda texts: [[0.0] * 384 for _ in texts])
        with pytest.raises(InvalidRequest, match="declares no identity"):
            await anonymous.recall("adoption")
        lexical = Memory(engine, embedder=False)
        assert [h.fact.text for h in await lexical.recall("agencies adopt")] == [ADOPTION]
        with pytest.raises(InvalidRequest, match="no vector"):
            await lexical.remember("Melanie paints sunrises")
        assert len(await other.history((await lexical.recall("agencies"))[0].fact.id)) == 1


async def test_a_store_with_facts_and_no_record_stays_lexical(store_path: str | None) -> None:
    """A store that already holds facts without a recorded embedder (made lexical, or before
    records) keeps recalling lexically by default: nothing is recorded or embedded."""
    async with Engine.open(store_path) as engine:
        await Memory(engine, embedder=False).remember("Caroline: adoption agencies")
        memory = Memory(engine)
        assert memory.embedder is None
        await memory.remember("Melanie: pottery on Tuesday")
        assert SECTION not in engine.settings
        assert (await memory.get((await memory.recall("pottery"))[0].fact.id)).embedding is None  # type: ignore[union-attr]


async def test_lexical_is_one_option_away(monkeypatch: pytest.MonkeyPatch) -> None:
    """config embedder "none" and HMS_EMBEDDER=none keep a new store lexical."""
    async with Engine.open(None) as engine:
        assert Memory(engine, {"embedder": "none"}).embedder is None
        monkeypatch.setenv("HMS_EMBEDDER", "none")
        assert Memory(engine).embedder is None
    with pytest.raises(InvalidRequest, match=r"config\.embedder"):
        parse_config({"embedder": "minilm"})


async def test_reembed_moves_a_store_to_another_embedder(disk_path: str) -> None:
    """reembed re-embeds every document with the new embedder, records it, and the default
    Memory is refused until then and works after; an interrupted run stays refused."""
    async with Engine.open(disk_path) as engine:
        old = Memory(engine, embedder=HashEmbedder())
        ids = [(await old.remember(t)).id for t in (*OTHERS, ADOPTION)]
        assert engine.settings[SECTION]["model"] == "test-hash"
        with pytest.raises(InvalidRequest, match="test-hash"):
            await Memory(engine).recall("adoption")
        seen: list[tuple[int, int]] = []
        assert await Memory(engine).reembed(progress=lambda d, t: seen.append((d, t))) == len(ids)
        assert seen[-1] == (len(ids), len(ids))
    async with Engine.open(disk_path) as engine:
        memory = Memory(engine)
        assert engine.settings[SECTION]["model"] == embedders.DEFAULT_MODEL
        vector = embedders.bundled_embedder().embed([ADOPTION])[0]
        fact = await memory.get(ids[-1])
        assert fact is not None and np.allclose(fact.embedding, vector, atol=1e-6)  # type: ignore[arg-type]
        assert (await memory.recall("what are her plans for adoption?", k=1))[0].fact.id == ids[-1]
        await engine.update_settings(SECTION, {**engine.settings[SECTION], "state": "reembedding"})
        with pytest.raises(InvalidRequest, match="did not finish"):
            await Memory(engine).recall("adoption")


async def test_reembed_refuses_another_dimension() -> None:
    """A store's embedding dimension is fixed: re-embedding to another one is refused before
    anything changes, with a hint to export and import."""

    class Small(HashEmbedder):
        def __init__(self) -> None:
            self.identity = {"model": "small", "dim": 8, "version": "1"}

    async with Engine.open(None) as engine:
        await _fill(Memory(engine))
        before = engine.settings
        with pytest.raises(InvalidRequest, match="384 dimensions") as caught:
            await Memory(engine, embedder=Small()).reembed()
        assert "export" in caught.value.hint and engine.settings == before


async def test_settings_sections_are_kept_and_validated(disk_path: str) -> None:
    """update_settings sets or removes one section and keeps the others across a reopen; a bad
    section name or a non-object value is InvalidRequest."""
    async with Engine.open(disk_path) as engine:
        await engine.update_settings("memory", {"supersession": "latest-by-subject"})
        await engine.update_settings("other", {"x": [1, 2]})
        await engine.update_settings("other", None)
        for section, value in (("Bad-Name", {}), ("ok", [1]), ("ok", {"x": float("nan")})):
            with pytest.raises(InvalidRequest):
                await engine.update_settings(section, value)  # type: ignore[arg-type]
    async with Engine.open(disk_path) as engine:
        assert engine.settings == {"memory": {"supersession": "latest-by-subject"}}
        snapshot: dict[str, Any] = engine.settings
        snapshot["memory"]["supersession"] = "none"  # a copy: the store's is unchanged
        assert engine.settings["memory"]["supersession"] == "latest-by-subject"


def test_hms_reembed_and_import_make_and_keep_a_store_hybrid(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`hms reembed` turns a lexical store hybrid (every fact embedded, the embedder recorded);
    `hms import` into a hybrid store embeds the facts that came without a vector."""
    from hmsengine.cli import main

    lexical, hybrid = str(tmp_path / "lexical"), str(tmp_path / "hybrid")
    monkeypatch.setenv("HMS_EMBEDDER", "none")
    for text in (*OTHERS, ADOPTION):
        assert main(["remember", text, "--store", lexical]) == 0
    export = str(tmp_path / "facts.jsonl")
    assert main(["export", export, "--store", lexical]) == 0
    monkeypatch.delenv("HMS_EMBEDDER")
    assert main(["remember", "Melanie: I signed up for a pottery class", "--store", hybrid]) == 0
    capsys.readouterr()
    assert main(["import", export, "--store", hybrid, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["embedded"] == len(OTHERS) + 1
    assert main(["reembed", "--store", lexical, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reembedded"] == len(OTHERS) + 1

    async def check(path: str) -> None:
        async with Engine.open(path) as engine:
            assert engine.settings[SECTION]["model"] == embedders.DEFAULT_MODEL
            memory = Memory(engine)
            hits = await memory.recall("what are her plans for adoption?", k=1)
            assert hits[0].fact.text == ADOPTION and hits[0].fact.embedding is not None

    for path in (lexical, hybrid):
        trio.run(check, path)
