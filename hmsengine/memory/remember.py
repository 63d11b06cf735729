"""remember: validate once, check against the store under the lock, write one transaction.

The path of one ``remember_many`` call:

1. every input is validated once (``inputs.prepare``): text, names, times, metadata (to its
   compact JSON) and embedding (to float32; the embedder fills missing ones first, after
   ``embedding.before_write`` has checked or recorded the store's embedder); the id is given or
   derived from the payload's digest;
2. under the shared lock, each fact is checked against the index: an id already stored with the
   same digest is an idempotent retry (``created=False``, nothing written), a different one a
   ``Conflict``; ``supersedes`` must name facts that exist. The new ids are reserved
   (``EngineState.pending``) and the lock is released, so concurrent remembers of other ids
   share group commits;
3. one ``put_documents`` call writes the new facts as ``PutOp`` values (``PreparedFact.put``:
   the caller's metadata JSON with the stamp appended as text; the engine validates nothing
   again). The commit listener hands the index the stamps as built (``EngineState.writing``);
4. the observers hear of the ids created.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import trio

from ..errors import Conflict, InvalidRequest
from . import embedding, stored_policies
from .core import MemoryCore
from .inputs import PreparedFact, as_input, prepare
from .restamp import ensure_marked, retain
from .stamp import Stamp, stored_digest
from .values import FileRef, RememberInput, RememberResult, stamp_file


async def remember_many(core: MemoryCore, inputs: Sequence[RememberInput | dict[str, Any]], *,
                        files: Sequence[FileRef | None] | None = None) -> list[RememberResult]:
    """Remember facts in one journal transaction: all of them or none (the module docstring's
    steps). ``files`` gives inputs their file references, by position (``remember_file``)."""
    if isinstance(inputs, (str, bytes, dict)) or not isinstance(inputs, Sequence):
        raise InvalidRequest("inputs: expected a list of RememberInput")
    if not inputs:
        raise InvalidRequest("inputs: must not be empty")
    prepared = await _prepare_all(core, inputs, files)
    # A store made by this Memory keeps the policies it was given (stored_policies.py).
    await stored_policies.before_write(core.engine, core.wanted_policies)
    if any(p.stamp.retain_until is not None for p in prepared):
        await ensure_marked(core.engine)  # before the first stamp with a retention end
    state = core.state
    involved = {p.id for p in prepared} | {t for p in prepared for t in p.stamp.supersedes}
    while True:
        # Check under the lock, then write outside it with the new ids reserved: concurrent
        # remembers of other ids share group commits; one touching a reserved id (or naming
        # it in supersedes) waits for that write to finish or fail, then checks again.
        async with state.lock:
            busy = [state.pending[i] for i in involved if i in state.pending]
            if not busy:
                digests = {p.id: await _stored_digest(core, p.id) for p in prepared
                           if p.id in core.index.facts}
                results, new = _check(core, prepared, digests)
                reserved = {p.id: trio.Event() for p in new}
                state.pending.update(reserved)
                break
        await busy[0].wait()
    try:
        if new:
            await _write(core, new)
    finally:
        for doc_id, event in reserved.items():
            del state.pending[doc_id]
            event.set()
    await _retain_existing(core, prepared, results)
    created = tuple(r.id for r in results if r.created)
    if created:
        await core.notify("remember", created)
    return results


async def _retain_existing(core: MemoryCore, prepared: list[PreparedFact],
                           results: list[RememberResult]) -> None:
    """A fact remembered again with another ``retain_until`` takes that one (the retention end
    is outside the payload: memory/retention.py)."""
    facts = core.index.facts
    for p, r in zip(prepared, results, strict=True):
        end = p.stamp.retain_until
        if not r.created and end is not None and p.id in facts and facts[p.id].retain_until != end:
            await retain(core, [p.id], end)


async def _prepare_all(core: MemoryCore, inputs: Sequence[RememberInput | dict[str, Any]],
                       files: Sequence[FileRef | None] | None) -> list[PreparedFact]:
    # Step 1: each input validated once, the embedder's vectors filling missing embeddings.
    items = [as_input(v, f"inputs[{i}].") for i, v in enumerate(inputs)]
    missing = [i for i, item in enumerate(items) if item.embedding is None]
    # The store's record of its embedder first (memory/embedding.py): set at its first
    # embedded fact, and a fact without a vector refused where the store embeds.
    await embedding.before_write(core, embeds=core.embedder is not None or not missing)
    vectors = await core.embed([items[i].text for i in missing]) if missing else None
    by_index = dict(zip(missing, vectors, strict=True)) if vectors is not None else {}
    if files is not None and len(files) != len(items):
        raise InvalidRequest("files: expected one entry (a FileRef or None) per input")
    refs = [None if files is None or (ref := files[i]) is None else stamp_file(ref)
            for i in range(len(items))]
    return [prepare(item, embedder_vector=by_index.get(i),
                    where=f"inputs[{i}]." if len(items) > 1 else "", file=refs[i])
            for i, item in enumerate(items)]


async def _write(core: MemoryCore, new: list[PreparedFact]) -> None:
    # Step 3: one transaction; the stamps as built go to the index through the commit listener.
    now = core.engine.now()
    ops = []
    writing = core.state.writing
    shared: dict[tuple[Any, ...], Stamp] = {}  # a batch's equal compact stamps: one object
    for p in new:
        op, stamp = p.put(now)
        compact = stamp.compact()
        compact = shared.setdefault(compact.value_key(), compact)
        writing[p.id] = (op.metadata_json or "", compact)
        ops.append(op)
    try:
        await core.engine.put_documents(ops)
    finally:
        for p in new:
            writing.pop(p.id, None)


async def _stored_digest(core: MemoryCore, doc_id: str) -> str | None:
    doc = await core.engine.get_document(doc_id)
    return None if doc is None else stored_digest(doc.metadata)


def _check(core: MemoryCore, prepared: list[PreparedFact],
           digests: dict[str, str | None]) -> tuple[list[RememberResult], list[PreparedFact]]:
    # Step 2: idempotent retries, conflicts and supersession targets, against the index.
    index = core.index
    results: list[RememberResult] = []
    new: list[PreparedFact] = []
    batch: dict[str, PreparedFact] = {}
    for n, p in enumerate(prepared):
        where = f"inputs[{n}]." if len(prepared) > 1 else ""
        existing = index.facts.get(p.id)
        if p.id in batch:
            if batch[p.id].stamp.digest != p.stamp.digest:
                raise Conflict(f"{where}id: {p.id!r} appears twice with different payloads")
            results.append(RememberResult(id=p.id, created=False))
            continue
        if existing is not None:
            if digests.get(p.id) != p.stamp.digest:
                raise Conflict(f"{where}id: {p.id!r} already holds a different fact")
            results.append(RememberResult(id=p.id, created=False))
            continue
        for target in p.stamp.supersedes:
            if target not in index.facts and target not in batch:
                raise InvalidRequest(f"{where}supersedes: no fact {target!r}")
        batch[p.id] = p
        new.append(p)
        results.append(RememberResult(id=p.id, created=True,
                                      superseded=_would_supersede(core, p, batch)))
    return results, new


def _would_supersede(core: MemoryCore, p: PreparedFact,
                     batch: dict[str, PreparedFact]) -> tuple[str, ...]:
    """The facts this one supersedes as it is remembered: its explicit links, and under a
    supersession policy the slot's facts current just before it takes effect, older than it
    and related to it by the policy."""
    out = list(p.stamp.supersedes)
    policy = core.slot_policy
    subject = p.stamp.subject
    if policy is not None and subject is not None:
        index = core.index
        s = p.stamp.with_ingest_time(core.engine.now())  # as it will be stamped
        begin = s.begin
        for other in index.current_in_slot(s.namespace, subject, begin, policy):
            o = index.facts[other]
            if (o.begin, o.ingest_time, other) < (begin, o.ingest_time + 1, p.id) \
                    and other not in out and index.related(policy, p.id, s, other, o):
                out.append(other)
    return tuple(out)
