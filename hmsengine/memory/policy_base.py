"""What every memory policy shares: the view of a fact it is given, how it is called and
checked, and the supersession protocol with its built-ins (which the memory index applies).

The other protocols and built-ins are in memory/policies.py, which re-exports these.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Protocol, runtime_checkable

import attrs

from ..errors import PolicyError
from .stamp import Stamp


class FactInfo:
    """A read-only view of one fact as the memory index holds it (what policies are given)."""

    __slots__ = ("_s", "id")

    def __init__(self, id: str, stamp: Stamp) -> None:
        self.id = id
        self._s = stamp

    def __repr__(self) -> str:
        return f"FactInfo(id={self.id!r}, kind={self.kind!r}, subject={self.subject!r})"

    @property
    def kind(self) -> str:
        return self._s.kind

    @property
    def namespace(self) -> str:
        return self._s.namespace

    @property
    def subject(self) -> str | None:
        return self._s.subject

    @property
    def entities(self) -> tuple[str, ...]:
        return self._s.entities

    @property
    def event_time(self) -> int | None:
        return self._s.event_time

    @property
    def valid_from(self) -> int | None:
        return self._s.valid_from

    @property
    def valid_to(self) -> int | None:
        return self._s.valid_to

    @property
    def ingest_time(self) -> int:
        return self._s.ingest_time

    @property
    def begin(self) -> int:
        """When the fact takes effect: valid_from, else event_time, else ingest_time."""
        return self._s.begin

    @property
    def supersedes(self) -> tuple[str, ...]:
        """The ids this fact lists explicitly (links to forgotten facts included)."""
        return self._s.supersedes

    @property
    def sources(self) -> tuple[str, ...]:
        return self._s.sources

    @property
    def actor(self) -> str | None:
        return self._s.actor

    @property
    def importance(self) -> float | None:
        return self._s.importance

    @property
    def file_backed(self) -> bool:
        return self._s.file is not None

    @property
    def retain_until(self) -> int | None:
        """The fact's own retention end (ms), if it has one (a namespace default is not
        included: memory/retention.py)."""
        return self._s.retain_until


# -- supersession ----------------------------------------------------------------------------------


@runtime_checkable
class SupersessionPolicy(Protocol):
    """Which facts of one subject slot replace which; derived at every read, nothing written.

    ``supersedes(newer, older)`` is asked only for two facts of one (namespace, subject) slot,
    ``newer`` later than ``older`` in (begin, ingest_time, id) order; True means ``newer``
    supersedes ``older`` from ``newer.begin`` on. So at any time t the current facts of a slot are
    those that no begun later fact supersedes, whatever order they arrived in. A fact related to
    another of its slot by the policy is also ``not-yet-valid`` before its own begin. Explicit
    ``supersedes`` links apply whatever the policy says.
    """

    def supersedes(self, newer: FactInfo, older: FactInfo) -> bool: ...


@attrs.frozen
class NoSupersession:
    """``"none"`` (the default): facts replace others only by explicit ``supersedes`` links."""

    name = "none"

    def supersedes(self, newer: FactInfo, older: FactInfo) -> bool:
        return False


@attrs.frozen
class LatestBySubject:
    """``"latest-by-subject"``: in a subject slot the fact that began last is current."""

    name = "latest-by-subject"

    def supersedes(self, newer: FactInfo, older: FactInfo) -> bool:
        return True


SUPERSESSION_POLICIES: dict[str, NoSupersession | LatestBySubject] = {
    p.name: p for p in (NoSupersession(), LatestBySubject())}


# -- calling a policy ------------------------------------------------------------------------------


def policy_name(policy: object) -> str:
    """How errors name a policy: its ``name`` for a built-in, else its class."""
    name = getattr(policy, "name", None)
    return name if isinstance(name, str) else type(policy).__name__


def policy_failed(kind: str, policy: object, exc: BaseException) -> PolicyError:
    """The error for a policy that raised ``exc`` (chained by the caller)."""
    return PolicyError(f"{kind} policy {policy_name(policy)} raised "
                       f"{type(exc).__name__}: {exc}",
                       hint="fix the policy; nothing was written")


def bad_result(kind: str, policy: object, what: str, got: object) -> PolicyError:
    return PolicyError(f"{kind} policy {policy_name(policy)} returned {got!r}: expected {what}",
                       hint="fix the policy; nothing was written")


def multiplier(kind: str, policy: object, value: object) -> float:
    """A policy's multiplier, checked: a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        raise bad_result(kind, policy, "a finite number >= 0", value)
    return float(value)


async def resolved(value: Any) -> Any:
    """``value``, awaited first if it is awaitable (forgetting and consolidation may be async)."""
    if inspect.isawaitable(value):
        return await value
    return value


__all__ = ["FactInfo", "LatestBySubject", "NoSupersession", "SupersessionPolicy"]
