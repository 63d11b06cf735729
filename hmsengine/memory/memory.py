"""``Memory``: the memory API over a ``DocumentEngine``, one method per operation of API.md.

A thin facade: each method validates nothing itself beyond its signature and hands a
``MemoryCore`` (core.py) to the module that does the work: remember.py, recall.py, forget.py,
loader.py, files.py, jsonapi.py. Every ``Memory`` over one engine shares one memory index, one
cache of recently read facts and one write lock (core.EngineState), so several of them stay
consistent with each other.
"""

from __future__ import annotations

import builtins  # `list` is a method of Memory: annotations after it name the builtin so
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Never

from ..engine import DocumentEngine
from ..errors import InvalidRequest
from . import (
    browse,
    embedding,
    files,
    forget,
    jsonapi,
    loader,
    recall,
    remember,
    restamp,
    retention,
    stored_policies,
)
from .config import MemoryConfig, parse_config
from .core import Embedder, MemoryCore, Observer
from .index import MemoryIndex
from .policies import SupersessionPolicy
from .recall import RecallOptions, unknown_option
from .values import (
    ConsolidateReport,
    Explanation,
    Fact,
    ForgetReport,
    ForgetScope,
    LoadResult,
    Page,
    Profile,
    RecallHit,
    RememberInput,
    RememberResult,
    Time,
)

Vector = Sequence[float] | Any  # a sequence of numbers or a numpy array


