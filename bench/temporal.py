"""Temporal correctness: does recall give the value that held at t, and the one we believed at K?

A seeded bitemporal workload (``bench/temporal_workload.py``: subjects such as ``user-17/city``
whose values change over a year, facts that arrive out of order, corrections, expiries, facts
dated by ``event_time`` or not dated at all) with its ground truth from a plain bitemporal model,
asked two questions per subject:

- "what was true at t": ``recall(query, subject=s, as_of=t)`` with everything the store knows;
- "what did we believe at K" (about the valid time t): ``recall(query, subject=s, as_of=t,
  known_at=K)``; half of these ask about t = K (what we then believed held at that moment),
  half about another t.

Every fact goes in at its ingest time through the engine's injectable clock
(``Engine.open(None, clock=...)``), one ``remember`` per fact, with the ``latest-by-subject``
supersession policy; half of the corrections also name the fact they correct in ``supersedes``.
Retrieval is not what is measured: every question filters on the subject and its query words
appear in every fact of the subject.

Methods, fed the same facts in the same order and asked the same questions:

- hmsengine: the recalls above. An answer is the list of values of every fact recall returns
  (k=10); it is right when it is exactly the expected value, or nothing when no value held.
- latest-ingested-wins: hmsengine's own search over the same store, time ignored: ``recall(query,
  subject=s, history="all")`` and the newest-ingested fact wins; "believed at K" keeps the facts
  ingested by K (what a plain store would have answered at K).
- hotmemory 0.1.0 (PyPI): its in-process ``MemoryStore`` behind its ``Memory``; each fact goes in
  with ``Memory.remember`` (valid_from, valid_until, observed_at = event time, else ingest time),
  its clock set to the ingest time; questions go to ``Memory.recall(query, scopes, as_of=t)``.
  hotmemory has no knowledge time: it answers "believed at K" with the same ``as_of=t`` recall
  over everything it holds. One store per subject (its search scans every key of a store; a
  shared store would make the run quadratic, and scopes would give the same answers), with a
  constant embedder so that every record of the subject is equally relevant and hotmemory's own
  tie order (newest created first) decides. Its answer is the first record it returns; the JSON
  also has the exact-set figure (every record it returns).

A replay check beside it: hmsengine is also asked each "believed at K" question live, while the
facts go in, when its clock reads K (``as_of=t``, no ``known_at``); the known_at replay should
give the same answer.

Run: ``python bench/temporal.py`` (2,000 subjects, about 9,000 facts and 16,000 questions;
about a minute on the 2-core VM), ``--quick`` (200 subjects, a few seconds). Writes
bench/results/temporal.json (``--quick``: temporal-quick.json). Exit status 1 if hmsengine is
not 100% right on both questions.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import temporal_workload as tw  # bench scripts run as files, not as a package
from _common import (
    RESULTS_DIR,
    _version,
    busy_warning,
    load_average,
    machine_facts,
    now_iso,
    print_table,
    write_results,
)

from hmsengine import Engine, Memory

QUESTION = ("Accuracy of 'what was true at t' and 'what did we believe at K' on a seeded "
            "bitemporal workload, hmsengine next to latest-ingested-wins and hotmemory's as_of")
SEED = 20261130
DEFAULTS = {"subjects": 2000, "questions": 4}
QUICK = {"subjects": 200, "questions": 4}
METHODS = ("hmsengine", "latest_ingested", "hotmemory")
METHOD_NAMES = {
    "hmsengine": "hmsengine recall(as_of, known_at)",
    "latest_ingested": "latest-ingested-wins (same search)",
    "hotmemory": "hotmemory 0.1.0 recall(as_of)",
}
KINDS = ("true_at", "believed_at")
EXAMPLES = 6  # failures shown per method
_UNIX = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

Answers = list[tuple[str, ...]]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- hmsengine and latest-ingested-wins (one store) ----------------------------------------------


async def run_engine(workload: tw.Workload) -> dict[str, Any]:
    """Feed the facts (asking the live replay questions when the clock reaches their K), then
    ask hmsengine's questions and the latest-ingested-wins baseline's, on the same store."""
    questions = workload.questions
    live_order = sorted((i for i, q in enumerate(questions) if q.known_at is not None),
                        key=lambda i: questions[i].known_at or 0)
    live: dict[int, tuple[str, ...]] = {}
    first = workload.events[0].ingest_time
    if live_order:
        first = min(first, questions[live_order[0]].known_at or first)
    clock = tw.SetClock(first - 1)
    out: dict[str, Any] = {}
    async with Engine.open(None, clock=clock) as engine:
        memory = Memory(engine, tw.POLICY)
        started = time.perf_counter()
        pending = iter(live_order)
        nxt = next(pending, None)

        async def ask_live_until(limit: int | None) -> None:
            """Ask the live questions whose K comes before ``limit`` (None: all that are left)."""
            nonlocal nxt
            while nxt is not None and (limit is None or (questions[nxt].known_at or 0) < limit):
                q = questions[nxt]
                clock.now = q.known_at or 0
                hits = await memory.recall(tw.query_text(q.subject), subject=q.subject, as_of=q.t, k=10)
                live[nxt] = tuple(tw.value_of(h.fact.text) for h in hits)
                nxt = next(pending, None)

        for e in workload.events:
            await ask_live_until(e.ingest_time)
            await tw.feed(memory, clock, [e])
        await ask_live_until(None)
        out["feed_and_live_seconds"] = time.perf_counter() - started
        clock.now = workload.events[-1].ingest_time + 1

        started = time.perf_counter()
        out["hmsengine"] = [await tw.ask(memory, q) for q in questions]
        out["hmsengine_seconds"] = time.perf_counter() - started

        started = time.perf_counter()
        seen: dict[str, list[tuple[int, str]]] = {}
        latest: Answers = []
        for q in questions:
            facts = seen.get(q.subject)
            if facts is None:  # time is ignored, so one search per subject serves every question
                hits = await memory.recall(tw.query_text(q.subject), subject=q.subject,
                                           history="all", k=100)
                facts = seen[q.subject] = [(h.fact.ingest_time, tw.value_of(h.fact.text)) for h in hits]
            known = [f for f in facts if q.known_at is None or f[0] <= q.known_at]
            latest.append((max(known)[1],) if known else ())
        out["latest_ingested"] = latest
        out["latest_ingested_seconds"] = time.perf_counter() - started
    out["live"] = [live.get(i) for i in range(len(questions))]
    return out


# -- hotmemory -------------------------------------------------------------------------------------


def hotmemory_unavailable() -> str | None:
    try:
        import hotmemory  # noqa: F401
    except ImportError as exc:
        return f"hotmemory is not installed ({exc}); pip install hotmemory==0.1.0"
    return None


def _when(ms: int) -> dt.datetime:
    return _UNIX + dt.timedelta(milliseconds=ms)


def run_hotmemory(workload: tw.Workload) -> dict[str, Any]:
    """hotmemory's answers: the values of the records its as_of recall returns, in its order."""
    import hotmemory

    now = [_UNIX]

    def clock() -> dt.datetime:
        return now[0]

    def embedder(texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]  # every record equally relevant: hotmemory's order decides

    scope = ("bench",)
    memories: dict[str, Any] = {}
    started = time.perf_counter()
    for e in workload.events:
        memory = memories.get(e.subject)
        if memory is None:
            store = hotmemory.MemoryStore(embedder=embedder, clock=clock)
            memory = memories[e.subject] = hotmemory.Memory(store, clock=clock)
        now[0] = _when(e.ingest_time)
        observed = e.event_time if e.event_time is not None else e.ingest_time
        memory.remember([hotmemory.Fact(
            kind="fact", content=e.text, subject=e.subject,
            valid_from=None if e.valid_from is None else _when(e.valid_from),
            valid_until=None if e.valid_to is None else _when(e.valid_to),
            observed_at=_when(observed))], scope)
    feed_seconds = time.perf_counter() - started
    now[0] = _when(workload.events[-1].ingest_time + 1)
    started = time.perf_counter()
    answers: Answers = []
    for q in workload.questions:
        records, _block = memories[q.subject].recall(tw.query_text(q.subject), [scope],
                                                     as_of=_when(q.t), k=1000, budget=10**9)
        answers.append(tuple(tw.value_of(r.content) for r in records))
    return {"hotmemory": answers, "hotmemory_feed_seconds": feed_seconds,
            "hotmemory_seconds": time.perf_counter() - started}


