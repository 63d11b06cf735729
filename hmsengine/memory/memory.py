"""``Memory``: remember, recall, explain, forget, history and get over an ``Engine``.

Built only on the engine's public methods. Every ``Memory`` over one engine shares one
:class:`MemoryIndex` (kept current by a commit listener) and one write lock (so idempotency and
conflict checks are atomic with the write that follows them).
"""

from __future__ import annotations

import inspect
import sys
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import trio

from ..config import MemoryConfig, parse_config
from ..engine.engine import Engine
from ..engine.values import Change, check_id
from ..errors import Conflict, InvalidRequest, NotFound
from . import embedding as _embedding
from . import files as _files
from . import forget as _forget
from . import loader as _loader
from . import recall as _recall
from .files import file_ref, stamp_file
from .index import MemoryIndex
from .inputs import PreparedFact, as_input, prepare
from .stamp import plain_stamp, stored_digest, user_metadata
from .values import (
    ConsolidateReport,
    Explanation,
    Fact,
    FileRef,
    ForgetReport,
    ForgetScope,
    LoadResult,
    Profile,
    RecallHit,
    RememberInput,
    RememberResult,
    Time,
)

# A callable (plain or async) from texts to vectors, or an object with ``embed(texts)`` and
# ``dim`` such as hmsengine.embedders.MiniLMEmbedder.
Embedder = Callable[[list[str]], Any] | Any
Observer = Callable[[str, tuple[str, ...]], Any]  # (event "remember" | "forget", ids)


# The shared cache of recently read facts is bounded by an estimate of the bytes it holds, not
# by a count, so short facts are many and long ones few: 8 MiB holds ~13,000 facts of 24 words
# (~650 B each), the hits of a few thousand distinct recalls. At most this much RAM per engine,
# and none until facts are read. One fact larger than an eighth of it is not cached.
FACT_CACHE_BYTES = 8 << 20
# Per cached fact, beside its text, id, embedding and metadata: the Fact object (17 slots) and
# the cache's own entry (ordered-dict node, size record): ~350 B measured with tracemalloc.
FACT_OVERHEAD_BYTES = 360


def _json_bytes(value: Any) -> int:
    """An estimate of the memory held by a JSON-like value (dicts, lists and scalars)."""
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        for k, v in value.items():
            size += sys.getsizeof(k) + _json_bytes(v)
    elif isinstance(value, list):
        for v in value:
            size += _json_bytes(v)
    return size


def fact_bytes(fact: Fact) -> int:
    """The estimated bytes a cached ``fact`` holds (its stamp's tuples are the index's)."""
    size = FACT_OVERHEAD_BYTES + sys.getsizeof(fact.text) + sys.getsizeof(fact.id)
    if fact.embedding is not None:
        size += sys.getsizeof(fact.embedding) + 24 * len(fact.embedding)  # a float is 24 B
    if fact.metadata is not None:
        size += _json_bytes(fact.metadata)
    return size


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (what a fact's metadata is): dicts and lists are copied,
    scalars (immutable) shared; several times faster than ``copy.deepcopy``."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def _with_metadata(fact: Fact, metadata: dict[str, Any]) -> Fact:
    """``fact`` with its own copy of ``metadata`` (the one mutable part of a Fact)."""
    return attrs.evolve(fact, metadata=copy_json(metadata))


class FactCache:
    """Recently read facts (immutable values), at most ``limit`` estimated bytes
    (``fact_bytes``), the first read first out.

    A hit costs one dictionary lookup (recall's hot path makes ``k`` of them per call), so a hit
    does not reorder: a fact read often is read again once per cache-full of new facts.

    Exact by construction: ``invalidate`` runs in the commit listener and drops every fact a
    committed change can alter (the changed id itself, and the facts whose ``supersedes`` names
    it, since a Fact lists only the links to facts that exist); the reader caches a fact only
    if nothing was committed while it read. A cached fact's metadata is never handed out:
    readers get copies.
    """

    def __init__(self, limit: int = FACT_CACHE_BYTES) -> None:
        self.limit = limit
        self.bytes = 0
        self.facts: OrderedDict[str, Fact] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self.facts)

    def pop(self, doc_id: str) -> None:
        if self.facts.pop(doc_id, None) is not None:
            self.bytes -= self._sizes.pop(doc_id)

    def clear(self) -> None:
        self.facts.clear()
        self._sizes.clear()
        self.bytes = 0

    def put(self, fact: Fact) -> None:
        self.pop(fact.id)
        size = fact_bytes(fact)
        if size > self.limit >> 3:
            return
        facts, sizes = self.facts, self._sizes
        facts[fact.id] = fact
        sizes[fact.id] = size
        self.bytes += size
        while self.bytes > self.limit:
            oldest, _ = facts.popitem(last=False)
            self.bytes -= sizes.pop(oldest)

    def invalidate(self, index: MemoryIndex, changes: list[Change]) -> None:
        """Drop what ``changes`` (already applied to ``index``) may have altered."""
        if not self.facts:
            return
        successors = index.successors
        for change in changes:
            self.pop(change.id)
            for successor in successors.get(change.id, ()):
                self.pop(successor)


