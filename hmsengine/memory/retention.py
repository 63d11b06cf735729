"""Retention: how long the store keeps a fact, and removing what is past it.

A fact's retention end is its own ``retain_until`` (``remember(..., retain_until=t)``), else its
ingest time plus the default retention of its namespace (``set_retention(namespace, keep_for)``),
else none. From that moment (on the wall clock, whatever ``as_of`` asks) the fact is
``expired-retention``: recall and list leave it out, ``history="all"``/``"historical"`` and
``explain`` show it with that status, and ``apply_retention`` forgets it (dry run by default,
like every maintenance operation; every compaction runs it for real first). Retention is about
what the store may still hold, not about when a fact was true (that is ``valid_to``).

Persistence. ``retain_until`` is the sixteenth element of the stamp (memory/stamp.py), outside
the payload digest: remembering the same fact again with another ``retain_until`` changes its
retention (the document is rewritten with the same text, ingest time and digest) and creates
nothing. The namespace defaults are the ``retention`` section of the store's settings
(``{"namespaces": {name: ms}}``, docs/PERSISTED-FORMAT.md §2.1). An older build would misread
both (a sixteen-element stamp is no stamp to it; a default it ignores keeps facts visible), so
the section is written with ``min_reader_version`` 2 before the first of either is written: an
older build then refuses the store instead (``IncompatibleStore``).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from ..engine import DocumentEngine, check_text
from ..errors import InvalidRequest
from .core import RETENTION_SECTION as SECTION
from .core import MemoryCore, retention_defaults
from .forget import forget
from .inputs import MAX_NAME
from .restamp import READER_VERSION, ensure_marked, retain
from .values import ForgetReport, ForgetScope

MAX_KEEP_MS = 10_000 * 365 * 86_400_000  # ten thousand years: anything longer is a mistake


def defaults(engine: DocumentEngine) -> dict[str, int]:
    """The namespace -> default retention (ms) recorded in the store's settings."""
    return retention_defaults(engine)


def keep_ms(keep_for: Any, field: str = "keep_for") -> int | None:
    """A retention duration as ms: a positive int (ms), a ``timedelta``, or None (no default)."""
    if keep_for is None:
        return None
    if isinstance(keep_for, _dt.timedelta):
        ms = int(keep_for.total_seconds() * 1000)
    elif isinstance(keep_for, int) and not isinstance(keep_for, bool):
        ms = keep_for
    else:
        raise InvalidRequest(f"{field}: expected a positive number of ms or a timedelta, "
                             f"got {type(keep_for).__name__}")
    if not 1 <= ms <= MAX_KEEP_MS:
        raise InvalidRequest(f"{field}: expected 1 ms to ten thousand years, got {ms} ms")
    return ms


async def set_retention(core: MemoryCore, namespace: str, keep_for: Any) -> None:
    """Set (or with None remove) the default retention of ``namespace``: its facts without a
    ``retain_until`` of their own expire ``keep_for`` after their ingest time. Applies to the
    facts already stored too. Durable when it returns."""
    if not isinstance(namespace, str) or not namespace:
        raise InvalidRequest("namespace: expected a non-empty string")
    check_text(namespace, "namespace")
    if len(namespace) > MAX_NAME:  # no stored namespace is longer: refused, as remember does
        raise InvalidRequest(f"namespace: longer than {MAX_NAME} characters")
    ms = keep_ms(keep_for)
    engine = core.engine
    async with core.state.lock:
        current = defaults(engine)
        if ms is None:
            current.pop(namespace, None)
        else:
            current[namespace] = ms
        await engine.update_settings(SECTION, {"namespaces": current},
                                     min_reader_version=READER_VERSION)
        refresh(core)


def refresh(core: MemoryCore) -> None:
    """Load the recorded defaults into the shared index (and drop the cached facts, whose
    ``retain_until`` reflects them)."""
    state = core.state
    state.index.retention = defaults(core.engine)
    state.facts.clear()


def expired(core: MemoryCore, now: int | None = None) -> list[str]:
    """The ids of the facts whose retention ended by ``now`` (default: the engine's clock)."""
    index = core.index
    if not index.retained and not index.retention:
        return []
    now = core.engine.now() if now is None else now
    out = []
    for doc_id in index.facts:
        end = index.retention_end(doc_id)
        if end is not None and end <= now:
            out.append(doc_id)
    out.sort()
    return out


async def apply_retention(core: MemoryCore, *, dry_run: bool, purge: bool) -> ForgetReport:
    """Forget every fact past its retention; see the module docstring and ``Memory.forget``
    (what ``purge`` adds). With ``dry_run`` (the default of ``Memory.apply_retention``) only
    report what would go."""
    for name, flag in (("dry_run", dry_run), ("purge", purge)):
        if not isinstance(flag, bool):
            raise InvalidRequest(f"{name}: expected a bool")
    ids = expired(core)
    return await forget(core, ForgetScope.ids(ids), include_chain=False, dry_run=dry_run,
                        purge=purge)


async def before_compact(core: MemoryCore) -> ForgetReport:
    """What ``hmsengine.Engine.compact`` runs first: forget what is past its retention (not a
    dry run), so that the compaction that follows leaves it out of the new generation."""
    return await forget(core, ForgetScope.ids(expired(core)), include_chain=False,
                        dry_run=False, purge=False)


__all__ = ["apply_retention", "before_compact", "defaults", "ensure_marked", "expired",
           "keep_ms", "refresh", "retain", "set_retention"]
