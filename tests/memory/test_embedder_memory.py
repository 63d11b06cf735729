"""Memory with the offline MiniLM embedder: remember and recall embed by themselves (off the
event loop), and the fusion uses the configured semantic weight."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from needs_embedder import require_bundled_embedder

require_bundled_embedder()

from hmsengine import Engine, embedders  # noqa: E402


async def test_remember_and_recall_embed_automatically() -> None:
    embedder = embedders.MiniLMEmbedder()
    async with Engine.open(None) as engine:
        memory = engine.memory(embedder=embedder)
        dog = await memory.remember("Caroline adopted a golden retriever puppy last spring")
        await memory.remember("The quarterly budget review moved to Thursday")
        await memory.remember("Melanie paints sunrises over the lake")
        fact = await memory.get(dog.id)
        assert fact is not None and fact.embedding is not None and len(fact.embedding) == embedder.dim
        # No word in common with the fact: only the embedding can find it.
        hits = await memory.recall("which pet dog does she have", k=1, explain=True)
        assert hits[0].fact.id == dog.id
        explanation = hits[0].explanation
        assert explanation is not None and explanation.fusion == "rrf"
        assert explanation.weights == {"lexical": 1.0, "semantic": 0.3}
        assert explanation.semantic is not None and explanation.semantic > 0.3
        weighted = engine.memory({"semanticWeight": 2.0}, embedder=embedder)
        again = await weighted.recall("which pet dog does she have", k=1, explain=True)
        assert again[0].explanation is not None
        assert again[0].explanation.weights == {"lexical": 1.0, "semantic": 2.0}
