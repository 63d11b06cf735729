"""``make demo`` / ``hms demo``: a short tour of hmsengine's memory on an embedded store.

In a temporary directory: remember facts with valid times; supersede one; recall now and as of
a past moment; explain why a fact came back and why another did not; load a Markdown document
into episodes and facts (with a tiny rule-based extractor); forget with purge, then check the
store as ``hms check --absent`` does (every file read and decoded, every checksum verified) for the
forgotten text. A few seconds.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from datetime import UTC, datetime

import trio

from .engine import check_store
from .facade import Engine
from .memory import ForgetScope, RememberInput

NOTES = """# Team notes, March 2025

## People
Carol works on the search team.
Dan works on the storage team.

## Decisions
The storage team chose zstd for compression.
"""

SECRET = "Bob's locker code is Q4417"


def say(text: str = "") -> None:
    print(text, flush=True)


def ms(year: int, month: int = 1, day: int = 1) -> int:
    return int(datetime(year, month, day, tzinfo=UTC).timestamp() * 1000)


def day(t: int | None) -> str:
    return "-" if t is None else datetime.fromtimestamp(t / 1000, tz=UTC).strftime("%Y-%m-%d")


def works_on(chunk: str, current: object) -> list[RememberInput]:
    """A tiny rule-based extractor: "<Name> works on the <team> team." becomes a fact."""
    return [RememberInput(text=f"{name} works on the {team} team", subject=f"{name.lower()}/team",
                          entities=(name.lower(),))
            for name, team in re.findall(r"\b([A-Z][a-z]+) works on the (\w+) team", chunk)]


async def tour(path: str) -> bool:
    async with Engine.open(path) as engine:
        memory = engine.memory()

        say(f"1. Remember facts, each with the time it became true  (store: {path})")
        identity = memory.embedder_identity
        say("   recall is " + (f"hybrid: BM25 fused with {identity['model']} cosine (offline)"
                               if identity else "lexical: BM25 (no embedder installed)"))
        await memory.remember("Alice lives in Paris", id="alice-paris", subject="alice/city",
                              entities=("alice",), valid_from=ms(2019, 3, 1))
        await memory.remember(SECRET, id="bob-locker", subject="bob/locker", entities=("bob",),
                              valid_from=ms(2023))
        await memory.remember("Bob prefers green tea", id="bob-tea", subject="bob/drink",
                              entities=("bob",), valid_from=ms(2022))
        say("   alice-paris  Alice lives in Paris    (valid from 2019-03-01)")
        say("   bob-tea      Bob prefers green tea   (valid from 2022-01-01)")
        say("   bob-locker   " + SECRET + " (valid from 2023-01-01)")

        say("\n2. Supersede: Alice moved. The new fact replaces the old one from its valid time on")
        r = await memory.remember("Alice lives in Berlin", id="alice-berlin", subject="alice/city",
                                  entities=("alice",), valid_from=ms(2025, 1, 15),
                                  supersedes=["alice-paris"])
        say(f"   alice-berlin supersedes {', '.join(r.superseded)}")
        for f in await memory.history("alice-berlin"):
            say(f"   history: {f.id:13} {f.text!r} valid from {day(f.valid_from)}")

        say("\n3. Recall now versus as of a past moment (time travel)")
        now = await memory.recall("where does Alice live", k=3)
        say("   now:           " + "; ".join(f"{h.fact.text} [{h.status}]" for h in now))
        past = await memory.recall("where does Alice live", k=3, as_of=ms(2022, 6, 1))
        say("   as of 2022-06: " + "; ".join(f"{h.fact.text} [{h.status}]" for h in past))
        every = await memory.recall("where does Alice live", k=3, history="all")
        say("   history=all:   " + "; ".join(f"{h.fact.text} [{h.status}]" for h in every))
        status = {h.fact.id: (h.fact.text, h.status) for h in every}
        say(f"   superseded fact: alice-paris {status['alice-paris'][0]!r}; "
            f"current fact: alice-berlin {status['alice-berlin'][0]!r}")

        say("\n4. Explain why a fact came back, and why another did not")
        e = await memory.explain("where does Alice live", "alice-berlin")
        say(f"   alice-berlin: rank {e.rank}, {e.status}, matched terms {list(e.matched_terms)}, "
            f"lexical score {e.lexical:.3f}")
        e = await memory.explain("where does Alice live", "alice-paris")
        say(f"   alice-paris:  not returned (rank {e.rank}): it matches {list(e.matched_terms)} too, "
            f"but is {e.status} now (chain {' -> '.join(e.chain)})")

        say("\n5. Load a Markdown document: chunks become episodes, a rule-based extractor draws facts")
        loaded = await memory.load("team-notes", NOTES, extractor=works_on, observed_at=ms(2025, 3, 1))
        say(f"   episodes: {', '.join(loaded.episodes)}")
        for fact_id in loaded.facts:
            fact = await memory.get(fact_id)
            say(f"   fact:     {fact.text if fact else fact_id!r}")
        hits = await memory.recall("who works on storage", k=1)
        say(f"   recall 'who works on storage' -> {hits[0].fact.text!r}" if hits else "   (no hit)")

        say("\n6. Forget with purge: Bob's facts go, and nothing derived from them stays on disk")
        await engine.sync()
        before = sorted({f.file for f in (await engine.check(absent=[SECRET])).findings})
        say(f"   before: {SECRET!r} is in {len(before)} file(s) of the store: {', '.join(before)}")
        report = await memory.forget(ForgetScope.entity("bob"), purge=True)
        say(f"   forgot {', '.join(report.removed)}; the store was compacted with purge")
        left = await memory.recall("Bob locker code", k=3, history="all")
        say(f"   recall 'Bob locker code' now returns {len(left)} facts")
    # What `hms check --absent` runs: every file read, every checksum verified, and the decoded
    # (decompressed) content searched: the texts, and words only they had ("green" and "q4417"
    # are also how the index holds them; "locker" would be found in the tombstone's id).
    checked = check_store(path, absent=[SECRET, "green tea", "green", "q4417"])
    clean = checked.ok
    say(f"   hms check: {checked.files} files, {checked.bytes} bytes read and decoded, every "
        "checksum verified: "
        + ("the forgotten text was found in NONE of them" if clean else
           f"FOUND: {[(f.file, f.what) for f in checked.findings]}"))
    return clean


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="hms-demo-") as tmp:
        clean = trio.run(tour, os.path.join(tmp, "store"))
    say("\nWhere next:")
    say("  hms --help                 the command line (docs/cli.md): remember, recall --as-of, forget ...")
    say("  docs/guide.md              the guide: time travel, explain, forgetting, encryption, serving")
    say("  hmsengine.sync / .aio      the same engine from plain Python or asyncio")
    say("  hms serve / hms mcp        over HTTP (docs/http.md) or as an MCP server for agents")
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
