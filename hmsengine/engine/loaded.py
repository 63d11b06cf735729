"""The segments an open loaded: which of their documents it adopts (``adopt_all``, ``adopt``:
those the table still holds in exactly that version), and what they still lack for queries,
made after the open returns (``finish_loaded``).

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

import numpy as np
import trio

from ..index.segment import Segment
from ..index.snapshot import SegmentView
from .docnums import DocnumMap, kept_ids
from .state import DocTable


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


def adopt_all(table: DocTable, docnum_of: DocnumMap, loaded: list[tuple[Segment, str]]
              ) -> list[tuple[Segment, str, list[int]]] | None:
    """Adopt ``loaded`` (persisted segments and their files) into ``docnum_of`` (empty) as the
    usual reopen does, vectorised: the table came whole from its snapshot (so its live
    documents are known as sorted columns) and the persisted segments do not overlap. Each
    segment document is kept when the table holds that id with that version key; returns
    (segment, file, local numbers of the documents not kept), or None to check segment by
    segment instead.

    Kept documents' ids are swapped for the table's equal strings, whose hashes are already
    computed (hashing a million ids again cost ~0.3 s) and which would otherwise be held
    twice in memory.
    """
    if not loaded or docnum_of:
        return None
    base = table.entries.base_in_key_order(table.tombstones)
    if base is None or not len(base[1]):
        return None
    ids, keys = base
    ordered = sorted(loaded, key=lambda item: item[0].first)
    docnums = np.concatenate([np.asarray(s.docnums, dtype=np.int64) for s, _ in ordered])
    if len(docnums) > 1 and not bool(np.all(docnums[1:] > docnums[:-1])):
        return None  # overlapping segments (after damage): the careful path merges them
    if np.array_equal(keys, docnums):  # the index holds exactly the table: the usual reopen
        at, keep = np.arange(len(keys)), np.ones(len(keys), dtype=bool)
    else:
        at = np.minimum(np.searchsorted(keys, docnums), len(keys) - 1)
        keep = keys[at] == docnums
    out = []
    start = 0
    for segment, file in ordered:
        stop = start + segment.n_docs
        taken = kept_ids(ids, segment.ids, at[start:stop], keep[start:stop])
        if taken is None:
            return None  # a key reused by another id: cannot happen unless damaged; be careful
        out.append((segment, file, taken))
        start = stop
    # Every check passed: only now is anything adopted (None above leaves the map empty).
    rows, numbers = (at, docnums) if bool(keep.all()) else (at[keep], docnums[keep])
    if ids is table.entries.base_ids:  # positions are the table's rows: no dict entry each
        docnum_of.adopt_base(table.entries.row_map, rows, numbers)
    else:
        docnum_of.update(zip([ids[r] for r in rows.tolist()], numbers.tolist(), strict=True))
    return [(segment.with_ids(swapped), file, dead)
            for segment, file, (swapped, dead) in out]


def adopt(table: DocTable, docnum_of: DocnumMap, segment: Segment) -> list[int]:
    """Take a persisted segment's documents that the table still holds in exactly that
    version (same key) and no earlier segment took; return the local numbers of the others.

    Vectorised (a million documents at open): the table answers every key at once.
    """
    ids = segment.ids
    docnums = np.asarray(segment.docnums, dtype=np.int64)
    keep = table.entries.keys_of(ids) == docnums
    if docnum_of:  # a document in two segments (only after damage): the first one wins
        for local in np.flatnonzero(keep).tolist():
            if ids[local] in docnum_of:
                keep[local] = False
    if keep.all():
        docnum_of.update(zip(ids, docnums.tolist(), strict=True))
        return []
    taken = np.flatnonzero(keep).tolist()
    docnum_of.update(zip([ids[j] for j in taken], docnums[taken].tolist(), strict=True))
    return np.flatnonzero(~keep).tolist()