class Memory:
    """The memory API over ``engine``. ``config`` is a MemoryConfig or its camelCase JSON.

    The store keeps its memory policies (supersession, recency, historical multiplier,
    forgetting, consolidation): a store without a record applies and, at this Memory's first
    write, records the policies ``config`` sets; a store with one applies it, and a ``config``
    that sets a policy to another value is ``InvalidRequest`` here. See memory/stored_policies.py.

    ``embedder``: None (default) for the store's own embedder: the one it records, or for a
    new store the bundled default when the ``embed`` extra is installed (then recall is
    hybrid); an embedder object or callable to use that one; ``False`` for lexical only.
    See memory/embedding.py for the rules that keep one embedder's vectors per store.
    """

    def __init__(self, engine: DocumentEngine,
                 config: MemoryConfig | dict[str, Any] | None = None, *,
                 embedder: Embedder | bool | None = None) -> None:
        if not isinstance(engine, DocumentEngine):
            raise InvalidRequest(f"engine: expected an Engine, got {type(engine).__name__}")
        if embedder is True:
            raise InvalidRequest("embedder: expected None, False or an embedder, got True")
        self.core = MemoryCore(engine=engine, config=parse_config(config))
        # The store's recorded policies replace the config's own (a conflicting config is
        # refused here); memory/stored_policies.py.
        stored_policies.bind(self.core, config)
        embedding.resolve(self.core, embedder)

    @property
    def engine(self) -> DocumentEngine:
        return self.core.engine

    @property
    def config(self) -> MemoryConfig:
        return self.core.config

    @property
    def embedder(self) -> Embedder | None:
        return self.core.embedder

    @property
    def embedder_identity(self) -> dict[str, Any] | None:
        """The identity (model, dim, version) of the embedder this Memory embeds with."""
        return self.core.embedder_identity

    @property
    def embedder_problem(self) -> InvalidRequest | None:
        """Why this Memory cannot embed for its store (memory/embedding.py), or None."""
        return self.core.embedder_problem

    @property
    def observers(self) -> list[Observer]:
        """Callables ``(event, ids)`` told of every remember and forget (plain or async)."""
        return self.core.observers

    @property
    def index(self) -> MemoryIndex:
        return self.core.index

    @property
    def slot_policy(self) -> SupersessionPolicy | None:
        """The supersession policy relating the facts of a subject slot, None for "none"."""
        return self.core.slot_policy

    # -- remember ------------------------------------------------------------------------------

    async def remember(self, text: str, *, id: str | None = None, subject: str | None = None,
                       entities: Sequence[str] = (), metadata: Mapping[str, Any] | None = None,
                       embedding: Vector | None = None, event_time: Time | None = None,
                       valid_from: Time | None = None, valid_to: Time | None = None,
                       supersedes: Sequence[str] = (), kind: str = "fact",
                       namespace: str = "default", sources: Sequence[str] = (),
                       actor: str | None = None, importance: float | None = None,
                       retain_until: Time | None = None) -> RememberResult:
        """Remember one fact; see ``remember_many`` for the guarantees.

        ``kind`` is fact, profile, procedure or episode; ``supersedes`` names facts this one
        replaces; times are ms since the epoch or aware datetimes. Without ``id`` the id is
        derived from the content, so a retry stores one fact. ``retain_until``: when the store
        stops keeping it (memory/retention.py; remembering it again with another one changes it).
        """
        item = RememberInput(
            text=text, id=id, subject=subject, entities=entities, metadata=metadata,
            embedding=embedding, event_time=event_time, valid_from=valid_from, valid_to=valid_to,
            supersedes=supersedes, kind=kind, namespace=namespace, sources=sources, actor=actor,
            importance=importance, retain_until=retain_until)
        return (await remember.remember_many(self.core, [item]))[0]

    async def remember_many(self, inputs: Sequence[RememberInput | dict[str, Any]]
                            ) -> list[RememberResult]:
        """Remember facts in one journal transaction: all of them or none.

        An input without ``id`` is named after its content, so a retry stores one fact. The same
        id with the same payload is ``created=False`` and writes nothing (the first ingest time
        stays); a different payload under an existing id is ``Conflict``. ``supersedes`` must
        name facts that exist (or come earlier in the batch). Durable when it returns.
        """
        return await remember.remember_many(self.core, inputs)

    # -- reading ---------------------------------------------------------------------------------

    async def get(self, id: str) -> Fact | None:
        """The fact ``id``, or None (also for a forgotten one)."""
        return await self.core.get(id)

    async def history(self, id: str) -> list[Fact]:
        """The whole supersession chain of ``id``, oldest first; ``NotFound`` if unknown."""
        return await self.core.history(id)

    async def fact(self, doc_id: str) -> Fact | None:
        """The fact ``doc_id`` (None if there is none), from the shared cache when it is there."""
        return await self.core.fact(doc_id)

    async def facts(self, ids: Sequence[str]) -> list[Fact | None]:
        """The facts ``ids``, in order (None where there is none); see ``MemoryCore.facts``."""
        return await self.core.facts(ids)

    async def recall(self, query: str, *, k: int = 10, as_of: Time | None = None,
                     known_at: Time | None = None, history: str = "current",
                     subject: str | None = None, entity: str | None = None,
                     namespace: str | None = None, kinds: str | Sequence[str] | None = None,
                     embedding: Vector | None = None, candidate_limit: int = 100,
                     explain: bool = False, **unknown: Never) -> list[RecallHit]:
        """Search, then keep what the temporal options ask for (memory/recall.py).

        ``as_of`` evaluates statuses at that time (default now); ``known_at`` ignores what was
        ingested after it; ``history`` is current, all or historical; ``subject``, ``entity``,
        ``namespace`` and ``kinds`` (default: all but episodes) restrict the facts;
        ``embedding`` (or the embedder) adds the semantic signal; ``candidate_limit`` bounds
        the candidates a filtered recall examines; ``explain`` attaches an ``Explanation`` to
        each hit. Any other keyword is ``InvalidRequest``.
        """
        if unknown:
            raise unknown_option(unknown)
        if as_of is None and known_at is None and subject is None and entity is None \
                and namespace is None and kinds is None and embedding is None \
                and explain is False and history.__class__ is str and history in ("current", "all") \
                and k.__class__ is int and 1 <= k <= recall.MAX_CANDIDATES \
                and candidate_limit.__class__ is int \
                and 1 <= candidate_limit <= recall.MAX_CANDIDATES:
            # The common call: no options to carry (recall's default path, without building
            # them into a RecallOptions and checking them again: ~1/15 of a recall).
            found = await recall.default_recall(self.core, query, k)
            if found is not None:
                return found
        return await recall.recall(self.core, query, RecallOptions(
            k=k, as_of=as_of, known_at=known_at, history=history, subject=subject, entity=entity,
            namespace=namespace, kinds=kinds, embedding=embedding,
            candidate_limit=candidate_limit, explain=explain))

    async def explain(self, query: str, id: str, *, k: int = 10, as_of: Time | None = None,
                      known_at: Time | None = None, history: str = "current",
                      subject: str | None = None, entity: str | None = None,
                      namespace: str | None = None, kinds: str | Sequence[str] | None = None,
                      embedding: Vector | None = None, candidate_limit: int = 100,
                      **unknown: Never) -> Explanation:
        """Why ``id`` came back for ``query`` (or why not), with the same formulas and options
        as ``recall``; ``NotFound`` for an unknown id."""
        if unknown:
            raise unknown_option(unknown)
        return await recall.explain(self.core, query, id, RecallOptions(
            k=k, as_of=as_of, known_at=known_at, history=history, subject=subject, entity=entity,
            namespace=namespace, kinds=kinds, embedding=embedding,
            candidate_limit=candidate_limit))

    # -- forget and maintenance (memory/forget.py) ----------------------------------------------

    async def forget(self, scope: ForgetScope, *, include_chain: bool = False, dry_run: bool = False,
                     purge: bool = False) -> ForgetReport:
        """Remove the facts of one scope; see memory/forget.py."""
        return await forget.forget(self.core, scope, include_chain=include_chain, dry_run=dry_run,
                                   purge=purge)

    async def apply_forgetting(self, *, dry_run: bool = True) -> ForgetReport:
        """Forget what the forgetting policy selects (never runs by itself; dry run by default)."""
        return await forget.apply_forgetting(self.core, dry_run=dry_run)

    async def consolidate(self, *, dry_run: bool = True,
                          allow_destructive: bool = False) -> ConsolidateReport:
        """Merge exact duplicates per the consolidation policy (dry run by default)."""
        return await forget.consolidate(self.core, dry_run=dry_run,
                                        allow_destructive=allow_destructive)

    # -- browsing and retention (memory/browse.py, memory/retention.py) -----------------------------

    async def list(self, namespace: str | None = None, subject: str | None = None,
                   entity: str | None = None, kind: str | Sequence[str] | None = None,
                   status: str | Sequence[str] | None = None,
                   metadata: Mapping[str, Any] | None = None, as_of: Time | None = None,
                   known_at: Time | None = None, limit: int = 100,
                   cursor: str | None = None) -> Page:
        """One page of facts, newest first: ``.items`` and ``.next_cursor`` (None on the last
        page; pass it back with the same filters for the next). ``status`` defaults to
        ``"current"`` (``"all"``: every status); ``kind`` to every kind. A listing is one fixed
        view: no fact is skipped or repeated across its pages, whatever is written meanwhile.
        See memory/browse.py."""
        return await browse.list_facts(self.core, namespace=namespace, subject=subject,
                                       entity=entity, kind=kind, status=status, metadata=metadata,
                                       as_of=as_of, known_at=known_at, limit=limit, cursor=cursor)

    async def count(self, namespace: str | None = None, subject: str | None = None,
                    entity: str | None = None, kind: str | Sequence[str] | None = None,
                    status: str | Sequence[str] | None = None,
                    metadata: Mapping[str, Any] | None = None, as_of: Time | None = None,
                    known_at: Time | None = None) -> int:
        """How many facts ``list`` with the same filters returns over all its pages."""
        return await browse.count_facts(self.core, namespace=namespace, subject=subject,
                                        entity=entity, kind=kind, status=status,
                                        metadata=metadata, as_of=as_of, known_at=known_at)

    async def namespaces(self, *, entity: str | None = None) -> dict[str, int]:
        """The namespaces holding facts (not past their retention; naming ``entity`` when
        given), each with how many."""
        return await browse.namespaces(self.core, entity)

    async def apply_retention(self, *, dry_run: bool = True, purge: bool = False) -> ForgetReport:
        """Forget the facts past their retention (dry run by default; ``purge`` as in
        ``forget``). ``hmsengine.Engine.compact`` runs it first. See memory/retention.py."""
        return await retention.apply_retention(self.core, dry_run=dry_run, purge=purge)

    async def set_retention(self, namespace: str, keep_for: int | timedelta | None) -> None:
        """Keep the facts of ``namespace`` ``keep_for`` (ms or a timedelta) after their ingest
        time, unless a fact has its own ``retain_until``; None removes the default. Persisted
        in the store; applies to the facts already there too."""
        await retention.set_retention(self.core, namespace, keep_for)

    @property
    def retention(self) -> dict[str, int]:
        """The default retention of each namespace that has one, in ms."""
        return dict(self.core.index.retention)

    async def retain(self, ids: Sequence[str], until: Time | None) -> tuple[str, ...]:
        """Set the ``retain_until`` of facts ``ids`` (None: none of their own); the ids changed."""
        return await restamp.retain(self.core, ids, until)

    # -- documents as memory (memory/loader.py) ----------------------------------------------------

    async def load(self, document: str, text: str, *, namespace: str = "default",
                   extractor: loader.Extractor | None = None, actor: str | None = None,
                   observed_at: Time | None = None, chunk_chars: int = 2000,
                   source: str | None = None) -> LoadResult:
        """Store the Markdown ``text`` as episodes ``<document>-<nnnn>`` (one per chunk of
        ``chunk_markdown``) and the facts ``extractor`` draws from each chunk, chunk by chunk.

        A chunk whose episode is current with the same text is skipped (no extractor call); a
        changed one writes the episode's next revision, which supersedes it. Each chunk is one
        transaction, its facts before its episode, so a load stopped inside a chunk redoes it.
        ``Conflict`` if an episode id holds another kind of fact; ``InvalidRequest`` for a bad
        name (empty, or with ``/``), ``chunk_chars`` below 64 or an extractor result that is not
        a list of RememberInput; then nothing of that chunk is written. ``source`` (the path or
        URI the text came from) is listed in each written episode's sources, so that
        ``ForgetScope.source(source)`` finds them. See memory/loader.py.
        """
        return await loader.load(self.core, document, text, namespace=namespace,
                                 extractor=extractor, actor=actor, observed_at=observed_at,
                                 chunk_chars=chunk_chars, source=source)

    async def capture(self, text: str, *, extractor: loader.Extractor, namespace: str = "default",
                      actor: str | None = None, observed_at: Time | None = None,
                      source: str | None = None) -> builtins.list[str]:
        """Remember what ``extractor`` draws from free ``text`` (cut at blank lines into chunks of
        at most 2000 characters, no prefix, no episodes); facts inherit ``observed_at``, and list
        ``source`` (where the text came from) in their sources, so that
        ``ForgetScope.source(source)`` forgets them. The ids."""
        return await loader.capture(self.core, text, extractor=extractor, namespace=namespace,
                                    actor=actor, observed_at=observed_at, source=source)

    async def profile(self, namespace: str = "default", *, budget_chars: int = 4000) -> Profile:
        """The current facts, profiles and procedures of ``namespace`` as a prompt-ready block
        (grouped by kind, newest first, whole lines within ``budget_chars``) and their counts."""
        return await loader.profile(self.core, namespace, budget_chars=budget_chars)

    # -- files (memory/files.py) ---------------------------------------------------------------------

    async def remember_file(self, uri: str, *, byte_range: tuple[int, int] | None = None,
                            format: str | None = None, summary: str | None = None,
                            id: str | None = None, subject: str | None = None,
                            entities: Sequence[str] = (), metadata: Mapping[str, Any] | None = None,
                            embedding: Vector | None = None, event_time: Time | None = None,
                            valid_from: Time | None = None, valid_to: Time | None = None,
                            supersedes: Sequence[str] = (), kind: str = "fact",
                            namespace: str = "default", sources: Sequence[str] = (),
                            actor: str | None = None, importance: float | None = None,
                            **unknown: Never) -> RememberResult:
        """Remember a reference to a file's bytes (``file://`` URI or path; the whole file or
        ``byte_range=(offset, length)``) with their sha256, never the bytes themselves. Search
        sees ``summary``; without one the fact is stored but not searchable. The other keywords
        are ``remember``'s (its text is the summary). See memory/files.py.
        """
        if "text" in unknown:
            raise InvalidRequest("text: a file-backed fact's text is its summary; pass summary=")
        if unknown:
            raise InvalidRequest(f"{sorted(unknown)[0]}: unknown field")
        fields = {"id": id, "subject": subject, "entities": entities, "metadata": metadata,
                  "embedding": embedding, "event_time": event_time, "valid_from": valid_from,
                  "valid_to": valid_to, "supersedes": supersedes, "kind": kind,
                  "namespace": namespace, "sources": sources, "actor": actor,
                  "importance": importance}
        return await files.remember_file(self.core, uri, byte_range=byte_range, format=format,
                                         summary=summary, fields=fields)

    async def hydrate(self, id: str) -> bytes:
        """The recorded range of a file-backed fact, checked against its sha256
        (``ProvenanceError``: ``missing_file``, ``truncated`` or ``checksum_mismatch``)."""
        return await files.hydrate(self.core, id)

    # -- embeddings (memory/embedding.py) -----------------------------------------------------------

    async def embed_query(self, query: str) -> tuple[float, ...] | None:
        """The vector recall gives search for ``query``: its embedding by this Memory's
        embedder, or None without one. ``recall(q)`` ranks exactly like
        ``engine.search_documents(q, embedding=await memory.embed_query(q))``."""
        if not isinstance(query, str):
            raise InvalidRequest(f"query: expected a string, got {type(query).__name__}")
        vectors = await self.core.embed([query])
        return None if vectors is None else tuple(float(x) for x in vectors[0])

    async def reembed(self, *, embedder: Embedder | None = None,
                      progress: Callable[[int, int], Any] | None = None) -> int:
        """Embed every document again with ``embedder`` (default: this Memory's, else the
        bundled one) and record it as the store's (``hms reembed``); the number re-embedded.
        See memory/embedding.py."""
        return await embedding.reembed(self.core, embedder, progress=progress)

    async def embed_missing(self, *, progress: Callable[[int, int], Any] | None = None) -> int:
        """Embed the documents without a vector (after an import of an export that had none)
        with the embedder the store records; 0 in a lexical store. See memory/embedding.py."""
        return await embedding.embed_missing(self.core, progress=progress)

    async def call(self, op: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON contract: one implementation of every operation (memory/jsonapi.py)."""
        return await jsonapi.call(self.core, op, body)


__all__ = ["Memory"]
