"""The memory API's values: inputs, facts, results, explanations, forget scopes and reports."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..errors import InvalidRequest
from .sources import check_source

Time = int | _dt.datetime


@attrs.frozen(kw_only=True)
class FileRef:
    """Where a file-backed fact's content lives (see the files layer)."""

    uri: str
    offset: int
    length: int
    format: str | None
    sha256: str
    size: int
    mtime: int
    summary: str | None = None


def file_ref(raw: tuple[Any, ...] | None) -> FileRef | None:
    """The FileRef of a fact stamp's file element (memory/stamp.py)."""
    if raw is None:
        return None
    uri, offset, length, fmt, sha256, size, mtime, summary = raw
    return FileRef(uri=uri, offset=offset, length=length, format=fmt, sha256=sha256, size=size,
                   mtime=mtime, summary=summary)


def stamp_file(ref: FileRef) -> tuple[Any, ...]:
    """A FileRef as a fact stamp's file element (memory/stamp.py)."""
    return (ref.uri, ref.offset, ref.length, ref.format, ref.sha256, ref.size, ref.mtime, ref.summary)


@attrs.frozen(kw_only=True)
class RememberInput:
    """One fact to remember: the parameters of ``Memory.remember``, text first."""

    text: str
    id: str | None = None
    subject: str | None = None
    entities: Sequence[str] = ()
    metadata: Mapping[str, Any] | None = None
    embedding: Sequence[float] | None = None
    event_time: Time | None = None
    valid_from: Time | None = None
    valid_to: Time | None = None
    supersedes: Sequence[str] = ()
    kind: str = "fact"
    namespace: str = "default"
    sources: Sequence[str] = ()
    actor: str | None = None
    importance: float | None = None
    # When the store stops keeping the fact (memory/retention.py); not part of its payload.
    retain_until: Time | None = None


@attrs.frozen(kw_only=True)
class RememberResult:
    id: str
    created: bool
    superseded: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class Fact:
    id: str
    text: str
    kind: str
    namespace: str
    subject: str | None
    entities: tuple[str, ...]
    metadata: dict[str, Any] | None
    embedding: tuple[float, ...] | None
    event_time: int | None
    valid_from: int | None
    valid_to: int | None
    ingest_time: int
    supersedes: tuple[str, ...]
    sources: tuple[str, ...]
    actor: str | None
    importance: float | None
    file: FileRef | None = None
    # When the store stops keeping it: its own retain_until, else its namespace's default
    # retention counted from its ingest time; None when neither applies (memory/retention.py).
    retain_until: int | None = None


@attrs.frozen(kw_only=True)
class Page:
    """One page of ``Memory.list``: the facts, and the cursor of the next page (None when this
    is the last one). Pass the cursor back with the same filters to continue the listing."""

    items: tuple[Fact, ...]
    next_cursor: str | None


@attrs.frozen(kw_only=True)
class Explanation:
    id: str
    lexical: float | None
    semantic: float | None
    fusion: str
    weights: dict[str, float]
    matched_terms: tuple[str, ...]
    recency_multiplier: float
    historical_multiplier: float
    status: str
    evaluated_at: int
    valid_from: int | None
    valid_to: int | None
    rank: int | None
    chain: tuple[str, ...]
    score: float | None
    known: bool = True  # False when known_at hides the fact
    # The importance policy's factor (1.0 without one: MemoryConfig.importance).
    importance_multiplier: float = 1.0
    # Why the fact cannot match at all, when that is so (a file-backed fact without a summary).
    note: str | None = None


@attrs.frozen(kw_only=True)
class RecallHit:
    fact: Fact
    score: float
    status: str
    explanation: Explanation | None = None


def _slot_setter(cls: type, name: str) -> Any:
    return cls.__dict__[name].__set__


_new = object.__new__
_set_fact = _slot_setter(RecallHit, "fact")
_set_score = _slot_setter(RecallHit, "score")
_set_status = _slot_setter(RecallHit, "status")
_set_explanation = _slot_setter(RecallHit, "explanation")


_FACT_SETTERS = tuple(_slot_setter(Fact, a.name) for a in attrs.fields(Fact))


