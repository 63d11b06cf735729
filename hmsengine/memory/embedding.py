"""Which embedder a ``Memory`` uses, the store's record of it, and re-embedding.

A store keeps the identity of the embedder whose vectors it holds in its settings (the
``embedder`` section of ``Engine.settings``: ``{"model", "dim", "version", "state"}``), written
before the first fact it embeds is. From then on every ``Memory`` over the store embeds with
that embedder or with none:

- ``Memory(engine)`` (``embedder=None``): the store's recorded embedder, loaded from the bundled
  ones (``hmsengine.embedders``); a store with nothing recorded and no document yet gets the
  bundled default when the ``embed`` extra is installed (and ``HMS_EMBEDDER`` is not ``none``,
  and the config's ``embedder`` is not ``"none"``), so its recall is hybrid; a store that holds
  documents but no record (made before records, or lexical by choice) stays lexical.
- ``Memory(engine, embedder=obj)``: ``obj``; refused when the store records another identity,
  or when it declares none and the store records one (it cannot be checked).
- ``Memory(engine, embedder=False)``: lexical only; it cannot remember a fact without a
  vector in a store that records an embedder (that fact would be invisible to the cosine
  signal).

A record whose ``state`` is ``"reembedding"`` (an ``hms reembed`` that did not finish) holds
mixed vectors: only a ``reembed``, or a lexical Memory, may use the store.

A Memory is always made; what it cannot do for its store is refused when it is tried: a recall
or remember that would embed with the wrong embedder (or none where the store records one)
raises ``InvalidRequest`` saying which embedder the store records and what to do.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Callable
from typing import Any

from ..embedders import DEFAULT_MODEL, bundled_embedder, identity_of
from ..errors import InvalidRequest
from .core import MemoryCore

SECTION = "embedder"
# Set to "none" to make new stores lexical by default (the test suite does; so may a user who
# wants no model loaded). Stores that record an embedder keep using it.
ENV = "HMS_EMBEDDER"
REEMBED_HINT = "run `hms reembed` (Memory.reembed) with the embedder you want the store to use"
BATCH = 256


def _describe(identity: dict[str, Any]) -> str:
    return f"{identity.get('model')} (dim {identity.get('dim')}, version {identity.get('version')})"


def _mismatch(recorded: dict[str, Any], identity: dict[str, Any] | None) -> InvalidRequest | None:
    """Why an embedder of ``identity`` may not use a store recording ``recorded``, or None."""
    if identity is None:
        return InvalidRequest(
            f"embedder: this store's vectors come from {_describe(recorded)}, and the embedder "
            "given declares no identity, so it cannot be checked against them",
            hint="give it an `identity` property ({'model', 'dim', 'version'}), or pass "
                 "embedder=False for lexical recall")
    if {k: recorded.get(k) for k in ("model", "dim", "version")} != identity:
        return InvalidRequest(
            f"embedder: this store's vectors come from {_describe(recorded)}, not from "
            f"{_describe(identity)}; mixing them would make cosine scores meaningless",
            hint=f"open it with the embedder it records, or {REEMBED_HINT}")
    if recorded.get("state") == "reembedding":
        return InvalidRequest(
            f"embedder: re-embedding this store with {_describe(recorded)} did not finish, so "
            "its vectors are mixed", hint=f"{REEMBED_HINT} again to finish it")
    return None


Resolved = tuple[Any, "dict[str, Any] | None", "InvalidRequest | None"]


def resolve(core: MemoryCore, embedder: Any) -> None:
    """Set ``core``'s embedder, its identity and the error that any use of it for the store
    raises (each None where there is none); see the module docstring. Never raises for the
    store's state: a Memory that cannot embed for this store still reads it (get, list,
    history), and ``reembed`` can still repair it."""
    core.embedder, core.embedder_identity, core.embedder_problem = _resolve(core, embedder)


def _resolve(core: MemoryCore, embedder: Any) -> Resolved:
    recorded = core.engine.settings.get(SECTION)
    if embedder is False or (embedder is None and core.config.embedder == "none"
                             and recorded is None):
        return None, None, None
    if embedder is not None:
        identity = identity_of(embedder)
        return embedder, identity, None if recorded is None else _mismatch(recorded, identity)
    if recorded is not None:
        try:
            found = bundled_embedder(recorded["model"])
        except KeyError:
            return None, None, InvalidRequest(
                f"embedder: this store's vectors come from {_describe(recorded)}, which is not "
                "one of the bundled embedders",
                hint="pass that embedder (Memory(engine, embedder=...)), or embedder=False for "
                     "lexical recall")
        except ImportError as exc:
            return None, None, InvalidRequest(
                f"embedder: this store's vectors come from {_describe(recorded)}, and the "
                f"packages that make them are not installed ({exc})",
                hint='pip install "hmsengine[embed]", or open with embedder=False for lexical '
                     "recall")
        identity = identity_of(found)
        return found, identity, _mismatch(recorded, identity)
    if os.environ.get(ENV, "").strip().lower() == "none" or core.engine.statistics().documents:
        # Turned off, or a store made before records (or lexical by choice): it stays as it was.
        return None, None, None
    try:
        found = bundled_embedder(DEFAULT_MODEL)
    except ImportError as exc:  # the embed extra is not installed: lexical, as before
        _note_lexical(exc)
        return None, None, None
    return found, identity_of(found), None


_noted: list[str] = []


def _note_lexical(exc: ImportError) -> None:
    """Say once per process why new stores are lexical, when part of the extra is there (a
    missing tokenizer file is easy to miss); nothing when none of it is installed."""
    if _noted or importlib.util.find_spec("onnxruntime") is None:
        return
    _noted.append(str(exc))
    logging.getLogger("hmsengine").warning("recall is lexical: the bundled embedder cannot load (%s)",
                                           exc)


async def before_write(core: MemoryCore, embeds: bool) -> None:
    """Called before ``memory`` writes facts; ``embeds``: whether it made vectors for them.
    Records the embedder's identity when the store has none yet; refuses a lexical Memory's
    unembedded facts in a store that records an embedder."""
    if core.embedder_problem is not None:
        raise core.embedder_problem
    engine = core.engine
    recorded = engine.settings.get(SECTION)
    identity = core.embedder_identity
    if recorded is None:
        if embeds and identity is not None:
            await engine.update_settings(SECTION, {**identity, "state": "ready"})
        return
    if not embeds and core.embedder is None:
        raise InvalidRequest(
            f"embedder: this store embeds its facts with {_describe(recorded)}, and this Memory "
            "has no embedder, so the fact would have no vector",
            hint="open the Memory with the store's embedder (the default, embedder=None), or "
                 "pass the fact's embedding")


async def embed_missing(core: MemoryCore, *,
                        progress: Callable[[int, int], Any] | None = None) -> int:
    """Embed the documents that have no vector with the embedder the store records (what an
    import of an export without vectors leaves); the number embedded. Nothing when the store
    records no embedder (it is lexical: ``reembed`` makes it hybrid)."""
    if core.engine.settings.get(SECTION) is None or core.embedder is None:
        return 0
    if core.embedder_problem is not None:
        raise core.embedder_problem
    return await _embed_documents(core, progress, missing_only=True)


async def _embed_documents(core: MemoryCore, progress: Callable[[int, int], Any] | None, *,
                           missing_only: bool) -> int:
    """Re-write the store's documents (those without a vector, with ``missing_only``) with
    ``memory``'s vectors, in batches under the memory write lock; the number written."""
    engine = core.engine
    ids = [doc_id for doc_id, _ in engine.scan_metadata(commit_order=True)]
    done = 0
    for start in range(0, len(ids), BATCH):
        async with core.state.lock:
            docs = [d for d in await engine.get_documents(ids[start:start + BATCH])
                    if d is not None and not (missing_only and d.embedding is not None)]
            vectors = await core.embed([d.text for d in docs]) if docs else []
            if docs:
                await engine.put_documents([
                    {"id": d.id, "text": d.text, "metadata": d.metadata, "embedding": v}
                    for d, v in zip(docs, vectors or [], strict=True)])
        done += len(docs)
        if progress is not None:
            progress(min(start + BATCH, len(ids)), len(ids))
    return done


