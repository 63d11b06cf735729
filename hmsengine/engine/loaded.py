"""What the segments an open loaded still lack for queries, made after the open returns.

An open reads its persisted segments and adopts them with the table's own id strings
(``Indexer.rebuild``); it does not wait for what their first queries would otherwise make in
their own path or pay in a slower scan: their id arrays (~15 ms at 1M documents; numpy holds the
GIL while it fills an object array, so this moves that pause to just after the open rather than
removing it) and the int8 codes of their vectors (``Segment.vector_codes``: ~1.1 s at 1M rows
of 384, without the GIL). The index builder runs ``finish_loaded`` as a task of its own
(``Indexer._coding``), in worker threads.
"""

from __future__ import annotations

import threading

import trio

from ..index.snapshot import SegmentView


async def finish_loaded(views: tuple[SegmentView, ...], stop: threading.Event) -> None:
    """The id arrays of ``views``' segments, then their vectors' codes one segment at a time;
    scans read float32 until a segment's are whole. ``stop`` ends it within a chunk of rows
    (``segment.CODE_CHUNK_ROWS``); so does a lack of memory for the codes (a quarter of the
    vectors' size): they are a speed-up."""
    await trio.to_thread.run_sync(lambda: [v.segment.id_array for v in views])
    for view in views:
        segment = view.segment
        if segment.vector_codes_if_built is None and segment.vector_codes_due:
            try:
                done = await trio.to_thread.run_sync(segment.make_vector_codes, stop.is_set)
            except MemoryError:
                return
            if not done:
                return
