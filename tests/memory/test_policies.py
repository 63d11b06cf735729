"""Pluggable policies: a custom object of each protocol changes behaviour as documented, the
built-ins are implementations of the same protocols, the importance weight ranks, and a policy
that fails is a PolicyError with nothing written."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Sequence

import pytest

from hmsengine import (
    Engine,
    Fact,
    ForgetScope,
    HmsError,
    InvalidRequest,
    Memory,
    MemoryConfig,
    PolicyError,
    RememberInput,
)
from hmsengine.policies import (
    Consolidation,
    ConsolidationPolicy,
    FactInfo,
    Forgetting,
    ForgettingPolicy,
    Importance,
    ImportancePolicy,
    LatestBySubject,
    NoSupersession,
    Recency,
    RecencyPolicy,
    SupersessionPolicy,
)

DAY = 86_400_000


def clock() -> Callable[[], int]:
    """A test clock: a fixed ms, one ms later at every reading."""
    return itertools.count(1_700_000_000_000).__next__


class SameKindLatest:
    """Latest by subject, but only between facts of one kind."""

    def __init__(self) -> None:
        self.calls = 0

    def supersedes(self, newer: FactInfo, older: FactInfo) -> bool:
        self.calls += 1
        assert newer.subject == older.subject and newer.begin >= older.begin
        return newer.kind == older.kind


class Boost:
    """Recency that doubles one fact's score and leaves the others."""

    def __init__(self, favourite: str) -> None:
        self.favourite = favourite
        self.seen_t: list[int] = []

    def multiplier(self, fact: FactInfo, t: int) -> float:
        self.seen_t.append(t)
        return 2.0 if fact.id == self.favourite else 1.0


class ByActor:
    """Forgetting of every fact an actor wrote (an async policy)."""

    def __init__(self, actor: str) -> None:
        self.actor = actor

    async def select(self, facts: Sequence[FactInfo], now: int) -> list[str]:
        return [f.id for f in facts if f.actor == self.actor]


class JoinTexts:
    """Consolidation that merges every current fact of a slot into one summary fact."""

    remove_sources = True

    def merge(self, facts: Sequence[Fact]) -> list[RememberInput]:
        return [RememberInput(text=" / ".join(f.text for f in facts), subject=facts[0].subject,
                              supersedes=tuple(f.id for f in facts), kind="profile")]


class Raises:
    """A policy of every kind that raises."""

    remove_sources = False

    def supersedes(self, newer: FactInfo, older: FactInfo) -> bool:
        raise RuntimeError("supersedes broke")

    def multiplier(self, fact: FactInfo, *rest: int) -> float:
        raise RuntimeError("multiplier broke")

    def select(self, facts: Sequence[FactInfo], now: int) -> list[str]:
        raise RuntimeError("select broke")

    def merge(self, facts: Sequence[Fact]) -> list[RememberInput]:
        raise RuntimeError("merge broke")


def test_builtins_implement_the_protocols_and_keep_their_names():
    """Every built-in is an instance of its protocol; a built-in object in the config is stored
    (and rendered) by its name, equal to the config that names it."""
    assert isinstance(LatestBySubject(), SupersessionPolicy)
    assert isinstance(NoSupersession(), SupersessionPolicy)
    assert isinstance(Recency(), RecencyPolicy) and isinstance(Importance(), ImportancePolicy)
    assert isinstance(Forgetting(), ForgettingPolicy)
    assert isinstance(Consolidation(), ConsolidationPolicy)
    by_object = MemoryConfig(supersession=LatestBySubject())
    assert by_object == MemoryConfig(supersession="latest-by-subject")
    assert by_object.to_json()["supersession"] == "latest-by-subject"
    assert MemoryConfig.from_json(by_object.to_json()) == by_object
    assert "importance" not in MemoryConfig().to_json()  # a default config renders as before
    shorthand = MemoryConfig(recency="none", importance="none", consolidation="exact-duplicates")
    assert shorthand == MemoryConfig(consolidation=Consolidation(kind="exact-duplicates"))
    assert MemoryConfig.from_json({"recency": "none", "importance": "none",
                                   "consolidation": "exact-duplicates"}) == shorthand
    assert shorthand.to_json()["consolidation"] == {"kind": "exact-duplicates",
                                                    "removeSources": False}
    linear = MemoryConfig.from_json({"importance": {"kind": "linear", "weight": 2}})
    assert linear.importance == Importance(kind="linear", weight=2.0, missing=0.0)
    assert MemoryConfig.from_json(linear.to_json()) == linear


