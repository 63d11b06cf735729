"""The fact stamp: what makes a document a fact, stored inside the document itself.

A fact is an ordinary document whose metadata holds, beside the caller's own keys, one reserved
key ``"_hms"`` with a compact list (positions, not names, keep it small)::

    [1, digest, kind, namespace, subject, entities, event_time, valid_from, valid_to,
     ingest_time, supersedes, sources, actor, importance]

and, for a file-backed fact (``remember_file``) only, a fifteenth element, its file reference::

    [uri, offset, length, format, sha256, size, mtime, summary]

and, for a fact with a retention end (``retain_until``) only, a sixteenth: that time in ms (the
fifteenth is then the file reference or null). The retention end is not part of the digest: it
says how long the store may keep the fact, not what the fact is (memory/retention.py).

``digest`` (32 hex digits) is the sha256 of the fact's canonical payload (everything but the
id and the ingest time): equal digests mean an idempotent retry, different ones a conflict, and
a fact without a caller id is named after it. So ``search_documents``, ``delete_document`` and
``get_document`` keep working on a store the memory API wrote.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

STAMP_KEY = "_hms"
STAMP_VERSION = 1


class Stamp:
    """The stamp of one fact (the memory index keeps one per fact). Never mutated once built:
    ``with_ingest_time`` and ``with_supersedes`` return new ones (index entries and prepared
    facts share stamps)."""

    __slots__ = ("actor", "digest", "entities", "event_time", "file", "importance", "ingest_time",
                 "kind", "namespace", "retain_until", "sources", "subject", "supersedes",
                 "valid_from", "valid_to")

    def __init__(self, *, digest: str, kind: str, namespace: str, subject: str | None,
                 entities: tuple[str, ...], event_time: int | None, valid_from: int | None,
                 valid_to: int | None, ingest_time: int, supersedes: tuple[str, ...],
                 sources: tuple[str, ...], actor: str | None, importance: float | None,
                 file: tuple[Any, ...] | None = None, retain_until: int | None = None) -> None:
        self.digest = digest
        self.kind = kind
        self.namespace = namespace
        self.subject = subject
        self.entities = entities
        self.event_time = event_time
        self.valid_from = valid_from
        self.valid_to = valid_to
        self.ingest_time = ingest_time
        self.supersedes = supersedes
        self.sources = sources
        self.actor = actor
        self.importance = importance
        # (uri, offset, length, format, sha256, size, mtime, summary) of a file-backed fact.
        self.file = file
        # When the store stops keeping the fact (ms), or None (memory/retention.py).
        self.retain_until = retain_until

    @property
    def begin(self) -> int:
        """When the fact takes effect: valid_from, else event_time, else ingest_time."""
        if self.valid_from is not None:
            return self.valid_from
        if self.event_time is not None:
            return self.event_time
        return self.ingest_time

    def _evolve(self, **changes: Any) -> Stamp:
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return Stamp(**fields)

    def with_ingest_time(self, ingest_time: int) -> Stamp:
        return self._evolve(ingest_time=ingest_time)

    def with_supersedes(self, supersedes: tuple[str, ...]) -> Stamp:
        return self._evolve(supersedes=supersedes)

    def with_retain_until(self, retain_until: int | None) -> Stamp:
        return self._evolve(retain_until=retain_until)

    def compact(self) -> Stamp:
        """The memory index's copy (``from_list(..., compact=True)``'s): no digest, the names
        that repeat across facts interned."""
        return self._evolve(digest="", kind=sys.intern(self.kind),
                            namespace=sys.intern(self.namespace),
                            actor=sys.intern(self.actor) if self.actor is not None else None)

    def value_key(self) -> tuple[Any, ...]:
        """Every field but the digest, hashable: stamps with equal keys have equal compact
        forms, so the index may keep one object for all of them (see StampParser)."""
        return tuple(getattr(self, name) for name in self.__slots__ if name != "digest")

    def to_json(self) -> str:
        """The stored form: ``to_list()`` as compact JSON, as it appears under ``"_hms"``."""
        return json.dumps(self.to_list(), ensure_ascii=False, allow_nan=False,
                          separators=(",", ":"))

    def to_list(self) -> list[Any]:
        out = [STAMP_VERSION, self.digest, self.kind, self.namespace, self.subject,
               list(self.entities), self.event_time, self.valid_from, self.valid_to,
               self.ingest_time, list(self.supersedes), list(self.sources), self.actor,
               self.importance]
        if self.file is not None or self.retain_until is not None:
            out.append(list(self.file) if self.file is not None else None)
        if self.retain_until is not None:
            out.append(self.retain_until)
        return out

    @classmethod
    def from_list(cls, raw: list[Any], *, compact: bool = False) -> Stamp:
        """Parse a stored stamp. ``compact`` (the memory index's copies, one per fact in RAM)
        drops the digest, which only an idempotency check needs and reads from the document,
        and interns the names that repeat across facts."""
        (_v, digest, kind, namespace, subject, entities, event_time, valid_from, valid_to,
         ingest_time, supersedes, sources, actor, importance) = raw[:14]
        file = tuple(raw[14]) if len(raw) >= 15 and raw[14] is not None else None
        if file is not None and len(file) != 8:
            raise ValueError("a file reference has 8 fields")
        retain_until = raw[15] if len(raw) == 16 else None
        if retain_until is not None and (isinstance(retain_until, bool) or not isinstance(retain_until, int)):
            raise ValueError("a retention end is an integer")
        if compact:
            digest = ""
            kind, namespace = sys.intern(kind), sys.intern(namespace)
            actor = sys.intern(actor) if actor is not None else None
        return cls(digest=digest, kind=kind, namespace=namespace, subject=subject,
                   entities=tuple(entities) if entities else (), event_time=event_time,
                   valid_from=valid_from, valid_to=valid_to, ingest_time=ingest_time,
                   supersedes=tuple(supersedes) if supersedes else (),
                   sources=tuple(sources) if sources else (), actor=actor, importance=importance,
                   file=file, retain_until=retain_until)


def plain_stamp() -> Stamp:
    """The stamp a document written without the memory API is read with: a plain fact."""
    return Stamp(digest="", kind="fact", namespace="default", subject=None, entities=(),
                 event_time=None, valid_from=None, valid_to=None, ingest_time=0, supersedes=(),
                 sources=(), actor=None, importance=None)


def _parse(raw: object, *, compact: bool) -> Stamp | None:
    if isinstance(raw, list) and len(raw) in (14, 15, 16) and raw[0] == STAMP_VERSION:
        try:
            return Stamp.from_list(raw, compact=compact)
        except (TypeError, ValueError):
            return None
    return None


def parse_compact(raw: object) -> Stamp | None:
    """The index's compact copy of a stored ``_hms`` value, or None if it is not one."""
    return _parse(raw, compact=True)


def parse_stamp(raw: object) -> Stamp | None:
    """The full stamp of a stored ``_hms`` value, or None if it is not one."""
    return _parse(raw, compact=False)


def user_metadata(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    """The caller's own metadata of a fact (its document metadata without the stamp)."""
    if metadata is None or STAMP_KEY not in metadata:
        return metadata
    if len(metadata) == 1:  # the stamp alone: most facts (no dictionary built to find out)
        return None
    rest = {k: v for k, v in metadata.items() if k != STAMP_KEY}
    return rest or None


def stored_digest(metadata: dict[str, Any] | None) -> str | None:
    """The payload digest recorded in a fact document's metadata (None for a plain document)."""
    raw = (metadata or {}).get(STAMP_KEY)
    stamp = _parse(raw, compact=False)
    return stamp.digest if stamp is not None else None


def stamp_of(metadata_json: str | None) -> Stamp | None:
    """The compact stamp of a document's metadata JSON (the index's copy); cheap without one."""
    if metadata_json is None or STAMP_KEY not in metadata_json:
        return None
    return _parse(json.loads(metadata_json).get(STAMP_KEY), compact=True)


# The stored form of a stamp's digest: ``"_hms":[1,"`` then 32 hex digits and a closing quote.
_DIGEST_AT = '"_hms":[1,"'
_DIGEST_LEN = 32
SHARED_STAMPS = 4096


class StampParser:
    """Compact stamps from metadata JSON, one shared object per distinct stamp.

    The index's compact stamp drops the digest, so the facts of one ``remember_many`` batch
    (same kind, namespace, times, no subject) have equal compact stamps: they share one
    :class:`Stamp` (stamps in the index are never mutated), which saves a JSON parse per fact
    at open and ~150 bytes of RAM per fact. The key is the metadata JSON with the 32 characters
    of the first ``"_hms":[1,"...`` string removed; those characters hold no quote or backslash
    and end at a quote, so they lie inside one JSON string: either the stamp's digest (which the
    compact stamp drops) or a string inside the caller's own metadata (which the stamp ignores).
    Either way the compact stamp is a function of the key. Remembers at most ``limit`` keys
    (then starts afresh), so unique stamps cost one dictionary insert each, never unbounded RAM.
    """

    def __init__(self, limit: int = SHARED_STAMPS) -> None:
        self.limit = limit
        self._known: dict[str, Stamp | None] = {}
        # (text before the window, text after it, length, stamp) of the last stamped document:
        # a batch's facts come one after another (an open scans in commit order), so most
        # documents are recognised by two comparisons, without building a key.
        self._last: tuple[str, str, int, Stamp | None] | None = None

    def parse(self, metadata_json: str | None) -> Stamp | None:
        """The compact stamp of a document's metadata JSON, or None for a plain document."""
        if metadata_json is None:
            return None
        last = self._last
        if last is not None:
            head, tail, size, stamp = last
            if len(metadata_json) == size and metadata_json.startswith(head) \
                    and metadata_json.endswith(tail):
                window = metadata_json[len(head):size - len(tail)]
                if '"' not in window and "\\" not in window:
                    return stamp
        at = metadata_json.find(_DIGEST_AT)
        if at < 0:
            return stamp_of(metadata_json)
        start = at + len(_DIGEST_AT)
        end = start + _DIGEST_LEN
        window = metadata_json[start:end]
        if len(window) != _DIGEST_LEN or metadata_json[end:end + 1] != '"' \
                or '"' in window or "\\" in window:
            return stamp_of(metadata_json)
        head, tail = metadata_json[:start], metadata_json[end:]
        key = head + tail
        known = self._known
        if key in known:
            stamp = known[key]
        else:
            stamp = stamp_of(metadata_json)
            if len(known) >= self.limit:
                known.clear()
            known[key] = stamp
        self._last = (head, tail, len(metadata_json), stamp)
        return stamp


def with_stamp(metadata_json: str | None, stamp: Stamp) -> str:
    """A fact document's metadata JSON: the caller's own metadata (``metadata_json``, the
    compact JSON that ``check_metadata`` returned, or None) with the stamp added as its last key,
    written once as text. The same bytes as encoding the merged object: the caller's keys in
    their order, then ``"_hms"``."""
    tail = f'"{STAMP_KEY}":{stamp.to_json()}}}'
    if metadata_json is None or metadata_json == "{}":
        return "{" + tail
    return metadata_json[:-1] + "," + tail


def payload_digest(*, text: str, kind: str, namespace: str, subject: str | None,
                   entities: tuple[str, ...], metadata: Mapping[str, Any] | None,
                   embedding: np.ndarray | None, event_time: int | None, valid_from: int | None,
                   valid_to: int | None, supersedes: tuple[str, ...], sources: tuple[str, ...],
                   actor: str | None, importance: float | None,
                   file: tuple[Any, ...] | None = None) -> str:
    """sha256 (32 hex digits) of the canonical payload: stable across runs and machines.

    ``file`` (a file-backed fact's reference) joins the payload only when present, so the
    digests of ordinary facts are the same as before file-backed facts existed."""
    body = {
        "text": text, "kind": kind, "namespace": namespace, "subject": subject,
        "entities": list(entities), "metadata": metadata, "event_time": event_time,
        "valid_from": valid_from, "valid_to": valid_to, "supersedes": list(supersedes),
        "sources": list(sources), "actor": actor, "importance": importance,
        "embedding": None if embedding is None else np.asarray(embedding, "<f4").tobytes().hex(),
    }
    if file is not None:
        body["file"] = list(file)
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]

