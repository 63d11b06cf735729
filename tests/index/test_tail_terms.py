"""The tail's query-time segment (index/tailterms.py): each tail document is analyzed once for
every snapshot that shows it, and each snapshot's segment indexes exactly its own documents, as
a build of those documents would."""

from __future__ import annotations

import math
import random
import threading
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hmsengine import Engine
from hmsengine.index import tailterms
from hmsengine.index.analyzer import Analyzer, get_analyzer
from hmsengine.index.segment import Segment, build_segment
from hmsengine.index.snapshot import TailDoc, TailView

WORDS = ["alpha", "beta", "gamma", "delta", "Café", "naïve", "running", "the", "x1", "ß"]


def _postings(segment: Segment) -> dict[str, list[tuple[int, float]]]:
    """term -> [(docnum, tf)] over the terms some document of ``segment`` has."""
    out = {}
    offsets, doc_ids, tfs = segment.terms.offsets, segment.terms.doc_ids, segment.terms.values
    for term, col in segment.vocab.items():
        lo, hi = int(offsets[col]), int(offsets[col + 1])
        if hi > lo:
            out[term] = [(int(segment.docnums[d]), float(tf))
                         for d, tf in zip(doc_ids[lo:hi], tfs[lo:hi], strict=True)]
    return out


def _assert_indexes(segment: Segment, docs: list[TailDoc], analyzer: Analyzer) -> None:
    """``segment`` indexes ``docs`` exactly as one build of them does."""
    ref = build_segment(analyzer, ids=[d[1] for d in docs], texts=[d[2] for d in docs],
                        embeddings=[d[3] for d in docs], first_docnum=0, dim=64,
                        embedding_dim=None)
    ref_docnums = np.asarray([d[0] for d in docs], dtype=np.int64)
    assert segment.ids == tuple(d[1] for d in docs)
    assert np.array_equal(segment.docnums, ref_docnums)
    assert np.array_equal(segment.doc_lens, ref.doc_lens)
    expected = {term: [(int(ref_docnums[n]), tf) for n, tf in plist]
                for term, plist in _postings(ref).items()}
    assert _postings(segment) == expected
    for term, col in segment.vocab.items():  # every column's df is its postings' count
        assert segment.df[col] == len(expected.get(term, []))
    # The forward index (what a deletion reads) is not made with the query-time segment, and
    # is the build's when first asked for.
    assert segment._forward is None
    assert _terms_by_doc(segment) == _terms_by_doc(ref)


def _terms_by_doc(segment: Segment) -> list[set[str]]:
    """Per local document, the terms its forward index lists."""
    names = {col: term for term, col in segment.vocab.items()}
    fwd = segment.forward
    return [{names[int(t)] for t in fwd.doc_ids[fwd.offsets[d]:fwd.offsets[d + 1]]}
            for d in range(segment.n_docs)]


def _docs(rng: random.Random, n: int, first: int) -> list[TailDoc]:
    return [(first + i, f"d{first + i}", " ".join(rng.choices(WORDS, k=rng.randint(0, 9))), None)
            for i in range(n)]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), steps=st.lists(st.integers(1, 40), min_size=1, max_size=8),
       analyzer=st.sampled_from(["simple", "standard"]))
def test_each_views_segment_is_a_build_of_its_documents(seed, steps, analyzer) -> None:  # type: ignore[no-untyped-def]
    """Views of one growing list, extended by 1-40 documents at a time (both analysis paths)
    and asked for in a random order (older views after newer ones): each segment holds exactly
    its own documents, with the postings and lengths a build of them gives."""
    rng = random.Random(seed)
    an = get_analyzer(analyzer)
    view = TailView()
    views: list[tuple[TailView, list[TailDoc]]] = []
    docs: list[TailDoc] = []
    for size in steps:
        new = _docs(rng, size, len(docs))
        docs = docs + new
        view = view.extended(new)
        views.append((view, docs))
    rng.shuffle(views)
    for v, its_docs in views:
        _assert_indexes(v.segment(an, None), its_docs, an)


