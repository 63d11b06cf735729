"""Numba kernels: pure functions over contiguous numpy arrays, compiled ``nogil`` and cached.

BM25 and sparse dot-product scoring over CSR postings (``bm25``, pruned per segment in
``pruning``, over every segment of a snapshot in one call in ``lane`` through a table of array
addresses, ``address``; a segment's length norms read per document or by length, ``norms``),
deterministic top-k (``topk``), brute-force cosine (``cosine``, and the same top k read
first through int8 codes of the rows: ``quantized``), hashed character n-grams
(``ngram``), the ASCII batch tokenizer the analyzer indexes with (``tokenize``), a merge's
postings by a counting sort (``merge``) and a search filter's documents per view (``filters``).
``reference`` holds slow plain-numpy versions that the tests compare the kernels against.
Every result is bit-for-bit reproducible and ties break by document (row) number ascending.
This package never imports trio.
"""

from hmsengine.kernels.bm25 import (
    K1,
    K1_PLUS_1,
    B,
    bm25_accumulate,
    bm25_bound,
    bm25_idf,
    bm25_norm,
    bm25_norms,
    bm25_score_docs,
    bm25_term,
    build_postings,
    new_scratch,
    sparse_accumulate,
    sparse_score_docs,
)
from hmsengine.kernels.cosine import cosine_topk, l2_normalise, l2_normalise_rows
from hmsengine.kernels.jit import jit
from hmsengine.kernels.ngram import (
    csr_transpose,
    ngram_features,
    ngram_query,
    ngram_vectors,
    normalise_text,
)
from hmsengine.kernels.topk import merge_topk, reset_touched, topk_touched
from hmsengine.kernels.warmup import warm_up

__all__ = [
    "K1",
    "K1_PLUS_1",
    "B",
    "bm25_accumulate",
    "bm25_bound",
    "bm25_idf",
    "bm25_norm",
    "bm25_norms",
    "bm25_score_docs",
    "bm25_term",
    "build_postings",
    "cosine_topk",
    "csr_transpose",
    "jit",
    "l2_normalise",
    "l2_normalise_rows",
    "merge_topk",
    "new_scratch",
    "ngram_features",
    "ngram_query",
    "ngram_vectors",
    "normalise_text",
    "reset_touched",
    "sparse_accumulate",
    "sparse_score_docs",
    "topk_touched",
    "warm_up",
]
