"""BM25 and sparse accumulate / score_docs kernels against the plain-numpy reference."""

from __future__ import annotations

import itertools
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hmsengine.kernels import bm25, reference, topk
from hmsengine.kernels.norms import length_codes, n_norms, norm_of

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
SETTINGS = settings(
    max_examples=60 if NO_JIT else 150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def corpora(draw: st.DrawFn) -> dict[str, object]:
    """A small CSR corpus (with duplicate documents, so ties), a query and an allowed mask."""
    n_terms = draw(st.integers(1, 10))
    pool = draw(st.lists(st.lists(st.integers(0, n_terms - 1), max_size=8), min_size=1, max_size=6))
    docs = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=40))
    offsets, doc_ids, tfs, doc_lens = reference.build_postings(docs, n_terms)
    avgdl = draw(st.sampled_from([float(np.mean(doc_lens)), 0.0, 3.5]))
    norms = bm25.bm25_norms(doc_lens, avgdl)
    q_terms = sorted(draw(st.lists(st.integers(-1, n_terms), min_size=0, max_size=6)))
    term_ids = np.array(q_terms, dtype=np.int32)
    weights = np.array(
        draw(st.lists(st.floats(0.01, 10.0), min_size=len(q_terms), max_size=len(q_terms))),
        dtype=np.float64,
    )
    allowed = np.array(
        draw(st.lists(st.booleans(), min_size=len(docs), max_size=len(docs))), dtype=np.uint8
    )
    if draw(st.booleans()):
        allowed[:] = 1
    return {
        "offsets": offsets,
        "doc_ids": doc_ids,
        "tfs": tfs,
        "norms": norms,
        "term_ids": term_ids,
        "weights": weights,
        "allowed": allowed,
        "n_docs": len(docs),
        "k": draw(st.integers(0, 45)),
        "doc_base": draw(st.sampled_from([0, 7, 2**40])),
        "doc_lens": doc_lens,
        "avgdl": avgdl,
    }


@given(corpora())
@SETTINGS
def test_accumulate_topk_matches_reference(c: dict[str, Any]) -> None:
    """bm25_accumulate + topk_touched give the reference top-k, scores bit for bit, ties by doc."""
    n = c["n_docs"]
    acc, seen, touched = bm25.new_scratch(n)
    n_touched = bm25.bm25_accumulate(
        c["offsets"], c["doc_ids"], c["tfs"], c["norms"], c["term_ids"], c["weights"],
        c["allowed"], acc, seen, touched, 0,
    )  # fmt: skip
    ref_scores, hit = reference.bm25_scores(
        c["offsets"], c["doc_ids"], c["tfs"], c["norms"], c["term_ids"], c["weights"], c["allowed"]
    )
    assert n_touched == int(hit.sum())
    assert sorted(touched[:n_touched].tolist()) == np.flatnonzero(hit).tolist()
    scores, docs = topk.topk_touched(acc, seen, touched, n_touched, c["k"], c["doc_base"])
    want_scores, want_docs = reference.topk_of_hits(ref_scores, hit, c["k"], c["doc_base"])
    assert docs.dtype == np.int64 and scores.dtype == np.float64
    assert docs.tolist() == want_docs.tolist()
    assert scores.tobytes() == want_scores.tobytes()
    assert not acc.any() and not seen.any(), "scratch must be clean after topk_touched"