class _Shared:
    """Per-engine state shared by every Memory over it."""

    def __init__(self, engine: Engine) -> None:
        self.index = MemoryIndex()
        self.index.load(engine.scan_metadata(), engine.revision)
        # Recently read facts, so a recall whose hits were read before costs little more than
        # the search itself; kept exact by the commit listener (see FactCache).
        self.facts = FactCache()
        engine.add_commit_listener(self.on_commit)
        # Serializes the checks of remember and the plans of forget against the index.
        self.lock = trio.Lock()
        # Ids whose remember passed its checks and is being written (see remember_many).
        self.pending: dict[str, trio.Event] = {}

    def on_commit(self, revision: int, changes: list[Change]) -> None:
        self.index.on_commit(revision, changes)
        self.facts.invalidate(self.index, changes)


_SHARED: weakref.WeakKeyDictionary[Engine, _Shared] = weakref.WeakKeyDictionary()


class Memory:
    """The memory API over ``engine``. ``config`` is a MemoryConfig or its camelCase JSON.

    ``embedder``: None (default) for the store's own embedder: the one it records, or for a
    new store the bundled default when the ``embed`` extra is installed (then recall is
    hybrid); an embedder object or callable to use that one; ``False`` for lexical only.
    See memory/embedding.py for the rules that keep one embedder's vectors per store.
    """

    def __init__(self, engine: Engine, config: MemoryConfig | dict[str, Any] | None = None, *,
                 embedder: Embedder | bool | None = None) -> None:
        if not isinstance(engine, Engine):
            raise InvalidRequest(f"engine: expected an Engine, got {type(engine).__name__}")
        if embedder is True:
            raise InvalidRequest("embedder: expected None, False or an embedder, got True")
        self.engine = engine
        self.config = parse_config(config)
        self.observers: list[Observer] = []
        self._shared_state: _Shared | None = None
        self.embedder, self.embedder_identity, self.embedder_problem = \
            _embedding.resolve(self, embedder)

    @property
    def slot_policy(self) -> bool:
        return self.config.supersession == "latest-by-subject"

    @property
    def _shared(self) -> _Shared:
        shared = self._shared_state
        if shared is None:
            # One per engine, for as long as the engine lives: every Memory over it finds the
            # same one, and keeps it (the lookup is on recall's hot path).
            shared = _SHARED.get(self.engine)
            if shared is None:
                shared = _SHARED[self.engine] = _Shared(self.engine)
            self._shared_state = shared
        return shared

    @property
    def index(self) -> MemoryIndex:
        return self._shared.index

    async def _embed(self, texts: list[str]) -> list[Any] | None:
        if self.embedder_problem is not None:
            raise self.embedder_problem
        if self.embedder is None:
            return None
        embed = getattr(self.embedder, "embed", None)
        if callable(embed):
            # A model object (hmsengine.embedders): its inference releases the GIL and can take
            # milliseconds per batch, so it runs in a worker thread, never on the event loop.
            vectors = await trio.to_thread.run_sync(embed, texts)
        else:
            vectors = self.embedder(texts)
        if inspect.isawaitable(vectors):
            vectors = await vectors
        vectors = list(vectors)
        if len(vectors) != len(texts):
            raise InvalidRequest("embedder: returned a different number of vectors than texts")
        return vectors

    async def _notify(self, event: str, ids: tuple[str, ...]) -> None:
        for observer in list(self.observers):
            result = observer(event, ids)
            if inspect.isawaitable(result):
                await result

    # -- remember ------------------------------------------------------------------------------

    async def remember(self, text: str, **fields: Any) -> RememberResult:
        """Remember one fact; see ``remember_many`` for the guarantees."""
        return (await self.remember_many([RememberInput(text=text, **fields)]))[0]

    async def remember_many(self, inputs: Sequence[RememberInput | dict[str, Any]], *,
                            files: Sequence[FileRef | None] | None = None) -> list[RememberResult]:
        """Remember facts in one journal transaction: all of them or none.

        An input without ``id`` is named after its content, so a retry stores one fact. The same
        id with the same payload is ``created=False`` and writes nothing (the first ingest time
        stays); a different payload under an existing id is ``Conflict``. ``supersedes`` must
        name facts that exist (or come earlier in the batch). Durable when it returns.
        ``files`` (``remember_file`` uses it) gives inputs their file references, by position.
        """
        if isinstance(inputs, (str, bytes, dict)) or not isinstance(inputs, Sequence):
            raise InvalidRequest("inputs: expected a list of RememberInput")
        if not inputs:
            raise InvalidRequest("inputs: must not be empty")
        items = [as_input(v, f"inputs[{i}].") for i, v in enumerate(inputs)]
        missing = [i for i, item in enumerate(items) if item.embedding is None]
        await _embedding.before_write(self, embeds=self.embedder is not None or not missing)
        vectors = await self._embed([items[i].text for i in missing]) if missing else None
        by_index = dict(zip(missing, vectors, strict=True)) if vectors is not None else {}
        if files is not None and len(files) != len(items):
            raise InvalidRequest("files: expected one entry (a FileRef or None) per input")
        refs = [None if files is None or files[i] is None else stamp_file(files[i])  # type: ignore[arg-type]
                for i in range(len(items))]
        prepared = [prepare(item, embedder_vector=by_index.get(i),
                            where=f"inputs[{i}]." if len(items) > 1 else "", file=refs[i])
                    for i, item in enumerate(items)]
        shared = self._shared
        involved = {p.id for p in prepared} | {t for p in prepared for t in p.stamp.supersedes}
        while True:
            # Check under the lock, then write outside it with the new ids reserved: concurrent
            # remembers of other ids share group commits; one touching a reserved id (or naming
            # it in supersedes) waits for that write to finish or fail, then checks again.
            async with shared.lock:
                busy = [shared.pending[i] for i in involved if i in shared.pending]
                if not busy:
                    digests = {p.id: await self._stored_digest(p.id) for p in prepared
                               if p.id in self.index.facts}
                    results, new = self._check(prepared, digests)
                    reserved = {p.id: trio.Event() for p in new}
                    shared.pending.update(reserved)
                    break
            await busy[0].wait()
        try:
            if new:
                now = self.engine.now()
                await self.engine.put_documents([p.document(now) for p in new])
        finally:
            for doc_id, event in reserved.items():
                del shared.pending[doc_id]
                event.set()
        created = tuple(r.id for r in results if r.created)
        if created:
            await self._notify("remember", created)
        return results

    async def _stored_digest(self, doc_id: str) -> str | None:
        doc = await self.engine.get_document(doc_id)
        return None if doc is None else stored_digest(doc.metadata)

    def _check(self, prepared: list[PreparedFact],
               digests: dict[str, str | None]) -> tuple[list[RememberResult], list[PreparedFact]]:
        index = self.index
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
                                          superseded=self._would_supersede(p, batch)))
        return results, new

    def _would_supersede(self, p: PreparedFact, batch: dict[str, PreparedFact]) -> tuple[str, ...]:
        """The facts this one supersedes as it is remembered: its explicit links, and under
        latest-by-subject the slot's facts current just before it takes effect and older than it."""
        out = list(p.stamp.supersedes)
        s = p.stamp
        if self.slot_policy and s.subject is not None:
            begin = s.begin if (s.valid_from is not None or s.event_time is not None) else self.engine.now()
            for other in self.index.current_in_slot(s.namespace, s.subject, begin):
                o = self.index.facts[other]
                if (o.begin, o.ingest_time, other) < (begin, o.ingest_time + 1, p.id) and other not in out:
                    out.append(other)
        return tuple(out)

    # -- reading ---------------------------------------------------------------------------------

    async def fact(self, doc_id: str) -> Fact | None:
        """The fact ``doc_id`` (None if there is none); see ``facts``."""
        return (await self.facts([doc_id]))[0]

    async def facts(self, ids: Sequence[str]) -> list[Fact | None]:
        """The facts ``ids``, in order (None where there is none): the stamp from the index, the
        text, metadata and embedding from the engine, all the cache misses in one
        ``get_documents`` call, or from the shared cache of recently read facts, which the
        commit listener keeps exact. Each caller gets its own copy of a fact's metadata."""
        cache = self._shared.facts
        cached = cache.facts
        out: list[Fact | None] = []
        missing: list[int] = []
        for doc_id in ids:
            fact = cached.get(doc_id)
            if fact is None:
                missing.append(len(out))
                out.append(None)
            else:
                out.append(fact if fact.metadata is None else _with_metadata(fact, fact.metadata))
        cache.hits += len(out) - len(missing)
        if missing:
            cache.misses += len(missing)
            await self._read_facts(ids, missing, out)
        return out

    async def _read_facts(self, ids: Sequence[str], missing: list[int],
                          out: list[Fact | None]) -> None:
        index = self.index
        revision = index.revision
        engine = self.engine
        # One id (``get``): get_document, whose errors name the caller's ``id``.
        docs = [await engine.get_document(ids[missing[0]])] if len(missing) == 1 else \
            await engine.get_documents([ids[n] for n in missing])
        # Cache only what was read at the latest revision (a large text is read in a worker
        # thread, and a commit meanwhile may have changed what the index says of its links).
        cache = self._shared.facts if index.revision == revision else None
        facts = index.facts
        plain = None
        for n, doc in zip(missing, docs, strict=True):
            if doc is None:
                continue
            s = facts.get(doc.id)
            if s is None:
                s = plain = plain or plain_stamp()
            fact = Fact(
                id=doc.id, text=doc.text, kind=s.kind, namespace=s.namespace, subject=s.subject,
                entities=s.entities, metadata=user_metadata(doc.metadata), embedding=doc.embedding,
                event_time=s.event_time, valid_from=s.valid_from, valid_to=s.valid_to,
                ingest_time=s.ingest_time,
                supersedes=tuple(x for x in s.supersedes if x in facts) if s.supersedes else (),
                sources=s.sources, actor=s.actor, importance=s.importance, file=file_ref(s.file),
            )
            if cache is not None:
                cache.put(fact)
            out[n] = fact if fact.metadata is None else _with_metadata(fact, fact.metadata)

    async def get(self, id: str) -> Fact | None:
        """The fact ``id``, or None (also for a forgotten one)."""
        if not isinstance(id, str):
            raise InvalidRequest("id: expected a string")
        return await self.fact(id)

    async def history(self, id: str) -> list[Fact]:
        """The whole supersession chain of ``id``, oldest first; ``NotFound`` if unknown."""
        if id not in self.index.facts:
            check_id(id)  # a bad id is InvalidRequest, not NotFound
            raise NotFound(f"no fact {id!r}")
        facts = await self.facts(self.index.chain(id, self.slot_policy))
        return [f for f in facts if f is not None]

    # -- recall, explain, forget (in their own modules) ------------------------------------------

    async def recall(self, query: str, **options: Any) -> list[RecallHit]:
        """Search, then keep what the temporal options ask for; see memory/recall.py."""
        return await _recall.recall(self, query, **options)

    async def explain(self, query: str, id: str, **options: Any) -> Explanation:
        """Why ``id`` came back for ``query`` (or why not), with the same formulas as recall."""
        return await _recall.explain(self, query, id, **options)

    async def forget(self, scope: ForgetScope, *, include_chain: bool = False, dry_run: bool = False,
                     purge: bool = False) -> ForgetReport:
        """Remove the facts of one scope; see memory/forget.py."""
        report = await _forget.forget(self, scope, include_chain=include_chain, dry_run=dry_run,
                                      purge=purge)
        if report.removed and not dry_run:
            await self._notify("forget", report.removed)
        return report

    async def apply_forgetting(self, *, dry_run: bool = True) -> ForgetReport:
        """Forget what the forgetting policy selects (never runs by itself; dry run by default)."""
        return await _forget.apply_forgetting(self, dry_run=dry_run)

    async def consolidate(self, *, dry_run: bool = True,
                          allow_destructive: bool = False) -> ConsolidateReport:
        """Merge exact duplicates per the consolidation policy (dry run by default)."""
        return await _forget.consolidate(self, dry_run=dry_run, allow_destructive=allow_destructive)

    # -- documents as memory (memory/loader.py) ----------------------------------------------------

    async def load(self, document: str, text: str, *, namespace: str = "default",
                   extractor: _loader.Extractor | None = None, actor: str | None = None,
                   observed_at: Time | None = None, chunk_chars: int = 2000) -> LoadResult:
        """Store the Markdown ``text`` as episodes ``<document>-<nnnn>`` (one per chunk of
        ``chunk_markdown``) and the facts ``extractor`` draws from each chunk, chunk by chunk.

        A chunk whose episode is current with the same text is skipped (no extractor call); a
        changed one writes the episode's next revision, which supersedes it. Each chunk is one
        transaction, its facts before its episode, so a load stopped inside a chunk redoes it.
        ``Conflict`` if an episode id holds another kind of fact; ``InvalidRequest`` for a bad
        name (empty, or with ``/``), ``chunk_chars`` below 64 or an extractor result that is not
        a list of RememberInput; then nothing of that chunk is written. See memory/loader.py.
        """
        return await _loader.load(self, document, text, namespace=namespace, extractor=extractor,
                                  actor=actor, observed_at=observed_at, chunk_chars=chunk_chars)

    async def capture(self, text: str, *, extractor: _loader.Extractor, namespace: str = "default",
                      actor: str | None = None, observed_at: Time | None = None,
                      source: str | None = None) -> list[str]:
        """Remember what ``extractor`` draws from free ``text`` (cut at blank lines into chunks of
        at most 2000 characters, no prefix, no episodes); facts inherit ``observed_at``, and list
        ``source`` (where the text came from) in their sources, so that
        ``ForgetScope.source(source)`` forgets them. The ids."""
        return await _loader.capture(self, text, extractor=extractor, namespace=namespace,
                                     actor=actor, observed_at=observed_at, source=source)

    async def profile(self, namespace: str = "default", *, budget_chars: int = 4000) -> Profile:
        """The current facts, profiles and procedures of ``namespace`` as a prompt-ready block
        (grouped by kind, newest first, whole lines within ``budget_chars``) and their counts."""
        return await _loader.profile(self, namespace, budget_chars=budget_chars)

    # -- files (memory/files.py) ---------------------------------------------------------------------

    async def remember_file(self, uri: str, *, byte_range: tuple[int, int] | None = None,
                            format: str | None = None, summary: str | None = None,
                            **fields: Any) -> RememberResult:
        """Remember a reference to a file's bytes (``file://`` URI or path; the whole file or
        ``byte_range=(offset, length)``) with their sha256, never the bytes themselves. Search
        sees ``summary``; without one the fact is stored but not searchable. See memory/files.py.
        """
        return await _files.remember_file(self, uri, byte_range=byte_range, format=format,
                                          summary=summary, **fields)

    async def hydrate(self, id: str) -> bytes:
        """The recorded range of a file-backed fact, checked against its sha256
        (``ProvenanceError``: ``missing_file``, ``truncated`` or ``checksum_mismatch``)."""
        return await _files.hydrate(self, id)

    async def embed_query(self, query: str) -> tuple[float, ...] | None:
        """The vector recall gives search for ``query``: its embedding by this Memory's
        embedder, or None without one. ``recall(q)`` ranks exactly like
        ``engine.search_documents(q, embedding=await memory.embed_query(q))``."""
        if not isinstance(query, str):
            raise InvalidRequest(f"query: expected a string, got {type(query).__name__}")
        vectors = await self._embed([query])
        return None if vectors is None else tuple(float(x) for x in vectors[0])

    async def reembed(self, *, embedder: Embedder | None = None,
                      progress: Callable[[int, int], Any] | None = None) -> int:
        """Embed every document again with ``embedder`` (default: this Memory's, else the
        bundled one) and record it as the store's (``hms reembed``); the number re-embedded.
        See memory/embedding.py."""
        return await _embedding.reembed(self, embedder, progress=progress)

    async def embed_missing(self, *, progress: Callable[[int, int], Any] | None = None) -> int:
        """Embed the documents without a vector (after an import of an export that had none)
        with the embedder the store records; 0 in a lexical store. See memory/embedding.py."""
        return await _embedding.embed_missing(self, progress=progress)

    async def call(self, op: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON contract: one implementation of every operation (memory/jsonapi.py)."""
        from .jsonapi import call

        return await call(self, op, body)
