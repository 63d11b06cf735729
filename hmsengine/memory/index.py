"""The in-memory memory index and the temporal rules (status, as_of, known_at, chains).

One index per engine, shared by every ``Memory`` over it. It is built from the engine's
documents at first use and then kept current by a commit listener, which sees every committed
change (the memory API's own and raw document writes alike) before the writer's call returns,
so several ``Memory`` values stay consistent and a write is visible to recall at once.

Temporal rules (API.md, the seed's Concepts):

* ``begin(f)`` = valid_from, else event_time, else ingest_time: when ``f`` takes effect.
* ``known_at`` K hides facts ingested after K, and the supersessions they would cause.
* status at t: ``not-yet-valid`` if t < valid_from (and, under a supersession policy, if
  t < begin for a fact the policy relates to another of its subject slot: it has not begun);
  else ``expired`` if valid_to <= t; else ``superseded`` if a visible fact that supersedes it
  took effect by t; else ``current``.
* explicit links: a fact's ``supersedes`` ids; links to forgotten facts are ignored.
* a supersession policy (memory/policies.py): within a (namespace, subject) slot, ``g``
  supersedes ``f`` when ``g`` is later in (begin, ingest_time, id) order and the policy says so
  (latest-by-subject: always), so at any t the current facts are those no begun later fact
  replaces, whatever the arrival order. Nothing is written for it: it is derived.
* retention: a fact whose retention end (its ``retain_until``, else its ingest time plus its
  namespace's default retention) is at or before *now* (the wall clock, whatever ``as_of``
  says: retention is about what the store may still hold) is ``expired-retention``, before any
  other status (memory/retention.py).
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Iterable, Mapping

from ..engine import TOMBSTONE_PREFIX, Change, MetadataChunk, is_tombstone_json
from .index_load import load_chunks
from .policy_base import FactInfo, LatestBySubject, SupersessionPolicy, bad_result, policy_failed
from .stamp import STAMP_KEY, Stamp, StampParser, plain_stamp

# How long the index remembers when a fact was created (``MemoryIndex.born``): a listing whose
# first page is older than this may show in later pages facts created since (never skipping or
# repeating one: memory/browse.py).
BORN_WINDOW_MS = 3_600_000


class MemoryIndex:
    def __init__(self) -> None:
        self.facts: dict[str, Stamp] = {}
        self.slots: dict[tuple[str, str], set[str]] = {}
        self.by_subject: dict[str, set[str]] = {}
        self.entities: dict[str, set[str]] = {}
        self.successors: dict[str, set[str]] = {}
        self.kind_counts: dict[str, int] = {}
        # Frozen copies of by_subject / entities members, handed to search as its ids filter
        # (the engine caches what it resolved for an immutable filter); dropped on any change.
        self._frozen: dict[tuple[str, str], frozenset[str]] = {}
        self.windows = 0  # facts with valid_from or valid_to
        self.shared_slots = 0  # subject slots holding two facts or more (policy-linked)
        self.links = 0  # explicit supersedes links
        self.revision = 0
        # Facts with equal compact stamps share one Stamp object (see StampParser).
        self._stamps = StampParser()
        self.retained = 0  # facts with their own retain_until
        # namespace -> default retention in ms (the settings' "retention" section).
        self.retention: dict[str, int] = {}
        # (revision, wall ms, ids) of each commit that created facts since the index was built,
        # oldest first, kept for BORN_WINDOW_MS: a listing leaves out what was created after its
        # first page (memory/browse.py). Facts loaded at open count as created at revision 0.
        # One list per commit, not an entry per fact: 8 bytes a created fact, where an id ->
        # (revision, ms) map cost ~120 (a bulk load keeps every fact here for the window).
        self.born: deque[tuple[int, int, list[str]]] = deque()

    # -- maintenance ---------------------------------------------------------------------------

    def load(self, items: Iterable[tuple[str, str | None]], revision: int) -> None:
        """Index every document of a scan (at open), the cyclic collector paused meanwhile.

        A million facts at open: most stamps are shared (see StampParser) and carry no subject,
        entity, link or window, so such a fact costs one dictionary insert and a count here.
        """
        facts = self.facts
        kind_counts = self.kind_counts
        parse = self._stamps.parse
        plain_fact = plain_stamp()  # never mutated: every plain document shares it
        simple: dict[int, bool] = {}  # id(stamp) -> nothing to index beyond kind (stamps stay alive)
        # Millions of small objects that all survive: the cyclic collector would rescan them
        # again and again (none of them can form a cycle), so it pauses while they are built.
        collecting = gc.isenabled()
        gc.disable()
        try:
            for doc_id, metadata_json in items:
                if metadata_json is None or STAMP_KEY not in metadata_json:
                    stamp = plain_fact
                elif metadata_json.startswith(TOMBSTONE_PREFIX):
                    continue  # a purged id: no fact (is_tombstone_json, inlined)
                else:
                    stamp = parse(metadata_json) or plain_fact
                plain = simple.get(id(stamp))
                if plain is None:
                    plain = simple[id(stamp)] = (
                        stamp.subject is None and not stamp.entities and not stamp.supersedes
                        and stamp.valid_from is None and stamp.valid_to is None
                        and stamp.retain_until is None)
                if plain and doc_id not in facts:
                    facts[doc_id] = stamp
                    kind_counts[stamp.kind] = kind_counts.get(stamp.kind, 0) + 1
                else:
                    self._remove(doc_id)
                    self._add(doc_id, stamp)
        finally:
            if collecting:
                gc.enable()
        self.revision = revision

    def load_chunks(self, chunks: Iterable[MetadataChunk], revision: int) -> None:
        """Index every document of an engine's ``scan_metadata_chunks()`` into this empty index,
        grouping equal stamps on the packed bytes before decoding (memory/index_load.py): the
        same result as :meth:`load` over ``scan_metadata()``, a fraction of the time at open."""
        if self.facts:
            raise RuntimeError("the memory index is loaded from chunks only when empty")
        load_chunks(chunks, facts=self.facts, kind_counts=self.kind_counts,
                    parse=self._stamps.parse, add=self._add)
        self.revision = revision

    def on_commit(self, revision: int, changes: list[Change],
                  written: Mapping[str, tuple[str, Stamp]] | None = None, now: int = 0) -> None:
        """The engine's commit listener: apply every change of a committed batch.

        ``written`` (id -> (metadata JSON, compact stamp)) holds the stamps of the facts that
        ``remember`` is writing: a change carrying exactly that JSON takes that stamp as it was
        built, not parsed back from the JSON; any other change is parsed. ``now`` (the engine's
        clock) dates the creations for ``born``."""
        parse = self._stamps.parse
        created: list[str] = []
        for change in changes:
            existed = change.id in self.facts
            self._remove(change.id)
            metadata_json = change.metadata_json
            if change.deleted or is_tombstone_json(metadata_json):
                continue
            known = written.get(change.id) if written else None
            if known is not None and known[0] == metadata_json:
                stamp = known[1]
            else:
                stamp = parse(metadata_json) or plain_stamp()
            self._add(change.id, stamp)
            if not existed:
                created.append(change.id)
        born = self.born
        if created:
            born.append((revision, now, created))
        while born and born[0][1] < now - BORN_WINDOW_MS:
            born.popleft()
        self.revision = revision

    def born_after(self, revision: int) -> set[str]:
        """The ids created (not merely rewritten) after ``revision``, as far as ``born``
        remembers: one pass over the commits since, newest first."""
        out: set[str] = set()
        for committed, _, ids in reversed(self.born):
            if committed <= revision:
                break
            out.update(ids)
        return out

    def retention_end(self, doc_id: str) -> int | None:
        """When the store stops keeping ``doc_id``: its retain_until, else its ingest time plus
        its namespace's default retention, else None."""
        s = self.facts[doc_id]
        if s.retain_until is not None:
            return s.retain_until
        keep = self.retention.get(s.namespace) if self.retention else None
        return None if keep is None else s.ingest_time + keep

    def frozen(self, kind: str, name: str) -> frozenset[str]:
        """The ids of a subject (``kind`` "subject") or entity ("entity") as one shared
        frozenset, the same object until that subject's or entity's members change."""
        key = (kind, name)
        out = self._frozen.get(key)
        if out is None:
            members = self.by_subject if kind == "subject" else self.entities
            out = self._frozen[key] = frozenset(members.get(name, ()))
        return out

    def _forget_frozen(self, s: Stamp) -> None:
        if self._frozen:
            if s.subject is not None:
                self._frozen.pop(("subject", s.subject), None)
            for e in s.entities:
                self._frozen.pop(("entity", e), None)

    def _add(self, doc_id: str, s: Stamp) -> None:
        self._forget_frozen(s)
        self.facts[doc_id] = s
        self.kind_counts[s.kind] = self.kind_counts.get(s.kind, 0) + 1
        if s.subject is not None:
            slot = self.slots.setdefault((s.namespace, s.subject), set())
            before = len(slot)
            slot.add(doc_id)
            self.shared_slots += before == 1 and len(slot) == 2
            self.by_subject.setdefault(s.subject, set()).add(doc_id)
        for e in s.entities:
            self.entities.setdefault(e, set()).add(doc_id)
        for old in s.supersedes:
            self.successors.setdefault(old, set()).add(doc_id)
        self.links += len(s.supersedes)
        self.windows += s.valid_from is not None or s.valid_to is not None
        self.retained += s.retain_until is not None

    def _remove(self, doc_id: str) -> None:
        s = self.facts.pop(doc_id, None)
        if s is None:
            return
        self._forget_frozen(s)
        self.kind_counts[s.kind] -= 1
        if s.subject is not None:
            slot = self.slots[(s.namespace, s.subject)]
            before = len(slot)
            slot.discard(doc_id)
            self.shared_slots -= before == 2 and len(slot) == 1
            if not slot:
                del self.slots[(s.namespace, s.subject)]
            same = self.by_subject[s.subject]
            same.discard(doc_id)
            if not same:
                del self.by_subject[s.subject]
        for e in s.entities:
            self.entities[e].discard(doc_id)
            if not self.entities[e]:
                del self.entities[e]
        for old in s.supersedes:
            succ = self.successors.get(old)
            if succ is not None:
                succ.discard(doc_id)
                if not succ:
                    del self.successors[old]
        self.links -= len(s.supersedes)
        self.windows -= s.valid_from is not None or s.valid_to is not None
        self.retained -= s.retain_until is not None

    # -- temporal rules ----------------------------------------------------------------------------
    # ``policy``: the Memory's supersession policy (memory/policies.py), None for none.

    def is_temporal(self, policy: SupersessionPolicy | None) -> bool:
        """Anything that can make a fact non-current: windows, links, retention, or shared
        subject slots under a supersession policy (O(1): the counts are kept by _add/_remove)."""
        if self.windows or self.links or self.retained or self.retention:
            return True
        return policy is not None and self.shared_slots > 0

    @staticmethod
    def _order(doc_id: str, s: Stamp) -> tuple[int, int, str]:
        return (s.begin, s.ingest_time, doc_id)

    def visible(self, doc_id: str, known_at: int | None) -> bool:
        s = self.facts.get(doc_id)
        return s is not None and (known_at is None or s.ingest_time <= known_at)

    def status(self, doc_id: str, t: int, known_at: int | None,
               policy: SupersessionPolicy | None, now: int | None = None) -> str:
        """The fact's status at ``t`` (module docstring) under the supersession ``policy``;
        ``expired-retention`` first when its retention ended by ``now`` (None: retention is not
        evaluated)."""
        s = self.facts[doc_id]
        if now is not None and (s.retain_until is not None or self.retention):
            end = self.retention_end(doc_id)
            if end is not None and end <= now:
                return "expired-retention"
        if s.valid_from is not None and t < s.valid_from:
            return "not-yet-valid"
        if policy is not None and s.subject is not None and t < s.begin \
                and self._related_in_slot(doc_id, s, known_at, policy):
            # Only a fact the policy relates to another of its slot is policy-linked; a lone
            # slot fact is plain (as on the fast path of recall). Under known_at the slot is
            # seen as it was then, so a replay answers what the store answered at that moment.
            return "not-yet-valid"
        if s.valid_to is not None and s.valid_to <= t:
            return "expired"
        if self.superseded_by(doc_id, t, known_at, policy):
            return "superseded"
        return "current"

    def related(self, policy: SupersessionPolicy, a: str, sa: Stamp, b: str, sb: Stamp) -> bool:
        """Whether the policy relates two facts of one slot (the later one superseding the
        earlier): always for latest-by-subject, else the policy's answer, checked."""
        if policy.__class__ is LatestBySubject:
            return True
        newer, older = ((a, sa), (b, sb)) if self._order(a, sa) > self._order(b, sb) \
            else ((b, sb), (a, sa))
        try:
            answer = policy.supersedes(FactInfo(*newer), FactInfo(*older))
        except Exception as exc:
            raise policy_failed("supersession", policy, exc) from exc
        if not isinstance(answer, bool):
            raise bad_result("supersession", policy, "a bool", answer)
        return answer

    def _related_in_slot(self, doc_id: str, s: Stamp, known_at: int | None,
                         policy: SupersessionPolicy) -> bool:
        slot = self.slots.get((s.namespace, s.subject), ())  # type: ignore[arg-type]
        if len(slot) < 2:
            return False
        if policy.__class__ is LatestBySubject:  # every fact of the slot visible at known_at
            return known_at is None or sum(
                1 for g in slot if self.facts[g].ingest_time <= known_at) > 1
        for g in sorted(slot):
            if g != doc_id and self.visible(g, known_at) \
                    and self.related(policy, g, self.facts[g], doc_id, s):
                return True
        return False

    def superseded_by(self, doc_id: str, t: int, known_at: int | None,
                      policy: SupersessionPolicy | None) -> str | None:
        """A visible fact that supersedes ``doc_id`` and took effect by ``t`` (None if none)."""
        for g in sorted(self.successors.get(doc_id, ())):
            sg = self.facts.get(g)
            if sg is not None and self.visible(g, known_at) and sg.begin <= t:
                return g
        s = self.facts[doc_id]
        if policy is not None and s.subject is not None:
            mine = self._order(doc_id, s)
            for g in sorted(self.slots.get((s.namespace, s.subject), ())):
                if g == doc_id or not self.visible(g, known_at):
                    continue
                sg = self.facts[g]
                if sg.begin <= t and self._order(g, sg) > mine \
                        and self.related(policy, g, sg, doc_id, s):
                    return g
        return None

    def chain(self, doc_id: str, policy: SupersessionPolicy | None) -> tuple[str, ...]:
        """Every fact connected to ``doc_id`` by supersession (both directions), oldest first."""
        seen = {doc_id}
        todo = [doc_id]
        while todo:
            current = todo.pop()
            s = self.facts.get(current)
            neighbours: set[str] = set(self.successors.get(current, ()))
            if s is not None:
                neighbours.update(x for x in s.supersedes if x in self.facts)
                if policy is not None and s.subject is not None:
                    neighbours.update(
                        g for g in self.slots.get((s.namespace, s.subject), ())
                        if g != current and self.related(policy, g, self.facts[g], current, s))
            for n in neighbours - seen:
                seen.add(n)
                todo.append(n)
        return tuple(sorted(seen, key=lambda i: self._order(i, self.facts[i])))

    def current_in_slot(self, namespace: str, subject: str, t: int,
                        policy: SupersessionPolicy) -> list[str]:
        """Facts of a slot that are current at ``t`` under ``policy`` (for reports)."""
        return [i for i in sorted(self.slots.get((namespace, subject), ()))
                if self.status(i, t, None, policy) == "current"]
