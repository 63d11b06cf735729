"""A store of several segments for the query-path tests (tests/index/): three folded segments of
120 documents and a tail of 120, every 37th document deleted. Run it with the ``no_merges``
fixture and ``indexer.CONSOLIDATE_IDLE_SECONDS`` raised, so that the segments stay as made."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from hmsengine import Engine

BATCHES, PER_BATCH = 4, 120


async def put_in_segments(engine: Engine, item: Callable[[int], dict[str, Any]]) -> None:
    """Put ``item(n)`` for n in 0..479 in four batches, each of the first three folded into a
    segment of its own before the next, the last left as the tail; then delete every 37th."""
    for batch in range(BATCHES):
        await engine.put_documents([item(n) for n in range(batch * PER_BATCH,
                                                           (batch + 1) * PER_BATCH)])
        with trio.fail_after(30):
            while batch < BATCHES - 1 and engine._indexer.snapshot.tail:
                await trio.sleep(0.01)
    for n in range(0, BATCHES * PER_BATCH, 37):
        await engine.delete_document(f"d{n}")
    assert engine.statistics().index_segments >= BATCHES - 1
