"""Fusion over arrays (``index/search._fuse``) is, bit for bit, the weighted RRF the module's
docstring defines, written out here the plain way: a dictionary per signal of each candidate's
exact score (looked up one document at a time through ``Snapshot.view_of``, not through the
vectorised ``_by_view``), ranks by sorting tuples, Python float sums, the exact-term floor over
a sorted list. Every fused query of real stores is checked: several segments, a tail, deleted
documents, documents without an embedding, filters, every mix of BM25, cosine and n-grams, large
``k``, and queries whose rare term lifts BM25's best (the floor)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
import trio
from segmented import put_in_segments

from hmsengine import Engine
from hmsengine.engine import indexer as indexer_module
from hmsengine.index import search
from hmsengine.index.search import FLOOR_RANK, RRF_K, Scored, rare_df
from hmsengine.kernels import reference
from hmsengine.kernels.bm25 import bm25_idf, bm25_score_docs, sparse_score_docs

WORDS = [f"w{i:02d}" for i in range(40)]
DIM = 12


def _one(doc: int) -> np.ndarray:
    return np.asarray([doc], dtype=np.int32)


def _plain_exact(snap: Any, q: search.Query, p: search.Prepared, candidates: list[int],
                 names: list[str]) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {name: {} for name in names}
    for c in candidates:
        i, local = snap.view_of(c)
        if i < 0:
            continue
        view = snap.views[i]
        seg = view.segment
        if "lexical" in out and p.weights is not None:
            s = float(bm25_score_docs(seg.terms.offsets, seg.terms.doc_ids, seg.terms.values,
                                      view.norms(snap.avgdl), p.local_terms[i], p.weights,
                                      _one(local))[0])
            if s > 0.0:
                out["lexical"][c] = s
        if "ngram" in out and q.ngram is not None:
            g = seg.ngram_postings(snap.load_texts, q.dim)
            s = float(sparse_score_docs(g.offsets, g.doc_ids, g.values, q.ngram[0], q.ngram[1],
                                        _one(local))[0])
            terms = [int(t) for t in q.ngram[0] if t >= 0]
            if any(local in g.doc_ids[g.offsets[t]:g.offsets[t + 1]] for t in terms):
                out["ngram"][c] = s
        if "cosine" in out and q.embedding is not None and seg.embeddings is not None \
                and seg.embeddings.shape[1] == q.embedding.shape[0] and seg.has_embedding[local]:
            out["cosine"][c] = float(reference.cosine_exact_rows(
                seg.embeddings, _one(local), q.embedding.astype(np.float64))[0])
    return out


def _plain_fusion(snap: Any, q: search.Query, p: search.Prepared,
                  signals: list[tuple[str, float, np.ndarray, np.ndarray]]) -> list[Scored]:
    candidates = sorted({int(d) for _, _, _, docs in signals for d in docs})
    exact = _plain_exact(snap, q, p, candidates, [name for name, *_ in signals])
    total = dict.fromkeys(candidates, 0.0)
    for name, weight, _, _ in signals:
        ranked = sorted((exact[name][c], c) for c in candidates if c in exact[name])
        ranked.sort(key=lambda sc: (-sc[0], sc[1]))
        for rank, (_, c) in enumerate(ranked, start=1):
            total[c] += weight / (RRF_K + rank)
    lexical = [(w, d) for name, w, _, d in signals if name == "lexical"]
    if lexical and lexical[0][0] > 0 and lexical[0][1].size and p.weights is not None \
            and p.idf is not None and len(total) > FLOOR_RANK:
        best = int(lexical[0][1][0])
        bar = sorted((t for c, t in total.items() if c != best), reverse=True)[FLOOR_RANK - 1]
        threshold = float(bm25_idf(np.asarray([rare_df(snap.n_live)]), snap.n_live)[0])
        rare = np.where(p.idf >= threshold, p.weights, 0.0)
        if total[best] <= bar and rare.any():
            i, local = snap.view_of(best)
            view = snap.views[i]
            seg = view.segment
            s = bm25_score_docs(seg.terms.offsets, seg.terms.doc_ids, seg.terms.values,
                                view.norms(snap.avgdl), p.local_terms[i], rare, _one(local))
            if float(s[0]) > 0.0:
                total[best] = float(np.nextafter(bar, np.inf))
    order = sorted(candidates, key=lambda c: (-total[c], c))[: q.k]
    semantic_name = "cosine" if q.embedding is not None else "ngram"
    out = []
    for c in order:
        lex = exact["lexical"].get(c, 0.0) if "lexical" in exact else None
        sem = exact[semantic_name].get(c, 0.0) if semantic_name in exact else None
        out.append(Scored(docnum=c, score=total[c], lexical=lex, semantic=sem))
    return out


def _same(got: list[Scored], want: list[Scored]) -> bool:
    """Equal values of equal types (a float compared by its bits, an int not a numpy int)."""
    return len(got) == len(want) and all(
        tuple(map(type, g)) == tuple(map(type, w)) and g == w for g, w in zip(got, want, strict=True))


@pytest.fixture
def checked_fusion(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every ``_fuse`` call checked against the plain construction; the sizes of its answers."""
    real = search._fuse
    sizes: list[int] = []

    def fuse(snap: Any, q: search.Query, p: search.Prepared, signals: Any) -> list[Scored]:
        got = real(snap, q, p, signals)
        want = _plain_fusion(snap, q, p, signals)
        assert _same(got, want), (got[:5], want[:5])
        sizes.append(len(got))
        return got

    monkeypatch.setattr(search, "_fuse", fuse)
    return sizes