# -- scoring ---------------------------------------------------------------------------------------


def score(workload: tw.Workload, answers: Answers) -> dict[str, Any]:
    """Per question kind: n, right by the first answer, right by the exact set of answers."""
    out: dict[str, Any] = {}
    for kind in KINDS:
        pairs = [(q, a) for q, a in zip(workload.questions, answers, strict=True) if q.kind == kind]
        first = sum((a[0] if a else None) == q.expected for q, a in pairs)
        exact = sum(a == tw.expected_answer(q) for q, a in pairs)
        n = len(pairs)
        out[kind] = {"n": n, "correct": first, "accuracy": first / n if n else None,
                     "exact_correct": exact, "exact_accuracy": exact / n if n else None}
    return out


def _timeline(events: Sequence[tw.Event]) -> list[dict[str, Any]]:
    """A subject's facts in valid-time order, for a reader."""
    return [tw.describe_event(e) for e in sorted(events, key=lambda e: (e.begin, e.ingest_time))]


def reason(q: tw.Question, events: Sequence[tw.Event]) -> str:
    """What makes this question hard: the case of the ground truth."""
    known = [e for e in events if q.known_at is None or e.ingest_time <= q.known_at]
    begun = [e for e in known if e.begin <= q.t]
    if not begun:
        return "nothing known had begun by t"
    top = max(begun, key=lambda e: (e.begin, e.ingest_time, e.id))
    if top.valid_to is not None and top.valid_to <= q.t:
        return "the fact in force at t had expired (no value)"
    if top.corrects is not None:
        return "a correction replaced what was first learned"
    if any(e.begin < top.begin and e.ingest_time > top.ingest_time for e in known):
        return "a fact about an earlier time arrived after it"
    if any(e.begin > q.t for e in known):
        return "a later value was already known"
    if len(known) < len(events):
        return "facts learned after K must not count"
    return "other"