def test_custom_policies_have_no_json_form_and_bad_values_are_refused():
    """A config holding an object policy works in Python but to_json refuses it naming the
    field; unknown names and malformed built-ins are InvalidRequest from the constructor too."""
    config = MemoryConfig(supersession=SameKindLatest(), recency=Boost("x"))
    assert config.custom_policies() == ("supersession", "recency")
    with pytest.raises(InvalidRequest, match=r"config\.supersession: the policy SameKindLatest") as err:
        config.to_json()
    assert "in-process" in err.value.hint
    with pytest.raises(InvalidRequest, match=r"config\.recency: the policy Boost"):
        MemoryConfig(recency=Boost("x")).to_json()
    with pytest.raises(InvalidRequest, match=r"config\.supersession"):
        MemoryConfig(supersession="sometimes")
    with pytest.raises(InvalidRequest, match=r"config\.supersession: expected a built-in"):
        MemoryConfig(supersession=42)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest, match=r"config\.recency\.kind"):
        MemoryConfig(recency=Recency(kind="linear"))
    with pytest.raises(InvalidRequest, match=r"half_life_ms"):
        MemoryConfig(recency=Recency(kind="exponential"))
    with pytest.raises(InvalidRequest, match=r"config\.importance\.weight"):
        MemoryConfig.from_json({"importance": {"kind": "linear", "weight": -1}})
    with pytest.raises(InvalidRequest, match=r"config\.importance\.kind"):
        MemoryConfig.from_json({"importance": {"kind": "log"}})
    with pytest.raises(InvalidRequest, match=r"config\.forgetting\.max_age_ms\.note"):
        MemoryConfig(forgetting=Forgetting(max_age_ms={"note": 5}))
    for bad_name in (lambda: MemoryConfig(consolidation="merge-all"),
                     lambda: MemoryConfig.from_json({"consolidation": "merge-all"})):
        with pytest.raises(InvalidRequest, match=r"config\.consolidation\.kind"):
            bad_name()
    with pytest.raises(InvalidRequest, match=r"config\.consolidation: expected a built-in"):
        MemoryConfig(consolidation=object())  # type: ignore[arg-type]


async def test_custom_supersession_relates_only_what_it_says():
    """SameKindLatest: a newer profile leaves an older fact of the subject current, a newer fact
    supersedes it, in remember's report, recall, history and explain's chain alike."""
    policy = SameKindLatest()
    async with Engine.open(None, clock=clock()) as engine:
        memory = Memory(engine, MemoryConfig(supersession=policy))
        await memory.remember("Alice lives in Paris", id="f1", subject="alice", valid_from=1 * DAY)
        r = await memory.remember("Alice likes Paris in spring", id="p1", subject="alice",
                                  kind="profile", valid_from=2 * DAY)
        assert r.superseded == ()
        r = await memory.remember("Alice lives in Berlin", id="f2", subject="alice",
                                  valid_from=3 * DAY)
        assert r.superseded == ("f1",)
        hits = await memory.recall("Alice Paris Berlin", kinds=("fact", "profile"))
        assert sorted(h.fact.id for h in hits) == ["f2", "p1"]
        assert [h.fact.id for h in await memory.recall("Paris", as_of=int(2.5 * DAY), kinds="fact")] == ["f1"]
        assert [f.id for f in await memory.history("f1")] == ["f1", "f2"]
        assert (await memory.explain("Paris", "p1", kinds=("profile",))).chain == ("p1",)
        assert policy.calls > 0
        # The same store under latest-by-subject: the profile supersedes the first fact too.
        latest = Memory(engine, {"supersession": "latest-by-subject"})
        assert [f.id for f in await latest.history("f1")] == ["f1", "p1", "f2"]
        assert (await latest.explain("Paris", "p1", kinds=("profile",))).status == "superseded"


