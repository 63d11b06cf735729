"""Child of the compaction kill test: writes, deletes and compacts (with or without purge)
until killed.

Usage: python compact_child.py STORE RUN PURGE (1: every compaction purges). Prints
``PUT <id>`` / ``DEL <id>`` (flushed) once a put or delete is acknowledged, ``TRYDEL <id>``
before a delete is asked for, and ``READY`` once the store is open.
"""

from __future__ import annotations

import random
import sys

import trio

from hmsengine import Engine


def text_for(doc_id: str) -> str:
    return f"MARK-{doc_id}-KRAM body of {doc_id} " + "filler words " * 8


async def main(store: str, run: str, purge: bool) -> None:
    rng = random.Random(run)
    async with Engine.open(store) as engine:
        print("READY", flush=True)

        async def writer() -> None:
            i = 0
            while True:
                doc_id = f"{run}-{i}"
                await engine.put_document(doc_id, text_for(doc_id))
                print(f"PUT {doc_id}", flush=True)
                victim = f"base-{rng.randrange(3000)}" if i % 2 else f"{run}-{rng.randrange(i + 1)}"
                # Said first: a kill between the durable delete and "DEL" leaves it undecided.
                print(f"TRYDEL {victim}", flush=True)
                if await engine.delete_document(victim):
                    print(f"DEL {victim}", flush=True)
                i += 1

        async def compactor() -> None:
            while True:
                await engine.compact(purge=purge)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer)
            nursery.start_soon(compactor)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3] == "1")
