"""Memory.load, capture and profile: episodes and their revisions, facts before episodes,
idempotent reloads, episodes out of recall, as_of before a document's date, the profile budget,
bad input, and the JSON contract."""

from __future__ import annotations

import datetime as dt

import pytest

from hmsengine import (
    Conflict,
    Engine,
    ForgetScope,
    InvalidRequest,
    LoadResult,
    Memory,
    Profile,
    RememberInput,
    chunk_markdown,
)
from hmsengine.memory.chunking import chunk_parts, episode_text

UTC = dt.UTC
DAY = 86_400_000
OBSERVED = 1_700_000_000_000  # 2023-11-14


class Clock:
    """A test clock: starts at a fixed ms and advances by one ms per reading."""

    def __init__(self, start: int = 1_800_000_000_000) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 1
        return self.now


DOC = "\n\n".join([
    "# Outage of the search cluster",
    "The search cluster was down for an hour on a Tuesday.",
    "## Timeline",
    "At nine the disk alarm fired on the primary node.",
    "## Cause",
    "The disk filled with old snapshots nobody pruned.",
    "## Remediation",
    "Prune snapshots nightly and alert at eighty percent.",
])
CHUNK_CHARS = 90  # four chunks of DOC, one per section


def episode_texts(text: str, chunk_chars: int) -> list[str]:
    """What load stores for each chunk: chunk_markdown's chunk, each heading written once."""
    return [episode_text(*part) for part in chunk_parts(text, chunk_chars=chunk_chars)]


class Recorder:
    """An extractor that records its calls and returns one fact per chunk, naming the section."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.fail_at = fail_at

    def __call__(self, chunk: str, current: list) -> list[RememberInput]:
        self.calls.append((chunk, [f.id for f in current]))
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise RuntimeError("the model timed out")
        section = chunk.split("\n", 1)[0].rsplit(" > ", 1)[-1].lstrip("# ")
        return [RememberInput(text=f"noted about {section}: " + chunk.rsplit("\n", 1)[-1],
                              sources=("ticket-7",))]


async def test_episode_ids_order_and_fields():
    """Each chunk becomes episode <document>-<nnnn> in order, with the chunk, actor and observed time."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        result = await memory.load("outage", DOC, actor="loader", observed_at=OBSERVED,
                                   chunk_chars=CHUNK_CHARS)
        chunks = episode_texts(DOC, CHUNK_CHARS)
        assert isinstance(result, LoadResult) and len(chunks) == 4
        assert result.episodes == ("outage-0001", "outage-0002", "outage-0003", "outage-0004")
        assert result.facts == ()
        for episode_id, chunk in zip(result.episodes, chunks, strict=True):
            fact = await memory.get(episode_id)
            assert (fact.text, fact.kind, fact.actor) == (chunk, "episode", "loader")
            assert (fact.event_time, fact.valid_from, fact.subject, fact.sources) == \
                (OBSERVED, OBSERVED, None, ())
        assert chunk_markdown(DOC, chunk_chars=CHUNK_CHARS)[2].startswith(
            "# Outage of the search cluster > ## Cause\n\n## Cause\n\n")
        # The episode writes each heading once: the title as context, then the section.
        assert chunks[2] == ("# Outage of the search cluster\n\n## Cause\n\n"
                             "The disk filled with old snapshots nobody pruned.")
        assert chunks[0].count("# Outage of the search cluster") == 1


