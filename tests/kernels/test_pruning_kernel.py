"""MaxScore, dense and one-term top k give exactly the unpruned top k, bit for bit."""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hmsengine import Engine
from hmsengine.kernels import bm25, lane, pruning, reference, topk
from hmsengine.kernels.norms import length_codes

VOCAB = [f"t{i}" for i in range(40)]
NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
SETTINGS = settings(
    max_examples=25 if NO_JIT else 120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


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


def _segment(rng: np.random.Generator, n_docs: int, n_terms: int, first: int,
             gaps: bool) -> dict[str, Any]:
    # Zipf-like documents with repeated short documents, so that exact score ties are common.
    p = 1.0 / np.arange(1, n_terms + 1) ** 1.1
    p /= p.sum()
    pool = [rng.choice(n_terms, size=int(rng.integers(1, 12)), p=p).tolist() for _ in range(20)]
    docs = [pool[int(rng.integers(0, len(pool)))] if rng.random() < 0.3
            else rng.choice(n_terms, size=int(rng.integers(1, 25)), p=p).tolist()
            for _ in range(n_docs)]
    offsets, doc_ids, tfs, doc_lens = reference.build_postings(docs, n_terms)
    steps = rng.integers(1, 4, n_docs) if gaps else np.ones(n_docs, dtype=np.int64)
    docnums = first + np.cumsum(steps).astype(np.int64) - 1
    return {"offsets": offsets, "doc_ids": doc_ids, "tfs": tfs, "doc_lens": doc_lens,
            "docnums": docnums, "n_docs": n_docs}


@st.composite
def searches(draw: st.DrawFn) -> dict[str, Any]:
    """Several segments over one vocabulary, deletions or a filter, a query of rare and
    common terms, and k: large enough that every path of bm25_segment_topk is taken."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_terms = draw(st.integers(3, 60))
    sizes = draw(st.lists(st.integers(1, 700), min_size=1, max_size=4))
    segs = []
    first = 0
    for n in sizes:
        seg = _segment(rng, n, n_terms, first, draw(st.booleans()))
        first = int(seg["docnums"][-1]) + 1
        mode = draw(st.sampled_from(["all", "deleted", "filter"]))
        keep = rng.random(n) < (0.1 if mode == "filter" else 0.85)
        seg["allowed"] = (keep if mode != "all" else np.ones(n, bool)).astype(np.uint8)
        seg["check"] = mode != "all" or draw(st.booleans())
        segs.append(seg)
    q = sorted(set(draw(st.lists(st.integers(-1, n_terms + 2), min_size=1, max_size=5))))
    weights = np.array([draw(st.floats(0.01, 10.0)) for _ in q], dtype=np.float64)
    lens = np.concatenate([s["doc_lens"] for s in segs]).astype(np.float64)
    avgdl = float(lens.mean()) * draw(st.sampled_from([1.0, 0.5, 2.0]))
    for s in segs:
        s["norms"] = bm25.bm25_norms(s["doc_lens"], avgdl)
    return {"segs": segs, "term_ids": np.array(q, dtype=np.int32), "weights": weights,
            "avgdl": avgdl,
            "k": draw(st.sampled_from([1, 2, 5, 10, 45])),
            "order": draw(st.permutations(range(len(segs))))}


def _reference(c: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    scores, docs = [], []
    for s in c["segs"]:
        acc, hit = reference.bm25_scores(s["offsets"], s["doc_ids"], s["tfs"], s["norms"],
                                         c["term_ids"], c["weights"], s["allowed"])
        scores.append(acc[hit])
        docs.append(s["docnums"][hit])
    return reference.ranked(np.concatenate(scores), np.concatenate(docs), c["k"])


def _norms(s: dict[str, Any], c: dict[str, Any], form: str) -> Any:
    """Segment ``s``'s norms as the kernels take them: per document (as the reference), or by
    length (the engine's form, kernels/norms.py), which must give the same bits."""
    if form == "per-document":
        return s["norms"]
    lengths, codes = length_codes(s["doc_lens"])
    return bm25.bm25_norms(lengths, c["avgdl"]), codes


FORMS = ["per-document", "by-length"]

# (prune_min, dense_ratio): the engine's thresholds, and ones that force each path.
PATHS = [(pruning.PRUNE_MIN_POSTINGS, pruning.DENSE_RATIO), (0, 0), (0, 10**9), (10**9, 0)]


@pytest.mark.parametrize("form", FORMS)
@given(searches(), st.sampled_from(PATHS))
@SETTINGS
def test_segment_topk_matches_reference_in_any_segment_order(
    form: str, c: dict[str, Any], path: tuple[int, int]
) -> None:
    """bm25_segment_topk over every segment (any order, shared bar) gives the reference top k,
    scores bit for bit, ties by document number, with deletions and filters; scratch clean;
    whichever path (one term, dense, plain, MaxScore) the thresholds pick; norms per document
    or by length."""
    k = c["k"]
    top_s = np.empty(k, dtype=np.float64)
    top_d = np.empty(k, dtype=np.int64)
    top_n = np.zeros(1, dtype=np.int64)
    acc, seen, touched = bm25.new_scratch(max(s["n_docs"] for s in c["segs"]))
    for i in c["order"]:
        s = c["segs"][i]
        pruning.bm25_segment_topk(
            s["offsets"], s["doc_ids"], s["tfs"], _norms(s, c, form), c["term_ids"], c["weights"],
            s["allowed"], s["check"], s["docnums"], top_s, top_d, top_n, acc, seen, touched,
            *path)
        assert not acc.any() and not seen.any(), "scratch must be clean after each segment"
    n = int(top_n[0])
    topk.topk_finish(top_s, top_d, n)
    want_s, want_d = _reference(c)
    assert top_d[:n].tolist() == want_d.tolist()
    assert top_s[:n].tobytes() == want_s.tobytes()


@pytest.mark.parametrize("form", FORMS)
@given(searches())
@SETTINGS
def test_each_path_matches_reference(form: str, c: dict[str, Any]) -> None:
    """MaxScore (re-scored), dense and one-term top k each give the reference top k of a
    segment, whatever the size thresholds would pick; norms per document or by length."""
    s = c["segs"][0]
    k = c["k"]
    ids, w = c["term_ids"], c["weights"]
    args = (s["offsets"], s["doc_ids"], s["tfs"], _norms(s, c, form))
    want_s, want_d = _reference({**c, "segs": [{**s, "docnums": np.arange(s["n_docs"])}]})
    acc, seen, touched = bm25.new_scratch(s["n_docs"])
    got_s, got_d = pruning.bm25_dense_topk(*args, ids, w, s["allowed"], s["check"], k, acc)
    assert got_d.tolist() == want_d.tolist() and got_s.tobytes() == want_s.tobytes()
    assert not acc.any()
    n_terms = s["offsets"].shape[0] - 1
    valid = [j for j in range(ids.shape[0]) if 0 <= ids[j] < n_terms]
    order = sorted(valid, key=lambda j: (-w[j], j))
    picked = pruning.bm25_maxscore(*args, ids[order], w[order], w[order] * bm25.K1_PLUS_1,
                                   s["allowed"], s["check"], -np.inf, k, 2 * k + 8, acc, seen,
                                   touched)
    assert not acc.any() and not seen.any()
    exact = bm25.bm25_score_docs(*args, ids, w, picked)
    got_s, got_d = reference.ranked(exact, picked.astype(np.int64), k)
    assert got_d.tolist() == want_d.tolist() and got_s.tobytes() == want_s.tobytes()
    if len(valid) == 1:
        j = valid[0]
        got_s, got_d = topk.bm25_term_topk(*args, int(ids[j]), float(w[j]), s["allowed"],
                                           s["check"], k)
        assert got_d.tolist() == want_d.tolist() and got_s.tobytes() == want_s.tobytes()


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 300), k=st.integers(1, 40))
@settings(max_examples=60, deadline=None)
def test_kth_helpers_match_numpy(seed: int, n: int, k: int) -> None:
    """kth_largest and term_kth return numpy's k-th largest value (-inf when fewer than k)."""
    rng = np.random.default_rng(seed)
    acc = np.round(rng.random(n + 1) * 4, 1)  # rounded: ties
    docs = rng.permutation(n + 1)[:n].astype(np.int32)
    buf = np.empty(k, dtype=np.float64)
    want = float(np.sort(acc[docs])[::-1][k - 1]) if n >= k else -np.inf
    assert pruning.kth_largest(acc, docs, n, k, buf) == want
    seg = _segment(rng, max(n, 1), 5, 0, False)
    norms = bm25.bm25_norms(seg["doc_lens"], 7.0)
    allowed = (rng.random(seg["n_docs"]) < 0.7).astype(np.uint8)
    ref, hit = reference.bm25_scores(seg["offsets"], seg["doc_ids"], seg["tfs"], norms,
                                     np.array([0], np.int32), np.array([1.5]), allowed)
    vals = np.sort(ref[hit])[::-1]
    want = float(vals[k - 1]) if vals.shape[0] >= k else -np.inf
    assert pruning.term_kth(seg["offsets"], seg["doc_ids"], seg["tfs"], norms, 0, 1.5, allowed,
                            True, k, buf) == want