async def test_custom_recency_reorders_and_explain_shows_it():
    """A recency object's multiplier multiplies the score: the boosted fact ranks first, and
    explain reports the multiplier and the product; t is the evaluation time (as_of)."""
    policy = Boost("weak")
    async with Engine.open(None) as engine:
        memory = Memory(engine, MemoryConfig(recency=policy))
        await memory.remember("tea tea tea tea", id="strong")
        await memory.remember("tea and some other words here", id="weak")
        plain = await engine.search_documents("tea", k=2)
        assert [h.id for h in plain] == ["strong", "weak"]
        hits = await memory.recall("tea", k=2, explain=True, as_of=123_456)
        assert [h.fact.id for h in hits] == ["weak", "strong"]
        weak = hits[0].explanation
        assert weak is not None and weak.recency_multiplier == 2.0
        assert hits[0].score == pytest.approx(2.0 * plain[1].score)
        assert set(policy.seen_t) == {123_456}


async def test_importance_weight_ranks_and_missing_importance_keeps_its_score():
    """Importance linear (weight 1): score * (1 + importance); a fact without importance keeps
    search's score (missing 0); explain shows the multiplier; with no importance policy the
    same content recalls exactly search_documents's ranking. (One store per configuration:
    a store keeps the importance policy it was first written with.)"""
    async with contextlib.AsyncExitStack() as stack:

        async def store(config: object = None) -> tuple[Engine, Memory]:
            engine = await stack.enter_async_context(Engine.open(None))
            memory = Memory(engine, config)  # type: ignore[arg-type]
            await memory.remember("deadline friday deadline", id="plain")
            await memory.remember("the deadline moved", id="vital", importance=1.0)
            await memory.remember("deadline for the report draft", id="minor", importance=0.25)
            return engine, memory

        engine, memory = await store(MemoryConfig(importance=Importance(kind="linear", weight=1.0)))
        search = {h.id: h.score for h in await engine.search_documents("deadline", k=3)}
        assert max(search, key=search.__getitem__) == "plain"
        hits = await memory.recall("deadline", k=3, explain=True)
        assert hits[0].fact.id == "vital"
        by_id = {h.fact.id: h for h in hits}
        assert by_id["plain"].score == search["plain"]
        assert by_id["vital"].score == pytest.approx(2.0 * search["vital"])
        assert by_id["minor"].score == pytest.approx(1.25 * search["minor"])
        assert by_id["minor"].explanation.importance_multiplier == 1.25  # type: ignore[union-attr]
        assert (await memory.explain("deadline", "plain")).importance_multiplier == 1.0
        # HotMem's convention: no importance counts as 0.5.
        _, half = await store({"importance": {"kind": "linear", "weight": 1, "missing": 0.5}})
        assert {h.fact.id: h.score for h in await half.recall("deadline", k=3)}["plain"] == \
            pytest.approx(1.5 * search["plain"])
        plain_engine, default = await store()
        assert [(h.fact.id, h.score) for h in await default.recall("deadline", k=3)] == \
            [(h.id, h.score) for h in await plain_engine.search_documents("deadline", k=3)]
        assert (await default.explain("deadline", "vital")).importance_multiplier == 1.0


async def test_custom_importance_object():
    """An ImportancePolicy object: its multiplier (here, 0 for low importance) applies."""

    class DropUnimportant:
        def multiplier(self, fact: FactInfo) -> float:
            return 0.0 if (fact.importance or 0.0) < 0.1 else 1.0

    async with Engine.open(None) as engine:
        memory = Memory(engine, MemoryConfig(importance=DropUnimportant()))
        await memory.remember("apples are red", id="a", importance=0.05)
        await memory.remember("apples are green", id="b", importance=0.9)
        hits = await memory.recall("apples", k=2)
        assert [h.fact.id for h in hits] == ["b", "a"] and hits[1].score == 0.0


async def test_custom_forgetting_selects_what_apply_forgetting_removes():
    """An (async) ForgettingPolicy is given every fact; apply_forgetting reports its choice
    in a dry run and forgets exactly those otherwise."""
    async with Engine.open(None) as engine:
        memory = Memory(engine, MemoryConfig(forgetting=ByActor("bot")))
        await memory.remember("from the bot", id="b1", actor="bot")
        await memory.remember("from a person", id="h1", actor="human")
        await memory.remember("also the bot", id="b2", actor="bot", kind="episode")
        dry = await memory.apply_forgetting()
        assert dry.dry_run and dry.removed == ("b1", "b2")
        assert await memory.get("b1") is not None
        done = await memory.apply_forgetting(dry_run=False)
        assert done.removed == ("b1", "b2")
        assert await memory.get("b1") is None and await memory.get("h1") is not None