async def test_episode_numbers_above_9999_get_more_digits():
    """Episode numbers count in four digits and take more above 9999."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        text = "\n\n".join(f"# s{i}\n\n" + "x" * 40 for i in range(10_001))  # a section a chunk
        result = await memory.load("big", text, chunk_chars=64)
        assert len(result.episodes) == len(chunk_markdown(text, chunk_chars=64)) == 10_001
        assert result.episodes[:2] == ("big-0001", "big-0002")
        assert result.episodes[9998:] == ("big-9999", "big-10000", "big-10001")


async def test_extractor_sees_chunks_with_prefix_and_earlier_facts():
    """The extractor gets each chunk with its prefix and the namespace's current facts, the
    earlier chunks' facts included; each fact gets its own sources then its episode's id."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        await memory.remember("an older fact in the namespace", id="old", namespace="ops")
        await memory.remember("an episode is never a current fact", id="ep", kind="episode",
                              namespace="ops")
        await memory.remember("another namespace", id="other", namespace="elsewhere")
        extractor = Recorder()
        result = await memory.load("outage", DOC, namespace="ops", extractor=extractor,
                                   observed_at=OBSERVED, chunk_chars=CHUNK_CHARS)
        chunks = episode_texts(DOC, CHUNK_CHARS)
        assert [chunk for chunk, _ in extractor.calls] == chunks
        # newest first: "old" took effect now, the document's facts at its earlier observed_at
        f1, f2, f3, _ = result.facts
        assert [current for _, current in extractor.calls] == [
            ["old"], ["old", f1], ["old", f2, f1], ["old", f3, f2, f1]]
        for n, fact_id in enumerate(result.facts, start=1):
            fact = await memory.get(fact_id)
            assert fact.sources == ("ticket-7", f"outage-{n:04d}")
            assert (fact.namespace, fact.kind, fact.valid_from, fact.event_time) == \
                ("ops", "fact", OBSERVED, OBSERVED)


async def test_async_extractor_and_inherited_fields():
    """An async extractor works; facts take the load's namespace and actor unless they set their own."""
    async def extractor(chunk: str, current: list) -> list[RememberInput]:
        return [RememberInput(text="plain " + chunk[-10:]),
                RememberInput(text="own " + chunk[-10:], actor="someone", valid_from=5, event_time=6,
                              namespace="ops", kind="procedure")]

    async with Engine.open(None) as engine:
        memory = Memory(engine)
        result = await memory.load("d", "# T\n\nbody text here", namespace="ops", extractor=extractor,
                                   actor="loader", observed_at=OBSERVED)
        plain, own = [await memory.get(i) for i in result.facts]
        assert (plain.namespace, plain.actor, plain.valid_from) == ("ops", "loader", OBSERVED)
        assert (own.actor, own.valid_from, own.event_time, own.kind) == ("someone", 5, 6, "procedure")


