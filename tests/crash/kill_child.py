"""Child process of the kill test: writes documents from concurrent tasks until killed.

Usage: python kill_child.py STORE RUN TASKS. Prints ``ACK <id> <revision>`` (flushed) after each
put_document returns, i.e. after the write is acknowledged as durable.
"""

from __future__ import annotations

import sys
import zlib

import trio

from hmsengine import Engine


def text_for(doc_id: str) -> str:
    """The exact text each id is written with (the parent recomputes it to verify)."""
    n = zlib.crc32(doc_id.encode()) % 200
    return f"{doc_id} " + " ".join(f"word{(n * 7 + i) % 97}" for i in range(n))


async def main(store: str, run: str, tasks: int) -> None:
    async with Engine.open(store) as engine:
        print("READY", flush=True)

        async def writer(k: int) -> None:
            i = 0
            while True:
                doc_id = f"{run}-{k}-{i}"
                result = await engine.put_document(doc_id, text_for(doc_id))
                sys.stdout.write(f"ACK {doc_id} {result.revision}\n")
                sys.stdout.flush()
                i += 1

        async with trio.open_nursery() as nursery:
            for k in range(tasks):
                nursery.start_soon(writer, k)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
