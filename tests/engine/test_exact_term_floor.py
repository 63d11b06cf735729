"""The exact-term floor of fused search (index/search.py): a document that is BM25's best for a
query holding a rare exact term (an id, a name, a number) stays in the fused top 3, whatever the
cosine ranking says; without a rare term the fusion is plain weighted RRF."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hmsengine import Engine
from hmsengine.index.search import RRF_K, rare_df

WORDS = [f"w{i:03d}" for i in range(120)]
DIM = 16
CASES = 24


def _unit(rng: np.random.Generator) -> list[float]:
    v = rng.standard_normal(DIM)
    return (v / np.linalg.norm(v)).tolist()


def _plain_rrf_rank(lexical: list[str], semantic: list[str], weight: float, doc: str) -> int:
    """``doc``'s 1-based rank under weighted RRF (no floor) of the full rankings, each over
    the union of both top 100s."""
    candidates = set(lexical[:100]) | set(semantic[:100])
    total: dict[str, float] = {}
    for w, ranking in ((1.0, lexical), (weight, semantic)):
        for rank, d in enumerate([d for d in ranking if d in candidates], start=1):
            total[d] = total.get(d, 0.0) + w / (RRF_K + rank)
    order = sorted(total, key=lambda d: -total[d])
    return order.index(doc) + 1


async def _case(seed: int, weight: float) -> tuple[int, int]:
    """(fused rank of the target, its rank under plain RRF) for one generated corpus: 200-400
    documents of common words; the target alone holds a made-up id, which the query names
    with common words; the query vector points away from the target and at its rivals."""
    rnd = random.Random(seed)
    rng = np.random.default_rng(seed)
    n = rnd.randint(200, 400)
    rare_id = f"ord{rnd.randint(10_000, 99_999)}x"
    query_words = rnd.sample(WORDS, 3)
    query_vector = _unit(rng)
    target = rnd.randrange(n)
    docs = []
    for i in range(n):
        words = rnd.sample(WORDS, 8)
        if i == target:
            words = [*words[:5], rare_id]
            vector = (-np.asarray(query_vector)).tolist()  # the least similar document of all
        else:
            words[:2] = query_words[:2]  # rivals share the common query words ...
            near = np.asarray(query_vector) + 0.3 * np.asarray(_unit(rng))
            vector = (near / np.linalg.norm(near)).tolist()  # ... and point at the query
        docs.append({"id": f"d{i}", "text": " ".join(words), "embedding": vector})
    query = f"{' '.join(query_words)} {rare_id}"
    async with Engine.open(None) as engine:
        await engine.put_documents(docs)
        lexical = [h.id for h in await engine.search_documents(query, k=1000)]
        assert lexical[0] == f"d{target}"  # BM25's best: the only one with the rare id
        semantic = [h.id for h in await engine.search_documents(
            query, k=1000, embedding=query_vector, lexical_weight=0.0)]
        fused = [h.id for h in await engine.search_documents(
            query, k=10, embedding=query_vector, semantic_weight=weight)]
    doc = f"d{target}"
    rank = fused.index(doc) + 1 if doc in fused else 11
    return rank, _plain_rrf_rank(lexical, semantic, weight, doc)


@pytest.mark.parametrize("weight", [0.3, 1.0, 3.0])
async def test_the_top_bm25_hit_for_a_rare_term_stays_in_the_fused_top_3(weight: float) -> None:
    """On generated corpora where the cosine ranking buries it, the document holding the
    query's rare id is in the fused top 3 every time, though plain RRF drops it in most."""
    outcomes = [await _case(seed, weight) for seed in range(CASES)]
    assert all(rank <= 3 for rank, _ in outcomes), outcomes
    # The positive control: without the floor the fusion would have lost it, or the test
    # would prove nothing.
    assert sum(plain > 3 for _, plain in outcomes) >= CASES // 2, outcomes


async def test_without_a_rare_term_the_fusion_is_plain_rrf() -> None:
    """When every query term is common, the fused order is exactly weighted RRF's."""
    rnd = random.Random(7)
    rng = np.random.default_rng(7)
    docs = [{"id": f"d{i}", "text": " ".join(rnd.sample(WORDS[:20], 6)), "embedding": _unit(rng)}
            for i in range(300)]
    query, vector = " ".join(WORDS[:3]), _unit(rng)
    async with Engine.open(None) as engine:
        await engine.put_documents(docs)
        assert rare_df(300) == 2
        lexical = [h.id for h in await engine.search_documents(query, k=1000)]
        semantic = [h.id for h in await engine.search_documents(query, k=1000, embedding=vector,
                                                                lexical_weight=0.0)]
        fused = [h.id for h in await engine.search_documents(query, k=10, embedding=vector)]
    # Each signal ranks the union of both signals' top 100 (the candidates).
    candidates = set(lexical[:100]) | set(semantic[:100])
    total: dict[str, float] = {}
    for w, ranking in ((1.0, lexical), (0.3, semantic)):
        for rank, d in enumerate([d for d in ranking if d in candidates], start=1):
            total[d] = total.get(d, 0.0) + w / (RRF_K + rank)
    expected = sorted(total, key=lambda d: (-total[d], int(d[1:])))[:10]
    assert fused == expected