async def test_facts_before_episodes_and_an_interrupted_load_resumes():
    """An extractor that fails at chunk k leaves chunks 1..k-1 complete and nothing of chunk k;
    the next load extracts from chunk k on and finishes the document."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        failing = Recorder(fail_at=3)
        with pytest.raises(RuntimeError, match="timed out"):
            await memory.load("outage", DOC, extractor=failing, chunk_chars=CHUNK_CHARS)
        assert [await memory.get(f"outage-{n:04d}") is not None for n in (1, 2, 3, 4)] == \
            [True, True, False, False]
        facts = [i for i, s in memory.index.facts.items() if s.kind == "fact"]
        assert len(facts) == 2
        for fact_id in facts:  # each written fact's episode exists: facts never outlive a chunk
            assert await memory.get((await memory.get(fact_id)).sources[-1]) is not None
        again = Recorder()
        result = await memory.load("outage", DOC, extractor=again, chunk_chars=CHUNK_CHARS)
        chunks = episode_texts(DOC, CHUNK_CHARS)
        assert [chunk for chunk, _ in again.calls] == chunks[2:]
        assert len(result.episodes) == 4 and len(result.facts) == 2


async def test_second_load_writes_nothing_and_calls_no_extractor(store_path):
    """A second load of the same text (also after a reopen) writes nothing and calls no extractor."""
    extractor = Recorder()
    async with Engine.open(store_path, clock=Clock()) as engine:
        memory = Memory(engine)
        first = await memory.load("outage", DOC, extractor=extractor, chunk_chars=CHUNK_CHARS)
        assert len(extractor.calls) == 4
        revision = engine.revision
        second = await memory.load("outage", DOC, extractor=extractor, chunk_chars=CHUNK_CHARS,
                                   observed_at=OBSERVED, actor="someone else")
        assert engine.revision == revision and len(extractor.calls) == 4
        assert second == LoadResult(episodes=first.episodes, facts=())
    if store_path is not None:
        async with Engine.open(store_path) as engine:
            revision = engine.revision
            third = await Memory(engine).load("outage", DOC, extractor=extractor,
                                              chunk_chars=CHUNK_CHARS)
            assert engine.revision == revision and len(extractor.calls) == 4
            assert third.episodes == first.episodes


async def test_edited_document_writes_next_revision_of_changed_episodes_only():
    """An edited chunk writes the next revision of its episode, superseding it with history kept;
    unchanged chunks write nothing and cost no extractor call."""
    async with Engine.open(None, clock=Clock()) as engine:
        memory = Memory(engine)
        await memory.load("outage", DOC, chunk_chars=CHUNK_CHARS)
        extractor = Recorder()
        edited = DOC.replace("old snapshots", "stale snapshots")
        result = await memory.load("outage", edited, extractor=extractor, chunk_chars=CHUNK_CHARS)
        assert result.episodes == ("outage-0001", "outage-0002", "outage-0003@2", "outage-0004")
        assert len(extractor.calls) == 1 and "stale snapshots" in extractor.calls[0][0]
        new = await memory.get("outage-0003@2")
        assert new.supersedes == ("outage-0003",) and "stale" in new.text
        assert [f.id for f in await memory.history("outage-0003")] == ["outage-0003", "outage-0003@2"]
        hits = await memory.recall("snapshots", kinds="episode", history="all")
        assert {h.fact.id: h.status for h in hits} == {"outage-0003": "superseded",
                                                        "outage-0003@2": "current",
                                                        "outage-0004": "current"}
        third = await memory.load("outage", DOC, chunk_chars=CHUNK_CHARS)
        assert third.episodes[2] == "outage-0003@3"
        assert (await memory.load("outage", DOC, chunk_chars=CHUNK_CHARS)).episodes[2] == "outage-0003@3"


async def test_revisions_stay_tracked_when_one_is_forgotten():
    """Forgetting a middle revision, or the first one, keeps the next load on the episode's chain."""
    texts = [DOC.replace("old snapshots", f"{word} snapshots")
             for word in ("old", "stale", "ancient", "dusty")]
    async with Engine.open(None, clock=Clock()) as engine:
        memory = Memory(engine)
        for text in texts[:3]:
            await memory.load("outage", text, chunk_chars=CHUNK_CHARS)
        await memory.forget(ForgetScope.ids(["outage-0003@2"]))  # @3 now supersedes the first
        result = await memory.load("outage", texts[3], chunk_chars=CHUNK_CHARS)
        assert result.episodes[2] == "outage-0003@4"
        assert (await memory.get("outage-0003@4")).supersedes == ("outage-0003@3",)
        current = await memory.recall("snapshots", kinds="episode", k=20)
        assert [h.fact.id for h in current if h.fact.id.startswith("outage-0003")] == ["outage-0003@4"]
    async with Engine.open(None, clock=Clock()) as engine:
        memory = Memory(engine)
        for text in texts[:2]:
            await memory.load("outage", text, chunk_chars=CHUNK_CHARS)
        await memory.forget(ForgetScope.ids(["outage-0003"]))
        revision = engine.revision
        assert (await memory.load("outage", texts[1], chunk_chars=CHUNK_CHARS)).episodes[2] == \
            "outage-0003@2"
        assert engine.revision == revision
        assert (await memory.load("outage", texts[2], chunk_chars=CHUNK_CHARS)).episodes[2] == \
            "outage-0003@3"


