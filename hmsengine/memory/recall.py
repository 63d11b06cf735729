"""recall and explain: document search, then the temporal filter and the policies.

The default path: with nothing in the store that can make a fact non-current (no validity
window, no supersession link, no policy-linked slot), no episode, no recency or importance
policy, no ``known_at``, no filter, and ``history`` current or all, recall asks search
(``search_ids``: the ranking of ``search_documents`` without its Hit values) for exactly ``k``
results with the caller's options and returns its scores unmodified; the facts of the hits are
read in one batch (``Memory.facts``: a shared cache, then one ``get_documents``).

Otherwise it considers ``candidate_limit`` candidates (at most 1000 examined, never fewer than
``k``; exactly ``k`` when only a subject, entity or namespace filter applies to a store where
every fact is current), restricted to the ids that match subject, entity, namespace, and kinds
when they select few facts (the filtered search path); a broad kinds restriction (everything but
episodes) is checked on the candidates instead. It drops what ``known_at`` hides and what the
``history`` mode excludes, multiplies each score by the recency, historical and importance
multipliers, and returns the best ``k`` (ties keep search's order). When no multiplier can
reorder the survivors (no recency or importance policy, no query embedding, one historical
multiplier for all of them) those are search's first ``k`` survivors, so it asks search for
``3 k`` candidates first and for all of them only if fewer than ``k`` of those survive: the same
answer, from fewer candidates.

An explanation is computed only when asked, from the same numbers: its ``score`` equals the hit's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..clock import to_ms
from ..engine import MAX_QUERY_BYTES, check_embedding, check_id, check_text
from ..errors import InvalidRequest, NotFound
from .config import KINDS
from .core import MemoryCore
from .inputs import MAX_NAME
from .policies import FactInfo, multiplier, policy_failed
from .values import Explanation, RecallHit, cached_recall_hits, recall_hit

HISTORY = ("current", "all", "historical")
DEFAULT_KINDS = ("fact", "profile", "procedure")
MAX_CANDIDATES = 1000
NOT_SEARCHABLE = ("file-backed fact without a summary: stored but not searchable "
                  "(search sees only a summary; remember the file again with summary=...)")


class RecallOptions(NamedTuple):
    """The options of ``recall`` and ``explain`` as the caller gave them (``Memory.recall``
    documents them); ``_Plan`` validates them. A named tuple: one is made per recall, and it
    costs a quarter of a frozen attrs value's construction (~0.6 against ~2.5 us)."""

    k: Any = 10
    as_of: Any = None
    known_at: Any = None
    history: Any = "current"
    subject: Any = None
    entity: Any = None
    namespace: Any = None
    kinds: Any = None
    embedding: Any = None
    candidate_limit: Any = 100
    explain: Any = False

    def default_path(self) -> bool:
        """No option but ``k``, ``history``, ``candidate_limit`` and ``explain``: recall may be
        plainly search (see ``_default_k``)."""
        return (self.as_of is None and self.known_at is None and self.subject is None
                and self.entity is None and self.namespace is None and self.kinds is None
                and self.embedding is None)


def unknown_option(names: Any) -> InvalidRequest:
    """The error for options recall does not have (the facade's ``**unknown``)."""
    return InvalidRequest(f"{sorted(names)[0]}: unknown option")