@given(corpora())
@SETTINGS
def test_score_docs_bit_identical_to_accumulate(c: dict[str, Any]) -> None:
    """bm25_score_docs gives every document the exact bits bm25_accumulate gives it."""
    n = c["n_docs"]
    everyone = np.ones(n, dtype=np.uint8)
    acc, seen, touched = bm25.new_scratch(n)
    n_touched = bm25.bm25_accumulate(
        c["offsets"], c["doc_ids"], c["tfs"], c["norms"], c["term_ids"], c["weights"],
        everyone, acc, seen, touched, 0,
    )  # fmt: skip
    # Descending candidates are binary-searched; ascending ones are merged with the postings of
    # each term short enough (MERGE_RATIO), the rest binary-searched: every path, same bits.
    everything = np.arange(n, dtype=np.int32)
    rng = np.random.default_rng(n)
    some = np.flatnonzero(rng.random(n) < 0.3).astype(np.int32)
    for candidates in (everything[::-1].copy(), everything, some, some[:1]):
        got = bm25.bm25_score_docs(
            c["offsets"], c["doc_ids"], c["tfs"], c["norms"], c["term_ids"], c["weights"],
            candidates,
        )  # fmt: skip
        assert got.tobytes() == acc[candidates].tobytes()
    topk.reset_touched(acc, seen, touched, n_touched)
    assert not acc.any() and not seen.any()


@given(corpora())
@SETTINGS
def test_allowed_mask_gives_true_topk_among_allowed(c: dict[str, Any]) -> None:
    """Filtering by the allowed mask equals ranking every document and keeping allowed ones."""
    n = c["n_docs"]
    acc, seen, touched = bm25.new_scratch(n)
    n_touched = bm25.bm25_accumulate(
        c["offsets"], c["doc_ids"], c["tfs"], c["norms"], c["term_ids"], c["weights"],
        c["allowed"], acc, seen, touched, 0,
    )  # fmt: skip
    scores, docs = topk.topk_touched(acc, seen, touched, n_touched, c["k"], 0)
    full, hit = reference.bm25_scores(
        c["offsets"], c["doc_ids"], c["tfs"], c["norms"], c["term_ids"], c["weights"],
        np.ones(n, dtype=np.uint8),
    )  # fmt: skip
    all_scores, all_docs = reference.topk_of_hits(full, hit, n, 0)
    keep = c["allowed"][all_docs] != 0
    assert docs.tolist() == all_docs[keep][: c["k"]].tolist()
    assert scores.tobytes() == all_scores[keep][: c["k"]].tobytes()


@given(corpora(), st.integers(1, 4))
@SETTINGS
def test_segments_merge_to_global_topk(c: dict[str, Any], parts: int) -> None:
    """Per-segment top-k with doc_base, merged by merge_topk, equals one global ranking."""
    n = c["n_docs"]
    bounds = np.linspace(0, n, parts + 1).astype(int)
    offsets, doc_ids, tfs = c["offsets"], c["doc_ids"], c["tfs"]
    results = []
    acc, seen, touched = bm25.new_scratch(n)
    for lo, hi in itertools.pairwise(bounds):
        # Re-cut the postings into a segment holding documents lo..hi-1 (local numbers).
        seg_docs: list[list[int]] = [[] for _ in range(hi - lo)]
        for t in range(len(offsets) - 1):
            for p in range(offsets[t], offsets[t + 1]):
                if lo <= doc_ids[p] < hi:
                    seg_docs[doc_ids[p] - lo].extend([t] * int(tfs[p]))
        s_off, s_ids, s_tfs, _ = reference.build_postings(seg_docs, len(offsets) - 1)
        n_t = bm25.bm25_accumulate(
            s_off, s_ids, s_tfs, c["norms"][lo:hi].copy(), c["term_ids"], c["weights"],
            c["allowed"][lo:hi].copy(), acc, seen, touched, 0,
        )  # fmt: skip
        results.append(topk.topk_touched(acc, seen, touched, n_t, c["k"], int(lo)))
    scores, docs = topk.merge_topk(results, c["k"])
    full, hit = reference.bm25_scores(
        offsets, doc_ids, tfs, c["norms"], c["term_ids"], c["weights"], c["allowed"]
    )
    want_scores, want_docs = reference.topk_of_hits(full, hit, c["k"], 0)
    assert docs.tolist() == want_docs.tolist()
    assert scores.tobytes() == want_scores.tobytes()


