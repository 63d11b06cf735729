"""Child of the purge kill test: purges one victim of each kind (purge_corpus) while writing
documents, until killed.

Usage: python purge_child.py STORE FOLDER TAG plain|encrypted. Prints ``READY`` once the store is
open, ``PUT <id>`` (flushed) once a put is acknowledged, ``PURGING <kind>`` before a purge
starts and ``PURGED <kind>`` once it returns.
"""

from __future__ import annotations

import os
import sys

import trio

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.dirname(HERE))
from purge_corpus import DOCUMENT_KINDS, KEY, KINDS, scope_for  # noqa: E402

from hmsengine import Engine, Memory  # noqa: E402


def written_text(doc_id: str) -> str:
    return f"acknowledged write {doc_id} about the garden"


async def main(store: str, folder: str, tag: str, key: bytes | None) -> None:
    async with Engine.open(store, key=key) as engine:
        memory = Memory(engine)
        print("READY", flush=True)

        async def writer() -> None:
            i = 0
            while True:
                doc_id = f"w-{tag}-{i}"
                await engine.put_document(doc_id, written_text(doc_id))
                print(f"PUT {doc_id}", flush=True)
                i += 1
                await trio.sleep(0.005)

        async def purger() -> None:
            for kind in KINDS:
                scope = scope_for(kind, tag, folder)
                print(f"PURGING {kind}", flush=True)
                if kind in DOCUMENT_KINDS:
                    await engine.delete_document(scope, purge=True)
                else:
                    await memory.forget(scope, purge=True)
                print(f"PURGED {kind}", flush=True)
            await trio.sleep_forever()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer)
            nursery.start_soon(purger)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3],
             KEY if sys.argv[4] == "encrypted" else None)
