"""The memory layer's core: what the ``Memory`` facade and the helper modules share.

``MemoryCore`` is one memory's view of an engine: the engine, the ``MemoryConfig``, the
embedder, observers, and the per-engine ``EngineState`` (the memory index, the cache of recently
read facts, the write lock and the ids being written) that every ``Memory`` over the same
engine shares. The facade (memory.py) and the helpers (remember.py, recall.py, forget.py,
loader.py, files.py, jsonapi.py) all take a core; none of them reaches into another's privates.

Built only on the engine's public face (``hmsengine.engine``).
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import attrs
import trio

from ..engine import Change, DocumentEngine, check_id
from ..errors import InvalidRequest, NotFound
from .config import MemoryConfig
from .facts import FactCache, with_own_metadata
from .index import MemoryIndex
from .policies import (
    SUPERSESSION_POLICIES,
    Importance,
    ImportancePolicy,
    NoSupersession,
    Recency,
    RecencyPolicy,
    SupersessionPolicy,
)
from .stamp import Stamp, plain_stamp, user_metadata
from .values import Fact, file_ref, make_fact

# A callable (plain or async) from texts to vectors, or an object with ``embed(texts)`` and
# ``dim`` such as hmsengine.embedders.MiniLMEmbedder.
Embedder = Callable[[list[str]], Any] | Any
Observer = Callable[[str, tuple[str, ...]], Any]  # (event "remember" | "forget", ids)


T = TypeVar("T")

# The settings section of the namespaces' default retention (memory/retention.py).
RETENTION_SECTION = "retention"


def retention_defaults(engine: DocumentEngine) -> dict[str, int]:
    """The namespace -> default retention (ms) the store's settings record."""
    section = engine.settings.get(RETENTION_SECTION) or {}
    namespaces = section.get("namespaces") if isinstance(section, dict) else None
    if not isinstance(namespaces, dict):
        return {}
    return {k: v for k, v in namespaces.items()
            if isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v > 0}


class EngineState:
    """Per-engine state shared by every Memory over it, kept current by a commit listener."""

    def __init__(self, engine: DocumentEngine) -> None:
        self.index = MemoryIndex()
        self.index.load_chunks(engine.scan_metadata_chunks(), engine.revision)
        self.index.retention = retention_defaults(engine)
        self.clock = engine.now
        # Recently read facts, so a recall whose hits were read before costs little more than
        # the search itself; kept exact by the commit listener (see FactCache).
        self.facts = FactCache()
        # Serializes the checks of remember and the plans of forget against the index.
        self.lock = trio.Lock()
        # Ids whose remember passed its checks and is being written (see remember.py).
        self.pending: dict[str, trio.Event] = {}
        # id -> (metadata JSON, stamp) of the facts being written by remember: when the commit
        # carries exactly that JSON (the same string object the put carried), the index takes
        # the stamp as built instead of parsing it back from the JSON.
        self.writing: dict[str, tuple[str, Stamp]] = {}
        engine.add_commit_listener(self.on_commit)

    def on_commit(self, revision: int, changes: list[Change]) -> None:
        self.index.on_commit(revision, changes, self.writing, self.clock())
        self.facts.invalidate(self.index, changes)


_STATES: weakref.WeakKeyDictionary[DocumentEngine, EngineState] = weakref.WeakKeyDictionary()


def per_engine(registry: weakref.WeakKeyDictionary[DocumentEngine, T], engine: DocumentEngine,
                  make: Callable[[DocumentEngine], T]) -> T:
    """``registry``'s value for ``engine``, made by ``make`` at first use, for as long as the
    engine lives (a value shared by every Memory over one engine)."""
    value = registry.get(engine)
    if value is None:
        value = registry[engine] = make(engine)
    return value


def engine_state(engine: DocumentEngine) -> EngineState:
    """The one ``EngineState`` of ``engine``, made at first use, for as long as it lives."""
    return per_engine(_STATES, engine, EngineState)


def _follow(core: MemoryCore, _field: Any, config: MemoryConfig) -> MemoryConfig:
    """``config``'s on_setattr hook: a new configuration brings its policies' fast-path fields."""
    core.derive_policies(config)
    return config


