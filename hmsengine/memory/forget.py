"""forget, apply_forgetting and consolidate: removing facts, with the chain kept sound.

``forget`` removes the facts of exactly one scope and:

* without ``include_chain`` only those; removing the newest version makes its predecessor
  current again (derived, nothing to write); removing a middle version re-links each surviving
  explicit successor to what the removed fact superseded (the successor is rewritten with its
  text, metadata, embedding, ingest time and digest unchanged);
* with ``include_chain``, every fact connected to a match by supersession, both directions;
* with ``dry_run``, nothing: the report lists what would go.

With ``purge`` each removed id is replaced by a content-free tombstone (``engine.tombstones()``)
that keeps imports and restores from bringing it back. Removal is one journal transaction per
4,096 facts; a crash between them leaves a prefix
removed and the same call finishes it. Before ``forget`` returns, the removed texts' records are
zeroed and synced (``engine.sync``); with ``purge`` the store is then compacted and the replaced
generation erased (``engine.compact(purge=True)``). Repeating a forget removes and writes nothing,
except that a repeated purge whose first run was interrupted before its compaction finished
compacts (``EngineStatistics.purge_pending``), so no byte of what it removed stays in any file.
Scopes are matched on the memory index; ``source`` is memory/sources.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..clock import to_ms
from ..engine import check_text
from ..errors import InvalidRequest, PolicyError
from .core import MemoryCore
from .index import MemoryIndex
from .inputs import prepare
from .policies import Consolidation, FactInfo, bad_result, policy_failed, policy_name, resolved
from .remember import remember_many
from .restamp import restamped
from .sources import match_source
from .values import ConsolidateReport, ForgetReport, ForgetScope, RememberInput

CHUNK = 4096


def _match(core: MemoryCore, scope: ForgetScope) -> set[str]:
    index = core.index
    kind, value = scope.kind, scope.value
    if kind == "ids":
        for n, i in enumerate(value):
            if isinstance(i, str) and not i.isascii():
                check_text(i, f"scope.ids[{n}]")
        return {i for i in value if isinstance(i, str) and i in index.facts}
    if kind in ("subject", "entity", "namespace"):
        if not isinstance(value, str) or not value:
            raise InvalidRequest(f"scope.{kind}: expected a non-empty string")
        check_text(value, f"scope.{kind}")
        if kind == "subject":
            return set(index.by_subject.get(value, ()))
        if kind == "entity":
            return set(index.entities.get(value, ()))
        return {i for i, s in index.facts.items() if s.namespace == value}
    if kind == "ingested_before":
        t = to_ms(value, field="scope.ingested_before")
        return {i for i, s in index.facts.items() if s.ingest_time < t}
    if kind == "event_before":
        t = to_ms(value, field="scope.event_before")
        return {i for i, s in index.facts.items() if s.event_time is not None and s.event_time < t}
    if kind == "metadata":
        return core.engine.find_ids(metadata=dict(value)) & set(index.facts)
    if kind == "source":
        return match_source(index, value, core.config.file_base)
    raise InvalidRequest(f"scope: unknown kind {kind!r}")


def _resolve(index: MemoryIndex, links: tuple[str, ...], removed: set[str]) -> tuple[str, ...]:
    """Replace removed facts in ``links`` by what they superseded, recursively."""
    out: list[str] = []
    seen: set[str] = set()
    todo = list(links)
    while todo:
        x = todo.pop(0)
        if x in seen:
            continue
        seen.add(x)
        if x in removed:
            s = index.facts.get(x)
            todo.extend(s.supersedes if s is not None else ())
        elif x in index.facts:
            out.append(x)
    return tuple(out)


def plan_forget(core: MemoryCore, scope: ForgetScope,
                include_chain: bool) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    index = core.index
    matched = _match(core, scope)
    if include_chain:
        for doc_id in list(matched):
            matched.update(index.chain(doc_id, core.slot_policy))
    relinks: dict[str, tuple[str, ...]] = {}
    for doc_id in matched:
        for successor in index.successors.get(doc_id, ()):
            if successor not in matched and successor not in relinks:
                relinks[successor] = _resolve(index, index.facts[successor].supersedes, matched)
    return sorted(matched), relinks


async def forget(core: MemoryCore, scope: ForgetScope, *, include_chain: bool, dry_run: bool,
                 purge: bool) -> ForgetReport:
    if not isinstance(scope, ForgetScope):
        raise InvalidRequest("scope: expected a ForgetScope (ForgetScope.ids(...), .subject(...), ...)")
    for name, flag in (("include_chain", include_chain), ("dry_run", dry_run), ("purge", purge)):
        if not isinstance(flag, bool):
            raise InvalidRequest(f"{name}: expected a bool")
    if dry_run:
        removed, relinks = plan_forget(core, scope, include_chain)
        return ForgetReport(removed=tuple(removed), relinked=tuple(sorted(relinks)), dry_run=True)
    async with core.state.lock:
        removed, relinks = plan_forget(core, scope, include_chain)
        if removed:
            puts = [await _relinked(core, doc_id, links) for doc_id, links in sorted(relinks.items())]
            for start in range(0, len(removed), CHUNK):
                # A purge leaves a content-free tombstone per id (engine.transact), so that no
                # import or restore of an older export brings the purged facts back.
                chunk = removed[start:start + CHUNK]
                await core.engine.transact(puts=puts if start == 0 else [],
                                           deletes=[] if purge else chunk,
                                           tombstones=chunk if purge else [])
            await core.engine.sync()
    # A purge also runs when nothing is left to remove but the store still holds what an
    # interrupted purge was erasing (tombstones written since the last compaction): repeating
    # the forget after a crash finishes the erasure.
    if purge and (removed or core.engine.statistics().purge_pending):
        await core.engine.compact(purge=True)
    if removed:
        await core.notify("forget", tuple(removed))
    return ForgetReport(removed=tuple(removed), relinked=tuple(sorted(relinks)), dry_run=False)


async def _relinked(core: MemoryCore, doc_id: str, links: tuple[str, ...]) -> dict[str, Any]:
    item = await restamped(core, doc_id, lambda stamp: stamp.with_supersedes(links))
    assert item is not None
    return item


async def apply_forgetting(core: MemoryCore, *, dry_run: bool = True) -> ForgetReport:
    """Forget what the forgetting policy selects among every fact, as of now (see
    memory/policies.py: the policy is given every fact; a failing one is ``PolicyError``)."""
    if not isinstance(dry_run, bool):
        raise InvalidRequest("dry_run: expected a bool")
    policy = core.config.forgetting
    now = core.engine.now()
    facts = core.index.facts
    try:
        selected = await resolved(policy.select([FactInfo(i, s) for i, s in facts.items()], now))
        ids = set(selected)
    except Exception as exc:
        raise policy_failed("forgetting", policy, exc) from exc
    for doc_id in ids:
        if not isinstance(doc_id, str):
            raise bad_result("forgetting", policy, "ids (strings)", doc_id)
    return await forget(core, ForgetScope.ids(sorted(i for i in ids if i in facts)),
                        include_chain=False, dry_run=dry_run, purge=False)


async def _merges(core: MemoryCore, policy: Any) -> list[tuple[RememberInput, str]]:
    """(input, id) of every fact the consolidation policy asks for, each checked: the policy is
    given the current facts of each subject slot holding two or more (oldest first), and each
    input it returns must supersede some of those facts and nothing else."""
    index = core.index
    now = core.engine.now()
    out: list[tuple[RememberInput, str]] = []
    for (_namespace, _subject), ids in sorted(index.slots.items()):
        current = sorted((i for i in ids
                          if index.status(i, now, None, core.slot_policy, now) == "current"),
                         key=lambda i: (index.facts[i].ingest_time, i))
        if len(current) < 2:
            continue
        facts = [f for f in await core.facts(current) if f is not None]
        try:
            inputs = await resolved(policy.merge(facts))
        except Exception as exc:
            raise policy_failed("consolidation", policy, exc) from exc
        if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
            raise bad_result("consolidation", policy, "a list of RememberInput", inputs)
        given = {f.id for f in facts}
        for item in inputs:
            if not isinstance(item, RememberInput):
                raise bad_result("consolidation", policy, "a list of RememberInput", item)
            if not item.supersedes or not set(item.supersedes) <= given:
                raise bad_result("consolidation", policy,
                                 f"facts that supersede some of {sorted(given)}", item)
            try:
                out.append((item, prepare(item).id))
            except InvalidRequest as exc:
                raise PolicyError(f"consolidation policy {policy_name(policy)} returned an "
                                  f"invalid fact: {exc.message}") from exc
    return out


async def consolidate(core: MemoryCore, *, dry_run: bool = True,
                      allow_destructive: bool = False) -> ConsolidateReport:
    """What the consolidation policy merges (``_merges``): new facts that supersede their
    sources; the sources are removed only if the policy asks and the call allows it."""
    for name, flag in (("dry_run", dry_run), ("allow_destructive", allow_destructive)):
        if not isinstance(flag, bool):
            raise InvalidRequest(f"{name}: expected a bool")
    policy = core.config.consolidation
    if isinstance(policy, Consolidation) and policy.kind == "none":
        return ConsolidateReport(created=(), superseded=(), removed=(), dry_run=dry_run)
    merges = await _merges(core, policy)
    inputs = [item for item, _ in merges]
    superseded = tuple(dict.fromkeys(t for item in inputs for t in item.supersedes))
    remove = policy.remove_sources and allow_destructive
    if dry_run or not inputs:
        return ConsolidateReport(created=tuple(doc_id for _, doc_id in merges),
                                 superseded=superseded,
                                 removed=superseded if remove else (), dry_run=dry_run)
    results = await remember_many(core, inputs)
    removed: tuple[str, ...] = ()
    if remove:
        report = await forget(core, ForgetScope.ids(superseded), include_chain=False,
                              dry_run=False, purge=False)
        removed = report.removed
    return ConsolidateReport(created=tuple(r.id for r in results), superseded=superseded,
                             removed=removed, dry_run=False)


__all__ = ["apply_forgetting", "consolidate", "forget"]
