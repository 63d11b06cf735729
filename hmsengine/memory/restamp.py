"""Rewriting a fact's stamp in place (a relink, a retention end) and the store's mark that it
holds retention ends: the write primitives that remember.py, forget.py and retention.py share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..clock import to_ms
from ..engine import DocumentEngine, check_id
from ..errors import InvalidRequest
from .core import RETENTION_SECTION, MemoryCore, retention_defaults
from .stamp import STAMP_KEY, Stamp
from .values import Time

# The store format that understands retention (storage/manifest.py's READER_VERSION).
READER_VERSION = 2
# Rewrites of retention ends go out in transactions of at most this many facts.
CHUNK = 4096


async def restamped(core: MemoryCore, doc_id: str,
                    edit: Callable[[Stamp], Stamp]) -> dict[str, Any] | None:
    """The engine put that rewrites fact ``doc_id`` with the stamp ``edit`` makes of its own
    (text, metadata, embedding, ingest time and digest unchanged); None if it is no fact."""
    doc = await core.engine.get_document(doc_id)
    if doc is None or not doc.metadata or STAMP_KEY not in doc.metadata:
        return None
    metadata = dict(doc.metadata)
    metadata[STAMP_KEY] = edit(Stamp.from_list(metadata[STAMP_KEY])).to_list()
    item: dict[str, Any] = {"id": doc_id, "text": doc.text, "metadata": metadata}
    if doc.embedding is not None:
        item["embedding"] = list(doc.embedding)
    return item


async def ensure_marked(engine: DocumentEngine) -> None:
    """Write the ``retention`` section (raising the store's ``min_reader_version`` to 2) if it
    is not there yet: called before the first stamp with a retention end is written."""
    if engine.settings.get(RETENTION_SECTION) is None or engine.min_reader_version < READER_VERSION:
        await engine.update_settings(RETENTION_SECTION, {"namespaces": retention_defaults(engine)},
                                     min_reader_version=READER_VERSION)


async def retain(core: MemoryCore, ids: Sequence[str], until: Time | None) -> tuple[str, ...]:
    """Set the ``retain_until`` of the facts ``ids`` to ``until`` (None: no retention end of
    their own); the ids rewritten (those whose end changed). Each is rewritten whole with its
    text, metadata, embedding, ingest time and digest unchanged, in transactions of at most
    4,096 facts; durable when it returns."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise InvalidRequest("ids: expected a list of fact ids")
    end = None if until is None else to_ms(until, field="retain_until")
    for n, doc_id in enumerate(ids):
        check_id(doc_id, f"ids[{n}]")
    if end is not None:
        await ensure_marked(core.engine)
    state = core.state
    changed: list[str] = []
    async with state.lock:
        todo = sorted({i for i in ids if i in state.index.facts
                       and state.index.facts[i].retain_until != end})
        for start in range(0, len(todo), CHUNK):
            puts = []
            for doc_id in todo[start:start + CHUNK]:
                put = await restamped(core, doc_id, lambda stamp: stamp.with_retain_until(end))
                if put is not None:
                    puts.append(put)
                    changed.append(doc_id)
            if puts:
                await core.engine.transact(puts=puts, deletes=[], tombstones=[])
    return tuple(changed)


__all__ = ["READER_VERSION", "ensure_marked", "restamped", "retain"]
