"""A lean reference path for plain BM25 queries, over hmsengine's own kernel (bench only).

``bench/overhead.py`` times it beside ``search_documents`` to show how much of a query's time the
layers around the kernel take and how low they can go: per snapshot it prepares once what every
query needs (views largest first with their kernel arrays, ``avgdl`` and the live count, an id
array per view, a term memo that drops its oldest entry when full instead of being wiped); a
query is one analysis, memo lookups, one kernel call per view and ids read from arrays. It reads
engine internals (``engine._indexer``) and handles only what the benchmark asks (no filters, no
vectors, no tombstones, one thread); the script checks that it returns ``search_documents``'s
exact ids and scores on every query it times.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hmsengine.engine.values import Hit
from hmsengine.kernels.bm25 import bm25_idf, new_scratch
from hmsengine.kernels.pruning import DENSE_RATIO, PRUNE_MIN_POSTINGS, bm25_segment_topk
from hmsengine.kernels.topk import topk_finish

MEMO = 4096


class LeanPlan:
    """What plain queries on one snapshot need, computed once."""

    def __init__(self, snap: Any, analyzer: Any, k: int = 10) -> None:
        views = snap.views
        self.n_live = sum(v.n_live for v in views)
        self.avgdl = sum(v.len_live for v in views) / self.n_live if self.n_live else 1.0
        order = sorted(range(len(views)), key=lambda i: (-views[i].segment.n_docs, i))
        self.acc, self.seen, self.touched = new_scratch(max(v.live.shape[0] for v in views))
        self.views = []
        for i in order:
            v, s = views[i], views[i].segment
            t = s.terms
            self.views.append((s.vocab, v.df, t.offsets, t.doc_ids, t.values, v.norms(self.avgdl),
                               v.live, v.n_live < v.live.shape[0], s.docnums,
                               np.asarray(s.ids, dtype=object)))
        by_first = sorted((views[i].segment.first, p) for p, i in enumerate(order))
        self.firsts = np.asarray([f for f, _ in by_first], dtype=np.int64)
        self.position = [p for _, p in by_first]
        self.memo: dict[str, tuple[list[int], float]] = {}
        self.analyzer = analyzer
        self.top_s = np.empty(k, dtype=np.float64)
        self.top_d = np.empty(k, dtype=np.int64)
        self.top_n = np.zeros(1, dtype=np.int64)

    def _term(self, term: str) -> tuple[list[int], float]:
        got = self.memo.get(term)
        if got is None:
            ids, df = [], 0
            for vocab, vdf, *_ in self.views:
                local = vocab.get(term, -1)
                ids.append(local)
                if local >= 0:
                    df += int(vdf[local])
            # As the engine: the array form of bm25_idf, so the bits are the same.
            idf = float(bm25_idf(np.asarray([df], dtype=np.int64), self.n_live)[0])  # type: ignore[index]
            if len(self.memo) >= MEMO:
                del self.memo[next(iter(self.memo))]  # the oldest goes, not all of them
            got = self.memo[term] = (ids, idf)
        return got

    def search(self, text: str) -> list[Hit]:
        terms = self.analyzer.query_terms(text)
        if not terms:
            return []
        unique = sorted(set(terms))  # the engine's canonical order: terms sorted
        rows, weights = [], []
        for term in unique:
            ids, idf = self._term(term)
            rows.append(ids)
            weights.append(idf * (terms.count(term) if len(unique) != len(terms) else 1))
        w = np.array(weights, dtype=np.float64)
        top_s, top_d, top_n = self.top_s, self.top_d, self.top_n
        top_n[0] = 0
        for p, v in enumerate(self.views):
            term_ids = np.array([r[p] for r in rows], dtype=np.int32)
            bm25_segment_topk(v[2], v[3], v[4], v[5], term_ids, w, v[6], v[7], v[8], top_s, top_d,
                              top_n, self.acc, self.seen, self.touched, PRUNE_MIN_POSTINGS,
                              DENSE_RATIO)
        n = int(top_n[0])
        topk_finish(top_s, top_d, n)
        scores = top_s[:n].tolist()
        docs = top_d[:n]
        if len(self.views) == 1:
            v = self.views[0]
            ids_found = v[9][v[8].searchsorted(docs)].tolist()
        else:
            which = (np.searchsorted(self.firsts, docs, side="right") - 1).tolist()
            ids_found = []
            for d, at in zip(docs.tolist(), which, strict=True):
                v = self.views[self.position[at]]
                ids_found.append(v[9][int(v[8].searchsorted(d))])
        return [Hit(id=i, score=s, lexical=s, semantic=None)
                for i, s in zip(ids_found, scores, strict=True)]