@pytest.mark.parametrize("path", PATHS)
def test_bar_from_other_segments_keeps_ties(path: tuple[int, int]) -> None:
    """A document whose exact score equals the bar passed in from another segment is kept
    when its number is lower (the bar never drops a tie)."""
    # Two identical segments: every score appears twice. Searching the later-numbered one
    # first sets the bar from it; the earlier one must still win each tie.
    docs = [[0, 1], [0], [1, 1, 2], [2], [0, 2]] * 30
    offsets, doc_ids, tfs, lens = reference.build_postings(docs, 3)
    norms = bm25.bm25_norms(lens, float(lens.mean()))
    ids = np.array([0, 1, 2], dtype=np.int32)
    w = np.array([0.5, 1.0, 3.0])
    k = 7
    top_s, top_d, top_n = np.empty(k), np.empty(k, np.int64), np.zeros(1, np.int64)
    acc, seen, touched = bm25.new_scratch(len(docs))
    allowed = np.ones(len(docs), np.uint8)
    for base in (len(docs), 0):
        pruning.bm25_segment_topk(offsets, doc_ids, tfs, norms, ids, w, allowed, False,
                                  base + np.arange(len(docs), dtype=np.int64), top_s, top_d,
                                  top_n, acc, seen, touched, *path)
    topk.topk_finish(top_s, top_d, int(top_n[0]))
    ref, hit = reference.bm25_scores(offsets, doc_ids, tfs, norms, ids, w, allowed)
    want_s, want_d = reference.ranked(np.concatenate([ref[hit], ref[hit]]),
                                      np.concatenate([np.flatnonzero(hit),
                                                      len(docs) + np.flatnonzero(hit)]), k)
    assert top_d.tolist() == want_d.tolist() and top_s.tobytes() == want_s.tobytes()


