"""The memory policies as protocols, and the built-in policies as implementations of them.

A ``MemoryConfig`` selects each policy by name (its JSON form, which the server, the MCP tools
and the store settings keep) or, from Python only, takes any object implementing the protocol,
the way the seed's Rust API takes trait implementations through its ``with_*`` builders. The
built-ins below are ordinary implementations; recall only skips calling the ones that change
nothing (no supersession, no recency, no importance weight), with the same results.

=====================  ================================  =========================================
protocol               called                            given -> returns
=====================  ================================  =========================================
SupersessionPolicy     whenever a status or a chain of   two facts of one (namespace, subject)
                       a fact in a shared subject slot   slot, ``newer`` later in (begin,
                       is evaluated: recall, explain,    ingest_time, id) order -> whether
                       history, remember's report,       ``newer`` replaces ``older`` once it
                       forget's chains, consolidate      takes effect (bool)
RecencyPolicy          per candidate of recall/explain   a fact and the evaluation time t (ms)
                                                         -> a multiplier of its score (>= 0)
ImportancePolicy       per candidate of recall/explain   a fact -> a multiplier of its score
                                                         (>= 0)
ForgettingPolicy       by ``apply_forgetting`` only      every fact and now (ms) -> the ids to
                       (never by itself)                 forget (may be async)
ConsolidationPolicy    by ``consolidate`` only, once     the current facts of the slot, oldest
                       per subject slot with two or      first -> the facts to remember, each
                       more current facts                superseding some of them (may be async)
=====================  ================================  =========================================

What a policy sees of a fact (``FactInfo``) is what the memory index holds: id, kind,
namespace, subject, entities, times, links, sources, actor and importance, never the text or
metadata, which live on disk, except for consolidation, which is given whole ``Fact`` values.

Rules for a policy: it is called on the event loop, so it must be quick and must not block;
supersession, recency and importance must be pure functions of their arguments (their answers
are derived at every read, never written, so an impure one makes recall contradict itself).
A policy that raises, or returns something of the wrong type, fails the call with
:class:`PolicyError` naming the policy, before anything is written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import attrs

from .policy_base import (
    SUPERSESSION_POLICIES,
    FactInfo,
    LatestBySubject,
    NoSupersession,
    SupersessionPolicy,
    bad_result,
    multiplier,
    policy_failed,
    policy_name,
    resolved,
)
from .values import Fact, RememberInput

# -- the protocols (supersession's is in memory/policy_base.py) -------------------------------------


@runtime_checkable
class RecencyPolicy(Protocol):
    """``multiplier(fact, t)``: a factor (>= 0) on a candidate's search score at evaluation time
    ``t`` (``as_of``, else now); recall ranks by the product of every multiplier."""

    def multiplier(self, fact: FactInfo, t: int) -> float: ...


@runtime_checkable
class ImportancePolicy(Protocol):
    """``multiplier(fact)``: a factor (>= 0) on a candidate's search score from the fact's
    ``importance`` (which may be None: the policy decides what that means)."""

    def multiplier(self, fact: FactInfo) -> float: ...


@runtime_checkable
class ForgettingPolicy(Protocol):
    """``select(facts, now)``: the ids ``apply_forgetting`` forgets, among every fact of the
    store (all kinds and statuses). Plain or async."""

    def select(self, facts: Sequence[FactInfo], now: int) -> Iterable[str]: ...


@runtime_checkable
class ConsolidationPolicy(Protocol):
    """``merge(facts)``: the facts ``consolidate`` remembers for one subject slot, given its
    current facts (two or more, oldest first by ingest time, then id). Each returned
    ``RememberInput`` must list in ``supersedes`` one or more of the given facts and no other;
    the sources stay as history unless ``remove_sources`` is true and the call sets
    ``allow_destructive``. Plain or async."""

    remove_sources: bool

    def merge(self, facts: Sequence[Fact]) -> Sequence[RememberInput]: ...


# -- the built-ins --------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Recency:
    """Built-in recency: ``kind`` "none" (1 for every fact) or "exponential": 0.5 to the power
    of the fact's age at t over ``half_life_ms``; the age counts from its event_time, else
    valid_from, else ingest_time, and is 0 for a fact dated after t."""

    kind: str = "none"
    half_life_ms: int | None = None

    def multiplier(self, fact: FactInfo, t: int) -> float:
        if self.kind != "exponential" or not self.half_life_ms:
            return 1.0
        when = fact.event_time if fact.event_time is not None else (
            fact.valid_from if fact.valid_from is not None else fact.ingest_time)
        return math.pow(0.5, max(0, t - when) / self.half_life_ms)


@attrs.frozen(kw_only=True)
class Importance:
    """Built-in importance weight: ``kind`` "none" (1 for every fact: the default) or "linear":
    ``max(0, 1 + weight * importance)``, where a fact without an importance counts as
    ``missing`` (default 0: it keeps its search score). HotMem and the portability layer use
    importance in [0, 1] (0.5 when unset); with ``weight`` 1 an importance of 1 doubles a
    score."""

    kind: str = "none"
    weight: float = 0.0
    missing: float = 0.0

    def multiplier(self, fact: FactInfo) -> float:
        if self.kind != "linear":
            return 1.0
        value = fact.importance
        return max(0.0, 1.0 + self.weight * (self.missing if value is None else value))


@attrs.frozen(kw_only=True)
class Forgetting:
    """Built-in forgetting: facts older than a maximum age for their kind (by ingest time),
    and expired facts whose ``valid_to`` is older than ``expired_older_than_ms``."""

    max_age_ms: dict[str, int] = attrs.field(factory=dict)
    expired_older_than_ms: int | None = None

    def select(self, facts: Sequence[FactInfo], now: int) -> list[str]:
        out = []
        ages, expired = self.max_age_ms, self.expired_older_than_ms
        for f in facts:
            age = ages.get(f.kind)
            if (age is not None and now - f.ingest_time > age) or (
                    expired is not None and f.valid_to is not None and now - f.valid_to > expired):
                out.append(f.id)
        return out


def _normalised(text: str) -> str:
    return " ".join(text.casefold().split())


@attrs.frozen(kw_only=True)
class Consolidation:
    """Built-in consolidation: ``kind`` "none", or "exact-duplicates": the facts of one kind in
    a slot whose normalised texts (case-folded, whitespace collapsed) are equal get one new fact
    with the first one's text and every entity, superseding them and listing them as sources
    (metadata ``{"consolidated": true}``); ``remove_sources`` also forgets the sources when the
    call allows it."""

    kind: str = "none"
    remove_sources: bool = False

    def merge(self, facts: Sequence[Fact]) -> list[RememberInput]:
        if self.kind != "exact-duplicates":
            return []
        groups: dict[tuple[str, str], list[Fact]] = {}
        for fact in facts:
            groups.setdefault((fact.kind, _normalised(fact.text)), []).append(fact)
        out = []
        for _, members in sorted(groups.items()):
            if len(members) < 2:
                continue
            first = members[0]
            ids = tuple(m.id for m in members)
            out.append(RememberInput(
                text=first.text, subject=first.subject, namespace=first.namespace,
                kind=first.kind, entities=tuple(sorted({e for m in members for e in m.entities})),
                supersedes=ids, sources=ids, metadata={"consolidated": True}))
        return out


__all__ = [
    "SUPERSESSION_POLICIES", "Consolidation", "ConsolidationPolicy", "FactInfo", "Forgetting",
    "ForgettingPolicy", "Importance", "ImportancePolicy", "LatestBySubject", "NoSupersession",
    "Recency", "RecencyPolicy", "SupersessionPolicy", "bad_result", "multiplier",
    "policy_failed", "policy_name", "resolved",
]
