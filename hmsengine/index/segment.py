"""Immutable index segments: postings, document lengths, vectors, built or merged off the loop.

A :class:`Segment` covers some documents, each with a global document number (``docnums``,
ascending; numbers are assigned in commit order and never reused while the store is open).
It holds:

* BM25 postings over its own vocabulary (CSR: ``offsets``, local ``doc_ids``, ``tfs``), the
  document lengths, the per-term document frequencies, and a forward index (document -> its
  distinct terms) used to adjust frequencies when documents die;
* the hashed character n-gram vectors as postings over ``dim`` buckets (``semantic="ngram"``);
* the caller's embeddings, row-normalised float32, with a mask of which rows have one.

Segments never change once built. Deletions live in the snapshot's per-segment views
(index/snapshot.py). :func:`build_segment` and :func:`merge_segments` are pure and run in worker
threads (the kernels release the GIL).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import attrs
import numpy as np
import numpy.typing as npt

from ..kernels.bm25 import build_postings
from ..kernels.cosine import l2_normalise_rows
from ..kernels.merge import count_kept, scatter_kept, sort_columns
from ..kernels.ngram import csr_transpose, ngram_vectors
from ..kernels.norms import length_codes
from ..kernels.quantized import (
    MAX_DIMENSIONS,
    Quantized,
    empty_codes,
    quantize_rows,
    quantize_rows_into,
)
from .analyzer import Analyzer

#: A segment with at least this many embedding rows gets int8 codes of them
#: (``Segment.vector_codes``); below, the float32 scan is as quick.
QUANTIZE_MIN_ROWS = 1024
#: ``Segment.make_vector_codes`` codes this many rows per kernel call, asking between them
#: whether to stop (~70 ms of 384-dimension rows).
CODE_CHUNK_ROWS = 65_536

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
F32 = npt.NDArray[np.float32]
U8 = npt.NDArray[np.uint8]


@attrs.frozen(kw_only=True, eq=False)
class Postings:
    """CSR postings: entries of column ``c`` are ``offsets[c]:offsets[c+1]``."""

    offsets: I64
    doc_ids: I32
    values: F32

    @property
    def n_columns(self) -> int:
        return int(self.offsets.shape[0]) - 1

    def lengths(self, columns: I64) -> int:
        return int(np.sum(self.offsets[columns + 1] - self.offsets[columns]))


@attrs.frozen(kw_only=True, eq=False)
class Segment:
    """One immutable segment of the index."""

    ids: tuple[str, ...]
    docnums: I64
    vocab: dict[str, int]
    terms: Postings  # values are term frequencies
    doc_lens: I32
    df: I64
    # Per document: its distinct local term ids (``forward``). None in a query-time tail
    # segment (``segment_of_terms(with_forward=False)``): built on first use there.
    _forward: Postings | None
    # Per bucket: documents and their n-gram weights. Built on the first semantic="ngram" query
    # (see ngram_postings): the channel costs ~14x the term postings, so it is not paid for by
    # stores that never use it.
    ngrams: Postings | None
    embeddings: F32 | None  # [n_docs, edim], rows L2-normalised (zero rows where absent)
    has_embedding: U8
    # Postings made on first use: "ngrams" (ngram_postings), "forward" (forward, when not given).
    _lazy: dict[str, Postings] = attrs.field(factory=dict, init=False)
    _id_array: list[npt.NDArray[np.object_]] = attrs.field(factory=list, init=False)
    _codes: list[tuple[I32, I32]] = attrs.field(factory=list, init=False)
    _vector_codes: list[Quantized] = attrs.field(factory=list, init=False)

    @property
    def forward(self) -> Postings:
        """Per document: its distinct local term ids (values unused), what a deletion reads to
        take a document out of the live frequencies (``SegmentView.without``) and what a
        segment file stores. Made with the segment, or, for a query-time tail segment (rebuilt
        by the first search after every write, and seldom deleted from before its fold), on
        first use: ~7-18 us of the ~50 us such a segment of 40 documents cost."""
        if self._forward is not None:
            return self._forward
        built = self._lazy.get("forward")
        if built is None:
            built = self._lazy["forward"] = _forward(self.terms, self.n_docs)
        return built

    @property
    def length_codes(self) -> tuple[I32, I32]:
        """``(lengths, codes)``: the distinct document lengths and each document's index into
        them (``kernels.norms.length_codes``), made once: a snapshot's norms for the segment
        are then the norms of the distinct lengths alone (``SegmentView.norms``)."""
        if not self._codes:
            self._codes.append(length_codes(self.doc_lens))
        return self._codes[0]

    def with_ids(self, ids: tuple[str, ...]) -> Segment:
        """This segment with ``ids`` (equal strings: the table's own objects, shared), keeping
        what was derived of it (length codes, vector codes, postings made on first use): an
        open adopts its loaded segments this way, and a plain copy would make them again, the
        vector codes in a query's thread (~1.1 s at 1M rows)."""
        out = attrs.evolve(self, ids=ids)
        out._lazy.update(self._lazy)
        out._codes.extend(self._codes)
        out._vector_codes.extend(self._vector_codes)
        return out

    @property
    def vector_codes(self) -> Quantized | None:
        """The int8 codes of the embedding rows (``kernels.quantized.quantize_rows``), made now
        if they are not yet (``make_vector_codes``): a cosine scan reads them first and the
        float32 rows only where a row can reach the top k (index/vectorscan.py), the same
        answer bit for bit. None for a segment with fewer than ``QUANTIZE_MIN_ROWS`` embedding
        rows (the float32 scan is as quick there) or none. For worker threads (~1.1 us a row of
        384 dimensions): ``ready_for_queries``, the builder, the open's coding task. Memory: a
        byte a dimension and 24 bytes a row, a quarter more than the float32 rows."""
        self.make_vector_codes()
        return self.vector_codes_if_built

    @property
    def vector_codes_due(self) -> bool:
        """Whether this segment gets codes of its rows (``vector_codes``)."""
        matrix = self.embeddings
        return matrix is not None and matrix.shape[0] >= QUANTIZE_MIN_ROWS \
            and matrix.shape[1] <= MAX_DIMENSIONS

    def make_vector_codes(self, stop: Callable[[], bool] = lambda: False) -> bool:
        """Make ``vector_codes`` ``CODE_CHUNK_ROWS`` rows at a time, asking ``stop()`` before
        each chunk; they are kept (and seen by queries) only once whole. False when stopped
        first; True when made, made already, or not due. A thread that makes them while
        another does only repeats the work: the first to finish keeps its arrays."""
        if self._vector_codes or not self.vector_codes_due:
            return True
        matrix = self.embeddings
        assert matrix is not None
        n, d = matrix.shape
        out = empty_codes(n, d)
        for lo in range(0, n, CODE_CHUNK_ROWS):
            if stop():
                return False
            quantize_rows_into(matrix, lo, min(lo + CODE_CHUNK_ROWS, n), *out)
        if not self._vector_codes:
            self._vector_codes.append(out)
        return True

    @property
    def vector_codes_if_built(self) -> Quantized | None:
        """``vector_codes`` if made already, else None (an inline scan does not make them)."""
        return self._vector_codes[0] if self._vector_codes else None

    @property
    def id_array(self) -> npt.NDArray[np.object_]:
        """The ids as a numpy object array (built once): a query maps its hits' local numbers
        to ids by one fancy index instead of a Python loop."""
        if not self._id_array:
            self._id_array.append(np.asarray(self.ids, dtype=object))
        return self._id_array[0]

    @property
    def n_docs(self) -> int:
        return len(self.ids)

    @property
    def first(self) -> int:
        return int(self.docnums[0]) if len(self.ids) else -1

    def ngram_postings(self, load_texts: Callable[[Segment], list[str]], dim: int) -> Postings:
        """The n-gram postings, built once from the documents' texts on first use."""
        if self.ngrams is not None:
            return self.ngrams
        built = self._lazy.get("ngrams")
        if built is None:
            built = self._lazy["ngrams"] = ngram_postings(load_texts(self), dim)
        return built

    @property
    def ngrams_if_built(self) -> Postings | None:
        return self.ngrams if self.ngrams is not None else self._lazy.get("ngrams")

    def local(self, docnum: int) -> int:
        """The local number of a global document number in this segment, or -1."""
        i = int(np.searchsorted(self.docnums, docnum))
        return i if i < len(self.ids) and int(self.docnums[i]) == docnum else -1


def ngram_postings(texts: Sequence[str], dim: int) -> Postings:
    """Per-bucket postings of the documents' hashed character n-gram vectors."""
    indptr, indices, values = ngram_vectors(list(texts), dim)
    g_off, g_docs, g_vals = csr_transpose(indptr, indices, values, dim)
    return Postings(offsets=g_off, doc_ids=g_docs, values=g_vals)


def _forward(terms: Postings, n_docs: int) -> Postings:
    offsets, doc_ids, values = csr_transpose(terms.offsets, terms.doc_ids, terms.values, n_docs)
    return Postings(offsets=offsets, doc_ids=doc_ids, values=values)


def _embedding_matrix(embeddings: Sequence[npt.NDArray[np.float32] | None], n: int,
                      edim: int | None) -> tuple[F32 | None, U8]:
    has = np.fromiter((e is not None for e in embeddings), dtype=np.uint8, count=n)
    if edim is None or not has.any():
        return None, has
    matrix = np.zeros((n, edim), dtype=np.float32)
    for i, e in enumerate(embeddings):
        if e is not None:
            matrix[i] = e
    return l2_normalise_rows(matrix), has


def build_segment(
    analyzer: Analyzer, *, ids: Sequence[str], texts: Sequence[str],
    embeddings: Sequence[npt.NDArray[np.float32] | None], first_docnum: int, dim: int,
    embedding_dim: int | None, with_ngrams: bool = False,
) -> Segment:
    """Tokenize and index documents numbered ``first_docnum, first_docnum + 1, ...``."""
    n = len(ids)
    vocab: dict[str, int] = {}
    flat, starts = analyzer.term_ids(list(texts), vocab)
    return segment_of_terms(
        ids=ids, docnums=np.arange(first_docnum, first_docnum + n, dtype=np.int64), vocab=vocab,
        flat=flat, starts=starts, embeddings=embeddings, embedding_dim=embedding_dim,
        ngrams=ngram_postings(texts, dim) if with_ngrams else None)


def segment_of_terms(
    *, ids: Sequence[str], docnums: I64, vocab: dict[str, int], flat: I32, starts: I64,
    embeddings: Sequence[npt.NDArray[np.float32] | None] | None, embedding_dim: int | None,
    ngrams: Postings | None = None, has_embedding: U8 | None = None, with_forward: bool = True,
) -> Segment:
    """The segment of documents already tokenized: ``flat``/``starts`` as
    ``Analyzer.term_ids`` gives them, term ids of ``vocab`` (a term of ``vocab`` that no
    document has gets an empty column). ``has_embedding``, when given, says which documents
    have an embedding; ``embeddings`` may then be None when none has. Without
    ``with_forward`` the forward index is left to its first use (``Segment.forward``)."""
    n = len(ids)
    offsets, doc_ids, tfs, doc_lens = build_postings(flat, starts, len(vocab))
    terms = Postings(offsets=offsets, doc_ids=doc_ids, values=tfs)
    if has_embedding is not None and not has_embedding.any():
        matrix, has = None, has_embedding
    elif embeddings is None:
        raise ValueError("segment_of_terms: documents with embeddings need `embeddings`")
    else:
        matrix, has = _embedding_matrix(embeddings, n, embedding_dim)
    return Segment(
        ids=tuple(ids), docnums=docnums, vocab=vocab, terms=terms, doc_lens=doc_lens,
        df=np.diff(offsets).astype(np.int64),
        forward=_forward(terms, n) if with_forward else None, ngrams=ngrams,
        embeddings=matrix, has_embedding=has,
    )


def _merge_postings(parts: Sequence[tuple[Postings, I64, I64]], n_columns: int,
                    in_order: bool) -> Postings:
    """Merge postings whose columns were remapped (``colmap``) and docs renumbered (``docmap``,
    -1 for dropped documents). ``in_order``: every document of a part comes before every
    document of the next, so a stable sort by column alone keeps documents ascending."""
    # Counting sort by column in GIL-free kernels (kernels/merge.py): the same order as a stable
    # sort by column of the parts' postings, then by document when the parts interleave.
    counts = np.zeros(n_columns, dtype=np.int64)
    for postings, colmap, docmap in parts:
        count_kept(postings.offsets, postings.doc_ids, colmap, docmap, counts)
    offsets = np.zeros(n_columns + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    docs = np.empty(int(offsets[-1]), dtype=np.int32)
    values = np.empty(int(offsets[-1]), dtype=np.float32)
    cursor = offsets[:-1].copy()
    for postings, colmap, docmap in parts:
        scatter_kept(postings.offsets, postings.doc_ids, postings.values, colmap, docmap, cursor,
                     docs, values)
    if not in_order:
        sort_columns(offsets, docs, values)
    return Postings(offsets=offsets, doc_ids=docs, values=values)


def _without_empty_terms(vocab: dict[str, int], terms: Postings) -> tuple[dict[str, int], Postings]:
    """The vocabulary and postings without the terms no kept document has.

    A merge drops dead documents; the terms only they had must go too, or a persisted segment
    would carry the words of deleted (and purged) documents forever (docs/SECURITY.md). Columns
    are renumbered in their order, so the result is what a build of the survivors would number
    in first-seen order (the postings themselves are untouched: an empty column holds none).
    """
    counts = np.diff(terms.offsets)
    keep = counts > 0
    if bool(keep.all()):
        return vocab, terms
    kept = dict(zip(itertools.compress(vocab, keep.tolist()), range(int(keep.sum())), strict=True))
    offsets = np.concatenate([terms.offsets[:1], terms.offsets[1:][keep]])
    return kept, Postings(offsets=offsets, doc_ids=terms.doc_ids, values=terms.values)


# ``numbered_in_order`` reads this many ids per C-level call: a worker thread that checks a
# vocabulary of a million terms in one held the GIL ~40 ms, stalling every search.
_ORDER_PIECE = 20_000


def numbered_in_order(vocab: dict[str, int]) -> bool:
    """True when ``vocab``'s values are 0, 1, ... in its insertion order (as every build,
    merge and load makes them), checked a piece at a time."""
    ids = iter(vocab.values())
    for lo in range(0, len(vocab), _ORDER_PIECE):
        n = min(_ORDER_PIECE, len(vocab) - lo)
        if not np.array_equal(np.fromiter(itertools.islice(ids, n), np.int64, n),
                              np.arange(lo, lo + n)):
            return False
    return True


def _merged_vocabulary(segments: Sequence[Segment]) -> dict[str, int]:
    """Every term of ``segments`` in first-seen order, numbered 0, 1, ...

    The first segment's vocabulary is copied whole when it is numbered in order (one C-level
    copy), and only the terms it lacks are looked at in the others: the size-ratio merge policy
    merges small segments into a large one, whose vocabulary is most of the work otherwise, and
    all of it holds the GIL against the event loop.
    """
    if not segments:
        return {}
    first = segments[0].vocab
    vocab = dict(first) if numbered_in_order(first) else dict(zip(first, range(len(first)), strict=True))
    for seg in segments[1:]:
        new = list(itertools.filterfalse(vocab.__contains__, seg.vocab))
        vocab.update(zip(new, range(len(vocab), len(vocab) + len(new)), strict=True))
    return vocab


def _column_map(own: dict[str, int], vocab: dict[str, int], *, same_prefix: bool) -> I64:
    """For each column of a segment with vocabulary ``own``, its column in the merged
    ``vocab``. ``same_prefix``: ``own`` is the first segment's, whose terms keep their order at
    the start of ``vocab`` (so the map is that order, read without a dictionary lookup)."""
    n_terms = len(own)
    colmap = np.empty(n_terms, dtype=np.int64)
    positions = np.fromiter(own.values(), np.int64, n_terms)
    if same_prefix:
        colmap[positions] = np.arange(n_terms, dtype=np.int64)
    else:
        colmap[positions] = np.fromiter(map(vocab.__getitem__, own), np.int64, n_terms)
    return colmap


def ready_for_queries(segment: Segment, *, ids: bool = False, vectors: bool = True) -> Segment:
    """``segment``, with what the first query over it would derive made now: its length codes
    (``Segment.length_codes``), with ``vectors`` its vectors' int8 codes
    (``Segment.vector_codes``: a scan uses them once made; an open leaves them to the index
    builder's coding task, which makes them after the open: ~1.1 s at 1M rows of 384), and
    with ``ids`` its id array (what the plain lane reads the ids of a query's hits through when
    they all lie in this segment, index/lane.py). For the worker thread that built, merged or
    loaded it: on the event loop, the first query after a merge of 200k documents landed
    stalled every search ~13 ms for them."""
    segment.length_codes  # noqa: B018 - made once and kept by the segment
    if vectors:
        segment.make_vector_codes()
    if ids:
        segment.id_array  # noqa: B018
    return segment


def merge_segments(segments: Sequence[Segment], lives: Sequence[U8], *, dim: int,
                   embedding_dim: int | None, vector_codes: bool = True) -> Segment:
    """One segment holding the live documents of ``segments``, ordered by document number, and
    only the terms they use (so term statistics and the vocabulary are those of the survivors).

    The inputs may interleave (segments rebuilt at open can overlap persisted ones): documents
    are placed by their global number, so the result is the same whatever the input order.
    With ``vector_codes``, a result of enough vector rows gets its parts' int8 codes
    (``_merged_codes``); a segment made only to be written to a file does not need them.
    """
    vocab = _merged_vocabulary(segments)
    keeps = [live[: seg.n_docs].astype(bool) for seg, live in zip(segments, lives, strict=True)]
    keys = np.concatenate([seg.docnums[k] for seg, k in zip(segments, keeps, strict=True)]) \
        if segments else np.zeros(0, np.int64)
    perm = np.argsort(keys, kind="stable")
    in_order = bool(np.all(perm == np.arange(perm.size)))
    rank = np.empty(perm.size, dtype=np.int64)
    rank[perm] = np.arange(perm.size, dtype=np.int64)
    term_parts, gram_parts = [], []
    ids: list[str] = []
    lens, has, rows = [], [], []
    start = 0
    for seg, keep in zip(segments, keeps, strict=True):
        count = int(keep.sum())
        docmap = np.full(seg.n_docs, -1, dtype=np.int64)
        docmap[keep] = rank[start:start + count]
        start += count
        colmap = _column_map(seg.vocab, vocab, same_prefix=seg is segments[0])
        term_parts.append((seg.terms, colmap, docmap))
        gram_parts.append((seg.ngrams_if_built, np.arange(dim, dtype=np.int64), docmap))
        # C-level loops (here and for the vocabulary above): a merge runs in a worker thread,
        # and every Python-level step of it holds the GIL against the event loop. Merges of
        # 4 x 512 and 4 x 2048 documents (a 30k-word vocabulary) took 7-10% less time.
        ids.extend(seg.ids if count == seg.n_docs else itertools.compress(seg.ids, keep.tolist()))
        lens.append(seg.doc_lens[keep])
        has.append(seg.has_embedding[keep])
        if embedding_dim is not None:
            rows.append(seg.embeddings[keep] if seg.embeddings is not None
                        else np.zeros((count, embedding_dim), dtype=np.float32))
    terms = _merge_postings(term_parts, len(vocab), in_order)
    vocab, terms = _without_empty_terms(vocab, terms)
    n = len(ids)
    # The n-gram channel survives a merge only if every part had it built.
    ngrams = None
    if all(part[0] is not None for part in gram_parts):
        ngrams = _merge_postings(gram_parts, dim, in_order)  # type: ignore[arg-type]
    has_arr = np.concatenate(has)[perm] if has else np.zeros(0, np.uint8)
    matrix = None
    if embedding_dim is not None and has_arr.any():
        matrix = np.ascontiguousarray(np.concatenate(rows)[perm], dtype=np.float32)
    merged = Segment(
        ids=tuple(ids) if in_order else tuple(map(ids.__getitem__, perm.tolist())),
        docnums=keys[perm], vocab=vocab, terms=terms,
        doc_lens=(np.concatenate(lens)[perm] if lens else np.zeros(0, np.int32)).astype(np.int32),
        df=np.diff(terms.offsets).astype(np.int64), forward=_forward(terms, n),
        ngrams=ngrams, embeddings=matrix, has_embedding=has_arr,
    )
    if vector_codes and merged.vector_codes_due:
        merged._vector_codes.append(_merged_codes(segments, keeps, rows, perm))
    return merged


def _merged_codes(segments: Sequence[Segment], keeps: Sequence[npt.NDArray[np.bool_]],
                  rows: Sequence[F32], perm: I64) -> Quantized:
    """The merged rows' int8 codes (``quantize_rows`` of the merged matrix, row for row): each
    part's kept rows of the codes it has, the others' made (a small segment's, or zero rows),
    in the merged order. Codes are a row's alone, so the same arrays as coding the merged matrix
    again, at a fraction of its cost (~1.1 us a row of 384): a document is merged ~7-11 times
    in its life."""
    parts = []
    for seg, keep, kept_rows in zip(segments, keeps, rows, strict=True):
        built = seg.vector_codes_if_built
        parts.append(quantize_rows(kept_rows) if built is None
                     else tuple(column[keep] for column in built))
    codes, scales, errors, norms = (np.concatenate(column)[perm] for column in zip(*parts,
                                                                                   strict=True))
    return np.ascontiguousarray(codes), scales, errors, norms
