"""Browsing: ``list`` (pages of facts with a cursor), ``count`` and ``namespaces``.

``list`` returns the facts that pass every filter given, newest first (ingest time descending,
then id descending), at most ``limit`` (1 to 1000) per page, and a cursor for the next page. The
filters: ``namespace``, ``subject``, ``entity``, ``kind`` (one kind or a tuple; default every kind,
episodes included), ``status`` (one status or a tuple; default ``"current"``; ``"all"`` for every
status, ``expired-retention`` included), ``metadata`` (facts whose metadata holds every key:
value), ``as_of`` (the time statuses are evaluated at) and ``known_at`` (facts ingested after it
are left out).

One listing reads one fixed view. The cursor is an opaque string that records where the last
page ended (its last fact's ingest time and id), the store's revision when the first page was
read, the time statuses were evaluated at (the first page's ``as_of``, or its clock), and a
digest of the filters (a cursor passed with other filters is ``InvalidRequest``). So a fact
present when the listing began and not forgotten meanwhile comes exactly once across the pages,
whatever is written between them: positions are keys that a fact keeps for life (a rewrite keeps
its ingest time), statuses are evaluated at one moment, and facts created after the first page
are left out (the index remembers creations for an hour: a listing resumed later may also show
facts created meanwhile, still skipping and repeating none). Retention is evaluated on the clock
of each page, so a fact that passes its retention while a listing runs stops being listed.

Cost: a page filters the candidates in memory (the smallest of the subject, entity and metadata
sets when one is given, else every fact) and keeps the best ``limit``: linear in the candidates.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import heapq
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..clock import to_ms
from ..engine import check_text
from ..errors import InvalidRequest
from .config import KINDS
from .core import MemoryCore
from .inputs import MAX_NAME
from .values import Page, Time

STATUSES = ("current", "superseded", "expired", "not-yet-valid", "expired-retention")
MAX_LIMIT = 1000
CURSOR_VERSION = 1


class _Filters:
    """Validated filters of one ``list``/``count`` call."""

    def __init__(self, *, namespace: str | None = None, subject: str | None = None,
                 entity: str | None = None, kind: str | Iterable[str] | None = None,
                 status: str | Iterable[str] | None = None,
                 metadata: Mapping[str, Any] | None = None, as_of: Time | None = None,
                 known_at: Time | None = None) -> None:
        for name, value in (("namespace", namespace), ("subject", subject), ("entity", entity)):
            if value is not None:
                if not isinstance(value, str) or not value:
                    raise InvalidRequest(f"{name}: expected a non-empty string or None")
                check_text(value, name)
                if len(value) > MAX_NAME:  # no stored name is longer: refused, as remember does
                    raise InvalidRequest(f"{name}: longer than {MAX_NAME} characters")
        self.namespace, self.subject, self.entity = namespace, subject, entity
        self.kinds = _choice(kind, "kind", KINDS, None)
        self.statuses = _choice(status, "status", STATUSES, ("current",))
        if metadata is not None and (not isinstance(metadata, Mapping) or not metadata):
            raise InvalidRequest("metadata: expected a non-empty object of key: value, or None")
        self.metadata = dict(metadata) if metadata is not None else None
        self.as_of = None if as_of is None else to_ms(as_of, field="as_of")
        self.known_at = None if known_at is None else to_ms(known_at, field="known_at")

    def digest(self) -> str:
        """What a cursor is bound to: every filter, as given."""
        body = [self.namespace, self.subject, self.entity,
                sorted(self.kinds) if self.kinds is not None else None,
                sorted(self.statuses) if self.statuses is not None else None,
                self.metadata, self.as_of, self.known_at]
        try:
            text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError):
            raise InvalidRequest("metadata: expected plain JSON values") from None
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _choice(value: Any, field: str, allowed: tuple[str, ...],
            default: tuple[str, ...] | None) -> frozenset[str] | None:
    """One allowed name or a tuple of them (``"all"`` for every one, where statuses are meant)."""
    if value is None:
        return None if default is None else frozenset(default)
    names = (value,) if isinstance(value, str) else value
    if not isinstance(names, (list, tuple, set, frozenset)) or not names:
        raise InvalidRequest(f"{field}: expected one of {', '.join(allowed)} or a non-empty "
                             f"tuple of them, got {value!r}")
    if field == "status" and "all" in names:
        return None  # every status, whatever else is named with it (?status=all&status=current)
    for name in names:
        if name not in allowed:
            raise InvalidRequest(f"{field}: expected one of {', '.join(allowed)}"
                                 + (", or 'all'" if field == "status" else "") + f", got {name!r}")
    return frozenset(names)


def _encode_cursor(fields: list[Any]) -> str:
    raw = json.dumps([CURSOR_VERSION, *fields], separators=(",", ":"), ensure_ascii=True)
    return base64.urlsafe_b64encode(raw.encode("ascii")).decode("ascii").rstrip("=")


def _decode_cursor(cursor: Any, digest: str) -> tuple[int, int, int, str]:
    """(revision bound, evaluation time, last ingest time, last id) of a cursor."""
    bad = InvalidRequest("cursor: not a cursor of this listing",
                         hint="pass back the next_cursor of the previous page unchanged, "
                              "with the same filters; omit it to start again")
    if not isinstance(cursor, str) or len(cursor) > 4096:
        raise bad
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise bad from None
    if not (isinstance(raw, list) and len(raw) == 6 and raw[0] == CURSOR_VERSION
            and all(isinstance(v, int) and not isinstance(v, bool) for v in raw[1:4])
            and isinstance(raw[4], str) and isinstance(raw[5], str)):
        raise bad
    if raw[5] != digest:
        raise InvalidRequest("cursor: it belongs to a listing with other filters",
                             hint="pass the same filters as the first page, or omit the cursor")
    return raw[1], raw[2], raw[3], raw[4]


def _candidates(core: MemoryCore, f: _Filters) -> Iterable[str]:
    index = core.index
    sets: list[Any] = []
    if f.subject is not None:
        sets.append(index.by_subject.get(f.subject, ()))
    if f.entity is not None:
        sets.append(index.entities.get(f.entity, ()))
    if f.metadata is not None:
        sets.append(core.engine.find_ids(metadata=f.metadata))
    if not sets:
        return list(index.facts)
    sets.sort(key=len)
    return [i for i in sets[0] if all(i in other for other in sets[1:])]


def _matching(core: MemoryCore, f: _Filters, t: int, now: int,
              bound: int | None) -> Iterable[tuple[int, str]]:
    """(ingest time, id) of every fact that passes the filters at ``t`` (retention at ``now``),
    leaving out facts created after revision ``bound`` when one is given."""
    index = core.index
    facts = index.facts
    slot_policy = core.slot_policy
    temporal = index.is_temporal(slot_policy)
    newer = index.born_after(bound) if bound is not None else ()
    for doc_id in _candidates(core, f):
        s = facts.get(doc_id)
        if s is None:
            continue
        if (f.namespace is not None and s.namespace != f.namespace) \
                or (f.kinds is not None and s.kind not in f.kinds) \
                or (f.known_at is not None and s.ingest_time > f.known_at) \
                or doc_id in newer:
            continue
        if f.statuses is not None or temporal:
            status = index.status(doc_id, t, f.known_at, slot_policy, now) if temporal else "current"
            if status not in (f.statuses if f.statuses is not None else STATUSES):
                continue
        yield s.ingest_time, doc_id


def _limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit: expected an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


async def list_facts(core: MemoryCore, *, limit: int = 100, cursor: str | None = None,
                     **filters: Any) -> Page:
    """One page of the listing; see the module docstring."""
    f = _Filters(**filters)
    size = _limit(limit)
    digest = f.digest()
    now = core.engine.now()
    if cursor is None:
        bound, t, after = core.index.revision, (f.as_of if f.as_of is not None else now), None
        keyed = _matching(core, f, t, now, None)
    else:
        bound, t, last_time, last_id = _decode_cursor(cursor, digest)
        after = (last_time, last_id)
        keyed = (k for k in _matching(core, f, t, now, bound) if k < after)
    best = heapq.nlargest(size + 1, keyed)
    page = best[:size]
    facts = await core.facts([doc_id for _, doc_id in page])
    items = tuple(fact for fact in facts if fact is not None)
    next_cursor = None
    if len(best) > size:
        last_time, last_id = page[-1]
        next_cursor = _encode_cursor([bound, t, last_time, last_id, digest])
    return Page(items=items, next_cursor=next_cursor)


async def count_facts(core: MemoryCore, **filters: Any) -> int:
    """How many facts ``list`` would return over all its pages, with the same filters."""
    f = _Filters(**filters)
    now = core.engine.now()
    return sum(1 for _ in _matching(core, f, f.as_of if f.as_of is not None else now, now, None))


async def namespaces(core: MemoryCore, entity: str | None = None) -> dict[str, int]:
    """The namespaces that hold facts (naming ``entity``, when given), each with how many
    (every status but ``expired-retention``), in name order."""
    index = core.index
    now = core.engine.now()
    counts: dict[str, int] = {}
    retention = bool(index.retained or index.retention)
    if entity is not None:
        if not isinstance(entity, str) or not entity:
            raise InvalidRequest("entity: expected a non-empty string or None")
        ids: Iterable[str] = index.entities.get(entity, ())
    else:
        ids = index.facts
    for doc_id in ids:
        s = index.facts[doc_id]
        if retention:
            end = index.retention_end(doc_id)
            if end is not None and end <= now:
                continue
        counts[s.namespace] = counts.get(s.namespace, 0) + 1
    return dict(sorted(counts.items()))


__all__ = ["MAX_LIMIT", "STATUSES", "count_facts", "list_facts", "namespaces"]
