"""load, capture and profile: documents as memory (seed 002, API.md's hotmemory layer).

``load(document, text)`` cuts Markdown with :func:`chunk_markdown` and stores chunk n as a fact
of kind ``episode`` with id ``<document>-<nnnn>`` (n from 1 in four digits, more above 9999):
the chunk (with its prefix, each heading written once: :func:`chunking.episode_text`) as text,
the caller's actor, ``observed_at`` as its event time and valid-from time, no subject, and no
sources but ``source`` when the caller names where the text came from (``hms load`` names the
file, so ``ForgetScope.source(path)`` finds the episodes by it).

Revisions. A fact is immutable under its id, so the next revision of an episode is a new fact:
revision r >= 2 of chunk n has id ``<document>-<nnnn>@<r>`` and supersedes the revision before
it (explicit ``supersedes``, so the chain is kept and ``history`` shows it; the ``@<r>`` echoes
the ``key@revision`` record ids of the seed). The current revision of chunk n is found from
``<document>-<nnnn>`` by following the supersession links and the ``@<r>`` ids, so forgetting one
revision of a chain does not lose track of the others (forgetting both the first and the second
while later ones survive does: the next changed load starts again at ``<document>-<nnnn>``; forget
a chain whole with ``include_chain``). A chunk whose current revision holds the same text is
skipped without calling the extractor: a second load of the same text writes nothing. An edited
document writes the next revision of each changed chunk only; if it has fewer chunks than
before, the old last episodes stay current (the seed defers this).

Extraction. The extractor, a plain or async callable ``(chunk_text, current_facts) ->
list[RememberInput]``, gets each chunk with its prefix and the current facts of the namespace
(kinds fact, profile and procedure, current now, newest first: every one of them, read for each
chunk, so a large namespace costs one read per fact and chunk). Each fact it returns is written
in the load's namespace (a fact naming another namespace than "default" or the load's is
``InvalidRequest``), with the load's actor when it names none, its own sources then the
episode's id, and ``observed_at`` as its event time and valid-from time when it sets none (the
seed's "a fact with no valid_from takes the observed_at": so ``recall(as_of=...)`` before the
document's date leaves its facts out). An extractor may not return episodes.

Order and atomicity. Chunk by chunk: the episode is validated and checked (``Conflict`` if its id
holds a fact of another kind or namespace) before the extractor is called; then the chunk's
facts and, after them, its episode are written in one ``remember_many`` (one journal
transaction). So a later chunk's extractor sees the earlier chunks' facts, a load stopped inside
a chunk leaves no part of it and the next load redoes it, and bad input for a chunk
(``InvalidRequest``, ``Conflict``) leaves nothing of that chunk written while the chunks before it
stay. An exception raised by the extractor itself propagates unchanged.

``capture(text, extractor=...)`` runs the same extraction on free text cut at blank lines into
chunks of at most 2000 characters with no prefix (:func:`chunk_plain`), one transaction per chunk,
no episodes; with ``source`` (the document's path or name) each fact lists it last in its
``sources``, so ``ForgetScope.source`` erases them with the document. ``profile(namespace)``
renders the current facts, profiles and procedures as a prompt-ready block within a character
budget; episodes stay out of both its lines and its counts.
"""

from __future__ import annotations

import datetime as _dt
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from ..clock import to_ms
from ..engine import check_id, check_text
from ..errors import Conflict, HmsError, InvalidRequest
from .chunking import DEFAULT_CHUNK_CHARS, PATH_JOIN, chunk_parts, chunk_plain, episode_text
from .core import MemoryCore
from .inputs import MAX_NAME, prepare
from .remember import remember_many
from .values import Fact, LoadResult, Profile, RememberInput, Time

Extractor = Callable[[str, list[Fact]], "Sequence[RememberInput] | Awaitable[Sequence[RememberInput]]"]

MIN_CHUNK_CHARS = 64
CAPTURE_CHUNK_CHARS = 2000
PROFILE_KINDS = ("fact", "profile", "procedure")  # the block's groups, in this order


# -- validation ------------------------------------------------------------------------------------


def _namespace(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"namespace: expected a non-empty string, got {value!r}")
    if len(value) > MAX_NAME:
        raise InvalidRequest(f"namespace: longer than {MAX_NAME} characters")
    return check_text(value, "namespace")


