"""merge_segments keeps exactly the live documents, in document-number order, with their postings.

The reference is a segment built directly from the surviving documents: a merge must index them
the same way (term ids may differ, so postings are compared by term).
"""

from __future__ import annotations

import random

import attrs
import numpy as np
import pytest

from hmsengine.index.analyzer import get_analyzer
from hmsengine.index.segment import Segment, build_segment, merge_segments

DIM = 64


def _postings_by_term(segment: Segment) -> dict[str, list[tuple[str, float]]]:
    out = {}
    terms = segment.terms
    for term, column in segment.vocab.items():
        lo, hi = int(terms.offsets[column]), int(terms.offsets[column + 1])
        entries = [(segment.ids[int(d)], float(v))
                   for d, v in zip(terms.doc_ids[lo:hi], terms.values[lo:hi], strict=True)]
        if entries:
            out[term] = entries
    return out


def _forward_by_doc(segment: Segment) -> dict[str, set[str]]:
    names = {column: term for term, column in segment.vocab.items()}
    fwd = segment.forward
    return {doc_id: {names[int(c)] for c in fwd.doc_ids[fwd.offsets[i]:fwd.offsets[i + 1]]}
            for i, doc_id in enumerate(segment.ids)}


@pytest.mark.parametrize("seed", range(6))
def test_a_merge_equals_a_build_of_the_live_documents(seed: int) -> None:
    rng = random.Random(seed)
    analyzer = get_analyzer("standard")
    words = [f"w{rng.randrange(10**6)}" for _ in range(rng.choice((5, 50, 3000)))]
    n = rng.randrange(1, 400)
    texts = [" ".join(rng.choice(words) for _ in range(rng.randrange(1, 30))) for _ in range(n)]
    edim = rng.choice((None, 3))
    embeddings = [np.asarray([rng.random() + 0.1 for _ in range(3)], dtype=np.float32)
                  if edim and rng.random() < 0.5 else None for _ in range(n)]
    # Split the documents (numbered 0..n-1) into parts; when ``interleaved``, a part takes every
    # k-th document, as overlapping segments rebuilt at open do.
    parts_count = rng.randrange(1, 6)
    interleaved = rng.random() < 0.4
    groups = ([list(range(k, n, parts_count)) for k in range(parts_count)] if interleaved else
              [list(chunk) for chunk in np.array_split(np.arange(n), parts_count)])
    groups = [g for g in groups if g]
    segments, lives = [], []
    for group in groups:
        segment = build_segment(analyzer, ids=[f"d{i}" for i in group], texts=[texts[i] for i in group],
                                embeddings=[embeddings[i] for i in group], first_docnum=0,
                                dim=DIM, embedding_dim=edim)
        segments.append(attrs.evolve(segment, docnums=np.asarray(group, dtype=np.int64)))
        lives.append(np.asarray([rng.random() < 0.75 for _ in group], dtype=np.uint8))
    order = list(range(len(segments)))
    rng.shuffle(order)  # the result must not depend on the input order
    merged = merge_segments([segments[i] for i in order], [lives[i] for i in order],
                            dim=DIM, embedding_dim=edim)

    live = sorted(i for group, flags in zip(groups, lives, strict=True)
                  for i, flag in zip(group, flags.tolist(), strict=True) if flag)
    expected = build_segment(analyzer, ids=[f"d{i}" for i in live], texts=[texts[i] for i in live],
                             embeddings=[embeddings[i] for i in live], first_docnum=0,
                             dim=DIM, embedding_dim=edim)
    assert merged.ids == expected.ids
    assert merged.docnums.tolist() == live
    assert merged.doc_lens.tolist() == expected.doc_lens.tolist()
    assert merged.has_embedding.tolist() == expected.has_embedding.tolist()
    assert sorted(merged.vocab.values()) == list(range(len(merged.vocab)))
    assert _postings_by_term(merged) == _postings_by_term(expected)
    by_term = {t: int(merged.df[c]) for t, c in merged.vocab.items() if merged.df[c]}
    assert by_term == {t: int(expected.df[c]) for t, c in expected.vocab.items() if expected.df[c]}
    assert _forward_by_doc(merged) == _forward_by_doc(expected)
    if expected.embeddings is None:
        assert merged.embeddings is None
    else:
        assert merged.embeddings is not None
        np.testing.assert_allclose(merged.embeddings, expected.embeddings, rtol=1e-6)


@pytest.mark.parametrize("renumber", [False, True])
def test_a_merge_numbers_terms_in_first_seen_order(renumber: bool) -> None:
    """The merged vocabulary is every term in first-seen order over the inputs, numbered 0, 1,
    ..., also when the first segment's own numbering is not its insertion order, and each
    input's postings land under the right term."""
    analyzer = get_analyzer("simple")
    texts = ["alpha beta gamma", "beta delta", "delta epsilon alpha", "zeta beta", "eta alpha"]
    cuts = [(0, 2), (2, 4), (4, 5)]
    segments = []
    for a, b in cuts:
        segment = build_segment(analyzer, ids=[f"d{i}" for i in range(a, b)], texts=texts[a:b],
                                embeddings=[None] * (b - a), first_docnum=a, dim=DIM,
                                embedding_dim=None)
        segments.append(segment)
    if renumber:  # the same segment with its terms listed in another order than their columns
        first = segments[0]
        segments[0] = attrs.evolve(first, vocab=dict(reversed(list(first.vocab.items()))))
    merged = merge_segments(segments, [np.ones(s.n_docs, np.uint8) for s in segments],
                            dim=DIM, embedding_dim=None)
    seen = list(dict.fromkeys(t for s in segments for t in s.vocab))
    assert list(merged.vocab) == seen and list(merged.vocab.values()) == list(range(len(seen)))
    whole = build_segment(analyzer, ids=[f"d{i}" for i in range(5)], texts=texts,
                          embeddings=[None] * 5, first_docnum=0, dim=DIM, embedding_dim=None)
    assert _postings_by_term(merged) == _postings_by_term(whole)


