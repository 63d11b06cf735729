"""Model-based test: a hypothesis state machine drives ``Memory`` and a small pure-Python model
of API.md's temporal rules side by side, and compares every answer.

The model is written from API.md, not from hmsengine/memory/index.py:

* begin(f) = valid_from, else event_time, else ingest_time.
* status at t: not-yet-valid if t < valid_from (under latest-by-subject also if t < begin for a
  slot fact); else expired if valid_to <= t; else superseded if a surviving visible fact that
  supersedes it (explicitly, or under latest-by-subject a later one in its slot, ordered by
  (begin, ingest_time, id)) took effect by t; else current.
* known_at hides facts ingested after it.
* forget: the newest goes, its predecessor is current again; a middle version goes, its surviving
  successors are re-linked to what it superseded; include_chain removes everything connected.

``HMS_MODEL_EXAMPLES`` raises the example count (default 200).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from reliability_host import TrioHost, report

from hmsengine import ForgetScope, Memory, NotFound
from hmsengine.storage.directory import MemoryDirectory

T0 = 1_700_000_000_000
EXAMPLES = int(os.environ.get("HMS_MODEL_EXAMPLES", "200"))
STEPS = int(os.environ.get("HMS_MODEL_STEPS", "25"))
WORD = "zebu"
SUBJECTS = ("alice/city", "bob/job")
NAMESPACES = ("default", "work")
MODES = ("current", "all", "historical")
COUNTERS = {"examples": 0, "steps": 0, "comparisons": 0}

offsets = st.integers(min_value=0, max_value=40).map(lambda n: T0 + 50 * n)


class Clock:
    def __init__(self) -> None:
        self.now = T0 + 500

    def __call__(self) -> int:
        return self.now


@dataclass
class MFact:
    id: str
    text: str
    subject: str | None
    namespace: str
    valid_from: int | None
    valid_to: int | None
    event_time: int | None
    ingest_time: int
    supersedes: list[str] = field(default_factory=list)
    remembered_with: tuple[str, ...] = ()

    @property
    def begin(self) -> int:
        if self.valid_from is not None:
            return self.valid_from
        if self.event_time is not None:
            return self.event_time
        return self.ingest_time

    def order(self) -> tuple[int, int, str]:
        return (self.begin, self.ingest_time, self.id)


class Model:
    def __init__(self, slot: bool) -> None:
        self.slot = slot
        self.facts: dict[str, MFact] = {}

    def visible(self, fid: str, known_at: int | None) -> bool:
        return known_at is None or self.facts[fid].ingest_time <= known_at

    def status(self, fid: str, t: int, known_at: int | None) -> str:
        f = self.facts[fid]
        if f.valid_from is not None and t < f.valid_from:
            return "not-yet-valid"
        # "Not begun yet" under latest-by-subject applies in a slot of two or more facts; a lone
        # slot fact is plain (API.md: no window and no link means recall is plain search). Under
        # known_at the slot is counted as it was then (only the facts known by then).
        if self.slot and f.subject is not None and t < f.begin and sum(
                1 for g in self.facts.values()
                if g.subject == f.subject and g.namespace == f.namespace
                and self.visible(g.id, known_at)) > 1:
            return "not-yet-valid"
        if f.valid_to is not None and f.valid_to <= t:
            return "expired"
        for g in self.facts.values():
            if g.id == fid or not self.visible(g.id, known_at) or g.begin > t:
                continue
            if fid in g.supersedes:
                return "superseded"
            if (self.slot and f.subject is not None and g.subject == f.subject
                    and g.namespace == f.namespace and g.order() > f.order()):
                return "superseded"
        return "current"

    def recall(self, t: int, known_at: int | None, mode: str) -> set[tuple[str, str]]:
        out = set()
        for fid in self.facts:
            if not self.visible(fid, known_at):
                continue
            s = self.status(fid, t, known_at)
            if mode == "all" or (mode == "current") == (s == "current"):
                out.add((fid, s))
        return out

    def neighbours(self, fid: str) -> set[str]:
        f = self.facts[fid]
        out = {x for x in f.supersedes if x in self.facts}
        out |= {g.id for g in self.facts.values() if fid in g.supersedes}
        if self.slot and f.subject is not None:
            out |= {g.id for g in self.facts.values()
                    if g.subject == f.subject and g.namespace == f.namespace}
        return out

    def chain(self, fid: str) -> list[str]:
        seen, todo = {fid}, [fid]
        while todo:
            for n in self.neighbours(todo.pop()) - seen:
                seen.add(n)
                todo.append(n)
        return sorted(seen, key=lambda i: self.facts[i].order())

    def forget(self, matched: set[str], include_chain: bool) -> tuple[set[str], set[str]]:
        matched = {m for m in matched if m in self.facts}
        if include_chain:
            for m in list(matched):
                matched |= set(self.chain(m))
        relinked = set()

        def resolve(links: list[str]) -> list[str]:
            out: list[str] = []
            todo, seen = list(links), set()
            while todo:
                x = todo.pop(0)
                if x in seen:
                    continue
                seen.add(x)
                if x in matched:
                    todo.extend(self.facts[x].supersedes)
                elif x in self.facts:
                    out.append(x)
            return out

        for g in self.facts.values():
            if g.id not in matched and any(x in matched for x in g.supersedes):
                relinked.add(g.id)
                g.supersedes = resolve(g.supersedes)
        for m in matched:
            del self.facts[m]
        return matched, relinked


class MemoryMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.host = TrioHost()
        self.clock = Clock()
        self.directory = MemoryDirectory()
        self.model: Model | None = None
        self.memory: Memory | None = None
        self.config: dict[str, str] | None = None
        self.counter = 0
        self.forgotten: set[str] = set()
        COUNTERS["examples"] += 1

    def _open(self) -> None:
        engine = self.host.open_engine(self.directory, clock=self.clock)
        self.memory = Memory(engine, self.config)

    def call(self, name: str, *args, **kwargs):
        assert self.memory is not None
        return self.host.run(lambda: getattr(self.memory, name)(*args, **kwargs))

    @initialize(slot=st.booleans())
    def start(self, slot: bool) -> None:
        self.config = {"supersession": "latest-by-subject"} if slot else None
        self.model = Model(slot)
        self._open()

    def teardown(self) -> None:
        self.host.stop()

    def times(self) -> list[int]:
        assert self.model is not None
        ts = {T0, T0 + 1000, T0 + 2500, self.clock.now}
        for f in self.model.facts.values():
            for x in (f.valid_from, f.valid_to, f.event_time, f.ingest_time):
                if x is not None:
                    ts |= {x - 1, x}
        return sorted(ts)

    # -- rules ------------------------------------------------------------------------------------

    @rule(data=st.data(), advance=st.integers(1, 120), subject=st.sampled_from((None, *SUBJECTS)),
          namespace=st.sampled_from(NAMESPACES), vf=st.none() | offsets,
          span=st.none() | st.integers(1, 20), et=st.none() | offsets)
    def remember(self, data, advance, subject, namespace, vf, span, et) -> None:
        assert self.model is not None
        COUNTERS["steps"] += 1
        self.clock.now += advance
        fid = f"f{self.counter}"
        self.counter += 1
        existing = sorted(self.model.facts)
        supersedes = data.draw(st.lists(st.sampled_from(existing), max_size=2, unique=True)) \
            if existing else []
        vt = None
        if span is not None:
            vt = (vf if vf is not None else T0) + 50 * span
        text = f"{WORD} fact {fid} about {subject or 'nothing'}"
        result = self.call("remember", text, id=fid, subject=subject, namespace=namespace,
                           valid_from=vf, valid_to=vt, event_time=et, supersedes=supersedes)
        assert result.id == fid and result.created
        self.model.facts[fid] = MFact(fid, text, subject, namespace, vf, vt, et, self.clock.now,
                                      list(supersedes), tuple(supersedes))

    @precondition(lambda self: self.model is not None and self.model.facts)
    @rule(data=st.data())
    def repeat_remember(self, data) -> None:
        """The same id and payload again: created=False, first ingest_time kept."""
        assert self.model is not None
        COUNTERS["steps"] += 1
        eligible = sorted(i for i, f in self.model.facts.items()
                          if all(x in self.model.facts for x in f.remembered_with))
        if not eligible:
            return
        f = self.model.facts[data.draw(st.sampled_from(eligible))]
        self.clock.now += 1
        result = self.call("remember", f.text, id=f.id, subject=f.subject, namespace=f.namespace,
                           valid_from=f.valid_from, valid_to=f.valid_to, event_time=f.event_time,
                           supersedes=list(f.remembered_with))
        assert result.id == f.id and not result.created

    @rule(advance=st.integers(1, 800))
    def tick(self, advance: int) -> None:
        self.clock.now += advance

    @precondition(lambda self: self.model is not None and self.model.facts)
    @rule(data=st.data(), include_chain=st.booleans(), by_subject=st.booleans(),
          purge=st.integers(0, 4).map(lambda n: n == 0))
    def forget(self, data, include_chain: bool, by_subject: bool, purge: bool) -> None:
        assert self.model is not None
        COUNTERS["steps"] += 1
        if by_subject:
            subject = data.draw(st.sampled_from(SUBJECTS))
            scope = ForgetScope.subject(subject)
            matched = {f.id for f in self.model.facts.values() if f.subject == subject}
        else:
            pool = sorted(self.model.facts) + sorted(self.forgotten)[:2]
            ids = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True))
            scope = ForgetScope.ids(ids)
            matched = set(ids)
        report = self.call("forget", scope, include_chain=include_chain, purge=purge)
        removed, relinked = self.model.forget(matched, include_chain)
        self.forgotten |= removed
        assert set(report.removed) == removed, (report, removed)
        assert set(report.relinked) == relinked, (report, relinked)

    @rule()
    def reopen(self) -> None:
        COUNTERS["steps"] += 1
        self.host.close_engine()
        self._open()

    @rule(purge=st.booleans())
    def compact(self, purge: bool) -> None:
        COUNTERS["steps"] += 1
        assert self.memory is not None
        engine = self.memory.engine
        self.host.run(lambda: engine.compact(purge=purge))

    @precondition(lambda self: self.model is not None and self.model.facts)
    @rule(data=st.data(), mode=st.sampled_from(MODES), use_known=st.booleans())
    def recall(self, data, mode: str, use_known: bool) -> None:
        assert self.model is not None
        COUNTERS["steps"] += 1
        t = data.draw(st.sampled_from(self.times()))
        known_at = data.draw(st.sampled_from(self.times())) if use_known else None
        hits = self.call("recall", WORD, k=1000, candidate_limit=1000, as_of=t, known_at=known_at,
                         history=mode)
        got = {(h.fact.id, h.status) for h in hits}
        want = self.model.recall(t, known_at, mode)
        COUNTERS["comparisons"] += 1
        assert got == want, {"as_of": t, "known_at": known_at, "mode": mode,
                             "missing": want - got, "extra": got - want}

    @precondition(lambda self: self.model is not None and (self.model.facts or self.forgotten))
    @rule(data=st.data())
    def history_and_get(self, data) -> None:
        assert self.model is not None
        fid = data.draw(st.sampled_from(sorted(self.model.facts) + sorted(self.forgotten)))
        COUNTERS["comparisons"] += 1
        fact = self.call("get", fid)
        if fid not in self.model.facts:
            assert fact is None
            with pytest.raises(NotFound):
                self.call("history", fid)
            return
        m = self.model.facts[fid]
        assert fact is not None
        assert (fact.text, fact.subject, fact.namespace, fact.valid_from, fact.valid_to,
                fact.event_time, fact.ingest_time) == \
            (m.text, m.subject, m.namespace, m.valid_from, m.valid_to, m.event_time, m.ingest_time)
        assert sorted(fact.supersedes) == sorted(x for x in m.supersedes if x in self.model.facts)
        chain = [f.id for f in self.call("history", fid)]
        assert chain == self.model.chain(fid)
        t = data.draw(st.sampled_from(self.times()))
        why = self.call("explain", WORD, fid, as_of=t, k=1000, candidate_limit=1000, history="all")
        assert (why.status, list(why.chain)) == (self.model.status(fid, t, None), chain), t

    @invariant()
    def now_matches(self) -> None:
        """Recall at the default time (now) with history=all agrees with the model."""
        if self.memory is None or self.model is None or not self.model.facts:
            return
        hits = self.call("recall", WORD, k=1000, candidate_limit=1000, history="all")
        COUNTERS["comparisons"] += 1
        assert {(h.fact.id, h.status) for h in hits} == self.model.recall(self.clock.now, None, "all")


def test_memory_matches_model() -> None:
    run_state_machine_as_test(
        MemoryMachine,
        settings=settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
                          suppress_health_check=list(HealthCheck)),
    )
    report(f"model-based: {COUNTERS['examples']} examples, {COUNTERS['steps']} steps, "
          f"{COUNTERS['comparisons']} comparisons, 0 violations")