@given(seed=st.integers(0, 2**32 - 1), k=st.sampled_from([1, 5, 10]), deleted=st.booleans())
@settings(max_examples=20 if NO_JIT else 60, deadline=None)
def test_maxscore_finishes_common_terms_on_few_candidates(seed: int, k: int,
                                                          deleted: bool) -> None:
    """One rare heavy term and several common light ones: MaxScore adds the common terms to
    its few candidates by binary search, narrowing them term by term, and still returns the
    reference top k."""
    rng = np.random.default_rng(seed)
    n = 3000
    docs = [[0] * int(rng.random() < 0.01) + rng.integers(1, 5, int(rng.integers(1, 15))).tolist()
            for _ in range(n)]
    offsets, doc_ids, tfs, lens = reference.build_postings(docs, 5)
    norms = bm25.bm25_norms(lens, float(lens.mean()))
    ids = np.array([0, 1, 2, 3, 4], dtype=np.int32)
    w = np.array([9.0, 0.1, 0.2, 0.05, 0.3])
    allowed = ((rng.random(n) < 0.8) if deleted else np.ones(n, bool)).astype(np.uint8)
    _maxscore_is_the_reference(offsets, doc_ids, tfs, norms, norms, ids, w, allowed, deleted, k)


def _maxscore_is_the_reference(offsets: np.ndarray, doc_ids: np.ndarray, tfs: np.ndarray,
                               norms: Any, per_document: np.ndarray, ids: np.ndarray,
                               w: np.ndarray, allowed: np.ndarray, check: bool, k: int) -> None:
    """One segment's ``bm25_segment_topk`` with MaxScore forced equals the reference top k
    (``per_document``: the same norms per document), bit for bit; the scratch left clean."""
    n = allowed.shape[0]
    top_s, top_d, top_n = np.empty(k), np.empty(k, np.int64), np.zeros(1, np.int64)
    acc, seen, touched = bm25.new_scratch(n)
    pruning.bm25_segment_topk(offsets, doc_ids, tfs, norms, ids, w, allowed, check,
                              np.arange(n, dtype=np.int64), top_s, top_d, top_n, acc, seen,
                              touched, 0, 0)
    assert not acc.any() and not seen.any()
    got = int(top_n[0])
    topk.topk_finish(top_s, top_d, got)
    ref, hit = reference.bm25_scores(offsets, doc_ids, tfs, per_document, ids, w, allowed)
    want_s, want_d = reference.ranked(ref[hit], np.flatnonzero(hit), k)
    assert top_d[:got].tolist() == want_d.tolist()
    assert top_s[:got].tobytes() == want_s.tobytes()


@given(seed=st.integers(0, 2**32 - 1), k=st.sampled_from([1, 5, 10, 40]), deleted=st.booleans(),
       rare=st.integers(0, 12))
