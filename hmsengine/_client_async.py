"""The asyncio/trio twin of ``hmsengine.client``: the same API with ``await``.

Import it from ``hmsengine.client`` (``AsyncClient``); see that module for the contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from ._client_wire import (
    _CALLS,
    API,
    DEFAULT_TIMEOUT,
    ServerUnavailable,
    Time,
    _body,
    _Call,
    _content,
    _doc_path,
    _headers,
    _list,
    _scope,
    _search_body,
    _value,
)
from .engine import DEFAULT_SEMANTIC_WEIGHT, Document, Hit, PutResult
from .errors import InvalidRequest
from .memory.values import (
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
)
from .vectormask import VectorMask


class AsyncMemoryClient:
    """``Memory``'s methods over HTTP (``await``; trio or asyncio)."""

    def __init__(self, send: Any) -> None:
        self._send = send

    async def call(self, op: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON contract itself: ``memory.call(op, body)`` on the server."""
        result: dict[str, Any] = await self._send(_CALLS.op(op, dict(body), raw=True))
        return result

    async def remember(self, text: str, *, id: str | None = None, subject: str | None = None,
                       entities: Sequence[str] = (), metadata: Mapping[str, Any] | None = None,
                       embedding: Sequence[float] | None = None, event_time: Time | None = None,
                       valid_from: Time | None = None, valid_to: Time | None = None,
                       supersedes: Sequence[str] = (), kind: str = "fact",
                       namespace: str = "default", sources: Sequence[str] = (),
                       actor: str | None = None, importance: float | None = None,
                 retain_until: Time | None = None) -> RememberResult:
        """Remember one fact (durable when it returns); see ``Memory.remember``."""
        result: RememberResult = await self._send(_CALLS.remember(
            text, id=id, subject=subject, entities=entities, metadata=metadata,
            embedding=embedding, event_time=event_time, valid_from=valid_from, valid_to=valid_to,
            supersedes=supersedes, kind=kind, namespace=namespace, sources=sources, actor=actor,
            importance=importance, retain_until=retain_until))
        return result

    async def remember_many(self, inputs: Sequence[RememberInput | Mapping[str, Any]]
                            ) -> list[RememberResult]:
        """Remember facts in one transaction, all or none."""
        result: list[RememberResult] = await self._send(_CALLS.remember_many(inputs))
        return result

    async def recall(self, query: str, *, k: int = 10, as_of: Time | None = None,
                     known_at: Time | None = None, history: str = "current",
                     subject: str | None = None, entity: str | None = None,
                     namespace: str | None = None, kinds: str | Sequence[str] | None = None,
                     embedding: Sequence[float] | None = None, candidate_limit: int = 100,
                     explain: bool = False) -> list[RecallHit]:
        """Search the facts; see ``Memory.recall``."""
        result: list[RecallHit] = await self._send(_CALLS.recall(
            query, k=k, as_of=as_of, known_at=known_at, history=history, subject=subject,
            entity=entity, namespace=namespace, kinds=kinds, embedding=embedding,
            candidate_limit=candidate_limit, explain=explain))
        return result

    async def explain(self, query: str, id: str, *, k: int = 10, as_of: Time | None = None,
                      known_at: Time | None = None, history: str = "current",
                      subject: str | None = None, entity: str | None = None,
                      namespace: str | None = None, kinds: str | Sequence[str] | None = None,
                      embedding: Sequence[float] | None = None,
                      candidate_limit: int = 100) -> Explanation:
        """Why ``id`` came back for ``query``, or why not; ``NotFound`` for an unknown id."""
        result: Explanation = await self._send(_CALLS.explain(
            query, id, k=k, as_of=as_of, known_at=known_at, history=history, subject=subject,
            entity=entity, namespace=namespace, kinds=kinds, embedding=embedding,
            candidate_limit=candidate_limit))
        return result

    async def forget(self, scope: ForgetScope, *, include_chain: bool = False,
                     dry_run: bool = False, purge: bool = False) -> ForgetReport:
        """Remove the facts of one scope; see ``Memory.forget``."""
        result: ForgetReport = await self._send(_CALLS.op("forget", {
            "scope": _scope(scope), "includeChain": include_chain, "dryRun": dry_run,
            "purge": purge}, _value(ForgetReport)))
        return result

    async def history(self, id: str) -> list[Fact]:
        """The supersession chain of ``id``, oldest first; ``NotFound`` if unknown."""
        result: list[Fact] = await self._send(_CALLS.op("history", {"id": id}, _list(Fact)))
        return result

    async def get(self, id: str) -> Fact | None:
        """The fact ``id``, or None."""
        result: Fact | None = await self._send(_CALLS.op("get", {"id": id}, _value(Fact), None))
        return result

    async def apply_forgetting(self, *, dry_run: bool = True) -> ForgetReport:
        """Forget what the server's forgetting policy selects (dry run by default)."""
        result: ForgetReport = await self._send(_CALLS.op(
            "applyForgetting", {"dryRun": dry_run}, _value(ForgetReport)))
        return result

    async def consolidate(self, *, dry_run: bool = True,
                          allow_destructive: bool = False) -> ConsolidateReport:
        """Merge exact duplicates per the server's consolidation policy (dry run by default)."""
        result: ConsolidateReport = await self._send(_CALLS.op(
            "consolidate", {"dryRun": dry_run, "allowDestructive": allow_destructive},
            _value(ConsolidateReport)))
        return result

    async def load(self, document: str, text: str, *, namespace: str = "default",
                   actor: str | None = None, observed_at: Time | None = None,
                   chunk_chars: int = 2000) -> LoadResult:
        """Load a Markdown document as episodes (no extractor: one cannot travel over JSON)."""
        result: LoadResult = await self._send(_CALLS.op("load", {
            "document": document, "text": text, **_body(namespace=namespace, actor=actor,
                                                         observed_at=observed_at,
                                                         chunk_chars=chunk_chars)},
            _value(LoadResult)))
        return result

    async def profile(self, namespace: str = "default", *, budget_chars: int = 4000) -> Profile:
        """The prompt-ready block of the namespace's current facts."""
        result: Profile = await self._send(_CALLS.op(
            "profile", {"namespace": namespace, "budgetChars": budget_chars}, _value(Profile)))
        return result

    async def list(self, namespace: str | None = None, subject: str | None = None,
             entity: str | None = None, kind: str | Sequence[str] | None = None,
             status: str | Sequence[str] | None = None, metadata: Mapping[str, Any] | None = None,
             as_of: Time | None = None, known_at: Time | None = None, limit: int = 100,
             cursor: str | None = None) -> Page:
        """One page of facts, newest first, and the next page's cursor; see ``Memory.list``."""
        result: Page = await self._send(_CALLS.list(
            namespace=namespace, subject=subject, entity=entity, kind=kind, status=status,
            metadata=metadata, as_of=as_of, known_at=known_at, limit=limit, cursor=cursor))
        return result

    async def count(self, namespace: str | None = None, subject: str | None = None,
              entity: str | None = None, kind: str | Sequence[str] | None = None,
              status: str | Sequence[str] | None = None, metadata: Mapping[str, Any] | None = None,
              as_of: Time | None = None, known_at: Time | None = None) -> int:
        """How many facts ``list`` returns with the same filters."""
        result: int = await self._send(_CALLS.count(
            namespace=namespace, subject=subject, entity=entity, kind=kind, status=status,
            metadata=metadata, as_of=as_of, known_at=known_at))
        return result

    async def apply_retention(self, *, dry_run: bool = True, purge: bool = False) -> ForgetReport:
        """Forget the facts past their retention (dry run by default)."""
        result: ForgetReport = await self._send(_CALLS.apply_retention(dry_run=dry_run, purge=purge))
        return result

    async def set_retention(self, namespace: str, keep_for: Any) -> dict[str, int]:
        """Set (ms or a timedelta) or remove (None) a namespace's default retention; the
        defaults after the change."""
        result: dict[str, int] = await self._send(_CALLS.set_retention(namespace, keep_for))
        return result


class AsyncDocumentsClient:
    """The document routes (``await``): ``put``, ``get``, ``delete``, ``search``."""

    def __init__(self, send: Any) -> None:
        self._send = send

    async def put(self, id: str, text: str, *, metadata: Mapping[str, Any] | None = None,
                  embedding: Sequence[float] | None = None) -> PutResult:
        """Store ``text`` under ``id`` (replacing it); durable when it returns."""
        result: PutResult = await self._send(_Call("PUT", _doc_path(id), {
            "text": text, **_body(metadata=metadata, embedding=embedding)},
            decode=_value(PutResult)))
        return result

    async def get(self, id: str) -> Document | None:
        """The document ``id``, or None."""
        result: Document | None = await self._send(_Call("GET", _doc_path(id), missing=None,
                                                         decode=_value(Document)))
        return result

    async def delete(self, id: str, *, purge: bool = False) -> bool:
        """Delete a document; True if it existed."""
        result: Any = await self._send(_Call("DELETE", _doc_path(id),
                                             params={"purge": "true"} if purge else None,
                                             missing=False))
        return result is not False

    async def search(self, query: str, *, k: int = 10, embedding: Sequence[float] | None = None,
                     ids: Sequence[str] | None = None, metadata: Mapping[str, Any] | None = None,
                     semantic: str | None = None, lexical_weight: float = 1.0,
                     semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT) -> list[Hit]:
        """Rank documents; see ``Engine.search_documents``."""
        result: list[Hit] = await self._send(_Call("POST", f"{API}/documents/search",
                                                   _search_body(query, k, embedding, ids,
                                                                metadata, semantic,
                                                                lexical_weight, semantic_weight),
                                                   decode=_list(Hit)))
        return result


class AsyncClient:
    """An async client of ``hms serve`` (trio or asyncio). ``async with``, or ``await aclose()``."""

    def __init__(self, base_url: str, api_key: str | None = None, tenant: str | None = None, *,
                 timeout: float | None = DEFAULT_TIMEOUT,
                 transport: httpx.AsyncBaseTransport | None = None,
                 vector_mask: VectorMask | None = None) -> None:
        if vector_mask is not None and not isinstance(vector_mask, VectorMask):
            raise InvalidRequest("vector_mask: expected a hmsengine.vectormask.VectorMask")
        self._mask = vector_mask
        self._http = httpx.AsyncClient(base_url=base_url, headers=_headers(api_key, tenant),
                                       timeout=timeout, transport=transport)
        self.memory = AsyncMemoryClient(self._send)
        self.documents = AsyncDocumentsClient(self._send)

    async def _send(self, call: _Call) -> Any:
        call = call.masked(self._mask)
        content = _content(call)
        try:
            response = await self._http.request(
                call.method, call.path, content=content, params=call.params,
                headers={"Content-Type": "application/json"} if content is not None else None)
        except httpx.TransportError as exc:
            raise ServerUnavailable(f"{call.method} {call.path}: {exc!s} ({type(exc).__name__})",
                                    ) from exc
        return call.result(response)

    async def healthz(self) -> dict[str, Any]:
        """The server's health answer (``{"status": "ok"}``)."""
        result: dict[str, Any] = await self._send(_Call("GET", "/healthz"))
        return result

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
