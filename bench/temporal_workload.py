"""A seeded bitemporal workload with its ground truth, and the driver that runs it on hmsengine.

Shared by ``bench/temporal.py`` (which adds the baselines) and ``tests/memory/
test_temporal_workload.py`` (which holds hmsengine to 100%). No dependency but hmsengine.

The workload: ``subjects`` subjects such as ``user-17/city``, each a sequence of 2-6 versions
(values) over valid time, spread over a year, so that the subject's slot always holds two facts
or more. A version begins at its ``valid_from`` (most), or at its ``event_time`` (10%), or,
undated (10%), when it is learned. Some also have a ``valid_to`` (an expiry: the value stops
holding, and nothing replaces it until the next version begins). Each fact has an ingest
(knowledge) time, set through the engine's injectable clock:

- most versions are learned minutes to three days after they begin;
- a late arrival is learned 15-120 days after it begins, usually after later versions;
- a scheduled version is learned 1-14 days before it begins;
- a correction: the version is first learned wrong (a wrong value, or its right value with a
  wrong end), and 1-30 days later a correction with the same begin replaces it. Half
  of the corrections also name the corrected fact in ``supersedes``; the other half rely on the
  subject slot policy alone.

Ground truth (what hmsengine's ``latest-by-subject`` policy is documented to mean, and a plain
bitemporal model): for a subject, a valid time t and a knowledge time K (None: everything),
take the subject's facts ingested at or before K that have begun by t (begin <= t, where begin
is valid_from, else event_time, else ingest_time); the one latest in (begin, ingest_time, id)
order is in force; its value holds unless it has expired (``valid_to <= t``), in which case
the subject has no value at t. So a late arrival takes over only the interval it begins, a
correction (same begin, ingested later) replaces the corrected fact's value and end entirely
once known, an expiry is never papered over by an older value, and K hides both the facts
learned after it and their effects.

A fact alone in its slot (the only fact of its subject known at K) is a plain fact: without a
valid_from nothing bounds its start, so it holds at any t before its expiry (API.md: no window
and no link means recall is plain search). Every subject has two facts or more, so this rule
only shows in "what did we believe at K" when K saw one of them; it is what the store answered
at that moment (bench/temporal.py's replay check asks it live).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hmsengine import Engine, Memory

MINUTE = 60_000
HOUR = 60 * MINUTE
DAY = 24 * HOUR
EPOCH = 1_704_067_200_000  # 2024-01-01T00:00:00Z: valid times start here
SPAN_DAYS = 365
POLICY = {"supersession": "latest-by-subject"}

# Probabilities per version (defaults of generate()).
P_LATE = 0.2
P_SCHEDULED = 0.07
P_EXPIRY = 0.25
P_CORRECTION = 0.15
P_EXPLICIT = 0.5
P_EVENT_TIME = 0.1
P_UNDATED = 0.1

_VALUES = {
    "city": ("Berlin", "Lisbon", "Osaka", "Nairobi", "Toronto", "Lyon", "Seattle", "Oslo",
             "Porto", "Denver", "Madrid", "Hanoi"),
    "employer": ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark",
                 "Wayne", "Wonka", "Cyberdyne"),
    "plan": ("free", "starter", "pro", "team", "business", "enterprise"),
    "manager": ("Alice", "Bob", "Carmen", "Dmitri", "Emeka", "Fatima", "Grace", "Hiro",
                "Ines", "Jonas"),
    "laptop": ("ThinkPad", "MacBook", "XPS", "Framework", "Surface", "ZenBook", "Spectre"),
}
ATTRIBUTES = tuple(_VALUES)


@dataclass(frozen=True)
class Event:
    """One fact as remembered: a version of a subject's value, or a correction of one."""

    id: str
    subject: str
    value: str
    valid_from: int | None  # None: dated by event_time, or by nothing (it begins when learned)
    valid_to: int | None
    ingest_time: int
    event_time: int | None = None
    corrects: str | None = None  # the id of the fact this one corrects
    explicit: bool = False  # the correction names it in ``supersedes``
    note: str = ""  # "", "late", "scheduled", "wrong", "correction" (how it was generated)

    @property
    def begin(self) -> int:
        """When it takes effect: valid_from, else event_time, else ingest_time (API.md)."""
        if self.valid_from is not None:
            return self.valid_from
        return self.event_time if self.event_time is not None else self.ingest_time

    @property
    def text(self) -> str:
        user, attribute = self.subject.split("/")
        return f"{user} {attribute} is {self.value}"


