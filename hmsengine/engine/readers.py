"""Readers: ``search_documents`` over a snapshot, inline or in a worker thread.

A search takes the current snapshot and resolves its filters (``ids``, ``metadata``) in one
synchronous step, so the snapshot and the filters describe the same revision. The kernels then
run inline when the estimated work is small (a thread hop costs ~0.3 ms here, several whole
small queries; PERF-NOTES.md) and in a worker thread otherwise, so a large query never stalls
the event loop. The snapshot is immutable: the writer keeps committing meanwhile.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, TypeVar

import numpy as np
import trio

from ..errors import InvalidRequest
from ..index import lane
from ..index import search as executor
from ..kernels.filters import live_locals, mask_of, sorted_numbers
from ..kernels.ngram import ngram_query
from .indexer import Indexer
from .metaindex import canonical
from .values import Hit, check_id, check_metadata, check_text, lexical_hits, make_hit
from .vectors import check_query_embedding

MAX_K = 1000
MAX_QUERY_BYTES = 64 * 1024
# Above this much estimated work (``executor.prepare``: postings the lexical kernels are expected
# to read, vector entries, n-gram postings) a query goes to a worker thread. Calibrated on the
# 200k-document Zipf benchmark (bench/search.py) on a shared 2-core VM: queries estimated under
# it ran in at most ~0.7 ms inline (p99 ~0.55 ms), about 80% of those queries; a thread round
# trip costs 0.1-0.45 ms, as much as a whole small query (PERF-NOTES.md).
INLINE_WORK = 60_000
SEMANTIC_MODES = (None, "ngram")
# A snapshot whose unfolded tail holds at least this many documents gets the tail's query-time
# segment built in a worker thread before a search reads it (``tail_ready``): built inline, at
# ~4-5 us a document, it stalled every other task of the event loop (~0.1 s for the 24k-document
# tail a burst of 128 writers left at 200k documents). Below it, a thread hop (~0.1-0.4 ms)
# costs about as much as the build.
TAIL_INLINE_DOCS = 2048
# A query of at most this many characters, all ASCII, is within MAX_QUERY_BYTES unchecked.
_SHORT_QUERY = 4096
_FLOAT_MAX = sys.float_info.max
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")

_T = TypeVar("_T")


def _check_weight(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0:
        raise InvalidRequest(f"{field}: expected a finite number >= 0, got {value!r}")
    return float(value)


def build_query(indexer: Indexer, query: object, *, k: object, embedding: object, ids: object,
                metadata: object, semantic: object, lexical_weight: object,
                semantic_weight: object) -> executor.Query | None:
    """Validate a search and resolve its filters against the current snapshot.

    Returns None when the filters match nothing (the answer is ``[]``).
    """
    if not isinstance(query, str):
        raise InvalidRequest(f"query: expected a string, got {type(query).__name__}")
    check_text(query, "query", MAX_QUERY_BYTES)  # a lone surrogate is no query either
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidRequest(f"k: expected an integer from 1 to {MAX_K}, got {k!r}")
    if semantic not in SEMANTIC_MODES:
        raise InvalidRequest(f"semantic: expected None or 'ngram', got {semantic!r}")
    lw = _check_weight(lexical_weight, "lexical_weight")
    sw = _check_weight(semantic_weight, "semantic_weight")
    vector = check_query_embedding(embedding, indexer._core.table.embedding_dim)
    snap = indexer.snapshot
    allowed = picked = None
    if ids is not None or metadata is not None:
        if metadata is None and isinstance(ids, frozenset):
            resolved = _memoized(snap, ("ids", id(ids)), ids,
                                 lambda: _resolve_filter(indexer, snap, ids, None))
        elif ids is None:
            resolved = _resolve_metadata(indexer, snap, metadata)
        else:
            resolved = _resolve_filter(indexer, snap, ids, metadata)
        if resolved is None:
            return None
        allowed, picked = resolved
    ngram = None
    if semantic == "ngram":
        buckets, values = ngram_query(query, indexer.dim)
        ngram = (buckets, values.astype(np.float64))
    return executor.Query(
        terms=executor.query_terms(indexer.analyzer.query_terms(query)), k=k, embedding=vector,
        ngram=ngram, lexical_weight=lw, semantic_weight=sw, allowed=allowed, candidates=picked,
        dim=indexer.dim,
    )


# Resolved filters, per snapshot (``Snapshot.memo``, so they go with it): frozenset ids
# (immutable, so their identity stands for their content: the memory layer passes the same
# frozenset for repeated subject or entity filters) and metadata filters (by their canonical
# JSON: an application filters by the same few keys again and again). Resolving thousands of
# documents costs more than the search itself. The least recently used goes when full, so a
# stream of one-off filters does not push out the ones asked again and again.
FILTER_CACHE_SIZE = 64
Resolved = tuple[dict[int, np.ndarray] | None, dict[int, np.ndarray] | None]


def _memoized(snap: Any, key: tuple[str, object], keep: object,
              resolve: Callable[[], Resolved | None]) -> Resolved | None:
    """``resolve()``, remembered in ``snap``'s filter memo under ``key``. ``keep``: the object
    whose identity ``key`` names (held by the entry, so that its id stays unique), or None."""
    memo = snap.memo("filters")
    entry = memo.get(key)
    if entry is not None and entry[0] is keep:
        memo[key] = memo.pop(key)  # least recently used goes first, not first in
        found: Resolved | None = entry[1]
        return found
    resolved = resolve()
    memo[key] = (keep, resolved)
    while len(memo) > FILTER_CACHE_SIZE:
        del memo[next(iter(memo))]
    return resolved


def _resolve_metadata(indexer: Indexer, snap: Any, metadata: object) -> Resolved | None:
    """``_resolve_filter`` of a metadata filter alone, remembered per snapshot by its canonical
    JSON (``_memoized``): one that matches a quarter of 50k documents takes ~0.5 ms to resolve."""
    if not isinstance(metadata, Mapping):
        raise InvalidRequest("metadata: expected a JSON object of key: value to match")
    check_metadata(metadata)
    return _memoized(snap, ("metadata", canonical(dict(metadata))), None,
                     lambda: _resolve_filter(indexer, snap, None, metadata))


def _resolve_filter(indexer: Indexer, snap: Any, ids: object, metadata: object) -> Resolved | None:
    """(allowed masks, picked candidates) per view for an ids and/or metadata filter; None
    when it matches nothing."""
    docnum_of = indexer.docnum_of
    found = np.empty(0, dtype=np.int64)  # document numbers; repeats and -1 (not held) allowed
    if ids is not None:
        if isinstance(ids, (str, bytes)) or not isinstance(ids, (Sequence, AbstractSet)):
            raise InvalidRequest("ids: expected a list of document ids")
        listed = list(ids)
        try:
            found = docnum_of.get_many(listed)
        except TypeError:  # an unhashable value: named below
            found = np.full(len(listed), -1, dtype=np.int64)
        for n in np.flatnonzero(found < 0).tolist():
            doc_id = listed[n]
            if isinstance(doc_id, str) and doc_id in docnum_of:
                found[n] = docnum_of[doc_id]  # only after an unhashable value
            elif not isinstance(doc_id, str) or not doc_id or len(doc_id) > 128 or \
                    _UNSAFE.search(doc_id):
                # A stored id is valid by construction: only the others are checked.
                check_id(doc_id, f"ids[{n}]")
    if metadata is not None:
        if not isinstance(metadata, Mapping):
            raise InvalidRequest("metadata: expected a JSON object of key: value to match")
        check_metadata(metadata)
        numbers = indexer.docnums_with_metadata(dict(metadata))
        found = numbers if ids is None else found[np.isin(found, numbers) & (found >= 0)]
    # The rest in GIL-keeping kernels (kernels/filters.py): numpy gives the GIL away in each
    # call over ~500 elements, and beside a busy thread each such call waited up to 5 ms.
    wanted = sorted_numbers(found)
    if not wanted.size:
        return None
    per_view: dict[int, np.ndarray] = {}
    for v, view in enumerate(snap.views):
        local = live_locals(wanted, view.segment.docnums, view.live)
        if local.size:
            per_view[v] = local
    if not per_view:
        return None
    if wanted.size <= executor.SMALL_CANDIDATES:
        return None, per_view
    views = snap.views
    return {v: mask_of(ls, views[v].segment.n_docs) for v, ls in per_view.items()}, None


async def _ranked(indexer: Indexer, snap: Any, q: executor.Query,
                  prepared: executor.Prepared) -> tuple[list[str], list[executor.Scored]]:
    if prepared.work <= INLINE_WORK:
        scored = executor.run(snap, q, prepared, inline=True)
    else:
        scored = await trio.to_thread.run_sync(executor.run, snap, q, prepared)
    return _without_tombstones(indexer, snap.ids_of([s.docnum for s in scored]), scored)


def _without_tombstones(indexer: Indexer, ids: list[str],
                        values: list[_T]) -> tuple[list[str], list[_T]]:
    """``ids`` and their ``values`` without the tombstoned ids (the lists themselves when none
    is, the common case: one set test)."""
    tombstones = indexer._core.table.tombstones
    if tombstones and not tombstones.isdisjoint(ids):
        kept = [n for n, doc_id in enumerate(ids) if doc_id not in tombstones]
        return [ids[n] for n in kept], [values[n] for n in kept]
    return ids, values


def _plain(indexer: Indexer, query: object, k: object, lexical_weight: object,
           semantic_weight: object) -> tuple[list[str], list[float]] | None:
    """The plain lane's (ids, scores) for a query with no vector, n-grams or filter
    (``lane.PlainLane.top``, tombstoned ids left out), or None when it is not the lane's: a k
    above ``lane.LANE_MAX_K``, too much work to run inline, or the kernels not warm yet (the
    caller waits for them, ``kernels_warm``, and asks again). Validates as ``build_query`` does."""
    if indexer.warming is not None:
        return None
    # The common arguments checked in a few comparisons (a short ASCII string, an int k, float
    # weights: NaN and infinities fail the range test); anything else the full way.
    if query.__class__ is not str or len(query) > _SHORT_QUERY or not query.isascii():
        if not isinstance(query, str):
            raise InvalidRequest(f"query: expected a string, got {type(query).__name__}")
        check_text(query, "query", MAX_QUERY_BYTES)
    if k.__class__ is not int or not 1 <= k <= lane.LANE_MAX_K:
        return None  # build_query validates it
    if lexical_weight.__class__ is not float or not 0.0 <= lexical_weight <= _FLOAT_MAX:
        _check_weight(lexical_weight, "lexical_weight")
    if semantic_weight.__class__ is not float or not 0.0 <= semantic_weight <= _FLOAT_MAX:
        _check_weight(semantic_weight, "semantic_weight")
    found = lane.plain_lane(indexer.snapshot).top(indexer.analyzer.query_terms(query), k,
                                                  INLINE_WORK)
    return None if found is None else _without_tombstones(indexer, *found)


def plain_hits(indexer: Indexer, query: object, k: object, lexical_weight: object,
               semantic_weight: object) -> list[Hit] | None:
    """``search_documents`` of a query with no vector, n-grams or filter, when the plain lane
    answers it (``_plain``); else None (the caller then awaits ``search_documents``).
    Synchronous: the common search costs no coroutine here."""
    found = _plain(indexer, query, k, lexical_weight, semantic_weight)
    if found is None:
        return None
    return lexical_hits(*found)


def plain_pairs(indexer: Indexer, query: object, k: object, lexical_weight: object,
                semantic_weight: object) -> list[tuple[str, float]] | None:
    """``plain_hits`` as ``search_ids`` gives it: (id, score) pairs."""
    found = _plain(indexer, query, k, lexical_weight, semantic_weight)
    return None if found is None else list(zip(*found, strict=True))


async def tail_ready(indexer: Indexer) -> None:
    """Build the current snapshot's tail segment in a worker thread (``TAIL_INLINE_DOCS``);
    the engine's search methods call this when ``Snapshot.tail_pending`` reaches it. Tail
    segments are built thread-safely (``index/tailterms.py``); a snapshot that a commit
    replaced meanwhile shares the documents already analyzed."""
    snap = indexer.snapshot
    await trio.to_thread.run_sync(snap.tail_view)


async def kernels_warm(indexer: Indexer) -> None:
    """Wait, in a worker thread, for the kernel warm-up the open started, once: a search runs
    its kernels inline on the event loop, where loading one from numba's cache (tens of ms
    each) would stall every other task."""
    warming = indexer.warming
    if warming is not None:
        await trio.to_thread.run_sync(warming.wait)
        indexer.warming = None


async def search_ranked(indexer: Indexer, query: object, *, k: object, embedding: object,
                        ids: object, metadata: object, semantic: object, lexical_weight: object,
                        semantic_weight: object) -> tuple[list[str], list[float]]:
    """The ids and fused scores of a search, best first (``search_documents`` without its Hit
    values); tombstoned ids left out (no text, no embedding: one could only surface with a zero
    score). The engine asks the plain lane first (``plain_pairs``); it is asked again here only
    when it declined because the kernels were not warm yet."""
    if indexer.warming is not None:
        await kernels_warm(indexer)
        if embedding is None and ids is None and metadata is None and semantic is None:
            found = _plain(indexer, query, k, lexical_weight, semantic_weight)
            if found is not None:
                return found
    snap = indexer.snapshot
    q = build_query(indexer, query, k=k, embedding=embedding, ids=ids, metadata=metadata,
                    semantic=semantic, lexical_weight=lexical_weight,
                    semantic_weight=semantic_weight)
    if q is None:
        return [], []
    found_ids, scored = await _ranked(indexer, snap, q, executor.prepare(snap, q))
    return found_ids, [s.score for s in scored]


async def search_documents(indexer: Indexer, query: object, *, k: object, embedding: object,
                           ids: object, metadata: object, semantic: object,
                           lexical_weight: object, semantic_weight: object) -> list[Hit]:
    """``Engine.search_documents``: the plain lane when the query is its (most are), else the
    general path (``build_query``, ``executor.prepare``, ``executor.run``). The engine asks the
    plain lane first (``plain_hits``); it is asked again here only when it declined because the
    kernels were not warm yet."""
    if indexer.warming is not None:
        await kernels_warm(indexer)
        if embedding is None and ids is None and metadata is None and semantic is None:
            hits = plain_hits(indexer, query, k, lexical_weight, semantic_weight)
            if hits is not None:
                return hits
    snap = indexer.snapshot
    q = build_query(indexer, query, k=k, embedding=embedding, ids=ids, metadata=metadata,
                    semantic=semantic, lexical_weight=lexical_weight,
                    semantic_weight=semantic_weight)
    if q is None:
        return []
    prepared = executor.prepare(snap, q)
    if executor.lexical_only(q) and prepared.work <= INLINE_WORK:
        # A larger k than the plain lane takes: lists from the kernel's buffers, Hits made
        # directly (a Scored tuple per hit and a second pass cost ~8 us a query).
        docnums, scores = executor.run_lexical(snap, q, prepared, inline=True)
        found_ids = snap.ids_of(docnums)
        tombstones = indexer._core.table.tombstones
        return [make_hit(doc_id, score, score, None)
                for doc_id, score in zip(found_ids, scores, strict=True)
                if not tombstones or doc_id not in tombstones]
    found_ids, scored = await _ranked(indexer, snap, q, prepared)
    return [make_hit(doc_id, s.score, s.lexical, s.semantic)
            for doc_id, s in zip(found_ids, scored, strict=True)]