async def test_a_policy_sees_a_facts_retention_end():
    """FactInfo carries a fact's own retain_until: a forgetting policy can select by it."""

    class KeptLessThanAWeek:
        def select(self, facts: Sequence[FactInfo], now: int) -> list[str]:
            return [f.id for f in facts
                    if f.retain_until is not None and f.retain_until - f.ingest_time < 7 * DAY]

    async with Engine.open(None, clock=clock()) as engine:
        memory = Memory(engine, MemoryConfig(forgetting=KeptLessThanAWeek()))
        await memory.remember("short-lived", id="s", retain_until=1_700_000_000_000 + DAY)
        await memory.remember("long-lived", id="l", retain_until=1_700_000_000_000 + 30 * DAY)
        await memory.remember("no end", id="n")
        assert (await memory.apply_forgetting()).removed == ("s",)


async def test_custom_consolidation_merges_a_slot():
    """A ConsolidationPolicy gets each slot's current facts oldest first; its facts supersede
    them; remove_sources with allow_destructive forgets the sources."""
    async with Engine.open(None, clock=clock()) as engine:
        memory = Memory(engine, MemoryConfig(consolidation=JoinTexts()))
        await memory.remember("likes tea", id="t1", subject="alice/likes")
        await memory.remember("likes chess", id="t2", subject="alice/likes")
        await memory.remember("lone fact", id="l1", subject="bob/likes")
        dry = await memory.consolidate()
        assert dry.superseded == ("t1", "t2") and len(dry.created) == 1 and dry.removed == ()
        done = await memory.consolidate(dry_run=False)
        assert done.created == dry.created
        merged = await memory.get(done.created[0])
        assert merged is not None and merged.text == "likes tea / likes chess"
        assert merged.kind == "profile" and merged.supersedes == ("t1", "t2")
        assert (await memory.explain("tea", "t1")).status == "superseded"
        again = await memory.consolidate(dry_run=False, allow_destructive=True)
        assert again.created == ()  # one current fact per slot now
    async with Engine.open(None, clock=clock()) as engine:
        memory = Memory(engine, MemoryConfig(consolidation=JoinTexts()))
        await memory.remember("likes tea", id="t1", subject="alice/likes")
        await memory.remember("likes chess", id="t2", subject="alice/likes")
        gone = await memory.consolidate(dry_run=False, allow_destructive=True)
        assert gone.removed == ("t1", "t2") and await memory.get("t1") is None


async def _written(engine: Engine) -> tuple[int, int]:
    stats = engine.statistics()
    return engine.revision, stats.writes


async def test_a_failing_policy_is_a_policy_error_and_nothing_is_written(disk_path):
    """Each kind of policy that raises fails its call with PolicyError (code policy_error,
    naming the policy and the error) and the store's revision and writes stay as they were."""
    async with Engine.open(disk_path, clock=clock()) as engine:
        seed = Memory(engine)
        await seed.remember("Alice lives in Paris", id="f1", subject="alice", valid_from=DAY)
        await seed.remember("Alice lives in Rome", id="f2", subject="alice", valid_from=2 * DAY)
        before = await _written(engine)
        cases = [
            (MemoryConfig(supersession=Raises()),
             lambda m: m.remember("Alice lives in Oslo", id="f3", subject="alice"), "supersedes broke"),
            (MemoryConfig(supersession=Raises()), lambda m: m.recall("Alice"), "supersedes broke"),
            (MemoryConfig(recency=Raises()), lambda m: m.recall("Alice"), "multiplier broke"),
            (MemoryConfig(importance=Raises()), lambda m: m.recall("Alice"), "multiplier broke"),
            (MemoryConfig(forgetting=Raises()), lambda m: m.apply_forgetting(dry_run=False),
             "select broke"),
            (MemoryConfig(consolidation=Raises()), lambda m: m.consolidate(dry_run=False),
             "merge broke"),
        ]
        for config, call, message in cases:
            memory = Memory(engine, config)
            with pytest.raises(PolicyError, match=message) as err:
                await call(memory)
            assert isinstance(err.value, HmsError) and err.value.code == "policy_error"
            assert "Raises" in err.value.message and isinstance(err.value.__cause__, RuntimeError)
            assert await _written(engine) == before
        assert await seed.get("f3") is None and await seed.get("f1") is not None
    async with Engine.open(disk_path) as engine:  # and nothing reached the journal
        assert sorted([d async for d in _ids(engine)]) == ["f1", "f2"]


