"""The Python client's vector mask against a real ``hms serve``: the server stores and searches
masked vectors only, and recall and search rank exactly as with the raw vectors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import trio
from serverproc import ServerProcess

from hmsengine import Engine, RememberInput
from hmsengine.client import AsyncClient, Client
from hmsengine.vectormask import VectorMask

DIM = 8
N = 40
FIXTURE = Path(__file__).resolve().parents[2] / "clients/typescript/test/fixtures/vector-mask-v1.json"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A server whose stores take caller-supplied 8-dimensional embeddings."""
    root = tmp_path_factory.mktemp("mask") / "root"
    proc = ServerProcess(root, "--input-dim", str(DIM))
    yield proc
    assert proc.stop() == 0, proc.stderr()


def _vectors() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    return rng.standard_normal((N, DIM)), rng.standard_normal((5, DIM))


def _fill(client: Client, facts: np.ndarray) -> None:
    client.memory.remember_many([
        RememberInput(text=f"note {i} about the garden", id=f"n{i}", embedding=tuple(v))
        for i, v in enumerate(facts[:-1])])
    client.memory.remember("the last note", id=f"n{N - 1}", embedding=list(facts[-1]))
    client.documents.put("doc", "a plain document", embedding=list(facts[0]))


def test_the_server_sees_masked_vectors_and_ranks_as_with_raw_ones(server: ServerProcess) -> None:
    """Two tenants hold the same facts, one through a masked client: every stored vector of the
    masked tenant differs from the raw one (same norm), recall and search with a query vector
    give the same ids and scores, and the masked client reads its raw vectors back."""
    facts, queries = _vectors()
    mask = VectorMask("garden secret")
    with Client(server.url, tenant="masked", vector_mask=mask) as masked, \
            Client(server.url, tenant="plain") as plain, \
            Client(server.url, tenant="masked") as peek:
        _fill(masked, facts)
        _fill(plain, facts)
        for i in (0, 7, N - 1):
            stored = np.array(peek.memory.get(f"n{i}").embedding)  # what the server holds
            assert not np.allclose(stored, facts[i], atol=1e-3)
            assert np.linalg.norm(stored) == pytest.approx(np.linalg.norm(facts[i]), rel=1e-6)
            assert stored == pytest.approx(np.array(mask.mask(facts[i])), rel=1e-6, abs=1e-6)
        for q in queries:
            a = masked.memory.recall("garden", embedding=list(q), k=10)
            b = plain.memory.recall("garden", embedding=list(q), k=10)
            assert [h.fact.id for h in a] == [h.fact.id for h in b]
            assert [h.score for h in a] == [h.score for h in b]
            for hit, raw in zip(a, b, strict=True):
                assert hit.fact.embedding == pytest.approx(raw.fact.embedding, abs=1e-5)
            sa = masked.documents.search("note", embedding=list(q), k=N + 1)
            sb = plain.documents.search("note", embedding=list(q), k=N + 1)
            assert [(h.id, h.score) for h in sa] == [(h.id, h.score) for h in sb]
            ea = masked.memory.explain("garden", "n3", embedding=list(q))
            eb = plain.memory.explain("garden", "n3", embedding=list(q))
            assert (ea.rank, ea.score) == (eb.rank, eb.score)
        history = masked.memory.history("n5")
        assert history[0].embedding == pytest.approx(tuple(facts[5]), abs=1e-5)
        document = masked.documents.get("doc")
        assert document is not None and document.embedding == pytest.approx(tuple(facts[0]), abs=1e-5)
        # call() is the JSON contract as it is: nothing masked either way.
        raw_answer = masked.memory.call("get", {"id": "n2"})
        assert raw_answer["embedding"] == pytest.approx(mask.mask(facts[2]), rel=1e-6, abs=1e-6)


def test_a_retry_through_the_mask_is_idempotent_and_the_async_client_agrees(
        server: ServerProcess, tmp_path: Path) -> None:
    """The mask is deterministic: the shared fixture's fact gets the id the TypeScript client
    gives it too (same masked payload), a retry is created=False, the async client masks
    alike, and metadata named embedding is left alone."""
    shared = json.loads(FIXTURE.read_text())["sharedFact"]
    mask = VectorMask(bytes.fromhex(shared["key"][4:]))
    vector = shared["embedding"]
    with Client(server.url, tenant="retry", vector_mask=mask) as hms:
        first = hms.memory.remember("kept once", embedding=vector, metadata={"embedding": [1, 2]})
        again = hms.memory.remember("kept once", embedding=vector, metadata={"embedding": [1, 2]})
        assert first.created and not again.created and first.id == again.id == shared["id"]
        assert hms.memory.get(first.id).metadata == {"embedding": [1, 2]}

    async def remote() -> None:
        async with AsyncClient(server.url, tenant="retry", vector_mask=mask) as hms:
            result = await hms.memory.remember("kept once", embedding=vector,
                                               metadata={"embedding": [1, 2]})
            assert result.id == first.id and not result.created
            fact = await hms.memory.get(first.id)
            assert fact is not None and fact.embedding == pytest.approx(vector, abs=1e-6)

    trio.run(remote)


def test_bad_vectors_are_refused_before_sending(server: ServerProcess) -> None:
    """A vector the mask cannot take is InvalidRequest from the client, naming the field."""
    from hmsengine import InvalidRequest

    with Client(server.url, tenant="bad", vector_mask=VectorMask("k")) as hms:
        with pytest.raises(InvalidRequest, match=r"inputs\[1\]\.embedding: expected finite"):
            hms.memory.remember_many([RememberInput(text="a", embedding=[1.0] * DIM),
                                      RememberInput(text="b", embedding=[float("inf")] * DIM)])
        assert hms.memory.get("a") is None
    with pytest.raises(InvalidRequest, match="vector_mask"):
        Client(server.url, vector_mask="not a mask")  # type: ignore[arg-type]


async def test_a_masked_store_is_useless_with_raw_queries(tmp_path: Path) -> None:
    """What the mask hides, shown in-process: a raw query vector against masked facts finds the
    right fact only by chance, while the masked query finds it first (same cosine as raw)."""
    facts, _ = _vectors()
    mask = VectorMask("hidden")
    async with Engine.open(None, embedding_dim=DIM) as engine:
        await engine.put_documents([{"id": f"n{i}", "text": "x", "embedding": mask.mask(v)}
                                    for i, v in enumerate(facts)])
        found_masked = [(await engine.search_documents("zzz", embedding=mask.mask(v), k=1))[0].id
                        for v in facts]
        found_raw = [(await engine.search_documents("zzz", embedding=list(v), k=1))[0].id
                     for v in facts]
    assert found_masked == [f"n{i}" for i in range(N)]
    assert sum(a == b for a, b in zip(found_raw, found_masked, strict=True)) < N // 2
