"""A vector-only query answered from the cosine kernel's top ``2k`` (``index/search.py``
``_cosine_alone``) is, value for value, the general path's answer from its top ``FUSION_DEPTH``:
over several segments, a tail, deleted documents, documents without a vector, filters, duplicated
vectors (near-ties at the boundary: the general path answers those), every ``k`` up to past the
limit, and weights of 0 (all RRF scores 0: the general path's order by number)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from segmented import put_in_segments

from hmsengine import Engine
from hmsengine.engine import indexer as indexer_module
from hmsengine.engine import readers
from hmsengine.index import search
from hmsengine.index.search import FUSION_DEPTH, Scored

WORDS = [f"w{i:02d}" for i in range(40)]
DIM = 12


def _unit(rng: np.random.Generator) -> list[float]:
    v = rng.standard_normal(DIM)
    return (v / np.linalg.norm(v)).tolist()


def _same(got: list[Scored], want: list[Scored]) -> bool:
    return len(got) == len(want) and all(
        tuple(map(type, g)) == tuple(map(type, w)) and g == w for g, w in zip(got, want, strict=True))


@pytest.mark.parametrize("seed", [1, 2])
async def test_the_top_2k_answer_is_the_general_answer(
        seed: int, no_merges: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)  # keep the segments
    rng = random.Random(seed)
    vectors = np.random.default_rng(seed)
    shared = _unit(vectors)
    # Every seventh document's vector is it, or it within ~1e-7 (whose kernel and exact scores
    # may order them differently): ties and near-ties wherever they rank.
    near = [(np.asarray(shared) + vectors.standard_normal(DIM) * 1e-7 * (n % 3)).tolist()
            for n in range(480)]

    def item(n: int) -> dict[str, Any]:
        out: dict[str, Any] = {"id": f"d{n}", "text": rng.choice(WORDS)}
        if n % 5:  # every fifth document without a vector
            out["embedding"] = near[n] if n % 7 == 0 else _unit(vectors)
        return out

    async with Engine.open(None, analyzer="simple") as engine:
        await put_in_segments(engine, item)
        depths: list[int] = []
        real_cosine = search._cosine

        def cosine(snap: Any, q: search.Query, depth: int, inline: bool = False) -> Any:
            depths.append(depth)
            return real_cosine(snap, q, depth, inline)

        monkeypatch.setattr(search, "_cosine", cosine)
        answered_early = fell_back = 0
        for _ in range(40):
            vector = shared if rng.random() < 0.25 else _unit(vectors)
            for options in ({"k": rng.choice([1, 3, 10, 10, 25, 49, 50, 60])},
                            {"k": 10, "semantic_weight": 0.0},
                            {"k": 10, "semantic_weight": 2.5},
                            {"k": 5, "ids": [f"d{n}" for n in range(0, 480, 3)]},
                            {"k": 8, "ids": [f"d{n}" for n in range(0, 40)]}):  # < 2k allowed
                opts = {"ids": None, "metadata": None, "semantic": None, "lexical_weight": 1.0,
                        "semantic_weight": 1.0, **options}
                q = readers.build_query(engine._indexer, "", embedding=vector, **opts)
                assert q is not None
                snap = engine._indexer.snapshot
                p = search.prepare(snap, q)
                depths.clear()
                got = search.run(snap, q, p)
                want = search._fuse(snap, q, p, [("cosine", q.semantic_weight,
                                                  *real_cosine(snap, q, max(q.k, FUSION_DEPTH)))])
                assert _same(got, want), (options, got[:3], want[:3])
                if depths == [2 * q.k]:
                    answered_early += 1
                elif depths[:1] == [2 * q.k]:
                    fell_back += 1
                # The general path only where 2k reaches the fusion depth or the weight is 0.
                assert (depths == [max(q.k, FUSION_DEPTH)]) == (
                    2 * q.k >= FUSION_DEPTH or q.semantic_weight == 0.0)
        # Both branches ran: the early answer for most queries, the general one after it for
        # the near-ties of the shared vector.
        assert answered_early > 100 and fell_back > 5, (answered_early, fell_back)
        hits = await engine.search_documents("", embedding=shared, k=10)
        assert len(hits) == 10 and max(h.semantic for h in hits) - min(  # type: ignore[operator]
            h.semantic for h in hits) < 1e-5  # type: ignore[operator]