def examples(workload: tw.Workload, answers: Answers, *, exact: bool) -> list[dict[str, Any]]:
    """Up to EXAMPLES failures, one per reason first, each with the subject's whole timeline."""
    subjects = workload.by_subject()
    picked: list[dict[str, Any]] = []
    reasons: set[str] = set()
    spare: list[dict[str, Any]] = []
    for q, a in zip(workload.questions, answers, strict=True):
        ok = a == tw.expected_answer(q) if exact else (a[0] if a else None) == q.expected
        if ok:
            continue
        why = reason(q, subjects[q.subject])
        item = {"subject": q.subject, "question": q.kind, "t": tw.iso(q.t),
                "known_at": tw.iso(q.known_at), "expected": q.expected, "got": list(a),
                "case": why, "facts": _timeline(subjects[q.subject])}
        if why in reasons:
            if len(spare) < EXAMPLES:
                spare.append(item)
            continue
        reasons.add(why)
        picked.append(item)
        if len(picked) == EXAMPLES:
            break
    return (picked + spare)[:EXAMPLES]


def failure_cases(workload: tw.Workload, answers: Answers) -> dict[str, dict[str, int]]:
    """How the first-answer failures spread over the cases, per question kind."""
    subjects = workload.by_subject()
    out: dict[str, dict[str, int]] = {kind: {} for kind in KINDS}
    for q, a in zip(workload.questions, answers, strict=True):
        if (a[0] if a else None) != q.expected:
            why = reason(q, subjects[q.subject])
            out[q.kind][why] = out[q.kind].get(why, 0) + 1
    return out


def replay_check(workload: tw.Workload, replayed: Answers,
                 live: list[tuple[str, ...] | None]) -> dict[str, Any]:
    """The known_at replay against the answers hmsengine gave live at K."""
    subjects = workload.by_subject()
    differ = []
    n = 0
    for q, r, now in zip(workload.questions, replayed, live, strict=True):
        if now is None:
            continue
        n += 1
        if r != now:
            differ.append({"subject": q.subject, "t": tw.iso(q.t), "known_at": tw.iso(q.known_at),
                           "expected": q.expected, "replayed": list(r), "live": list(now),
                           "facts": _timeline(subjects[q.subject])})
    return {"n": n, "agree": n - len(differ), "differ": len(differ),
            "live_accuracy": sum((now[0] if now else None) == q.expected
                                 for q, now in zip(workload.questions, live, strict=True)
                                 if now is not None) / n if n else None,
            "examples": differ[:EXAMPLES]}


# -- report ----------------------------------------------------------------------------------------


def _cell(s: dict[str, Any], key: str = "") -> str:
    correct, acc = s[key + "correct"], s[key + "accuracy"]
    return "-" if acc is None else f"{100 * acc:.1f}% ({correct:,}/{s['n']:,})"


def report(results: dict[str, Any], counts: dict[str, int], replay: dict[str, Any],
           skipped: str | None) -> None:
    print(f"\nTemporal correctness: {counts['subjects']:,} subjects, {counts['facts']:,} facts "
          f"({counts['out_of_order']:,} out of order, {counts['corrections']:,} corrections, "
          f"{counts['expiries']:,} with an expiry), {counts['questions_true_at']:,} + "
          f"{counts['questions_believed_at']:,} questions\n")
    # hmsengine must return exactly the expected fact and nothing else (its exact-set figure);
    # the baselines answer with one value (hotmemory: its first record).
    rows = []
    for m, r in results.items():
        key = "exact_" if m == "hmsengine" else ""
        rows.append([METHOD_NAMES[m], _cell(r["true_at"], key), _cell(r["believed_at"], key)])
    print_table(["method", "what was true at t", "what we believed at K"], rows)
    print("\nlatest-ingested-wins: the subject's newest-ingested fact (ingested by K for 'believed "
          "at K'), valid time ignored.")
    if "hotmemory" in results:
        h = results["hotmemory"]
        print(f"\nhotmemory has no knowledge time: its 'believed at K' is its as_of=t recall over "
              f"everything. Counting every record it returns (not only the first): "
              f"{_cell(h['true_at'], 'exact_')} and {_cell(h['believed_at'], 'exact_')}.")
    if skipped:
        print(f"\nhotmemory not measured: {skipped}")
    print(f"\nReplay check: hmsengine asked live when its clock read K (as_of=t, no known_at) gave "
          f"the known_at replay's answer on {replay['agree']:,} of {replay['n']:,} questions"
          + (" (the others: replay_check.examples in the JSON)." if replay["differ"] else "."))