@st.composite
def sparse_corpora(draw: st.DrawFn) -> dict[str, object]:
    """CSR postings with signed float32 values (zeros and cancellations included)."""
    n_docs = draw(st.integers(1, 30))
    n_terms = draw(st.integers(1, 8))
    value = st.sampled_from([0.0, 0.5, -0.5, 0.25, 1.0, -1.0, 0.1])
    cols = []
    for _ in range(n_terms):
        ds = sorted(draw(st.sets(st.integers(0, n_docs - 1), max_size=n_docs)))
        cols.append([(d, draw(value)) for d in ds])
    offsets = np.zeros(n_terms + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(col) for col in cols])
    doc_ids = np.array([d for col in cols for d, _ in col], dtype=np.int32)
    values = np.array([v for col in cols for _, v in col], dtype=np.float32)
    q = sorted(draw(st.sets(st.integers(-1, n_terms), max_size=6)))
    weights = [draw(st.sampled_from([1.0, -1.0, 0.0, 2.0, 0.3])) for _ in q]
    allowed = np.array(
        draw(st.lists(st.booleans(), min_size=n_docs, max_size=n_docs)), dtype=np.uint8
    )
    return {
        "offsets": offsets,
        "doc_ids": doc_ids,
        "values": values,
        "term_ids": np.array(q, dtype=np.int32),
        "weights": np.array(weights, dtype=np.float64),
        "allowed": allowed,
        "n_docs": n_docs,
        "k": draw(st.integers(0, 40)),
    }


@given(sparse_corpora())
@SETTINGS
def test_sparse_accumulate_matches_reference(c: dict[str, Any]) -> None:
    """sparse_accumulate touches each reached doc once (even at score 0) and ranks as reference."""
    n = c["n_docs"]
    acc, seen, touched = bm25.new_scratch(n)
    n_touched = bm25.sparse_accumulate(
        c["offsets"], c["doc_ids"], c["values"], c["term_ids"], c["weights"], c["allowed"],
        acc, seen, touched, 0,
    )  # fmt: skip
    ref, hit = reference.sparse_scores(
        c["offsets"], c["doc_ids"], c["values"], c["term_ids"], c["weights"], c["allowed"], n
    )
    assert sorted(touched[:n_touched].tolist()) == np.flatnonzero(hit).tolist()
    assert acc.tobytes() == ref.tobytes()
    cands = np.flatnonzero(c["allowed"]).astype(np.int32)
    direct = bm25.sparse_score_docs(
        c["offsets"], c["doc_ids"], c["values"], c["term_ids"], c["weights"], cands
    )
    assert direct.tobytes() == acc[cands].tobytes()
    scores, docs = topk.topk_touched(acc, seen, touched, n_touched, c["k"], 0)
    want_scores, want_docs = reference.topk_of_hits(ref, hit, c["k"], 0)
    assert docs.tolist() == want_docs.tolist()
    assert scores.tobytes() == want_scores.tobytes()
    assert not acc.any() and not seen.any()


def test_cancelling_contributions_touch_a_document_once() -> None:
    """A document whose sum returns to exactly 0 and is reached again is listed only once."""
    offsets = np.array([0, 1, 2, 3], dtype=np.int64)
    doc_ids = np.array([0, 0, 0], dtype=np.int32)
    values = np.array([0.5, -0.5, 0.0], dtype=np.float32)
    term_ids = np.array([0, 1, 2], dtype=np.int32)
    weights = np.ones(3, dtype=np.float64)
    acc, seen, touched = bm25.new_scratch(1)
    n = bm25.sparse_accumulate(
        offsets, doc_ids, values, term_ids, weights, np.ones(1, np.uint8), acc, seen, touched, 0
    )
    assert n == 1
    scores, docs = topk.topk_touched(acc, seen, touched, n, 5, 0)
    assert docs.tolist() == [0] and scores.tolist() == [0.0]