async def test_shorter_document_leaves_old_last_episodes_current():
    """A document edited down to fewer chunks leaves its old last episodes as they were."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        await memory.load("outage", DOC, chunk_chars=CHUNK_CHARS)
        short = DOC.split("\n\n## Cause")[0]
        result = await memory.load("outage", short, chunk_chars=CHUNK_CHARS)
        assert result.episodes == ("outage-0001", "outage-0002")
        assert await memory.get("outage-0004") is not None


async def test_recall_never_returns_episodes_unless_kinds_asks():
    """recall leaves episodes out by default; kinds can ask for them; facts cite them in sources."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        result = await memory.load("outage", DOC, extractor=Recorder(), chunk_chars=CHUNK_CHARS)
        default = await memory.recall("snapshots disk", k=20)
        assert default and all(h.fact.kind == "fact" for h in default)
        episodes = await memory.recall("snapshots disk", k=20, kinds="episode")
        assert episodes and {h.fact.id for h in episodes} <= set(result.episodes)
        both = await memory.recall("snapshots disk", k=20, kinds=("fact", "episode"))
        assert {h.fact.kind for h in both} == {"fact", "episode"}
        cited = default[0].fact.sources[-1]
        assert (await memory.get(cited)).kind == "episode"


async def test_recall_as_of_before_the_documents_date_leaves_its_facts_out():
    """A fact takes the load's observed_at as valid_from, so recall as_of before it leaves it out."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        observed = dt.datetime(2024, 2, 7, tzinfo=UTC)
        await memory.load("outage", DOC, extractor=Recorder(), observed_at=observed,
                          chunk_chars=CHUNK_CHARS)
        before = await memory.recall("snapshots", as_of=observed - dt.timedelta(days=1))
        after = await memory.recall("snapshots", as_of=observed + dt.timedelta(days=1))
        assert before == [] and after and all(h.fact.kind == "fact" for h in after)


async def test_profile_groups_newest_first_with_whole_lines_in_budget():
    """profile groups current facts by kind, newest first, keeps whole lines within the budget,
    and counts per kind without episodes."""
    async with Engine.open(None, clock=Clock()) as engine:
        memory = Memory(engine)
        await memory.load("outage", DOC, namespace="ops", chunk_chars=CHUNK_CHARS)
        for day in range(1, 6):
            await memory.remember(f"fact of day {day}", namespace="ops", valid_from=day * DAY)
        await memory.remember("runbook: prune snapshots", kind="procedure", namespace="ops")
        await memory.remember("the on-call prefers short pages", kind="profile", namespace="ops")
        await memory.remember("old fact", namespace="ops", id="gone", valid_to=DAY)  # expired now
        full = await memory.profile("ops")
        assert isinstance(full, Profile)
        assert full.counts == {"fact": 5, "profile": 1, "procedure": 1}
        lines = full.block.split("\n")
        assert lines[0] == "fact:" and lines[-1] == "counts: fact 5, profile 1, procedure 1"
        assert [line.split(" [")[0] for line in lines[1:6]] == [f"- fact of day {d}" for d in (5, 4, 3, 2, 1)]
        assert lines[6:10] == ["profile:", lines[7], "procedure:", lines[9]]
        assert "episode" not in full.block and "old fact" not in full.block
        for budget in range(0, len(full.block) + 2, 7):
            cut = await memory.profile("ops", budget_chars=budget)
            assert len(cut.block) <= budget and cut.counts == full.counts
            kept = cut.block.split("\n") if cut.block else []
            assert all(line in lines for line in kept)  # whole lines only
            for i, line in enumerate(kept):  # a group header is never left without a line
                assert not line.endswith(":") or kept[i + 1].startswith("- ")
            if budget >= len(lines[-1]):
                assert kept[-1] == lines[-1]  # the counts take the budget first


async def test_profile_of_episodes_only_counts_zero():
    """A namespace that holds only episodes has an empty block but for zero counts."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        await memory.load("outage", DOC)
        profile = await memory.profile()
        assert profile.counts == {"fact": 0, "profile": 0, "procedure": 0}
        assert profile.block == "counts: fact 0, profile 0, procedure 0"
        assert (await memory.profile(budget_chars=10)).block == ""