@attrs.define(eq=False)
class MemoryCore:
    """One ``Memory``'s engine, configuration, embedder and observers, and its engine's
    shared state (made at first use: a Memory that is never used costs no index)."""

    engine: DocumentEngine
    # Replaceable (a store's kept policies may replace the caller's): slot_policy, recency and
    # importance below follow it.
    config: MemoryConfig = attrs.field(on_setattr=_follow)
    embedder: Embedder | None = None
    # The embedder's identity ({"model", "dim", "version"}) and why it may not embed for this
    # store, if it may not (memory/embedding.py: resolve sets both, reembed may change them).
    embedder_identity: dict[str, Any] | None = None
    embedder_problem: InvalidRequest | None = None
    observers: list[Observer] = attrs.Factory(list)
    # The memory policies the caller's config set, recorded by the first write to a store that
    # records none (memory/stored_policies.py, which also keeps ``config``'s policies the store's).
    wanted_policies: dict[str, Any] = attrs.Factory(dict)
    _state: EngineState | None = None
    # The configured policies that can change anything, None where the built-in changes
    # nothing (no supersession, no recency, no importance weight): recall's fast paths test
    # these once per call. Derived from ``config`` whenever it is set.
    slot_policy: SupersessionPolicy | None = attrs.field(init=False, default=None)
    recency: RecencyPolicy | None = attrs.field(init=False, default=None)
    importance: ImportancePolicy | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        self.derive_policies(self.config)

    def derive_policies(self, config: MemoryConfig) -> None:
        """Set the fast-path policy fields from ``config`` (see above)."""
        supersession = config.supersession
        policy = SUPERSESSION_POLICIES[supersession] if isinstance(supersession, str) \
            else supersession
        self.slot_policy = None if isinstance(policy, NoSupersession) else policy
        recency = config.recency
        self.recency = None if isinstance(recency, Recency) and recency.kind == "none" \
            else recency
        importance = config.importance
        self.importance = None if isinstance(importance, Importance) \
            and importance.kind == "none" else importance

    @property
    def state(self) -> EngineState:
        state = self._state
        if state is None:
            # Kept here once found: the lookup is on recall's hot path.
            state = self._state = engine_state(self.engine)
        return state

    @property
    def index(self) -> MemoryIndex:
        return self.state.index

    async def embed(self, texts: list[str]) -> list[Any] | None:
        """The embedder's vectors of ``texts`` (None without an embedder); the embedder's
        problem with this store (memory/embedding.py) raised instead, if it has one."""
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

    async def notify(self, event: str, ids: tuple[str, ...]) -> None:
        """Tell the observers what was remembered or forgotten."""
        for observer in list(self.observers):
            result = observer(event, ids)
            if inspect.isawaitable(result):
                await result

    async def get(self, id: str) -> Fact | None:
        """``Memory.get``: the fact ``id``, or None (also for a forgotten one)."""
        if not isinstance(id, str):
            raise InvalidRequest("id: expected a string")
        return await self.fact(id)

    async def history(self, id: str) -> list[Fact]:
        """``Memory.history``: the whole supersession chain of ``id``, oldest first."""
        # A bad id (also one that is no string: a dict cannot even be looked up) is
        # InvalidRequest, not NotFound.
        if not isinstance(id, str) or id not in self.index.facts:
            check_id(id)
            raise NotFound(f"no fact {id!r}")
        facts = await self.facts(self.index.chain(id, self.slot_policy))
        return [f for f in facts if f is not None]

    async def fact(self, doc_id: str) -> Fact | None:
        """The fact ``doc_id`` (None if there is none); see ``facts``."""
        return (await self.facts([doc_id]))[0]

    async def facts(self, ids: Sequence[str]) -> list[Fact | None]:
        """The facts ``ids``, in order (None where there is none): the stamp from the index, the
        text, metadata and embedding from the engine, all the cache misses in one
        ``get_documents`` call, or from the shared cache of recently read facts, which the
        commit listener keeps exact. Each caller gets its own copy of a fact's metadata."""
        cache = self.state.facts
        cached = cache.facts
        out: list[Fact | None] = []
        missing: list[int] = []
        for doc_id in ids:
            fact = cached.get(doc_id)
            if fact is None:
                missing.append(len(out))
                out.append(None)
            else:
                out.append(fact if fact.metadata is None else with_own_metadata(fact, fact.metadata))
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
        cache = self.state.facts if index.revision == revision else None
        facts = index.facts
        plain = None
        for n, doc in zip(missing, docs, strict=True):
            if doc is None:
                continue
            s = facts.get(doc.id)
            if s is None:
                s = plain = plain or plain_stamp()
            fact = make_fact(
                id=doc.id, text=doc.text, kind=s.kind, namespace=s.namespace, subject=s.subject,
                entities=s.entities, metadata=user_metadata(doc.metadata), embedding=doc.embedding,
                event_time=s.event_time, valid_from=s.valid_from, valid_to=s.valid_to,
                ingest_time=s.ingest_time,
                supersedes=tuple(x for x in s.supersedes if x in facts) if s.supersedes else (),
                sources=s.sources, actor=s.actor, importance=s.importance, file=file_ref(s.file),
                retain_until=index.retention_end(doc.id) if s is not plain else None,
            )
            if cache is not None:
                cache.put(fact)
            out[n] = fact if fact.metadata is None else with_own_metadata(fact, fact.metadata)
