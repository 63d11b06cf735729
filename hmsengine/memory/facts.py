"""The cache of recently read facts, shared by every ``Memory`` over one engine.

A recall whose hits were read before costs little more than the search itself: their facts come
from here (one dictionary lookup each) instead of ``get_documents``. Exact by construction: the
commit listener (core.EngineState) drops whatever a committed change can alter.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any

import attrs

from ..engine import Change
from .index import MemoryIndex
from .values import Fact

# The shared cache of recently read facts is bounded by an estimate of the bytes it holds, not
# by a count, so short facts are many and long ones few: 8 MiB holds ~13,000 facts of 24 words
# (~650 B each), the hits of a few thousand distinct recalls. At most this much RAM per engine,
# and none until facts are read. One fact larger than an eighth of it is not cached.
FACT_CACHE_BYTES = 8 << 20
# Per cached fact, beside its text, id, embedding and metadata: the Fact object (17 slots) and
# the cache's own entry (ordered-dict node, size record): ~350 B measured with tracemalloc.
FACT_OVERHEAD_BYTES = 360


def _json_bytes(value: Any) -> int:
    """An estimate of the memory held by a JSON-like value (dicts, lists and scalars)."""
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        for k, v in value.items():
            size += sys.getsizeof(k) + _json_bytes(v)
    elif isinstance(value, list):
        for v in value:
            size += _json_bytes(v)
    return size


def fact_bytes(fact: Fact) -> int:
    """The estimated bytes a cached ``fact`` holds (its stamp's tuples are the index's)."""
    size = FACT_OVERHEAD_BYTES + sys.getsizeof(fact.text) + sys.getsizeof(fact.id)
    if fact.embedding is not None:
        size += sys.getsizeof(fact.embedding) + 24 * len(fact.embedding)  # a float is 24 B
    if fact.metadata is not None:
        size += _json_bytes(fact.metadata)
    return size


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (what a fact's metadata is): dicts and lists are copied,
    scalars (immutable) shared; several times faster than ``copy.deepcopy``."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def with_own_metadata(fact: Fact, metadata: dict[str, Any]) -> Fact:
    """``fact`` with its own copy of ``metadata`` (the one mutable part of a Fact)."""
    return attrs.evolve(fact, metadata=copy_json(metadata))


class FactCache:
    """Recently read facts (immutable values), at most ``limit`` estimated bytes
    (``fact_bytes``), the first read first out.

    A hit costs one dictionary lookup (recall's hot path makes ``k`` of them per call), so a hit
    does not reorder: a fact read often is read again once per cache-full of new facts.

    Exact by construction: ``invalidate`` runs in the commit listener and drops every fact a
    committed change can alter (the changed id itself, and the facts whose ``supersedes`` names
    it, since a Fact lists only the links to facts that exist); the reader caches a fact only
    if nothing was committed while it read. A cached fact's metadata is never handed out:
    readers get copies.
    """

    def __init__(self, limit: int = FACT_CACHE_BYTES) -> None:
        self.limit = limit
        self.bytes = 0
        self.facts: OrderedDict[str, Fact] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self.facts)

    def pop(self, doc_id: str) -> None:
        if self.facts.pop(doc_id, None) is not None:
            self.bytes -= self._sizes.pop(doc_id)

    def clear(self) -> None:
        self.facts.clear()
        self._sizes.clear()
        self.bytes = 0

    def put(self, fact: Fact) -> None:
        self.pop(fact.id)
        size = fact_bytes(fact)
        if size > self.limit >> 3:
            return
        facts, sizes = self.facts, self._sizes
        facts[fact.id] = fact
        sizes[fact.id] = size
        self.bytes += size
        while self.bytes > self.limit:
            oldest, _ = facts.popitem(last=False)
            self.bytes -= sizes.pop(oldest)

    def invalidate(self, index: MemoryIndex, changes: list[Change]) -> None:
        """Drop what ``changes`` (already applied to ``index``) may have altered."""
        if not self.facts:
            return
        successors = index.successors
        for change in changes:
            self.pop(change.id)
            for successor in successors.get(change.id, ()):
                self.pop(successor)