def _unit(rng: np.random.Generator) -> list[float]:
    v = rng.standard_normal(DIM)
    return (v / np.linalg.norm(v)).tolist()


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_fused_queries_equal_the_plain_construction(
        seed: int, checked_fusion: list[int], no_merges: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)  # keep the segments
    rng = random.Random(seed)
    vectors = np.random.default_rng(seed)

    def item(n: int) -> dict[str, Any]:
        out: dict[str, Any] = {"id": f"d{n}",
                               "text": " ".join(rng.choices(WORDS, k=rng.randint(1, 9)))}
        if n % 5:  # every fifth document without a vector
            out["embedding"] = _unit(vectors)
        if n % 97 == 0:  # a made-up id a few documents hold: a rare term
            out["text"] += f" id{n % 2}x"
        return out

    async with Engine.open(None, analyzer="simple") as engine:
        await put_in_segments(engine, item)
        for _ in range(12):
            text = " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))
            vector = _unit(vectors)
            for query, options in (
                    (text, {"embedding": vector}),
                    ("", {"embedding": vector}),
                    (text + " id0x", {"embedding": vector, "semantic_weight": 3.0}),
                    (text, {"semantic": "ngram"}),
                    (text, {"semantic": "ngram", "embedding": vector, "k": 300}),
                    (text, {"embedding": vector, "lexical_weight": 0.0}),
                    (text, {"embedding": vector, "ids": [f"d{n}" for n in range(0, 480, 3)]}),
                    ("zzz-no-such-term", {"embedding": vector, "k": 1})):
                await engine.search_documents(query, **options)
    assert len(checked_fusion) == 12 * 8 and max(checked_fusion) > 100


async def _one_view(engine: Engine) -> None:
    """Wait until the store is one segment and no tail (the builder consolidates when idle)."""
    with trio.fail_after(60):
        while len(engine._indexer.snapshot.views) != 1 or engine._indexer.snapshot.tail:
            await trio.sleep(0.02)


@pytest.mark.parametrize("seed", [4, 5])
async def test_one_view_fusion_equals_the_plain_construction(
        seed: int, checked_fusion: list[int], tmp_path: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A store of one segment takes the one-call fusion (``fuse_one_view``): the same answers
    as the plain construction over a segment built in this process and over the same store
    reopened from its files, with deleted documents, documents
    without a vector, filters, a k above the candidates and the floor's rare terms."""
    calls: list[int] = []
    real = search.fuse_one_view

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(search, "fuse_one_view", counted)
    rng = random.Random(seed)
    vectors = np.random.default_rng(seed)
    path = tmp_path / "store"

    async def queries(engine: Engine) -> None:
        await _one_view(engine)
        for _ in range(10):
            text = " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))
            vector = _unit(vectors)
            for query, options in (
                    (text, {"embedding": vector}),
                    ("", {"embedding": vector}),
                    ("", {"embedding": vector, "k": 40}),
                    (text + " id0x", {"embedding": vector, "semantic_weight": 3.0}),
                    (text, {"embedding": vector, "k": 300}),
                    (text, {"embedding": vector, "lexical_weight": 0.0}),
                    (text, {"embedding": vector, "ids": [f"d{n}" for n in range(0, 300, 3)]}),
                    ("zzz-no-such-term", {"embedding": vector, "k": 1})):
                await engine.search_documents(query, **options)

    async with Engine.open(path, analyzer="simple") as engine:
        items = []
        for n in range(300):
            item: dict[str, Any] = {"id": f"d{n}",
                                    "text": " ".join(rng.choices(WORDS, k=rng.randint(1, 9)))}
            if n % 5:
                item["embedding"] = _unit(vectors)
            if n % 97 == 0:
                item["text"] += f" id{n % 2}x"
            items.append(item)
        await engine.put_documents(items)
        for n in range(0, 300, 37):
            await engine.delete_document(f"d{n}")
        await queries(engine)
    built = len(checked_fusion)
    async with Engine.open(path, analyzer="simple") as engine:
        await queries(engine)
    assert built == len(checked_fusion) - built == 10 * 8
    assert len(calls) == len(checked_fusion)  # every fused query took the one-view call
    assert max(checked_fusion) > 100


def test_the_arrays_keep_rrf_ties_and_signal_order() -> None:
    """``rrf_add`` and ``fused_order``, the arithmetic of ``_fuse``, against Python floats over
    many ties: ranks by score then number, each rank's share added in signal order to 0.0, the
    final order by fused score then number."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        candidates = np.unique(rng.integers(0, 1000, n)).astype(np.int64)
        n = candidates.shape[0]
        total = np.zeros(n)
        plain = dict.fromkeys(candidates.tolist(), 0.0)
        for weight in (1.0, float(rng.random() * 3)):
            scores = np.round(rng.random(n), 1)  # many ties
            ranked = rng.random(n) < 0.8
            search.rrf_add(total, scores, ranked, weight)
            listed = sorted(((float(scores[i]), int(candidates[i])) for i in np.flatnonzero(ranked)),
                            key=lambda sc: (-sc[0], sc[1]))
            for rank, (_, c) in enumerate(listed, start=1):
                plain[c] += weight / (RRF_K + rank)
        assert total.tolist() == [plain[c] for c in candidates.tolist()]
        order = search.fused_order(candidates, total)
        assert candidates[order].tolist() == sorted(plain, key=lambda c: (-plain[c], c))
