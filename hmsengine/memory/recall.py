"""recall and explain: document search, then the temporal filter and the policies.

The default path: with nothing in the store that can make a fact non-current (no validity
window, no supersession link, no policy-linked slot), no recency policy, no ``known_at``, no
filter, and ``history`` current or all, recall asks ``search_documents`` for exactly ``k`` results
with the caller's options and returns its scores unmodified.

Otherwise it asks for ``candidate_limit`` candidates (at most 1000 examined, never fewer than
``k``; exactly ``k`` when only a subject, entity or namespace filter applies to a store where
every fact is current), restricted to the ids that match subject, entity, namespace, and kinds
when they select few facts (the filtered search path); a broad kinds restriction (everything but episodes) is
checked on the candidates instead. It drops what ``known_at`` hides and what the ``history``
mode excludes, multiplies
each score by the recency and historical multipliers, and returns the best ``k`` (ties keep
search's order).

An explanation is computed only when asked, from the same numbers: its ``score`` equals the hit's.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..clock import to_ms
from ..config import KINDS
from ..engine.values import check_embedding
from ..errors import InvalidRequest, NotFound
from .values import Explanation, RecallHit

if TYPE_CHECKING:
    from .memory import Memory

HISTORY = ("current", "all", "historical")
DEFAULT_KINDS = ("fact", "profile", "procedure")
MAX_CANDIDATES = 1000
NOT_SEARCHABLE = ("file-backed fact without a summary: stored but not searchable "
                  "(search sees only a summary; remember the file again with summary=...)")
_OPTIONS = {"k", "as_of", "known_at", "history", "subject", "entity", "namespace", "kinds",
            "embedding", "candidate_limit", "explain"}


class _Plan:
    """Validated recall options."""

    def __init__(self, memory: Memory, options: dict[str, Any]) -> None:
        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            raise InvalidRequest(f"{unknown[0]}: unknown option")
        k = options.get("k", 10)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_CANDIDATES:
            raise InvalidRequest(f"k: expected an integer from 1 to {MAX_CANDIDATES}, got {k!r}")
        limit = options.get("candidate_limit", 100)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_CANDIDATES:
            raise InvalidRequest(f"candidate_limit: expected an integer from 1 to {MAX_CANDIDATES}, "
                                 f"got {limit!r}")
        history = options.get("history", "current")
        if history not in HISTORY:
            raise InvalidRequest(f"history: expected one of {', '.join(HISTORY)}, got {history!r}")
        kinds = options.get("kinds")
        if kinds is None:
            kinds_t: tuple[str, ...] = DEFAULT_KINDS
        else:
            if not isinstance(kinds, (str, list, tuple, set, frozenset)):
                raise InvalidRequest(f"kinds: expected a kind or a tuple of kinds, got {kinds!r}")
            kinds_t = (kinds,) if isinstance(kinds, str) else tuple(kinds)
            if not kinds_t:
                raise InvalidRequest("kinds: an empty tuple selects nothing", hint="omit it for the default")
            for kind in kinds_t:
                if kind not in KINDS:
                    raise InvalidRequest(f"kinds: unknown kind {kind!r}")
        for name in ("subject", "entity", "namespace"):
            value = options.get(name)
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidRequest(f"{name}: expected a non-empty string")
        self.k = k
        self.limit = max(limit, k)
        self.history = history
        self.kinds = frozenset(kinds_t)
        self.subject = options.get("subject")
        self.entity = options.get("entity")
        self.namespace = options.get("namespace")
        known_at = options.get("known_at")
        self.known_at = None if known_at is None else to_ms(known_at, field="known_at")
        self.as_of = None if options.get("as_of") is None else to_ms(options["as_of"], field="as_of")
        self.t = self.as_of if self.as_of is not None else memory.engine.now()
        self.embedding = options.get("embedding")
        if self.embedding is not None:
            check_embedding(self.embedding, "embedding")
        self.explain = bool(options.get("explain", False))


# A kinds restriction selecting at most this share of the facts becomes an ids filter (the exact
# filtered search path); a broader one (the usual case: everything but episodes) is applied to
# the ranked candidates instead, so a recall never builds an id set the size of the store.
KINDS_AS_IDS_SHARE = 0.1


def _allowed_ids(memory: Memory, plan: _Plan) -> tuple[frozenset[str] | set[str] | None, bool]:
    """(ids that pass subject/entity/namespace and perhaps kinds, or None when nothing
    restricts; whether kinds must still be checked on the candidates)."""
    index = memory.index
    sets: list[frozenset[str] | set[str]] = []
    if plan.subject is not None:
        sets.append(index.frozen("subject", plan.subject))
    if plan.entity is not None:
        sets.append(index.frozen("entity", plan.entity))
    total = sum(index.kind_counts.values())
    wanted = sum(count for kind, count in index.kind_counts.items() if kind in plan.kinds)
    kinds_matter = wanted < total
    if plan.namespace is not None or (kinds_matter and not sets and wanted <= KINDS_AS_IDS_SHARE * total):
        sets.append({i for i, s in index.facts.items()
                     if s.kind in plan.kinds and (plan.namespace is None or s.namespace == plan.namespace)})
        kinds_matter = False
    if not sets:
        return None, kinds_matter
    if len(sets) == 1:
        return sets[0], kinds_matter  # a shared frozenset: search caches what it resolved
    sets.sort(key=len)
    return set(sets[0].intersection(*sets[1:])), kinds_matter


def _multipliers(memory: Memory, doc_id: str, status: str, plan: _Plan) -> tuple[float, float]:
    s = memory.index.facts[doc_id]
    recency = 1.0
    policy = memory.config.recency
    if policy.kind == "exponential" and policy.half_life_ms:
        when = s.event_time if s.event_time is not None else (
            s.valid_from if s.valid_from is not None else s.ingest_time)
        recency = math.pow(0.5, max(0, plan.t - when) / policy.half_life_ms)
    historical = memory.config.historical_multiplier if status != "current" else 1.0
    return recency, historical


async def _query_vector(memory: Memory, query: str, embedding: Any) -> Any:
    if embedding is None and memory.embedder is not None:
        vectors = await memory._embed([query])
        return vectors[0] if vectors else None
    return embedding


async def recall(memory: Memory, query: str, **options: Any) -> list[RecallHit]:
    if not isinstance(query, str):
        raise InvalidRequest(f"query: expected a string, got {type(query).__name__}")
    plan = _Plan(memory, options)
    scored = await _rank(memory, query, plan)
    out = []
    for rank, (doc_id, score, status, hit) in enumerate(scored[: plan.k], start=1):
        fact = await memory.fact(doc_id)
        if fact is None:  # forgotten while we ranked
            continue
        explanation = _explanation(memory, query, plan, doc_id, hit, status, rank, score,
                                   fact.text) if plan.explain else None
        out.append(RecallHit(fact=fact, score=score, status=status, explanation=explanation))
    return out


async def _rank(memory: Memory, query: str, plan: _Plan) -> list[tuple[str, float, str, Any]]:
    """(id, score, status, search hit) of every surviving candidate, best first."""
    index = memory.index
    embedding = await _query_vector(memory, query, plan.embedding)
    plan.embedding = embedding
    allowed, check_kinds = _allowed_ids(memory, plan)
    # Nothing can drop or re-weight a candidate: every fact is current, no known_at, no
    # recency; search's own top k (filtered by ids when asked) is the answer.
    plain = (not check_kinds and plan.known_at is None and plan.history != "historical"
             and memory.config.recency.kind == "none" and not index.is_temporal(memory.slot_policy))
    if plain and allowed is None:
        hits = await memory.engine.search_documents(query, k=plan.k, embedding=embedding,
                                                    semantic_weight=memory.config.semantic_weight)
        return [(h.id, h.score, "current", h) for h in hits]
    if allowed is not None and not allowed:
        return []
    hits = await memory.engine.search_documents(
        query, k=plan.k if plain else min(plan.limit, MAX_CANDIDATES), embedding=embedding,
        ids=allowed, semantic_weight=memory.config.semantic_weight)
    ranked = []
    for position, h in enumerate(hits):
        if not index.visible(h.id, plan.known_at):
            continue
        if check_kinds and index.facts[h.id].kind not in plan.kinds:
            continue
        status = index.status(h.id, plan.t, plan.known_at, memory.slot_policy)
        if (plan.history == "current" and status != "current") or \
                (plan.history == "historical" and status == "current"):
            continue
        recency, historical = _multipliers(memory, h.id, status, plan)
        ranked.append((h.score * recency * historical, position, h.id, status, h))
    ranked.sort(key=lambda r: (-r[0], r[1]))
    return [(doc_id, score, status, h) for score, _, doc_id, status, h in ranked]


def _explanation(memory: Memory, query: str, plan: _Plan, doc_id: str, hit: Any, status: str,
                 rank: int | None, score: float | None, text: str) -> Explanation:
    s = memory.index.facts[doc_id]
    recency, historical = _multipliers(memory, doc_id, status, plan)
    fused = plan.embedding is not None
    terms = set(memory.engine.analyze(query))
    return Explanation(
        id=doc_id,
        lexical=None if hit is None else hit.lexical,
        semantic=None if hit is None else hit.semantic,
        fusion="rrf" if fused else "bm25",
        weights={"lexical": 1.0, "semantic": memory.config.semantic_weight} if fused else {"lexical": 1.0},
        matched_terms=tuple(sorted(terms & set(memory.engine.analyze(text)))),
        recency_multiplier=recency, historical_multiplier=historical, status=status,
        evaluated_at=plan.t, valid_from=s.valid_from, valid_to=s.valid_to, rank=rank,
        chain=memory.index.chain(doc_id, memory.slot_policy), score=score,
        known=memory.index.visible(doc_id, plan.known_at),
        note=(NOT_SEARCHABLE if s.file is not None and not s.file[7] else None),
    )


async def explain(memory: Memory, query: str, doc_id: str, **options: Any) -> Explanation:
    if not isinstance(query, str):
        raise InvalidRequest(f"query: expected a string, got {type(query).__name__}")
    if not isinstance(doc_id, str) or doc_id not in memory.index.facts:
        raise NotFound(f"no fact {doc_id!r}")
    options = {**options, "explain": False}
    plan = _Plan(memory, options)
    scored = await _rank(memory, query, plan)
    fact = await memory.fact(doc_id)
    if fact is None:
        raise NotFound(f"no fact {doc_id!r}")
    for rank, (found, score, status, hit) in enumerate(scored[: plan.k], start=1):
        if found == doc_id:
            return _explanation(memory, query, plan, doc_id, hit, status, rank, score, fact.text)
    # Not among the results: score it alone, with the same search and multipliers.
    status = memory.index.status(doc_id, plan.t, plan.known_at, memory.slot_policy)
    hits = await memory.engine.search_documents(query, k=1, embedding=plan.embedding, ids=[doc_id],
                                                semantic_weight=memory.config.semantic_weight)
    hit = hits[0] if hits else None
    alone: float | None = None
    if hit is not None:
        recency, historical = _multipliers(memory, doc_id, status, plan)
        alone = hit.score * recency * historical
    return _explanation(memory, query, plan, doc_id, hit, status, None, alone, fact.text)