class _Plan:
    """Validated recall options."""

    def __init__(self, core: MemoryCore, options: RecallOptions) -> None:
        k = options.k
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_CANDIDATES:
            raise InvalidRequest(f"k: expected an integer from 1 to {MAX_CANDIDATES}, got {k!r}")
        limit = options.candidate_limit
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_CANDIDATES:
            raise InvalidRequest(f"candidate_limit: expected an integer from 1 to {MAX_CANDIDATES}, "
                                 f"got {limit!r}")
        history = options.history
        if history not in HISTORY:
            raise InvalidRequest(f"history: expected one of {', '.join(HISTORY)}, got {history!r}")
        kinds = options.kinds
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
            value = getattr(options, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidRequest(f"{name}: expected a non-empty string")
            if value is not None:
                check_text(value, name)
                if len(value) > MAX_NAME:  # no stored name is longer: refused, as remember does
                    raise InvalidRequest(f"{name}: longer than {MAX_NAME} characters")
        self.k = k
        self.limit = max(limit, k)
        self.history = history
        self.kinds = frozenset(kinds_t)
        self.subject = options.subject
        self.entity = options.entity
        self.namespace = options.namespace
        known_at = options.known_at
        self.known_at = None if known_at is None else to_ms(known_at, field="known_at")
        self.as_of = None if options.as_of is None else to_ms(options.as_of, field="as_of")
        # Retention is evaluated on the clock, whatever as_of says (memory/retention.py).
        self.now = core.engine.now()
        self.t = self.as_of if self.as_of is not None else self.now
        self.embedding = options.embedding
        if self.embedding is not None:
            vector = check_embedding(self.embedding, "embedding")
            dim = core.engine.statistics().embedding_dim
            # Checked here, not only by search: a recall whose filters leave no candidate never
            # searches, and must refuse the same vectors as one that does.
            if vector is not None and dim is not None and vector.shape[0] != dim:
                raise InvalidRequest(f"embedding: {vector.shape[0]} dimensions, but this "
                                     f"store's embeddings have {dim}")
        explain = options.explain
        if not isinstance(explain, bool):  # "false" (a string) is true: refused, not guessed
            raise InvalidRequest(f"explain: expected true or false, got {explain!r}")
        self.explain = explain


# A kinds restriction selecting at most this share of the facts becomes an ids filter (the exact
# filtered search path); a broader one (the usual case: everything but episodes) is applied to
# the ranked candidates instead, so a recall never builds an id set the size of the store.
KINDS_AS_IDS_SHARE = 0.1


# A subject or entity with at most this many facts goes to search as a list of ids, not as the
# index's shared frozenset. Search keeps what it resolved for a frozenset in a small cache (64
# filters, first in first out); a stream of distinct subject filters (a fact's few versions
# each) would push out the entities' (5,000 ids at 100k facts: ~1.8 ms to resolve) every time.
# Resolving a small set again costs tens of microseconds (mostly fixed), and it would seldom be
# found in that cache anyway once many distinct subjects pass through.
SHARED_FILTER_MIN_IDS = 16


def _allowed_ids(core: MemoryCore, plan: _Plan) -> tuple[frozenset[str] | set[str] | list[str] | None,
                                                        bool]:
    """(ids that pass subject/entity/namespace and perhaps kinds, or None when nothing
    restricts; whether kinds must still be checked on the candidates)."""
    index = core.index
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
        only = sets[0]
        if isinstance(only, frozenset) and len(only) <= SHARED_FILTER_MIN_IDS:
            return list(only), kinds_matter
        return only, kinds_matter  # a shared frozenset: search caches what it resolved
    sets.sort(key=len)
    return set(sets[0].intersection(*sets[1:])), kinds_matter


def _multipliers(core: MemoryCore, doc_id: str, status: str,
                 plan: _Plan) -> tuple[float, float, float]:
    """(recency, historical, importance) multipliers of a candidate's score; the policies'
    answers checked (memory/policies.py), 1.0 where a policy changes nothing."""
    recency = importance = 1.0
    if core.recency is not None or core.importance is not None:
        info = FactInfo(doc_id, core.index.facts[doc_id])
        if core.recency is not None:
            recency = _policy_multiplier("recency", core.recency, info, plan.t)
        if core.importance is not None:
            importance = _policy_multiplier("importance", core.importance, info)
    historical = core.config.historical_multiplier if status != "current" else 1.0
    return recency, historical, importance


def _policy_multiplier(kind: str, policy: Any, *args: Any) -> float:
    try:
        value = policy.multiplier(*args)
    except Exception as exc:
        raise policy_failed(kind, policy, exc) from exc
    return multiplier(kind, policy, value)


async def _query_vector(core: MemoryCore, query: str, embedding: Any) -> Any:
    if embedding is None and (core.embedder is not None or core.embedder_problem is not None):
        vectors = await core.embed([query])
        return vectors[0] if vectors else None
    return embedding


def _default_k(core: MemoryCore, options: RecallOptions) -> int | None:
    """``k`` when recall is plainly search (the module docstring's default path) and no option
    asks for more (``history`` current or all, no explanation, valid ``k`` and
    ``candidate_limit``): then no plan is built. None otherwise (the plan validates and
    decides)."""
    if not options.default_path():
        return None
    k = options.k
    limit = options.candidate_limit
    if k.__class__ is not int or not 1 <= k <= MAX_CANDIDATES or limit.__class__ is not int \
            or not 1 <= limit <= MAX_CANDIDATES or options.explain \
            or options.history not in ("current", "all"):
        return None
    return int(k) if _store_is_plain(core) else None


def _store_is_plain(core: MemoryCore) -> bool:
    """Whether nothing about ``core`` and its store can make recall differ from search: no
    embedder (or embedder problem), no recency or importance policy, no episode, nothing
    temporal (``MemoryIndex.is_temporal``)."""
    index = core.index
    return not (core.embedder is not None or core.embedder_problem is not None
                or core.recency is not None or core.importance is not None
                or index.kind_counts.get("episode") or index.is_temporal(core.slot_policy))


async def default_recall(core: MemoryCore, query: object, k: int) -> list[RecallHit] | None:
    """``recall(query, k=k)`` with every other option at its default, when the store makes
    that plainly search (the default path); None when it does not (the caller then runs
    ``recall``). ``k`` must be an int in 1..MAX_CANDIDATES (``Memory.recall`` checks)."""
    if not isinstance(query, str):
        raise InvalidRequest(f"query: expected a string, got {type(query).__name__}")
    if not _store_is_plain(core):
        return None
    pairs = await core.engine.search_ids(query, k=k, semantic_weight=core.config.semantic_weight)
    out = _cached_hits(core, pairs)
    return out if out is not None else await _read_hits(core, pairs)


async def _current_hits(core: MemoryCore, hits: list[tuple[str, float]]) -> list[RecallHit]:
    """The RecallHits (status current, search's scores) of ``(id, score)`` hits; a fact forgotten
    while we read is left out. Straight from the shared cache when every fact is there (most of
    what default recall adds to the search), else through ``core.facts``."""
    out = _cached_hits(core, hits)
    return out if out is not None else await _read_hits(core, hits)


def _cached_hits(core: MemoryCore, hits: list[tuple[str, float]]) -> list[RecallHit] | None:
    """The current RecallHits of ``hits`` from the shared fact cache, or None unless every
    fact is there (counted as cache hits)."""
    cache = core.state.facts
    out = cached_recall_hits(hits, cache.facts, "current")
    if out is not None:
        cache.hits += len(out)
    return out


async def _read_hits(core: MemoryCore, hits: list[tuple[str, float]]) -> list[RecallHit]:
    facts = await core.facts([doc_id for doc_id, _ in hits])
    return [recall_hit(fact, score, "current")
            for (_, score), fact in zip(hits, facts, strict=True) if fact is not None]


def _check_query(query: object) -> None:
    """The query as search checks it (a string of at most ``MAX_QUERY_BYTES`` of UTF-8), checked
    before any shortcut can answer without searching (a filter that matches nothing)."""
    if not isinstance(query, str):
        raise InvalidRequest(f"query: expected a string, got {type(query).__name__}")
    check_text(query, "query", MAX_QUERY_BYTES)


async def recall(core: MemoryCore, query: str, options: RecallOptions) -> list[RecallHit]:
    """``Memory.recall``: search, then the temporal filter and the policies."""
    _check_query(query)
    k = _default_k(core, options)
    if k is not None:
        # The ranking only: recall builds its own values, so search need not build Hits.
        pairs = await core.engine.search_ids(query, k=k,
                                               semantic_weight=core.config.semantic_weight)
        return await _current_hits(core, pairs)
    plan = _Plan(core, options)
    scored = (await _rank(core, query, plan, hits_needed=plan.explain))[: plan.k]
    facts = await core.facts([doc_id for doc_id, _, _, _ in scored])
    out = []
    for rank, ((doc_id, score, status, hit), fact) in enumerate(zip(scored, facts, strict=True),
                                                                start=1):
        if fact is None:  # forgotten while we ranked
            continue
        explanation = _explanation(core, query, plan, doc_id, hit, status, rank, score,
                                   fact.text) if plan.explain else None
        out.append(RecallHit(fact=fact, score=score, status=status, explanation=explanation))
    return out


# When the multipliers cannot reorder the survivors, the best k of ``candidate_limit``
# candidates are the first k survivors in search's order, so a search for this many times k
# candidates is tried first; only if fewer than k of those survive is the full limit asked for.
FIRST_CANDIDATES = 3


async def _search(core: MemoryCore, query: str, hits_needed: bool,
                  **options: Any) -> list[tuple[str, float, Any]]:
    """(id, score, Hit) of a search's results; the Hit (each signal's score, for explanations)
    only when ``hits_needed``, else None and no Hit is built (``Engine.search_ids``)."""
    if hits_needed:
        return [(h.id, h.score, h) for h in await core.engine.search_documents(query, **options)]
    return [(doc_id, score, None) for doc_id, score in
            await core.engine.search_ids(query, **options)]


async def _rank(core: MemoryCore, query: str, plan: _Plan,
                hits_needed: bool) -> list[tuple[str, float, str, Any]]:
    """(id, score, status, search hit or None) of every surviving candidate, best first; the
    search hits only when ``hits_needed`` (an explanation reads each signal's score).

    With no recency or importance policy, lexical search only (no query embedding) and a history mode whose
    historical multiplier is the same for every survivor, the scores keep search's order: then
    only the first ``plan.k`` survivors are returned, from as few candidates as give them
    (search's top n is the first n of its top ``candidate_limit``: its ranking is a total order,
    score then document number); the result is the same as from all ``candidate_limit``.
    """
    index = core.index
    embedding = await _query_vector(core, query, plan.embedding)
    plan.embedding = embedding
    allowed, check_kinds = _allowed_ids(core, plan)
    slot_policy = core.slot_policy
    no_recency = core.recency is None and core.importance is None  # no weight per fact
    # Nothing can drop or re-weight a candidate: every fact is current, no known_at, no
    # recency; search's own top k (filtered by ids when asked) is the answer.
    plain = (not check_kinds and plan.known_at is None and plan.history != "historical"
             and no_recency and not index.is_temporal(slot_policy))
    semantic_weight = core.config.semantic_weight
    if plain and allowed is None:
        found = await _search(core, query, hits_needed, k=plan.k, embedding=embedding,
                              semantic_weight=semantic_weight)
        return [(doc_id, score, "current", h) for doc_id, score, h in found]
    if allowed is not None and not allowed:
        return []
    limit = plan.k if plain else min(plan.limit, MAX_CANDIDATES)
    multiplier = core.config.historical_multiplier
    in_order = no_recency and embedding is None and (
        plan.history == "current" or multiplier == 1.0
        or (plan.history == "historical" and multiplier >= 0))
    first = min(limit, FIRST_CANDIDATES * plan.k) if in_order else limit
    while True:
        hits = await _search(core, query, hits_needed, k=first, embedding=embedding,
                             ids=allowed, semantic_weight=semantic_weight)
        ranked = _survivors(core, plan, hits, check_kinds, plan.k if in_order else None)
        if first == limit or len(ranked) >= plan.k or len(hits) < first:
            break
        first = limit  # too few survived among the first candidates: take them all
    if not in_order:
        ranked.sort(key=lambda r: (-r[0], r[1]))
    return [(doc_id, score, status, h) for score, _, doc_id, status, h in ranked]


def _survivors(core: MemoryCore, plan: _Plan, hits: list[tuple[str, float, Any]],
               check_kinds: bool, enough: int | None) -> list[tuple[float, int, str, str, Any]]:
    """(score, position, id, status, hit) of the candidates ``plan`` keeps among the (id,
    score, hit) results of a search, in search's order, stopping at ``enough`` of them when
    given."""
    index = core.index
    facts = index.facts
    slot_policy = core.slot_policy
    history = plan.history
    known_at = plan.known_at
    plain_weights = core.recency is None and core.importance is None and (
        history == "current" or core.config.historical_multiplier == 1.0)
    ranked = []
    for position, (doc_id, hit_score, h) in enumerate(hits):
        s = facts.get(doc_id)
        if s is None or (known_at is not None and s.ingest_time > known_at):
            continue  # forgotten meanwhile, or not known at known_at
        if check_kinds and s.kind not in plan.kinds:
            continue
        status = index.status(doc_id, plan.t, known_at, slot_policy, plan.now)
        if (history == "current" and status != "current") or \
                (history == "historical" and status == "current"):
            continue
        if plain_weights:
            score = hit_score  # every multiplier is 1.0
        else:
            recency, historical, importance = _multipliers(core, doc_id, status, plan)
            score = hit_score * recency * historical * importance
        ranked.append((score, position, doc_id, status, h))
        if enough is not None and len(ranked) >= enough:
            break
    return ranked


def _explanation(core: MemoryCore, query: str, plan: _Plan, doc_id: str, hit: Any, status: str,
                 rank: int | None, score: float | None, text: str) -> Explanation:
    s = core.index.facts[doc_id]
    recency, historical, importance = _multipliers(core, doc_id, status, plan)
    fused = plan.embedding is not None
    terms = set(core.engine.analyze(query))
    return Explanation(
        id=doc_id,
        lexical=None if hit is None else hit.lexical,
        semantic=None if hit is None else hit.semantic,
        fusion="rrf" if fused else "bm25",
        weights={"lexical": 1.0, "semantic": core.config.semantic_weight} if fused else {"lexical": 1.0},
        matched_terms=tuple(sorted(terms & set(core.engine.analyze(text)))),
        recency_multiplier=recency, historical_multiplier=historical,
        importance_multiplier=importance, status=status,
        evaluated_at=plan.t, valid_from=s.valid_from, valid_to=s.valid_to, rank=rank,
        chain=core.index.chain(doc_id, core.slot_policy), score=score,
        known=core.index.visible(doc_id, plan.known_at),
        note=(NOT_SEARCHABLE if s.file is not None and not s.file[7] else None),
    )


async def explain(core: MemoryCore, query: str, doc_id: str, options: RecallOptions) -> Explanation:
    """``Memory.explain``: why ``doc_id`` came back for ``query`` (or why not)."""
    _check_query(query)
    if not isinstance(doc_id, str) or doc_id not in core.index.facts:
        check_id(doc_id)  # a bad id (a number, an object) is InvalidRequest, not NotFound
        raise NotFound(f"no fact {doc_id!r}")
    plan = _Plan(core, options._replace(explain=False))
    scored = await _rank(core, query, plan, hits_needed=True)
    fact = await core.fact(doc_id)
    if fact is None:
        raise NotFound(f"no fact {doc_id!r}")
    for rank, (found, score, status, hit) in enumerate(scored[: plan.k], start=1):
        if found == doc_id:
            return _explanation(core, query, plan, doc_id, hit, status, rank, score, fact.text)
    # Not among the results: score it alone, with the same search and multipliers.
    status = core.index.status(doc_id, plan.t, plan.known_at, core.slot_policy, plan.now)
    hits = await core.engine.search_documents(query, k=1, embedding=plan.embedding, ids=[doc_id],
                                                semantic_weight=core.config.semantic_weight)
    hit = hits[0] if hits else None
    alone: float | None = None
    if hit is not None:
        recency, historical, importance = _multipliers(core, doc_id, status, plan)
        alone = hit.score * recency * historical * importance
    return _explanation(core, query, plan, doc_id, hit, status, None, alone, fact.text)