async def reembed(core: MemoryCore, embedder: Any = None, *,
                  progress: Callable[[int, int], Any] | None = None) -> int:
    """Embed every document of the store again with ``embedder`` (default: ``memory``'s own
    when it has an identity, else the bundled default) and record it as the store's;
    ``memory`` embeds with it from then on. The number of documents re-embedded.

    The record says ``"reembedding"`` until the last batch is durable, so an interrupted run
    is refused by other Memories until a run finishes (each run embeds everything again).
    Each batch is read and written under the memory write lock, so a concurrent forget is
    never undone. ``progress(done, total)`` after each batch."""
    if embedder is None and core.embedder_identity is None:
        try:
            embedder = bundled_embedder(DEFAULT_MODEL)
        except ImportError as exc:
            raise InvalidRequest(f"reembed: the bundled embedder is not installed ({exc})",
                                 hint='pip install "hmsengine[embed]"') from None
    if embedder is not None:
        core.embedder, core.embedder_identity = embedder, identity_of(embedder)
    embedder, identity = core.embedder, core.embedder_identity
    if embedder is None or identity is None:
        raise InvalidRequest("reembed: this Memory has no embedder with an identity",
                             hint="open it with the embedder to re-embed with (the default, or "
                                  "embedder=... with an identity)")
    engine = core.engine
    fixed = engine.statistics().embedding_dim
    if fixed is not None and fixed != identity["dim"]:
        raise InvalidRequest(
            f"reembed: this store's vectors have {fixed} dimensions, fixed for its life; "
            f"{_describe(identity)} makes {identity['dim']}",
            hint="export the store (hms export) and import it into a new store opened with "
                 "that embedder")
    await engine.update_settings(SECTION, {**identity, "state": "reembedding"})
    core.embedder_problem = None  # this Memory's embedder is now the one recorded
    done = await _embed_documents(core, progress, missing_only=False)
    await engine.update_settings(SECTION, {**identity, "state": "ready"})
    return done