def _hms_ok(results: dict[str, Any]) -> bool:
    return all(results["hmsengine"][k]["exact_accuracy"] in (None, 1.0) for k in KINDS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 200 subjects; results to temporal-quick.json")
    parser.add_argument("--subjects", type=int, help=f"subjects (default {DEFAULTS['subjects']})")
    parser.add_argument("--questions", type=int,
                        help=f"questions of each kind per subject (default {DEFAULTS['questions']})")
    parser.add_argument("--seed", type=int, default=SEED, help="seed (default %(default)s)")
    parser.add_argument("--no-hotmemory", action="store_true", help="skip the hotmemory baseline")
    parser.add_argument("--output", type=Path, default=None,
                        help="results JSON (default bench/results/temporal.json)")
    args = parser.parse_args(argv)
    params: dict[str, Any] = dict(QUICK if args.quick else DEFAULTS)
    for name in ("subjects", "questions"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    if params["subjects"] < 1 or params["questions"] < 1:
        parser.error("--subjects and --questions must be positive")
    output = args.output or RESULTS_DIR / ("temporal-quick.json" if args.quick else "temporal.json")

    started = time.perf_counter()
    facts = machine_facts()
    skipped = "--no-hotmemory was given" if args.no_hotmemory else hotmemory_unavailable()
    if not skipped:
        facts["versions"]["hotmemory"] = _version("hotmemory")
    warning = busy_warning()
    if warning:
        _log(warning)
    workload = tw.generate(params["subjects"], seed=args.seed,
                           questions_per_subject=params["questions"])
    counts = workload.counts()
    _log(f"workload: {counts}")
    _log("hmsengine and latest-ingested-wins")
    answers: dict[str, Any] = trio.run(run_engine, workload)
    if not skipped:
        _log("hotmemory")
        answers.update(run_hotmemory(workload))
    methods = [m for m in METHODS if m in answers]
    results = {m: score(workload, answers[m]) for m in methods}
    replay = replay_check(workload, answers["hmsengine"], answers["live"])
    report(results, counts, replay, skipped)
    ok = _hms_ok(results)
    print(f"\nAim: hmsengine 100% on both questions: {'met' if ok else 'NOT MET'}.")
    elapsed = time.perf_counter() - started

    payload = {
        "benchmark": "temporal",
        "question": QUESTION,
        "date": now_iso(),
        "method": (__doc__ or "").split("\n\n", 1)[1],
        "semantics": tw.__doc__,
        "machine": facts,
        "parameters": {"seed": args.seed, "subjects": params["subjects"],
                       "questions_per_subject_and_kind": params["questions"], "quick": args.quick,
                       "policy": tw.POLICY, "k": 10,
                       "probabilities": {"late": tw.P_LATE, "scheduled": tw.P_SCHEDULED,
                                         "expiry": tw.P_EXPIRY, "correction": tw.P_CORRECTION,
                                         "correction_names_supersedes": tw.P_EXPLICIT,
                                         "dated_by_event_time": tw.P_EVENT_TIME,
                                         "undated": tw.P_UNDATED},
                       "store": "in memory (Engine.open(None, clock=...))"},
        "workload": counts,
        "results": {m: {"name": METHOD_NAMES[m], **results[m]} for m in methods},
        "hmsengine_100_percent": ok,
        "hotmemory_skipped": skipped,
        "hotmemory_note": ("no knowledge time: 'believed at K' is answered by recall(as_of=t) "
                           "over everything it holds; 'correct' counts its first record, "
                           "'exact_correct' every record it returns"),
        "failure_cases": {m: failure_cases(workload, answers[m]) for m in methods},
        "examples_of_failures": {m: examples(workload, answers[m], exact=m == "hmsengine")
                                 for m in methods},
        "replay_check": replay,
        "seconds": {k: round(v, 2) for k, v in answers.items() if k.endswith("seconds")},
        "load_average_at_end": load_average(),
        "wall_seconds": round(elapsed, 1),
    }
    path = write_results(output, payload)
    print(f"\nWrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path} "
          f"({elapsed:.0f} s).")
    return 0 if ok else 1


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
