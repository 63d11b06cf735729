"""Query execution over a snapshot: BM25, cosine and n-gram signals, fused by weighted RRF.

Pure and synchronous: the engine runs a query inline when its estimated work is small and in a
worker thread otherwise (``prepare(...).work``). Scratch arrays are per thread.

Determinism: a document's BM25 score sums the query terms in sorted term order with global
idf, N and avgdl over the live documents of the snapshot, so the same content gives the same
bits whatever the segmentation; every ranking breaks ties by document number ascending.

Fusion: with one signal a hit's score is that signal's score. With several, each signal's top
``depth`` documents form the candidates; each signal ranks the candidates it scores (lexical:
those matching a query term; cosine: those with an embedding; n-gram: those sharing a bucket),
rank counted from 1; ``score = sum(weight / (RRF_K + rank))``.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import attrs
import numpy as np

from ..kernels.bm25 import (
    K1_PLUS_1,
    bm25_accumulate,
    bm25_idf,
    bm25_score_docs,
    new_scratch,
    sparse_accumulate,
    sparse_score_docs,
)
from ..kernels.cosine import cosine_topk
from ..kernels.pruning import bm25_add_touched, kth_best
from ..kernels.topk import merge_topk, topk_touched
from .snapshot import SegmentView, Snapshot

RRF_K = 60
FUSION_DEPTH = 100
# A candidate set this small (filtered searches) is scored document by document.
SMALL_CANDIDATES = 2048

_local = threading.local()


def _scratch(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s = getattr(_local, "scratch", None)
    if s is None or s[0].shape[0] < n:
        s = _local.scratch = new_scratch(max(n, 1024))
    return s


@attrs.frozen(kw_only=True)
class Query:
    terms: tuple[tuple[str, int], ...]  # (term, multiplicity), sorted by term
    k: int
    embedding: np.ndarray | None = None  # L2-normalised float32
    ngram: tuple[np.ndarray, np.ndarray] | None = None  # (bucket ids, float64 weights)
    lexical_weight: float = 1.0
    semantic_weight: float = 1.0
    allowed: dict[int, np.ndarray] | None = None  # view index -> allowed uint8 mask
    candidates: dict[int, np.ndarray] | None = None  # view index -> sorted local docs (small sets)
    dim: int = 4096  # the n-gram dimension


class Scored(NamedTuple):
    """One ranked document (a tuple: k of them are made per query, on the hot path)."""

    docnum: int
    score: float
    lexical: float | None
    semantic: float | None


def query_terms(terms: Sequence[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(Counter(terms).items()))


@attrs.frozen(kw_only=True, eq=False)
class Prepared:
    """What every step of one query needs, computed once: local term ids per view, the BM25
    weights (global idf x multiplicity), and the estimated work."""

    local_terms: list[np.ndarray]
    weights: np.ndarray | None
    work: int


def prepare(snap: Snapshot, q: Query) -> Prepared:
    terms = [t for t, _ in q.terms]
    df = [0] * len(terms)
    local_terms = []
    work = 0
    for view in snap.views:
        seg = view.segment
        get = seg.vocab.get
        ids = [get(t, -1) for t in terms]
        offsets = seg.terms.offsets
        view_df = view.df
        for j, local in enumerate(ids):
            if local >= 0:
                work += int(offsets[local + 1] - offsets[local])
                df[j] += int(view_df[local])
        local_terms.append(np.asarray(ids, dtype=np.int32))
        if q.ngram is not None:
            built = seg.ngrams_if_built
            # Not built yet: the first n-gram query reads and hashes the texts, so it is large.
            work += built.lengths(q.ngram[0].astype(np.int64)) if built is not None else 10 ** 9
        if q.embedding is not None and seg.embeddings is not None:
            work += seg.embeddings.size
    if q.candidates is not None:
        # The filtered path scores only the candidates (a binary search per term and document).
        work = sum(int(c.size) for c in q.candidates.values()) * max(len(terms), 1) * 16
    weights = None
    if terms:
        idf = np.asarray(bm25_idf(np.asarray(df, dtype=np.int64), snap.n_live), dtype=np.float64)
        weights = idf * np.asarray([m for _, m in q.terms], dtype=np.float64)
    return Prepared(local_terms=local_terms, weights=weights, work=work)


def _allowed(view: SegmentView, q: Query, i: int) -> np.ndarray:
    if q.allowed is not None:
        return q.allowed.get(i, np.zeros(view.segment.n_docs, np.uint8))
    return view.live


def _lexical(snap: Snapshot, q: Query, p: Prepared, depth: int) -> tuple[np.ndarray, np.ndarray]:
    parts = []
    avgdl = snap.avgdl
    weights = p.weights
    assert weights is not None  # only called when the query has terms
    for i, view in enumerate(snap.views):
        seg = view.segment
        ids = p.local_terms[i]
        if not (ids >= 0).any():
            continue
        norms = view.norms(avgdl)
        if q.candidates is not None:
            docs = q.candidates.get(i)
            if docs is None or docs.size == 0:
                continue
            scores = bm25_score_docs(seg.terms.offsets, seg.terms.doc_ids, seg.terms.values,
                                     norms, ids, weights, docs)
            matched = scores > 0.0  # every BM25 match scores > 0 (idf > 0, tf > 0)
            parts.append((scores[matched], seg.docnums[docs[matched]]))
            continue
        parts.append(_segment_lexical(seg, norms, ids, weights, _allowed(view, q, i), depth))
    return merge_topk(parts, depth)


# Below this many postings in a segment the pruning bookkeeping costs more than it saves.
PRUNE_MIN_POSTINGS = 40_000


def _segment_lexical(seg: Any, norms: np.ndarray, ids: np.ndarray, weights: np.ndarray,
                     allowed: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """One segment's top ``depth`` by BM25, with MaxScore pruning (kernels/pruning.py) when
    the segment's postings for the query are many.

    Terms run from the largest upper bound (idf x multiplicity x (k1 + 1)) down; once the
    remaining terms' bounds cannot lift an untouched document above the current k-th best
    partial score, they are only added to touched documents. The best candidates (with a
    margin) are then re-scored in the canonical term order: bit-identical to no pruning.
    """
    t = seg.terms
    acc, seen, touched = _scratch(seg.n_docs)
    valid = [j for j in range(len(ids)) if ids[j] >= 0]
    postings = sum(int(t.offsets[ids[j] + 1] - t.offsets[ids[j]]) for j in valid)
    if len(valid) < 2 or postings < PRUNE_MIN_POSTINGS:
        n = bm25_accumulate(t.offsets, t.doc_ids, t.values, norms, ids, weights, allowed,
                            acc, seen, touched, 0)
        scores, local = topk_touched(acc, seen, touched, n, depth, 0)
        return scores, seg.docnums[local]
    bounds = {j: float(weights[j]) * K1_PLUS_1 for j in valid}
    order = sorted(valid, key=lambda j: (-bounds[j], j))
    remaining = [0.0] * (len(order) + 1)
    for pos in range(len(order) - 1, -1, -1):
        remaining[pos] = remaining[pos + 1] + bounds[order[pos]]
    n = 0
    theta = -math.inf
    for pos, j in enumerate(order):
        if n >= depth and remaining[pos] < theta:
            for rest in order[pos:]:
                bm25_add_touched(t.offsets, t.doc_ids, t.values, norms, int(ids[rest]),
                                 float(weights[rest]), acc, seen, touched, n)
            break
        n = bm25_accumulate(t.offsets, t.doc_ids, t.values, norms, ids[j:j + 1], weights[j:j + 1],
                            allowed, acc, seen, touched, n)
        if pos + 1 < len(order):
            theta = kth_best(acc, touched, n, depth)
    _, found = topk_touched(acc, seen, touched, n, 2 * depth + 8, 0)
    picked: Any = found.astype(np.int32)
    exact = bm25_score_docs(t.offsets, t.doc_ids, t.values, norms, ids, weights, picked)
    docnums = seg.docnums[picked]
    best = np.lexsort((docnums, -exact))[:depth]
    return exact[best], docnums[best]


def _matched(postings: object, ids: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """Which candidate docs contain at least one of the terms (BM25 > 0 needs a match)."""
    offsets, doc_ids = postings.offsets, postings.doc_ids  # type: ignore[attr-defined]
    hit = np.zeros(docs.size, dtype=bool)
    for t in ids[ids >= 0]:
        hit |= np.isin(docs, doc_ids[offsets[t]:offsets[t + 1]])
    return hit


def _ngram(snap: Snapshot, q: Query, depth: int) -> tuple[np.ndarray, np.ndarray]:
    assert q.ngram is not None
    buckets, weights = q.ngram
    parts = []
    for i, view in enumerate(snap.views):
        g = view.segment.ngram_postings(_loader(snap), q.dim)
        if q.candidates is not None:
            docs = q.candidates.get(i)
            if docs is None or docs.size == 0:
                continue
            scores = sparse_score_docs(g.offsets, g.doc_ids, g.values, buckets, weights, docs)
            matched = _matched(g, buckets, docs)
            parts.append((scores[matched], view.segment.docnums[docs[matched]]))
            continue
        acc, seen, touched = _scratch(view.segment.n_docs)
        n = sparse_accumulate(g.offsets, g.doc_ids, g.values, buckets, weights,
                              _allowed(view, q, i), acc, seen, touched, 0)
        scores, local = topk_touched(acc, seen, touched, n, depth, 0)
        parts.append((scores, view.segment.docnums[local]))
    return merge_topk(parts, depth)


def _cosine(snap: Snapshot, q: Query, depth: int) -> tuple[np.ndarray, np.ndarray]:
    assert q.embedding is not None
    parts = []
    for i, view in enumerate(snap.views):
        seg = view.segment
        if seg.embeddings is None or seg.embeddings.shape[1] != q.embedding.shape[0]:
            continue
        allowed = _allowed(view, q, i) & seg.has_embedding
        if q.candidates is not None:
            mask = np.zeros(seg.n_docs, dtype=np.uint8)
            docs = q.candidates.get(i)
            if docs is not None:
                mask[docs] = 1
            allowed = allowed & mask
        scores, rows = cosine_topk(seg.embeddings, q.embedding, allowed, depth)
        parts.append((scores, seg.docnums[rows]))
    return merge_topk(parts, depth)


def _loader(snap: Snapshot) -> Any:
    if snap.load_texts is None:
        raise RuntimeError("a snapshot without a text loader cannot build n-gram postings")
    return snap.load_texts


def run(snap: Snapshot, q: Query, prepared: Prepared | None = None) -> list[Scored]:
    """Execute ``q`` on ``snap``; the top ``q.k`` documents, best first."""
    p = prepared if prepared is not None else prepare(snap, q)
    signals: list[tuple[str, float, np.ndarray, np.ndarray]] = []
    fused = q.embedding is not None or q.ngram is not None
    depth = max(q.k, FUSION_DEPTH) if fused else q.k
    if q.terms:
        s, d = _lexical(snap, q, p, depth)
        signals.append(("lexical", q.lexical_weight, s, d))
    if q.embedding is not None:
        s, d = _cosine(snap, q, depth)
        signals.append(("cosine", q.semantic_weight, s, d))
    if q.ngram is not None:
        s, d = _ngram(snap, q, depth)
        signals.append(("ngram", q.semantic_weight, s, d))
    if not signals:
        return []
    if not fused:
        _, _, s, d = signals[0]
        return [Scored(doc, sc, sc, None) for sc, doc in zip(s.tolist(), d.tolist(), strict=True)]
    return _fuse(snap, q, p, signals)


def _fuse(snap: Snapshot, q: Query, p: Prepared,
          signals: list[tuple[str, float, np.ndarray, np.ndarray]]) -> list[Scored]:
    """Weighted RRF over the union of each signal's top ``depth``; ties by docnum."""
    candidates = sorted({int(d) for _, _, _, docs in signals for d in docs})
    # Each signal's ranking of the candidates: its own top list already is that ranking for the
    # candidates it scored; a candidate outside a signal's list was not ranked by it unless its
    # exact score can be computed, which we do so that every candidate is ranked fairly.
    exact = _exact_scores(snap, q, p, candidates, [name for name, *_ in signals])
    total = dict.fromkeys(candidates, 0.0)
    for name, weight, _, _ in signals:
        scored = [(exact[name][c], c) for c in candidates if exact[name].get(c) is not None]
        scored.sort(key=lambda sc: (-sc[0], sc[1]))
        for rank, (_, c) in enumerate(scored, start=1):
            total[c] += weight / (RRF_K + rank)
    order = sorted(candidates, key=lambda c: (-total[c], c))[: q.k]
    semantic_name = "cosine" if q.embedding is not None else "ngram"
    out = []
    for c in order:
        lex = exact.get("lexical", {}).get(c, 0.0 if q.terms else None)
        sem = exact.get(semantic_name, {}).get(c)
        out.append(Scored(docnum=c, score=total[c], lexical=lex if q.terms else None,
                          semantic=sem if sem is not None else (0.0 if semantic_name in exact else None)))
    return out