def query_text(subject: str) -> str:
    """The recall query for a subject: words every one of its facts contains."""
    user, attribute = subject.split("/")
    return f"{user} {attribute}"


@dataclass(frozen=True)
class Question:
    """Which value held at valid time ``t``, as known at ``known_at`` (None: as known now)."""

    subject: str
    t: int
    known_at: int | None
    expected: str | None

    @property
    def kind(self) -> str:
        return "true_at" if self.known_at is None else "believed_at"


@dataclass(frozen=True)
class Workload:
    seed: int
    events: tuple[Event, ...]  # in ingest order (strictly increasing ingest times)
    questions: tuple[Question, ...]

    def by_subject(self) -> dict[str, list[Event]]:
        out: dict[str, list[Event]] = {}
        for e in self.events:
            out.setdefault(e.subject, []).append(e)
        return out

    def counts(self) -> dict[str, int]:
        """What the workload holds: facts, out-of-order arrivals, corrections, expiries, ..."""
        subjects = self.by_subject()
        return {
            "subjects": len(subjects),
            "facts": len(self.events),
            "out_of_order": sum(out_of_order(e, subjects[e.subject]) for e in self.events),
            "late_arrivals": sum(e.note == "late" for e in self.events),
            "scheduled": sum(e.note == "scheduled" for e in self.events),
            "corrections": sum(e.corrects is not None for e in self.events),
            "corrections_explicit": sum(e.explicit for e in self.events),
            "expiries": sum(e.valid_to is not None for e in self.events),
            "dated_by_event_time": sum(e.event_time is not None for e in self.events),
            "undated": sum(e.valid_from is None and e.event_time is None for e in self.events),
            "questions_true_at": sum(q.known_at is None for q in self.questions),
            "questions_believed_at": sum(q.known_at is not None for q in self.questions),
            "questions_expecting_no_value": sum(q.expected is None for q in self.questions),
        }


def out_of_order(e: Event, same_subject: Iterable[Event]) -> bool:
    """Whether ``e`` arrived after a fact of its subject that begins later."""
    return any(o.begin > e.begin and o.ingest_time < e.ingest_time for o in same_subject)


# -- ground truth ------------------------------------------------------------------------------------


def truth(events: Sequence[Event], t: int, known_at: int | None) -> str | None:
    """The value of one subject (its ``events``) at valid time ``t`` as known at ``known_at``."""
    known = [e for e in events if known_at is None or e.ingest_time <= known_at]
    if len(known) == 1 and known[0].valid_from is None:  # a lone fact: plain, unbounded start
        lone = known[0]
        return None if lone.valid_to is not None and lone.valid_to <= t else lone.value
    begun = [e for e in events
             if e.begin <= t and (known_at is None or e.ingest_time <= known_at)]
    if not begun:
        return None
    top = max(begun, key=lambda e: (e.begin, e.ingest_time, e.id))
    if top.valid_to is not None and top.valid_to <= t:
        return None
    return top.value


# -- the generator -----------------------------------------------------------------------------------


def _other(rng: random.Random, pool: Sequence[str], *avoid: str | None) -> str:
    return rng.choice([v for v in pool if v not in avoid])


