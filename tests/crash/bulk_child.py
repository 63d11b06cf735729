"""Child process of the bulk kill test: puts batches of plain documents until killed.

Usage: python bulk_child.py STORE RUN SIZE. Prints ``PUT <run> <k>`` before batch k is sent and
``ACK <run> <k> <revision>`` (flushed) once put_documents returned, i.e. the batch is durable.
"""

from __future__ import annotations

import sys
import zlib

import trio

from hmsengine import Engine


def batch_for(run: str, k: int, size: int) -> list[dict[str, str]]:
    """The exact documents of batch ``k`` (the parent recomputes them to verify): plain texts,
    every third batch with one text that JSON must escape, some non-ASCII."""
    docs = []
    for i in range(size):
        doc_id = f"{run}-{k}-{i}"
        n = zlib.crc32(doc_id.encode()) % 60
        text = f"{doc_id} " + " ".join(f"word{(n * 7 + j) % 97}" for j in range(n))
        if i % 7 == 3:
            text += " café"
        if k % 3 == 2 and i == size // 2:
            text += ' "quoted" \\ back\ttab'
        docs.append({"id": doc_id, "text": text})
    return docs


async def main(store: str, run: str, size: int) -> None:
    async with Engine.open(store) as engine:
        print("READY", flush=True)
        k = 0
        while True:
            batch = batch_for(run, k, size)
            sys.stdout.write(f"PUT {run} {k}\n")
            sys.stdout.flush()
            results = await engine.put_documents(batch)
            sys.stdout.write(f"ACK {run} {k} {results[0].revision}\n")
            sys.stdout.flush()
            k += 1


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
