"""Helpers of the replication tests: short timings, waiting for the bucket, what a reader sees."""

from __future__ import annotations

from pathlib import Path

import trio

from hmsengine import Engine
from hmsengine.replication.options import Replication, parse_target


def options(url: str, **overrides: float) -> Replication:
    """Short timings so the tests wait little."""
    values = {"max_lag": 0.4, "lease_ttl": 3.0, "retry_min": 0.05, "retry_max": 0.3,
              "close_timeout": 5.0, **overrides}
    return Replication(target=parse_target(url), **values)


async def wait_shipped(engine: Engine, timeout: float = 10.0) -> None:
    """Until every commit, and the persisted index, is in the bucket."""
    with trio.fail_after(timeout):
        while True:
            stats = engine.statistics()
            if stats.replication_pending_bytes == 0 and stats.replication_lag_ms == 0 \
                    and not stats.replication_index_pending:
                return
            await trio.sleep(0.05)


async def snapshot_of(path: Path | str, key: str | None = None,
                      query: str = "quick fox") -> dict[str, object]:
    """Everything a reader can see: each document, a search, the revision, the tombstones."""
    async with Engine.open(path, key=key) as engine:
        docs = {}
        for doc_id, _ in engine.scan_metadata(commit_order=True):
            doc = await engine.get_document(doc_id)
            docs[doc_id] = None if doc is None else (doc.text, doc.metadata, doc.embedding)
        search = [(h.id, h.score) for h in await engine.search_documents(query, k=20)]
        return {"docs": docs, "search": search, "revision": engine.revision,
                "tombstones": engine.tombstones(), "settings": engine.settings}
