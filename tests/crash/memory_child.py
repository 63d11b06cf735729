"""Child of the memory kill test: remembers chains of facts and forgets scratch facts until
killed. Prints ``FACT <id> <supersedes or ->`` and ``GONE <id>`` (flushed) once acknowledged."""

from __future__ import annotations

import sys

import trio

from hmsengine import Engine, ForgetScope, Memory


async def main(store: str, run: str) -> None:
    async with Engine.open(store) as engine:
        memory = Memory(engine)
        print("READY", flush=True)

        async def chain(k: int) -> None:
            previous = None
            i = 0
            while True:
                fact_id = f"{run}-c{k}-v{i}"
                await memory.remember(f"chain {k} version {i} of run {run}", id=fact_id,
                                      subject=f"{run}/slot{k}",
                                      supersedes=[previous] if previous else [])
                print(f"FACT {fact_id} {previous or '-'}", flush=True)
                scratch = f"{run}-c{k}-tmp{i}"
                await memory.remember(f"scratch note {i}", id=scratch)
                print(f"FACT {scratch} -", flush=True)
                await memory.forget(ForgetScope.ids([scratch]))
                print(f"GONE {scratch}", flush=True)
                previous = fact_id
                i += 1

        async with trio.open_nursery() as nursery:
            for k in range(4):
                nursery.start_soon(chain, k)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2])