async def test_load_refuses_an_episode_id_holding_another_kind_before_extracting():
    """An episode id that holds a fact of another kind is Conflict before that chunk's extractor
    runs; the chunks before it stay written."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        await memory.remember("a plain fact squatting the id", id="outage-0003")
        extractor = Recorder()
        with pytest.raises(Conflict, match="outage-0003"):
            await memory.load("outage", DOC, extractor=extractor, chunk_chars=CHUNK_CHARS)
        assert len(extractor.calls) == 2
        assert await memory.get("outage-0002") is not None and await memory.get("outage-0004") is None
        await memory.load("doc", "# A", namespace="one")
        with pytest.raises(Conflict, match="namespace"):
            await memory.load("doc", "# B", namespace="two")


@pytest.mark.parametrize(("document", "options"), [
    ("", {}), ("   ", {}), ("a/b", {}), (7, {}), ("ok", {"chunk_chars": 63}),
    ("ok", {"chunk_chars": True}), ("ok", {"namespace": ""}), ("ok", {"extractor": "nope"}),
    ("ok", {"observed_at": dt.datetime(2024, 1, 1)}),
])
async def test_bad_load_arguments_are_invalid_and_write_nothing(document, options):
    """An empty name, a name with '/', chunk_chars below 64 and other bad arguments: InvalidRequest."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        revision = engine.revision
        with pytest.raises(InvalidRequest):
            await memory.load(document, DOC, **options)
        assert engine.revision == revision


@pytest.mark.parametrize("returned", [
    None, "a fact", {"text": "x"}, [{"text": "a dict, not a RememberInput"}], ["text"],
    [RememberInput(text="fine"), 3], [RememberInput(text="x", kind="episode")],
    [RememberInput(text="x", namespace="elsewhere")],
    [RememberInput(text="x", valid_from=dt.datetime(2024, 1, 1))],
    [RememberInput(text="x", id="outage-0002")],
])
async def test_bad_extractor_result_is_invalid_and_nothing_of_that_chunk_is_written(returned):
    """An extractor result that is not a list of valid RememberInput is InvalidRequest; the
    chunk's facts and episode are not written, the chunks before it are."""
    calls = []

    def extractor(chunk, current):
        calls.append(chunk)
        return [RememberInput(text="first chunk fact")] if len(calls) == 1 else returned

    async with Engine.open(None) as engine:
        memory = Memory(engine)
        with pytest.raises(InvalidRequest, match="chunk 2"):
            await memory.load("outage", DOC, extractor=extractor, chunk_chars=CHUNK_CHARS)
        assert await memory.get("outage-0001") is not None
        assert await memory.get("outage-0002") is None
        assert sum(1 for s in memory.index.facts.values() if s.kind == "fact") == 1


async def test_too_long_chunk_is_refused_before_the_extractor():
    """A chunk over the fact size limit is InvalidRequest before its extractor runs."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        extractor = Recorder()
        with pytest.raises(InvalidRequest, match="chunk 1"):
            await memory.load("huge", "word " * 5000, extractor=extractor, chunk_chars=100_000)
        assert extractor.calls == [] and await memory.get("huge-0001") is None


async def test_blank_document_writes_nothing():
    """A document of blank lines writes nothing, calls no extractor and returns empty lists."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        extractor = Recorder()
        revision = engine.revision
        assert await memory.load("empty", "\n  \n\r\n", extractor=extractor) == \
            LoadResult(episodes=(), facts=())
        assert engine.revision == revision and extractor.calls == []