def _exact_scores(snap: Snapshot, q: Query, p: Prepared, candidates: list[int],
                  names: list[str]) -> dict[str, dict[int, float]]:
    """Each signal's exact score of each candidate it matches (absent: not ranked by it)."""
    out: dict[str, dict[int, float]] = {name: {} for name in names}
    by_view: dict[int, list[int]] = {}
    for c in candidates:
        i, local = snap.view_of(c)
        by_view.setdefault(i, []).append(local)
    weights = p.weights
    avgdl = snap.avgdl
    for i, locals_ in by_view.items():
        view = snap.views[i]
        seg = view.segment
        docs = np.asarray(locals_, dtype=np.int32)
        nums = seg.docnums[docs]
        if "lexical" in out and weights is not None:
            ids = p.local_terms[i]
            scores = bm25_score_docs(seg.terms.offsets, seg.terms.doc_ids, seg.terms.values,
                                     view.norms(avgdl), ids, weights, docs)
            for num, s in zip(nums, scores, strict=True):
                if s > 0.0:  # a BM25 match always scores > 0
                    out["lexical"][int(num)] = float(s)
        if "ngram" in out and q.ngram is not None:
            g = seg.ngram_postings(_loader(snap), q.dim)
            scores = sparse_score_docs(g.offsets, g.doc_ids, g.values, q.ngram[0], q.ngram[1], docs)
            for num, s, m in zip(nums, scores, _matched(g, q.ngram[0], docs), strict=True):
                if m:
                    out["ngram"][int(num)] = float(s)
        if "cosine" in out and q.embedding is not None and seg.embeddings is not None \
                and seg.embeddings.shape[1] == q.embedding.shape[0]:
            for num, d in zip(nums, docs, strict=True):
                if seg.has_embedding[d]:
                    out["cosine"][int(num)] = float(np.dot(
                        seg.embeddings[d].astype(np.float64), q.embedding.astype(np.float64)))
    return out