@settings(max_examples=20 if NO_JIT else 60, deadline=None)
def test_a_last_common_term_with_no_bar_is_read_once(seed: int, k: int, deleted: bool,
                                                     rare: int) -> None:
    """A word in most documents after words too rare to fill the top k (no bar yet when the
    common word comes: ``_touch_last_term``, one pass): the reference top k, with the rare
    words' documents among the untouched ones' ties (short documents repeat, so equal scores
    are common), deletions and either norms form."""
    rng = np.random.default_rng(seed)
    n = 2000
    docs = []
    for d in range(n):
        doc = [1] * int(rng.integers(1, 4)) if rng.random() < 0.97 else [3]
        doc += [2] * int(rng.integers(0, 3)) if rng.random() < 0.5 else []
        docs.append(doc + [0] * int(d < rare))  # term 0 in the first ``rare`` documents
    offsets, doc_ids, tfs, lens = reference.build_postings(docs, 4)
    ids = np.array([0, 1], dtype=np.int32)
    w = np.array([7.0, 0.05])
    allowed = ((rng.random(n) < 0.8) if deleted else np.ones(n, bool)).astype(np.uint8)
    per_document = bm25.bm25_norms(lens, float(lens.mean()))
    lengths, codes = length_codes(lens)
    for norms in (per_document, (bm25.bm25_norms(lengths, float(lens.mean())), codes)):
        _maxscore_is_the_reference(offsets, doc_ids, tfs, norms, per_document, ids, w, allowed,
                                   deleted, k)


def _relabel(s: dict[str, Any], perm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The segment's postings with term t renumbered perm[t] (a segment's own vocabulary)."""
    offsets = s["offsets"]
    lengths = np.diff(offsets)
    new_lengths = np.empty_like(lengths)
    new_lengths[perm] = lengths
    new_offsets = np.zeros_like(offsets)
    new_offsets[1:] = np.cumsum(new_lengths)
    doc_ids = np.empty_like(s["doc_ids"])
    tfs = np.empty_like(s["tfs"])
    for t in range(lengths.shape[0]):
        lo, hi = new_offsets[perm[t]], new_offsets[perm[t] + 1]
        doc_ids[lo:hi] = s["doc_ids"][offsets[t]:offsets[t + 1]]
        tfs[lo:hi] = s["tfs"][offsets[t]:offsets[t + 1]]
    return new_offsets, doc_ids, tfs


@given(searches(), st.integers(0, 2**32 - 1))
@SETTINGS
def test_lane_topk_matches_reference_and_locates_each_document(c: dict[str, Any],
                                                               seed: int) -> None:
    """bm25_lane_topk over every segment (each with its own term numbering, read from its column
    of the term records; table rows in any order) gives the reference top k, scores bit for bit,
    ties by document number, and each kept document's (column, local number); scratch clean."""
    k = min(c["k"], topk.INSERTION_MAX)
    rng = np.random.default_rng(seed)
    n_terms = c["segs"][0]["offsets"].shape[0] - 1
    q = c["term_ids"]
    columns = []
    relabelled = []
    for s in c["segs"]:
        perm = rng.permutation(n_terms).astype(np.int32)
        relabelled.append(_relabel(s, perm))
        columns.append([int(perm[t]) if 0 <= t < n_terms else -1 for t in q.tolist()])
    matrix = np.array(columns, dtype=np.int32).T.copy()  # a row per query term
    top_s = np.full(k, np.nan, dtype=np.float64)  # the kernel starts from an empty top k
    top_d = np.full(k, -7, dtype=np.int64)
    top_w = np.full(k, -7, dtype=np.int64)
    acc, seen, touched = bm25.new_scratch(max(s["n_docs"] for s in c["segs"]))
    table = lane.new_table(len(c["order"]))
    held = []  # the table holds addresses: every array behind one must outlive the call
    for row, i in enumerate(c["order"]):
        s = c["segs"][i]
        offsets, doc_ids, tfs = relabelled[i]
        norms = _norms(s, c, "by-length")  # the engine's form (kernels/norms.py)
        held.append(norms)
        lane.lane_row(table, row, i, s["check"], offsets, doc_ids, tfs, norms, s["allowed"],
                      s["docnums"])
    terms = lane.term_records(c["weights"], matrix)
    count, single = lane.bm25_lane_topk(table, terms, top_s, top_d, top_w, acc, seen, touched)
    assert not acc.any() and not seen.any(), "scratch must be clean after the call"
    want_s, want_d = _reference({**c, "k": k})
    assert top_d[:count].tolist() == want_d.tolist()
    assert top_s[:count].tobytes() == want_s.tobytes()
    located = []
    for doc, where in zip(top_d[:count].tolist(), top_w[:count].tolist(), strict=True):
        # One segment holds them all: ``single`` says which, and ``where`` is the local number.
        column, local = (single, where) if single >= 0 else (where >> lane.LOCAL_BITS,
                                                             where & lane.LOCAL_MASK)
        assert c["segs"][column]["docnums"][local] == doc
        located.append(column)
    # ``single`` is the one segment every kept document is in, else -1 (several, or none kept).
    assert single == (located[0] if located and len(set(located)) == 1 else -1)