def test_norm_idf_and_term_score_scalars_match_kernel_bits() -> None:
    """bm25_norm, bm25_idf and bm25_term (for explain) give the kernels' exact bits."""
    lens = np.array([0, 1, 5, 17, 120], dtype=np.int32)
    norms = bm25.bm25_norms(lens, 9.3)
    assert [bm25.bm25_norm(int(x), 9.3) for x in lens] == norms.tolist()
    dfs = np.array([0, 1, 3, 50, 99, 100, 130], dtype=np.int64)
    idfs = bm25.bm25_idf(dfs, 100)
    assert isinstance(idfs, np.ndarray)
    assert [bm25.bm25_idf(int(x), 100) for x in dfs] == idfs.tolist()
    assert (idfs > 0).all(), "idf stays positive even when df exceeds N"
    assert bm25.bm25_idf(10, 100) == pytest.approx(np.log(1 + 90.5 / 10.5), rel=1e-15)
    offsets = np.array([0, 1], dtype=np.int64)
    doc_ids = np.array([2], dtype=np.int32)
    tfs = np.array([3.0], dtype=np.float32)
    term_ids = np.array([0], dtype=np.int32)
    w = np.array([float(idfs[2])])
    got = bm25.bm25_score_docs(offsets, doc_ids, tfs, norms, term_ids, w, np.array([2], np.int32))
    assert got[0] == bm25.bm25_term(float(idfs[2]), 3.0, float(norms[2]))


def test_bm25_formula_value() -> None:
    """The kernel computes idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))."""
    offsets = np.array([0, 2], dtype=np.int64)
    doc_ids = np.array([0, 1], dtype=np.int32)
    tfs = np.array([2.0, 1.0], dtype=np.float32)
    lens = np.array([10, 30], dtype=np.int32)
    norms = bm25.bm25_norms(lens, 20.0)
    idf = float(bm25.bm25_idf(2, 5))
    got = bm25.bm25_score_docs(
        offsets, doc_ids, tfs, norms, np.array([0], np.int32), np.array([idf]),
        np.array([0, 1], np.int32),
    )  # fmt: skip
    for d, (tf, dl) in enumerate([(2.0, 10), (1.0, 30)]):
        want = idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / 20.0))
        assert got[d] == pytest.approx(want, rel=1e-14)


def test_score_docs_rejects_out_of_range_candidate() -> None:
    """A candidate outside the segment raises ValueError instead of reading out of bounds."""
    offsets = np.array([0, 1], dtype=np.int64)
    with pytest.raises(ValueError):
        bm25.bm25_score_docs(
            offsets, np.array([0], np.int32), np.array([1.0], np.float32), np.ones(1),
            np.array([0], np.int32), np.ones(1), np.array([1], np.int32),
        )  # fmt: skip


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_norms_kernel_gives_numpys_bits(dtype) -> None:  # type: ignore[no-untyped-def]
    """bm25_norms (one kernel pass) equals the elementwise numpy expression it replaced, bit for
    bit, for every length dtype and for averages that are not round numbers."""
    rng = np.random.default_rng(3)
    lens = rng.integers(0, 5000, 20_000).astype(dtype)
    for avgdl in (1.0, 7.3, 123.456789, 1e-3, float(lens.mean())):
        expected = bm25.K1 * (1.0 - bm25.B + bm25.B * lens.astype(np.float64) / avgdl)
        assert bm25.bm25_norms(lens, avgdl).tobytes() == expected.tobytes()
    assert bm25.bm25_norms(lens[::2], 2.5).tobytes() == bm25.bm25_norms(lens[::2].copy(), 2.5).tobytes()
    assert bm25.bm25_norms(np.zeros(0, np.int32), 0.0).shape == (0,)
    assert bm25.bm25_norms(np.array([4], np.int32), float("nan"))[0] == bm25.bm25_norm(4, 1.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5, 3_000_000), min_size=0, max_size=12),
       st.integers(-3, 2_500_000))
