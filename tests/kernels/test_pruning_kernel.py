"""MaxScore pruning gives exactly the unpruned top k, bit for bit (engine level, hypothesis)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from hmsengine import Engine

VOCAB = [f"t{i}" for i in range(40)]


@settings(max_examples=30)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 12))
async def test_pruned_equals_exhaustive(seed, k):
    """Top k with pruning equals the exhaustive ranking (all hits, then cut) for Zipf corpora."""
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) ** 1.2 for i in range(len(VOCAB))]
    docs = [{"id": f"d{i}", "text": " ".join(rng.choices(VOCAB, weights, k=rng.randint(1, 20)))}
            for i in range(rng.randint(20, 300))]
    query = " ".join(rng.choices(VOCAB, weights, k=rng.randint(2, 5)))
    async with Engine.open(None, analyzer="simple") as engine:
        await engine.put_documents(docs)
        everything = await engine.search_documents(query, k=1000)
        top = await engine.search_documents(query, k=k)
    assert top == everything[:k]