def test_each_document_is_analyzed_once_across_snapshots(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """200 views, each one document longer, then a batch of 50: every document is analyzed
    once (one by one for small additions, in one batch for large ones), not once per view."""
    analyzed = {"one": 0, "batch": 0}
    tokenize, term_ids = Analyzer.tokenize, Analyzer.term_ids

    def counting_tokenize(self, text):  # type: ignore[no-untyped-def]
        analyzed["one"] += 1
        return tokenize(self, text)

    def counting_term_ids(self, texts, vocab):  # type: ignore[no-untyped-def]
        analyzed["batch"] += len(texts)
        return term_ids(self, texts, vocab)

    monkeypatch.setattr(Analyzer, "tokenize", counting_tokenize)
    monkeypatch.setattr(Analyzer, "term_ids", counting_term_ids)
    an = get_analyzer("simple")
    rng = random.Random(3)
    docs = _docs(rng, 250, 0)
    view = TailView()
    for doc in docs[:200]:
        view = view.extended([doc])
        view.segment(an, None)
    assert analyzed == {"one": 200, "batch": 0}
    view = view.extended(docs[200:])
    segment = view.segment(an, None)
    assert analyzed == {"one": 200, "batch": 50} and tailterms.ONE_BY_ONE < 50
    monkeypatch.setattr(Analyzer, "tokenize", tokenize)
    monkeypatch.setattr(Analyzer, "term_ids", term_ids)
    _assert_indexes(segment, docs, an)


def test_views_built_from_several_threads_at_once() -> None:
    """Eight threads ask for the segments of views of one list at once (queries on the event
    loop and in worker threads do): each gets exactly its own documents."""
    an = get_analyzer("standard")
    rng = random.Random(5)
    docs: list[TailDoc] = []
    view = TailView()
    views = []
    for _ in range(40):
        new = _docs(rng, rng.randint(1, 25), len(docs))
        docs = docs + new
        view = view.extended(new)
        views.append((view, docs))
    failures: list[BaseException] = []
    barrier = threading.Barrier(8)

    def worker(order: list[int]) -> None:
        barrier.wait()
        try:
            for i in order:
                v, its_docs = views[i]
                _assert_indexes(v.segment(an, None), its_docs, an)
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(random.Random(t).sample(range(40), 40),))
               for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def _reference_bm25(docs: dict[str, str], query: str) -> dict[str, float]:
    """Plain-Python BM25 (API.md) over ``docs``, the simple analyzer."""
    an = get_analyzer("simple")
    toks = {i: an.tokenize(t) for i, t in docs.items()}
    n = len(toks)
    avgdl = sum(len(t) for t in toks.values()) / n if n else 1.0
    q = Counter(an.query_terms(query))
    scores: dict[str, float] = {}
    for i, terms in toks.items():
        tf = Counter(terms)
        matched = [term for term in sorted(q) if tf[term]]
        if matched:
            norm = 1.2 * (1 - 0.75 + 0.75 * len(terms) / avgdl)
            df = {term: sum(1 for t in toks.values() if term in t) for term in matched}
            scores[i] = sum(math.log1p((n - df[t] + 0.5) / (df[t] + 0.5)) * q[t] * tf[t] * 2.2
                            / (tf[t] + norm) for t in matched)
    return scores


async def test_search_after_every_write_sees_exactly_the_live_documents() -> None:
    """A search after each write (puts of one and of many, replaces and deletes of tail
    documents, purges) scores exactly the live documents, as plain BM25 over them does."""
    rng = random.Random(9)
    live: dict[str, str] = {}
    async with Engine.open(None, analyzer="simple") as engine:
        for step in range(200):
            action = rng.random()
            if action < 0.6 or not live:
                batch = {f"s{step}-{j}": " ".join(rng.choices(WORDS, k=rng.randint(1, 8)))
                         for j in range(1 if rng.random() < 0.7 else rng.randint(2, 30))}
                await engine.put_documents([{"id": i, "text": t} for i, t in batch.items()])
                live.update(batch)
            elif action < 0.8:
                doc_id = rng.choice(sorted(live))
                live[doc_id] = " ".join(rng.choices(WORDS, k=rng.randint(1, 8)))
                await engine.put_document(doc_id, live[doc_id])
            else:
                doc_id = rng.choice(sorted(live))
                await engine.delete_document(doc_id, purge=rng.random() < 0.1)
                del live[doc_id]
            query = " ".join(rng.sample(WORDS, 2))
            got = {h.id: h.score for h in await engine.search_documents(query, k=1000)}
            want = _reference_bm25(live, query)
            assert got.keys() == want.keys()
            assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