def test_bm25_idfs_gives_bm25_idfs_bits(dfs: list[int], n_docs: int) -> None:
    """bm25_idfs (the plain lane's idf for the terms its memo misses) gives bm25_idf's bits over
    an array, for any document frequencies (clipped: negative, above n) and collection size."""
    got = bm25.bm25_idfs(dfs, n_docs)
    want = bm25.bm25_idf(np.asarray(dfs, dtype=np.int64), n_docs)
    assert np.asarray(got, dtype=np.float64).tobytes() == np.asarray(want).tobytes()
    assert all(type(x) is float for x in got)


@given(corpora())
@SETTINGS
def test_norms_by_length_give_the_per_document_bits(c: dict[str, Any]) -> None:
    """The engine's by-length norms (kernels/norms.py: the distinct lengths' norms and each
    document's code) give every kernel the bits the per-document norms give it."""
    lengths, codes = length_codes(c["doc_lens"])
    assert lengths[codes].tolist() == c["doc_lens"].tolist()
    by_length = (bm25.bm25_norms(lengths, c["avgdl"]), codes)
    assert n_norms(by_length) == n_norms(c["norms"]) == c["n_docs"]
    assert [norm_of(by_length, d) for d in range(c["n_docs"])] == c["norms"].tolist()
    n = c["n_docs"]
    postings = (c["offsets"], c["doc_ids"], c["tfs"])
    query = (c["term_ids"], c["weights"])
    sums = []
    for norms in (c["norms"], by_length):
        acc, seen, touched = bm25.new_scratch(n)
        n_touched = bm25.bm25_accumulate(*postings, norms, *query, c["allowed"], acc, seen,
                                         touched, 0)
        sums.append((acc.tobytes(), touched[:n_touched].tolist()))
        topk.reset_touched(acc, seen, touched, n_touched)
    assert sums[0] == sums[1]
    everything = np.arange(n, dtype=np.int32)
    assert bm25.bm25_score_docs(*postings, c["norms"], *query, everything).tobytes() == \
        bm25.bm25_score_docs(*postings, by_length, *query, everything).tobytes()
    for t in range(c["offsets"].shape[0] - 1):
        tops = [topk.bm25_term_topk(*postings, norms, t, 1.5, c["allowed"], True, max(c["k"], 1))
                for norms in (c["norms"], by_length)]
        assert tops[0][0].tobytes() == tops[1][0].tobytes()
        assert tops[0][1].tolist() == tops[1][1].tolist()


@pytest.mark.parametrize("lens", [[], [0], [5, 5, 5], [3, 1, 4, 1, 5, 9, 2, 6], [10**7, 1, 10**7],
                                  list(range(2000, 0, -3))])
def test_length_codes_index_the_distinct_lengths(lens: list[int]) -> None:
    """length_codes: the distinct lengths ascending and each document's index into them, on the
    presence-array path and the sorting one (lengths far above the document count)."""
    lengths, codes = length_codes(np.array(lens, dtype=np.int32))
    assert lengths.dtype == np.int32 and codes.dtype == np.int32
    assert lengths.tolist() == sorted(set(lens))
    assert lengths[codes].tolist() == lens


@given(st.lists(st.integers(0, 5000), max_size=300), st.sampled_from([np.int32, np.int64]))
@settings(max_examples=200, deadline=None)
def test_length_codes_on_any_lengths(lens: list[int], dtype: type) -> None:
    """The same contract on random lengths, dense (a presence array) or sparse (a sort): the
    distinct lengths ascending, each document's index into them, int32 both."""
    lengths, codes = length_codes(np.array(lens, dtype=dtype))
    assert lengths.dtype == np.int32 and codes.dtype == np.int32
    assert lengths.tolist() == sorted(set(lens))
    assert lengths[codes].tolist() == lens


def test_length_codes_refuse_a_negative_length() -> None:
    with pytest.raises(ValueError):
        length_codes(np.array([3, -1], dtype=np.int32))
