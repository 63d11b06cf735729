"""A tenant's store held by another process: 503 store_locked, then served once it is free."""

from __future__ import annotations

import subprocess
import sys

import httpx
from serverproc import ServerProcess

HOLD = """
import sys, trio
from hmsengine import Engine
async def main():
    async with Engine.open(sys.argv[1]):
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.read)
trio.run(main)
"""


def test_a_store_locked_by_another_process_is_503_then_served(server: ServerProcess) -> None:
    """While another process holds a tenant's store the server answers 503 store_locked with
    Retry-After (not a 500), and the first request after the lock is released opens it."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(server.root / "held")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
        for _ in range(2):  # the failed open is forgotten: a second request tries again
            r = httpx.post(server.url + "/api/v1/memory/recall", json={"query": "x"},
                           headers={"X-HMS-Tenant": "held"})
            assert r.status_code == 503, r.text
            assert r.json()["error"]["code"] == "store_locked"
            assert r.headers["retry-after"] == "1"
    finally:
        holder.communicate(b"", timeout=60)
    assert holder.returncode == 0
    r = httpx.post(server.url + "/api/v1/memory/recall", json={"query": "x"},
                   headers={"X-HMS-Tenant": "held"})
    assert r.status_code == 200 and r.json() == {"items": []}