def _numpy_merge(parts, n_columns, in_order):  # type: ignore[no-untyped-def]
    # The numpy construction the kernels replaced (kernels/merge.py): the reference order.
    cols, docs, vals = [], [], []
    for postings, colmap, docmap in parts:
        col = np.repeat(colmap, np.diff(postings.offsets))
        doc = docmap[postings.doc_ids]
        keep = doc >= 0
        cols.append(col[keep])
        docs.append(doc[keep])
        vals.append(postings.values[keep])
    col = np.concatenate(cols) if cols else np.empty(0, np.int64)
    doc = np.concatenate(docs) if docs else np.empty(0, np.int64)
    val = np.concatenate(vals) if vals else np.empty(0, np.float32)
    order = np.argsort(col, kind="stable") if in_order else np.lexsort((doc, col))
    offsets = np.zeros(n_columns + 1, dtype=np.int64)
    np.cumsum(np.bincount(col, minlength=n_columns), out=offsets[1:])
    return offsets, doc[order].astype(np.int32), val[order].astype(np.float32)


@pytest.mark.parametrize("seed", range(40))
def test_merged_postings_are_a_stable_sort_by_column(seed: int) -> None:
    """_merge_postings (the GIL-free counting sort) gives the arrays of the numpy construction:
    parts in document order or interleaved, documents dropped, columns empty or shared."""
    from hmsengine.index.segment import Postings, _merge_postings

    rng = np.random.default_rng(seed)
    n_columns = int(rng.integers(1, 40))
    total_docs = int(rng.integers(1, 300))
    in_order = bool(rng.integers(0, 2))
    numbers = np.arange(total_docs) if in_order else rng.permutation(total_docs)
    splits = np.sort(rng.choice(np.arange(1, total_docs), size=min(int(rng.integers(0, 4)),
                                                                   total_docs - 1), replace=False))
    parts = []
    for own in np.split(numbers, splits):
        n_docs = own.size
        n_terms = int(rng.integers(1, n_columns + 1))
        colmap = rng.choice(n_columns, size=n_terms, replace=False).astype(np.int64)
        lists = [np.sort(rng.choice(n_docs, size=int(rng.integers(0, n_docs + 1)), replace=False))
                 for _ in range(n_terms)]
        offsets = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum([len(x) for x in lists], out=offsets[1:])
        doc_ids = np.concatenate(lists).astype(np.int32) if lists else np.zeros(0, np.int32)
        values = rng.random(doc_ids.size).astype(np.float32)
        docmap = np.where(rng.random(n_docs) < 0.2, -1, np.sort(own) if in_order else own)
        parts.append((Postings(offsets=offsets, doc_ids=doc_ids, values=values), colmap,
                      docmap.astype(np.int64)))
    got = _merge_postings(parts, n_columns, in_order)
    want = _numpy_merge(parts, n_columns, in_order)
    assert got.offsets.tolist() == want[0].tolist()
    assert got.doc_ids.dtype == np.int32 and got.values.dtype == np.float32
    assert got.doc_ids.tolist() == want[1].tolist()
    assert got.values.tobytes() == want[2].tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_a_merge_gathers_the_rows_int8_codes(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """A merged segment's vector codes are those of its parts' kept rows (made for a part that
    had none: a small one, or one without embeddings), in the merged order: exactly
    ``quantize_rows`` of the merged rows, without coding them again."""
    from hmsengine.index import segment as segment_module
    from hmsengine.kernels.quantized import quantize_rows

    monkeypatch.setattr(segment_module, "QUANTIZE_MIN_ROWS", 40)
    rng = np.random.default_rng(seed)
    analyzer = get_analyzer("simple")
    segments, lives = [], []
    start = 0
    for size, vectors in ((60, True), (25, True), (50, False), (45, True)):
        numbers = list(range(start, start + size))
        start += size
        embeddings = [rng.standard_normal(DIM).astype(np.float32) if vectors and k % 7 else None
                      for k in range(size)]
        seg = build_segment(analyzer, ids=[f"d{i}" for i in numbers], texts=["a b"] * size,
                            embeddings=embeddings, first_docnum=0, dim=DIM,
                            embedding_dim=DIM if vectors else None)
        seg = attrs.evolve(seg, docnums=np.asarray(numbers, dtype=np.int64))
        assert (seg.vector_codes is not None) == (vectors and size >= 40)  # made where due
        segments.append(seg)
        lives.append((rng.random(size) < 0.8).astype(np.uint8))
    if seed % 2:  # the parts given out of order: the merge puts the rows in number order
        segments.reverse()
        lives.reverse()
    merged = merge_segments(segments, lives, dim=DIM, embedding_dim=DIM)
    gathered = merged.vector_codes_if_built
    assert gathered is not None and merged.embeddings is not None
    again = quantize_rows(merged.embeddings)
    for have, want in zip(gathered, again, strict=True):
        assert have.dtype == want.dtype and have.tobytes() == want.tobytes()
    assert gathered[0].flags.c_contiguous
    # A merge made only to write a file (IndexFiles.file_segment) gathers none.
    assert merge_segments(segments, lives, dim=DIM, embedding_dim=DIM,
                          vector_codes=False).vector_codes_if_built is None