def _subject_events(rng: random.Random, subject: str, p: dict[str, float]) -> list[Event]:
    pool = _VALUES[subject.split("/")[1]]
    versions = rng.randint(2, 6)
    starts = sorted(rng.sample(range(SPAN_DAYS * 24 * 60), versions))
    events: list[Event] = []
    previous: str | None = None
    for i, minute in enumerate(starts):
        when = EPOCH + minute * MINUTE
        value = _other(rng, pool, previous)
        previous = value
        roll = rng.random()
        if roll < p["late"]:
            ingest, note = when + rng.randint(15 * 24 * 60, 120 * 24 * 60) * MINUTE, "late"
        elif roll < p["late"] + p["scheduled"]:
            ingest, note = when - rng.randint(24 * 60, 14 * 24 * 60) * MINUTE, "scheduled"
        else:
            ingest, note = when + rng.randint(1, 72 * 60) * MINUTE, ""
        corrected = rng.random() < p["correction"]
        # How the version is dated: valid_from (most), event_time, or not at all (it begins
        # when learned; only for a version learned on time and never corrected).
        dating = rng.random()
        if dating < p["undated"] and not note and not corrected:
            vf, et, begin = None, None, ingest
        elif dating < p["undated"] + p["event_time"]:
            vf, et, begin = None, when, when
        else:
            vf, et, begin = when, None, when
        gap = (starts[i + 1] - minute) * MINUTE if i + 1 < versions else 90 * DAY
        vt = begin + rng.randint(1, max(1, int(gap * 1.5) // MINUTE)) * MINUTE \
            if rng.random() < p["expiry"] else None
        fid = f"{subject}#{i + 1}"
        if corrected:
            # First learned wrong: a wrong value, or the right value with a wrong end.
            if rng.random() < 0.7:
                wrong_value, wrong_end = _other(rng, pool, value), vt
            else:
                wrong_value = value
                wrong_end = (begin + rng.randint(1, 60 * 24 * 60) * MINUTE
                             if vt is None or rng.random() < 0.5 else None)
            wrong = Event(id=fid + "-wrong", subject=subject, value=wrong_value, valid_from=vf,
                          event_time=et, valid_to=wrong_end, ingest_time=ingest, note="wrong")
            events.append(wrong)
            events.append(Event(
                id=fid, subject=subject, value=value, valid_from=vf, event_time=et, valid_to=vt,
                ingest_time=ingest + rng.randint(24 * 60, 30 * 24 * 60) * MINUTE,
                corrects=wrong.id, explicit=rng.random() < p["explicit"], note="correction"))
        else:
            events.append(Event(id=fid, subject=subject, value=value, valid_from=vf, event_time=et,
                                valid_to=vt, ingest_time=ingest, note=note))
    return events


def _question_times(rng: random.Random, events: Sequence[Event]) -> int:
    """A valid time: half uniform over the subject's span, half on an edge (a begin or an end,
    the millisecond before it, or halfway between two begins)."""
    starts = sorted({e.begin for e in events})
    if rng.random() < 0.5:
        return rng.randint(starts[0] - 10 * DAY, starts[-1] + 120 * DAY)
    edges = [*starts, *(e.valid_to for e in events if e.valid_to is not None)]
    edges += [(a + b) // 2 for a, b in itertools.pairwise(starts)]
    edge = rng.choice(edges)
    return edge - 1 if rng.random() < 0.4 else edge


def _knowledge_time(rng: random.Random, events: Sequence[Event]) -> int:
    """A knowledge time: half uniform over the subject's ingest span, half at an ingest time
    or the millisecond before it."""
    ingests = [e.ingest_time for e in events]
    if rng.random() < 0.5:
        return rng.randint(min(ingests) - DAY, max(ingests) + DAY)
    k = rng.choice(ingests)
    return k - 1 if rng.random() < 0.5 else k


def generate(subjects: int, *, seed: int, questions_per_subject: int = 4,
             p_late: float = P_LATE, p_scheduled: float = P_SCHEDULED, p_expiry: float = P_EXPIRY,
             p_correction: float = P_CORRECTION, p_explicit: float = P_EXPLICIT,
             p_event_time: float = P_EVENT_TIME, p_undated: float = P_UNDATED) -> Workload:
    """The workload for ``seed``: events in ingest order and ``questions_per_subject`` questions
    of each kind per subject ("true at t": known_at None; "believed at K": half of them about
    t = K, what we then believed held at that moment, half about another valid time)."""
    rng = random.Random(seed)
    p = {"late": p_late, "scheduled": p_scheduled, "expiry": p_expiry,
         "correction": p_correction, "explicit": p_explicit, "event_time": p_event_time,
         "undated": p_undated}
    names = [f"user-{i // len(ATTRIBUTES)}/{ATTRIBUTES[i % len(ATTRIBUTES)]}" for i in range(subjects)]
    raw = [e for s in names for e in _subject_events(rng, s, p)]
    # One clock reading per fact, strictly increasing: order by ingest time, then bump equal
    # readings by a millisecond (order is kept, so a correction still follows what it corrects).
    raw.sort(key=lambda e: (e.ingest_time, e.id))
    events: list[Event] = []
    last = None
    for e in raw:
        if last is not None and e.ingest_time <= last:
            e = dataclasses.replace(e, ingest_time=last + 1)
        events.append(e)
        last = e.ingest_time
    by_subject: dict[str, list[Event]] = {}
    for e in events:
        by_subject.setdefault(e.subject, []).append(e)
    qs: list[Question] = []
    for s in names:
        evs = by_subject[s]
        for _ in range(questions_per_subject):
            t = _question_times(rng, evs)
            qs.append(Question(subject=s, t=t, known_at=None, expected=truth(evs, t, None)))
        for _ in range(questions_per_subject):
            k = _knowledge_time(rng, evs)
            t = k if rng.random() < 0.5 else _question_times(rng, evs)
            qs.append(Question(subject=s, t=t, known_at=k, expected=truth(evs, t, k)))
    return Workload(seed=seed, events=tuple(events), questions=tuple(qs))


# -- hmsengine ---------------------------------------------------------------------------------------


class SetClock:
    """The engine's injectable clock: reads whatever the driver set (ms)."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def value_of(text: str) -> str:
    return text.rsplit(" is ", 1)[1]


async def feed(memory: Memory, clock: SetClock, events: Iterable[Event]) -> None:
    """Remember every event at its ingest time, in ingest order (one transaction each)."""
    for e in events:
        clock.now = e.ingest_time
        await memory.remember(e.text, id=e.id, subject=e.subject, valid_from=e.valid_from,
                              event_time=e.event_time, valid_to=e.valid_to,
                              supersedes=(e.corrects,) if e.explicit and e.corrects else ())


async def ask(memory: Memory, q: Question) -> tuple[str, ...]:
    """hmsengine's answer: the values of every current fact recall returns for the subject."""
    hits = await memory.recall(query_text(q.subject), subject=q.subject, as_of=q.t,
                               known_at=q.known_at, k=10)
    return tuple(value_of(h.fact.text) for h in hits)


async def run_hmsengine(workload: Workload) -> list[tuple[str, ...]]:
    """Feed the workload to an in-memory engine with the latest-by-subject policy, then ask
    every question; the answers in question order."""
    clock = SetClock(workload.events[0].ingest_time - 1)
    async with Engine.open(None, clock=clock) as engine:
        memory = Memory(engine, POLICY)
        await feed(memory, clock, workload.events)
        clock.now = workload.events[-1].ingest_time + 1
        return [await ask(memory, q) for q in workload.questions]


def expected_answer(q: Question) -> tuple[str, ...]:
    return () if q.expected is None else (q.expected,)


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return (dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


def describe_event(e: Event) -> dict[str, Any]:
    """An event for a human reader (ISO times)."""
    out: dict[str, Any] = {"id": e.id, "value": e.value, "valid_from": iso(e.valid_from),
                           "valid_to": iso(e.valid_to), "ingested": iso(e.ingest_time)}
    if e.event_time is not None:
        out["event_time"] = iso(e.event_time)
    if e.note:
        out["note"] = e.note
    if e.corrects:
        out["corrects"] = e.corrects
    return out
