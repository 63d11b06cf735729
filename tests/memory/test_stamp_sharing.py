"""Facts whose compact stamps are equal share one Stamp; sharing never changes what is read."""

from __future__ import annotations

import json
import random

import trio

from hmsengine import Engine, Memory
from hmsengine.memory.index import MemoryIndex
from hmsengine.memory.stamp import STAMP_KEY, StampParser, parse_compact

FIELDS = ("kind", "namespace", "subject", "entities", "event_time", "valid_from", "valid_to",
          "ingest_time", "supersedes", "sources", "actor", "importance", "file")


def _fields(stamp: object) -> tuple[object, ...]:
    return tuple(getattr(stamp, f) for f in FIELDS)


def _meta(rng: random.Random, digest: str) -> str:
    stamp = [1, digest, rng.choice(["fact", "episode"]), "default", rng.choice([None, "s1", "s2"]),
             rng.choice([[], ["e1"]]), None, None, rng.choice([None, 9]), rng.choice([100, 200]),
             [], [], None, None]
    user = rng.choice([{}, {"k": "v"}, {"nested": {"_hms": [1, "x" * 32, "fact"]}},
                       {"q": '"_hms":[1,"' + "y" * 32 + '"'}])
    return json.dumps({**user, STAMP_KEY: stamp}, separators=(",", ":"), ensure_ascii=False)


def test_parser_agrees_with_a_full_parse_and_shares_equal_stamps() -> None:
    rng = random.Random(7)
    parser = StampParser(limit=50)  # small: the cache starts afresh many times
    seen: dict[tuple[object, ...], object] = {}
    for n in range(3000):
        digest = f"{rng.getrandbits(128):032x}"
        if n % 97 == 0:
            digest = digest[:20]  # not a real digest: parsed the long way, still right
        meta = _meta(rng, digest)
        got = parser.parse(meta)
        want = parse_compact(json.loads(meta)[STAMP_KEY])
        assert got is not None and want is not None
        assert _fields(got) == _fields(want)
        seen.setdefault(_fields(got), got)
    assert parser.parse(None) is None
    assert parser.parse('{"a":1}') is None
    assert len(seen) < 3000


def test_one_batch_of_facts_shares_one_stamp_and_reads_back_exactly() -> None:
    async def main() -> None:
        async with Engine.open(None) as engine:
            memory = Memory(engine)
            await memory.remember_many([{"text": f"fact number {i}", "id": f"f{i}"} for i in range(50)])
            await memory.remember("a lone one", id="lone", subject="topic")
            index = MemoryIndex()
            index.load(engine.scan_metadata(), engine.revision)
            assert len({id(index.facts[f"f{i}"]) for i in range(50)}) == 1
            assert index.by_subject == {"topic": {"lone"}}
            assert index.kind_counts == {"fact": 51}
            live = memory.index
            for doc_id, stamp in index.facts.items():
                assert _fields(stamp) == _fields(live.facts[doc_id])
            fact = await memory.get("f3")
            assert fact is not None and fact.text == "fact number 3"

    trio.run(main)


def test_shared_slot_count_follows_every_remember_and_forget() -> None:
    """is_temporal's O(1) count of subject slots holding two facts or more equals a scan of the
    slots after every remember, supersede and forget (including forgetting a whole slot)."""
    import random

    from hmsengine import ForgetScope

    rng = random.Random(3)

    def check(index: MemoryIndex) -> None:
        assert index.shared_slots == sum(len(ids) > 1 for ids in index.slots.values())
        assert index.is_temporal(True) == (index.windows > 0 or index.links > 0
                                           or index.shared_slots > 0)

    async def main() -> None:
        async with Engine.open(None) as engine:
            memory = Memory(engine)
            for n in range(120):
                subject = rng.choice([None, "s1", "s2", "s3"])
                if rng.random() < 0.7 or not memory.index.facts:
                    await memory.remember(f"fact {n}", id=f"f{n}", subject=subject)
                else:
                    victim = rng.choice(sorted(memory.index.facts))
                    await memory.forget(ForgetScope.ids([victim]))
                check(memory.index)
            await memory.forget(ForgetScope.subject("s1"))
            check(memory.index)
            reopened = MemoryIndex()
            reopened.load(engine.scan_metadata(), engine.revision)
            check(reopened)
            assert reopened.shared_slots == memory.index.shared_slots

    trio.run(main)