def _actor(value: object) -> str | None:
    """Checked up front, so an empty document still refuses a bad actor."""
    if value is not None and (not isinstance(value, str) or not value or len(value) > MAX_NAME):
        raise InvalidRequest(f"actor: expected None or a non-empty string, got {value!r}")
    return value


def _observed(value: Time | None) -> int | None:
    return None if value is None else to_ms(value, field="observed_at")


def _document(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidRequest(f"document: expected a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidRequest("document: must not be empty", hint="name the document, e.g. 'guide'")
    if "/" in value:
        raise InvalidRequest(f"document: {value!r} contains '/'", hint="use '-' or '_' instead")
    return check_id(value, "document")


def _extractor(value: object, *, required: bool) -> Extractor | None:
    if value is None and not required:
        return None
    if not callable(value):
        raise InvalidRequest(
            f"extractor: expected a callable (chunk_text, current_facts) -> list[RememberInput], "
            f"got {type(value).__name__}")
    return value


# -- extraction --------------------------------------------------------------------------------------


def _newest_first(core: MemoryCore, ids: list[str]) -> list[str]:
    """Newest first: latest to take effect (valid_from, else event time, else ingest time),
    then latest ingested, then by id."""
    facts = core.index.facts
    return sorted(ids, key=lambda i: (-facts[i].begin, -facts[i].ingest_time, i))


def _current_ids(core: MemoryCore, namespace: str, kinds: tuple[str, ...]) -> list[str]:
    index = core.index
    now = core.engine.now()
    return [i for i, s in list(index.facts.items())
            if s.namespace == namespace and s.kind in kinds
            and index.status(i, now, None, core.slot_policy, now) == "current"]


async def current_facts(core: MemoryCore, namespace: str) -> list[Fact]:
    """The current facts, profiles and procedures of ``namespace``, newest first."""
    out = []
    for doc_id in _newest_first(core, _current_ids(core, namespace, PROFILE_KINDS)):
        fact = await core.fact(doc_id)
        if fact is not None:
            out.append(fact)
    return out


async def _extract(core: MemoryCore, extractor: Extractor, chunk: str, namespace: str) -> list[RememberInput]:
    returned: Any = extractor(chunk, await current_facts(core, namespace))
    if inspect.isawaitable(returned):
        returned = await returned
    if not isinstance(returned, (list, tuple)) or not all(isinstance(f, RememberInput) for f in returned):
        got = type(returned).__name__ if not isinstance(returned, (list, tuple)) else \
            "a list holding " + ", ".join(sorted({type(f).__name__ for f in returned
                                                  if not isinstance(f, RememberInput)}))
        raise InvalidRequest(f"extractor: expected a list of RememberInput, got {got}")
    return list(returned)


def _inherit(fact: RememberInput, n: int, *, namespace: str, actor: str | None,
             observed_at: int | None, episode: str | None) -> RememberInput:
    """``fact`` as the loader writes it: the load's namespace, actor and observed time where it
    sets none, and the episode's id after its own sources."""
    where = f"extractor: facts[{n}]"
    if fact.namespace not in ("default", namespace):
        raise InvalidRequest(f"{where}.namespace: {fact.namespace!r} is not the namespace "
                             f"{namespace!r} being loaded")
    if fact.kind == "episode":
        raise InvalidRequest(f"{where}.kind: an extractor returns facts, profiles or procedures, "
                             "not episodes")
    sources = fact.sources
    if isinstance(sources, (str, bytes)) or not isinstance(sources, Sequence):
        raise InvalidRequest(f"{where}.sources: expected a list of strings")
    if episode is not None:
        if fact.id == episode:
            raise InvalidRequest(f"{where}.id: {episode!r} is the id of the chunk's episode")
        sources = tuple(dict.fromkeys((*sources, episode)))
    return attrs.evolve(
        fact, namespace=namespace, sources=tuple(sources),
        actor=actor if fact.actor is None else fact.actor,
        event_time=observed_at if fact.event_time is None else fact.event_time,
        valid_from=observed_at if fact.valid_from is None else fact.valid_from,
    )


def _named(error: HmsError, where: str) -> HmsError:
    """The same error with ``where`` (the episode or chunk) in front of its message."""
    return type(error)(f"{where}: {error.message}", hint=error.hint)


# -- episodes ----------------------------------------------------------------------------------------


def _revision(base: str, doc_id: str) -> int:
    """r when ``doc_id`` is ``<base>@<r>`` (r >= 2, written without leading zeros), else 0."""
    if not doc_id.startswith(base + "@"):
        return 0
    tail = doc_id[len(base) + 1:]
    if not tail.isascii() or not tail.isdigit() or tail != str(int(tail)) or int(tail) < 2:
        return 0
    return int(tail)


def _head(core: MemoryCore, base: str, namespace: str) -> tuple[str | None, int]:
    """(id, revision number) of the current revision of the episode ``base``, (None, 0) if none;
    ``Conflict`` when an id on the way holds another kind or another namespace's episode."""
    index = core.index
    head, number = (base, 1) if base in index.facts else (None, 0)
    while True:
        probe = f"{base}@{max(number, 1) + 1}"
        if probe in index.facts:
            head, number = probe, max(number, 1) + 1
            continue
        later = [(r, s) for s in index.successors.get(head or base, ())
                 if (r := _revision(base, s)) > number and s in index.facts]
        if not later:
            break
        number, head = max(later)
    for doc_id in (base, head):
        s = index.facts.get(doc_id) if doc_id is not None else None
        if s is None:
            continue
        if s.kind != "episode":
            raise Conflict(f"episode id {doc_id!r} already holds a fact of kind {s.kind!r}",
                           hint="load the document under another name")
        if s.namespace != namespace:
            raise Conflict(f"episode id {doc_id!r} already holds an episode of namespace "
                           f"{s.namespace!r}", hint="load the document under another name")
    return head, number


async def load(core: MemoryCore, document: str, text: str, *, namespace: str = "default",
               extractor: Extractor | None = None, actor: str | None = None,
               observed_at: Time | None = None, chunk_chars: int = DEFAULT_CHUNK_CHARS,
               source: str | None = None) -> LoadResult:
    document = _document(document)
    if source is not None and (not isinstance(source, str) or not source.strip()):
        raise InvalidRequest(f"source: expected None or a non-empty string, got {source!r}")
    if not isinstance(text, str):
        raise InvalidRequest(f"text: expected a string, got {type(text).__name__}")
    namespace = _namespace(namespace)
    extract = _extractor(extractor, required=False)
    observed = _observed(observed_at)
    actor = _actor(actor)
    if isinstance(chunk_chars, bool) or not isinstance(chunk_chars, int) or chunk_chars < MIN_CHUNK_CHARS:
        raise InvalidRequest(f"chunk_chars: expected an integer of at least {MIN_CHUNK_CHARS}, "
                             f"got {chunk_chars!r}")
    episodes: list[str] = []
    facts: dict[str, None] = {}
    for n, (headings, body) in enumerate(chunk_parts(text, chunk_chars=chunk_chars), start=1):
        chunk = episode_text(headings, body)
        base = f"{document}-{n:04d}"
        head, number = _head(core, base, namespace)
        if head is not None:
            current = await core.engine.get_document(head)
            # The same chunk as stored by a build that wrote chunk_markdown's text as it is
            # (the prefix's last heading repeated by the body) is unchanged too: an upgrade
            # rewrites no episode and calls no extractor.
            legacy = f"{PATH_JOIN.join(headings)}\n\n{body}" if headings else body
            if current is not None and current.text in (chunk, legacy):
                episodes.append(head)
                continue
        episode = RememberInput(
            text=chunk, id=base if number == 0 else f"{base}@{number + 1}", kind="episode",
            namespace=namespace, actor=actor, event_time=observed, valid_from=observed,
            supersedes=(head,) if head is not None else (),
            sources=(source,) if source is not None else ())
        assert episode.id is not None
        try:
            inputs: list[RememberInput] = []
            if extract is not None:
                prepare(episode)  # checked before the extractor runs, not only as it is written
                returned = await _extract(core, extract, chunk, namespace)
                inputs = [_inherit(f, i, namespace=namespace, actor=actor, observed_at=observed,
                                   episode=episode.id) for i, f in enumerate(returned)]
            results = await remember_many(core, [*inputs, episode])
        except (InvalidRequest, Conflict) as error:
            raise _named(error, f"chunk {n} ({episode.id})") from None
        facts.update(dict.fromkeys(r.id for r in results[:-1]))
        episodes.append(episode.id)
    return LoadResult(episodes=tuple(episodes), facts=tuple(facts))


async def capture(core: MemoryCore, text: str, *, extractor: Extractor, namespace: str = "default",
                  actor: str | None = None, observed_at: Time | None = None,
                  source: str | None = None) -> list[str]:
    if not isinstance(text, str):
        raise InvalidRequest(f"text: expected a string, got {type(text).__name__}")
    if source is not None and (not isinstance(source, str) or not source.strip()):
        raise InvalidRequest(f"source: expected None or a non-empty string, got {source!r}")
    extract = _extractor(extractor, required=True)
    assert extract is not None
    namespace = _namespace(namespace)
    observed = _observed(observed_at)
    actor = _actor(actor)
    ids: dict[str, None] = {}
    for n, chunk in enumerate(chunk_plain(text, chunk_chars=CAPTURE_CHUNK_CHARS), start=1):
        try:
            returned = await _extract(core, extract, chunk, namespace)
            inputs = [_inherit(f, i, namespace=namespace, actor=actor, observed_at=observed,
                               episode=None) for i, f in enumerate(returned)]
            if source is not None:  # so ForgetScope.source(source) finds them (memory/sources.py)
                inputs = [attrs.evolve(f, sources=tuple(dict.fromkeys((*f.sources, source))))
                          for f in inputs]
            if inputs:
                results = await remember_many(core, inputs)
                ids.update(dict.fromkeys(r.id for r in results))
        except (InvalidRequest, Conflict) as error:
            raise _named(error, f"chunk {n}") from None
    return list(ids)


# -- profile -------------------------------------------------------------------------------------------


def _iso(ms: int | None, missing: str) -> str:
    if ms is None:
        return missing
    when = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(milliseconds=ms)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def render_line(fact: Fact) -> str:
    """One fact as a line of the block: ``- <text> [id: ...] [sources: ...] [valid: ... to ...]``,
    the text on one line (each run of white space one space); empty parts left out."""
    line = f"- {' '.join(fact.text.split())} [id: {fact.id}]"
    if fact.sources:
        line += f" [sources: {', '.join(fact.sources)}]"
    if fact.valid_from is not None or fact.valid_to is not None:
        line += f" [valid: {_iso(fact.valid_from, 'unknown')} to {_iso(fact.valid_to, 'now')}]"
    return line


async def profile(core: MemoryCore, namespace: str = "default", *, budget_chars: int = 4000) -> Profile:
    namespace = _namespace(namespace)
    if isinstance(budget_chars, bool) or not isinstance(budget_chars, int) or budget_chars < 0:
        raise InvalidRequest(f"budget_chars: expected a non-negative integer, got {budget_chars!r}")
    index = core.index
    by_kind: dict[str, list[str]] = {kind: [] for kind in PROFILE_KINDS}
    for doc_id in _newest_first(core, _current_ids(core, namespace, PROFILE_KINDS)):
        by_kind[index.facts[doc_id].kind].append(doc_id)
    counts = {kind: len(by_kind[kind]) for kind in PROFILE_KINDS}
    tail = "counts: " + ", ".join(f"{kind} {counts[kind]}" for kind in PROFILE_KINDS)
    if len(tail) > budget_chars:
        tail = ""
    left = budget_chars - (len(tail) + 1 if tail else 0)
    lines: list[str] = []
    used = 0  # the lines' lengths plus one newline after each: len("\n".join(lines)) + 1
    full = False
    for kind in PROFILE_KINDS:
        shown = 0
        for doc_id in by_kind[kind]:
            fact = await core.fact(doc_id)
            if fact is None:  # forgotten while we read
                continue
            new = [render_line(fact)] if shown else [f"{kind}:", render_line(fact)]
            cost = sum(len(line) + 1 for line in new)
            if used + cost - 1 > left:  # whole lines only; a header never stands alone
                full = True
                break
            lines.extend(new)
            used += cost
            shown += 1
        if full:
            break
    if tail:
        lines.append(tail)
    return Profile(block="\n".join(lines), counts=counts)


__all__ = ["Extractor", "capture", "current_facts", "load", "profile", "render_line"]