async def _ids(engine: Engine):  # type: ignore[no-untyped-def]
    for doc_id in ("f1", "f2", "f3"):
        if await engine.has_document(doc_id):
            yield doc_id


async def test_a_policy_returning_the_wrong_thing_is_a_policy_error():
    """Wrong result types (a non-bool, a negative or NaN multiplier, a non-id, a merge that
    supersedes a fact outside its slot or is not a fact) are PolicyError; nothing written."""

    class Yes:
        def supersedes(self, newer: FactInfo, older: FactInfo) -> str:
            return "yes"

    class Negative:
        def multiplier(self, fact: FactInfo, t: int) -> float:
            return -1.0

    class NotANumber:
        def multiplier(self, fact: FactInfo) -> float:
            return float("nan")

    class Numbers:
        def select(self, facts: Sequence[FactInfo], now: int) -> list[int]:
            return [1]

    class Outside:
        remove_sources = False

        def merge(self, facts: Sequence[Fact]) -> list[RememberInput]:
            return [RememberInput(text="x", supersedes=("elsewhere",))]

    class BadKind:
        remove_sources = False

        def merge(self, facts: Sequence[Fact]) -> list[RememberInput]:
            return [RememberInput(text="merged", kind="summary", supersedes=(facts[0].id,))]

    async with Engine.open(None, clock=clock()) as engine:
        seed = Memory(engine)
        await seed.remember("Alice lives in Paris", id="f1", subject="alice")
        await seed.remember("Alice lives in Rome", id="f2", subject="alice")
        await seed.remember("Bob lives in Oslo", id="elsewhere", subject="bob")
        before = await _written(engine)
        cases = [
            (MemoryConfig(supersession=Yes()), lambda m: m.recall("Alice"), "expected a bool"),
            (MemoryConfig(recency=Negative()), lambda m: m.recall("Alice"), "finite number >= 0"),
            (MemoryConfig(importance=NotANumber()), lambda m: m.recall("Alice"),
             "finite number >= 0"),
            (MemoryConfig(forgetting=Numbers()), lambda m: m.apply_forgetting(dry_run=False),
             "ids"),
            (MemoryConfig(consolidation=Outside()), lambda m: m.consolidate(dry_run=False),
             "supersede some of"),
            (MemoryConfig(consolidation=BadKind()), lambda m: m.consolidate(dry_run=False),
             "invalid fact: kind"),
        ]
        for config, call, message in cases:
            with pytest.raises(PolicyError, match=message):
                await call(Memory(engine, config))
            assert await _written(engine) == before


async def test_forget_scope_chain_follows_the_custom_policy():
    """forget(include_chain=True) removes what the custom policy chains and nothing more."""
    async with Engine.open(None, clock=clock()) as engine:
        memory = Memory(engine, MemoryConfig(supersession=SameKindLatest()))
        await memory.remember("fact one", id="f1", subject="s", valid_from=DAY)
        await memory.remember("profile one", id="p1", subject="s", kind="profile", valid_from=2 * DAY)
        await memory.remember("fact two", id="f2", subject="s", valid_from=3 * DAY)
        report = await memory.forget(ForgetScope.ids(["f1"]), include_chain=True, dry_run=True)
        assert report.removed == ("f1", "f2")


async def test_a_replaced_configuration_takes_effect_at_once():
    """When a Memory's configuration is replaced (as a store's kept policies replace the
    caller's), recall and explain apply its supersession and importance at once."""
    async with Engine.open(None, clock=clock()) as engine:
        memory = Memory(engine, embedder=False)
        await memory.remember("Alice lives in Paris", id="f1", subject="alice", importance=1.0)
        await memory.remember("Alice lives in Rome", id="f2", subject="alice")
        assert sorted(h.fact.id for h in await memory.recall("Alice lives", k=5)) == ["f1", "f2"]
        memory.core.config = MemoryConfig(supersession="latest-by-subject")
        assert [h.fact.id for h in await memory.recall("Alice lives", k=5)] == ["f2"]
        assert (await memory.explain("Alice", "f1")).status == "superseded"
        memory.core.config = MemoryConfig(importance=Importance(kind="linear", weight=1.0))
        hits = await memory.recall("Alice lives", k=5, explain=True)
        assert [h.explanation.importance_multiplier for h in hits  # type: ignore[union-attr]
                if h.fact.id == "f1"] == [2.0]
