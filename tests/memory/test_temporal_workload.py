"""hmsengine answers a seeded bitemporal workload (bench/temporal_workload.py) 100% right:
what was true at t, and what we believed at K, with out-of-order arrivals, corrections and
expiries, also after a reopen; the generator really produces those cases; its ground truth on a
hand-checked case."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from hmsengine import Engine, Memory

_PATH = Path(__file__).resolve().parents[2] / "bench" / "temporal_workload.py"


def _load():
    # The bench scripts are files, not a package: load the module from its path (registered in
    # sys.modules first, as dataclasses need).
    name = "temporal_workload"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, _PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


tw = _load()


def test_generator_produces_every_hard_case():
    """The seeded workload has out-of-order arrivals, corrections (with and without supersedes),
    expiries, event_time and undated facts, no-value answers, and is the same for a seed."""
    workload = tw.generate(30, seed=7)
    counts = workload.counts()
    for key in ("out_of_order", "late_arrivals", "scheduled", "corrections", "corrections_explicit",
                "expiries", "dated_by_event_time", "undated", "questions_expecting_no_value"):
        assert counts[key] > 0, key
    assert counts["corrections_explicit"] < counts["corrections"]
    assert counts["questions_true_at"] == counts["questions_believed_at"] == 120
    ingest = [e.ingest_time for e in workload.events]
    assert ingest == sorted(set(ingest))  # one strictly increasing clock reading per fact
    assert tw.generate(30, seed=7) == workload


def test_ground_truth_on_a_hand_checked_timeline():
    """The model: latest begun fact known by K wins; an expiry leaves no value; a correction with
    the same valid_from replaces the first belief once known; a late arrival takes its interval."""
    e = tw.Event
    events = [
        e(id="s#1", subject="u/city", value="A", valid_from=10, valid_to=None, ingest_time=11),
        e(id="s#3", subject="u/city", value="C", valid_from=30, valid_to=35, ingest_time=31),
        e(id="s#2-wrong", subject="u/city", value="X", valid_from=20, valid_to=None, ingest_time=40),
        e(id="s#2", subject="u/city", value="B", valid_from=20, valid_to=None, ingest_time=50,
          corrects="s#2-wrong"),
    ]
    assert tw.truth(events, 5, None) is None  # nothing has begun
    assert tw.truth(events, 25, None) == "B"  # the late arrival, corrected
    assert tw.truth(events, 25, 45) == "X"  # believed before the correction
    assert tw.truth(events, 25, 35) == "A"  # believed before the late arrival
    assert tw.truth(events, 30, None) == "C"
    assert tw.truth(events, 35, None) is None  # C expired; A and B do not come back
    assert tw.truth(events, 31, 30) == "A"  # C not yet known


async def test_hmsengine_answers_every_question_right():
    """recall(as_of=t) and recall(as_of=t, known_at=K) return exactly the true value (or nothing
    when none held) for every question of a 30-subject workload."""
    workload = tw.generate(30, seed=20261130)
    answers = await tw.run_hmsengine(workload)
    wrong = [(q, a) for q, a in zip(workload.questions, answers, strict=True)
             if a != tw.expected_answer(q)]
    assert not wrong, wrong[:3]
    assert {q.kind for q in workload.questions} == {"true_at", "believed_at"}


async def test_the_answers_survive_a_reopen(tmp_path):
    """Fed to a store on disk, closed and reopened (the memory index rebuilt from the stored
    stamps), hmsengine still answers every question right."""
    workload = tw.generate(15, seed=5)
    clock = tw.SetClock(workload.events[0].ingest_time - 1)
    async with Engine.open(tmp_path / "store", clock=clock) as engine:
        await tw.feed(Memory(engine, tw.POLICY), clock, workload.events)
    async with Engine.open(tmp_path / "store", clock=clock) as engine:
        memory = Memory(engine, tw.POLICY)
        answers = [await tw.ask(memory, q) for q in workload.questions]
    assert answers == [tw.expected_answer(q) for q in workload.questions]


async def test_known_at_replays_a_lone_slot_fact_as_it_was_answered():
    """A fact dated by event_time, alone in its slot, was returned for as_of before its
    event_time; a fact ingested later must not change that answer under known_at."""
    class Clock:
        now = 100

        def __call__(self) -> int:
            return self.now

    clock = Clock()
    async with Engine.open(None, clock=clock) as engine:
        memory = Memory(engine, {"supersession": "latest-by-subject"})
        await memory.remember("u city is Paris", id="a", subject="u/city", event_time=50)
        then = await memory.recall("u city", subject="u/city", as_of=40)
        clock.now = 200
        await memory.remember("u city is Berlin", id="b", subject="u/city", valid_from=300)
        replay = await memory.recall("u city", subject="u/city", as_of=40, known_at=150)
        assert [h.fact.id for h in replay] == [h.fact.id for h in then]