async def test_capture_cuts_free_text_and_facts_inherit_observed_at():
    """capture runs the extractor on free text cut at blank lines into chunks of at most 2000
    characters with no prefix; its facts take observed_at; no episode is written."""
    paragraphs = [f"# note {i}\n" + "word " * 150 for i in range(6)]  # ~760 characters each
    seen = []

    def extractor(chunk, current):
        seen.append(chunk)
        return [RememberInput(text=f"captured {len(seen)}", namespace="ops")]

    async with Engine.open(None) as engine:
        memory = Memory(engine)
        ids = await memory.capture("\n\n".join(paragraphs), extractor=extractor, namespace="ops",
                                   actor="me", observed_at=OBSERVED)
        assert len(seen) == 3 and all(len(chunk) <= 2000 for chunk in seen)
        assert "\n\n".join(seen) == "\n\n".join(paragraphs)
        facts = [await memory.get(i) for i in ids]
        assert [(f.text, f.valid_from, f.event_time, f.actor, f.sources) for f in facts] == [
            (f"captured {n}", OBSERVED, OBSERVED, "me", ()) for n in (1, 2, 3)]
        assert all(s.kind != "episode" for s in memory.index.facts.values())
        assert await memory.capture(" \n\n ", extractor=extractor) == [] and len(seen) == 3
        with pytest.raises(InvalidRequest):
            await memory.capture("text", extractor=None)  # type: ignore[arg-type]
        with pytest.raises(InvalidRequest):
            await memory.capture("text", extractor=lambda chunk, current: "not a list")


async def test_json_load_profile_and_capture():
    """Over JSON: load stores episodes without an extractor, profile answers, capture is refused,
    unknown fields (an extractor among them) are rejected."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        loaded = await memory.call("load", {"document": "guide", "text": DOC, "namespace": "ops",
                                            "observedAt": OBSERVED, "chunkChars": CHUNK_CHARS,
                                            "actor": "api"})
        assert loaded == {"episodes": [f"guide-{n:04d}" for n in (1, 2, 3, 4)], "facts": []}
        assert (await memory.get("guide-0001")).valid_from == OBSERVED
        await memory.remember("a fact", namespace="ops")
        profile = await memory.call("profile", {"namespace": "ops", "budgetChars": 1000})
        assert profile["counts"] == {"fact": 1, "profile": 0, "procedure": 0}
        assert profile["block"].startswith("fact:\n- a fact [id: ")
        for op, body in [("load", {"document": "g", "text": "x", "extractor": "f"}),
                         ("load", {"document": "g"}), ("profile", {"budget": 5}),
                         ("capture", {"text": "some text"})]:
            with pytest.raises(InvalidRequest):
                await memory.call(op, body)


async def test_episodes_stored_with_the_heading_twice_are_unchanged_on_reload():
    """Episodes an older build stored as chunk_markdown's text (the heading repeated by the body)
    count as unchanged: a reload writes nothing and calls no extractor."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        legacy = chunk_markdown(DOC, chunk_chars=CHUNK_CHARS)
        assert legacy != episode_texts(DOC, CHUNK_CHARS)
        await memory.remember_many([RememberInput(text=chunk, id=f"outage-{n:04d}", kind="episode")
                                    for n, chunk in enumerate(legacy, start=1)])
        revision = engine.revision
        extractor = Recorder()
        result = await memory.load("outage", DOC, extractor=extractor, chunk_chars=CHUNK_CHARS)
        assert result.episodes == ("outage-0001", "outage-0002", "outage-0003", "outage-0004")
        assert engine.revision == revision and extractor.calls == []


async def test_a_loads_source_is_recorded_and_forgets_only_that_file(tmp_path):
    """load(source=path) lists the path in each episode's sources; ForgetScope.source(path) then
    forgets that document's episodes and the facts drawn from them, not another file's of the
    same name."""
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        here, there = str(tmp_path / "a" / "notes.md"), str(tmp_path / "b" / "notes.md")
        await memory.load("a:notes", DOC, source=here, extractor=Recorder(), chunk_chars=CHUNK_CHARS)
        await memory.load("b:notes", DOC, source=there, chunk_chars=CHUNK_CHARS)
        assert (await memory.get("a:notes-0001")).sources == (here,)
        report = await memory.forget(ForgetScope.source(here), dry_run=True)
        assert {i for i in report.removed if i.startswith("a:notes-")} == \
            {f"a:notes-{n:04d}" for n in range(1, 5)}
        assert len(report.removed) == 8  # the four episodes and the four facts drawn from them
        assert not [i for i in report.removed if i.startswith("b:")]
        with pytest.raises(InvalidRequest, match="source"):
            await memory.load("c", DOC, source="  ")
