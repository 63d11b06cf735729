"""Replay: recall prior post-mortems at the start of a new incident, with nothing from after it.

The new incident (below) is of a class that two earlier post-mortems describe: a node group that
cannot grow, so a pod stays Pending. Their specific causes differ from each other, and nothing
links them to the new alert but the class. The replay:

1. loads the post-mortems of ``data/`` dated before the incident start (the file name starts with
   the date), each with its date as ``observed_at``, through ``postmortem_extractor.extract``;
2. recalls with the new incident's alert title, ``as_of`` the incident start, top 3;
3. prints the hits and the namespace's profile block.

With ``--as-of`` set before the first prior incident of the class, the recall cannot name it:
its facts are not valid yet at that time. Run from the repository root:

    .venv/bin/python examples/postmortems/replay_incident.py
    .venv/bin/python examples/postmortems/replay_incident.py --as-of 2023-06-01T00:00:00Z
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import trio

from hmsengine import Engine, Memory, Profile, RecallHit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postmortem_extractor import extract  # the example's own module, beside this file

DATA = Path(__file__).resolve().parent / "data"
NAMESPACE = "incidents"
INCIDENT_TITLE = "KubePodNotReady: billing-db-0 stuck in Pending for 15 minutes"
INCIDENT_START = dt.datetime(2024, 10, 21, 8, 30, tzinfo=dt.UTC)
# Small chunks, so that a post-mortem's remediation lands in a later chunk than its bullets.
CHUNK_CHARS = 600


def postmortems(before: dt.datetime) -> list[tuple[dt.datetime, Path]]:
    """(date, file) of each post-mortem dated before ``before``, oldest first."""
    out = []
    for path in sorted(DATA.glob("*.md")):
        date = dt.datetime.strptime(path.name[:10], "%Y-%m-%d").replace(tzinfo=dt.UTC)
        if date < before:
            out.append((date, path))
    return out


async def load_postmortems(memory: Memory, before: dt.datetime) -> list[str]:
    """Load the post-mortems dated before ``before``; the ids of the facts extracted."""
    facts: list[str] = []
    for date, path in postmortems(before):
        result = await memory.load(path.stem, path.read_text(encoding="utf-8"), namespace=NAMESPACE,
                                   extractor=extract, actor="postmortem-loader", observed_at=date,
                                   chunk_chars=CHUNK_CHARS)
        facts.extend(result.facts)
    return facts


async def replay(*, as_of: dt.datetime = INCIDENT_START, store: str | None = None,
                 k: int = 3) -> tuple[list[RecallHit], Profile]:
    """Load what was written before the incident, then recall with its alert title at ``as_of``."""
    async with Engine.open(store) as engine:
        memory = Memory(engine)
        await load_postmortems(memory, INCIDENT_START)
        hits = await memory.recall(INCIDENT_TITLE, k=k, as_of=as_of, namespace=NAMESPACE)
        profile = await memory.profile(NAMESPACE, budget_chars=4000)
    return hits, profile


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="replay_incident.py", description=__doc__.split("\n")[0])
    parser.add_argument("--as-of", type=dt.datetime.fromisoformat, default=INCIDENT_START,
                        help="evaluation time of the recall, ISO 8601 with a zone "
                             "(default: the incident start, %(default)s)")
    parser.add_argument("--store", default=None,
                        help="a store directory (default: an in-memory store)")
    args = parser.parse_args(argv)
    if args.as_of.tzinfo is None:
        parser.error("--as-of needs a time zone, e.g. 2023-06-01T00:00:00+00:00")
    hits, profile = trio.run(lambda: replay(as_of=args.as_of, store=args.store))
    print(f"alert: {INCIDENT_TITLE}")
    print(f"recall as of {args.as_of.isoformat()}, top {len(hits)}:")
    for rank, hit in enumerate(hits, start=1):
        print(f"{rank}. [{hit.fact.kind}] {hit.fact.text}  (score {hit.score:.3f})")
    print()
    print(profile.block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