def make_fact(id: str, text: str, kind: str, namespace: str, subject: str | None,
              entities: tuple[str, ...], metadata: dict[str, Any] | None,
              embedding: tuple[float, ...] | None, event_time: int | None,
              valid_from: int | None, valid_to: int | None, ingest_time: int,
              supersedes: tuple[str, ...], sources: tuple[str, ...], actor: str | None,
              importance: float | None, file: FileRef | None,
              retain_until: int | None) -> Fact:
    """``Fact(...)`` of values the store already holds checked, in field order, through the
    slots' own setters, as ``recall_hit`` builds a RecallHit: the frozen class's ``__init__``
    sets its 18 fields through a setattr call each (~1.5 against ~1.0 us; a recall of facts not
    yet cached builds ten)."""
    (s_id, s_text, s_kind, s_namespace, s_subject, s_entities, s_metadata, s_embedding,
     s_event_time, s_valid_from, s_valid_to, s_ingest_time, s_supersedes, s_sources, s_actor,
     s_importance, s_file, s_retain_until) = _FACT_SETTERS
    fact: Fact = _new(Fact)
    s_id(fact, id)
    s_text(fact, text)
    s_kind(fact, kind)
    s_namespace(fact, namespace)
    s_subject(fact, subject)
    s_entities(fact, entities)
    s_metadata(fact, metadata)
    s_embedding(fact, embedding)
    s_event_time(fact, event_time)
    s_valid_from(fact, valid_from)
    s_valid_to(fact, valid_to)
    s_ingest_time(fact, ingest_time)
    s_supersedes(fact, supersedes)
    s_sources(fact, sources)
    s_actor(fact, actor)
    s_importance(fact, importance)
    s_file(fact, file)
    s_retain_until(fact, retain_until)
    return fact


def cached_recall_hits(hits: Sequence[tuple[str, float]], facts: Mapping[str, Fact],
                       status: str) -> list[RecallHit] | None:
    """``[RecallHit(fact=facts[id], score=score, status=status) for id, score in hits]`` when
    every hit's fact is in ``facts`` and has no metadata (which each caller must get a copy of);
    None otherwise. Recall's hot path: the values are built as ``recall_hit`` builds them,
    inline (a call per hit would cost a fifth of the loop)."""
    get = facts.get
    out = []
    for doc_id, score in hits:
        fact = get(doc_id)
        if fact is None or fact.metadata is not None:
            return None
        hit: RecallHit = _new(RecallHit)
        _set_fact(hit, fact)
        _set_score(hit, score)
        _set_status(hit, status)
        _set_explanation(hit, None)
        out.append(hit)
    return out


def recall_hit(fact: Fact, score: float, status: str) -> RecallHit:
    """``RecallHit(fact=fact, score=score, status=status)``, the same value, built in about
    two thirds of the time (recall makes k of them per call): its slots are set directly, as
    the frozen class's own ``__init__`` does, without the per-call setter lookup."""
    hit: RecallHit = _new(RecallHit)
    _set_fact(hit, fact)
    _set_score(hit, score)
    _set_status(hit, status)
    _set_explanation(hit, None)
    return hit


SCOPE_KINDS = ("ids", "subject", "entity", "namespace", "ingested_before", "event_before", "metadata",
               "source")


@attrs.frozen(kw_only=True)
class ForgetScope:
    """Exactly one scope; build it with the named constructors."""

    kind: str
    value: Any

    @classmethod
    def ids(cls, ids: Sequence[str]) -> ForgetScope:
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
            raise InvalidRequest("scope.ids: expected a list of ids")
        return cls(kind="ids", value=tuple(ids))

    @classmethod
    def subject(cls, subject: str) -> ForgetScope:
        return cls(kind="subject", value=subject)

    @classmethod
    def entity(cls, entity: str) -> ForgetScope:
        return cls(kind="entity", value=entity)

    @classmethod
    def namespace(cls, namespace: str) -> ForgetScope:
        return cls(kind="namespace", value=namespace)

    @classmethod
    def ingested_before(cls, t: Time) -> ForgetScope:
        return cls(kind="ingested_before", value=t)

    @classmethod
    def event_before(cls, t: Time) -> ForgetScope:
        return cls(kind="event_before", value=t)

    @classmethod
    def source(cls, path_or_uri: str) -> ForgetScope:
        """Every fact derived from one source: a path or ``file://`` URI (file-backed facts, the
        episodes ``hms load`` made of that file, facts listing it in ``sources``) or a
        document name given to ``load``, and the facts drawn from those (memory/sources.py)."""
        return cls(kind="source", value=check_source(path_or_uri))

    @classmethod
    def metadata(cls, match: Mapping[str, Any]) -> ForgetScope:
        if not isinstance(match, Mapping) or not match:
            raise InvalidRequest("scope.metadata: expected a non-empty object of key: value")
        return cls(kind="metadata", value=dict(match))


@attrs.frozen(kw_only=True)
class ForgetReport:
    removed: tuple[str, ...]
    relinked: tuple[str, ...]
    dry_run: bool


@attrs.frozen(kw_only=True)
class ConsolidateReport:
    created: tuple[str, ...]
    superseded: tuple[str, ...]
    removed: tuple[str, ...]
    dry_run: bool


@attrs.frozen(kw_only=True)
class LoadResult:
    """What ``Memory.load`` wrote or found: the episode ids of the chunks, in order, and the ids
    of the facts the extractor returned (none for chunks skipped as unchanged)."""

    episodes: tuple[str, ...]
    facts: tuple[str, ...]


@attrs.frozen(kw_only=True)
class Profile:
    """``Memory.profile``: a prompt-ready ``block`` and the number of current facts, profiles and
    procedures of the namespace (``counts``, by kind; episodes are never counted)."""

    block: str
    counts: dict[str, int]
