"""``Client`` and ``AsyncClient``: the HTTP server's API with the names and values of ``Memory``.

::

    from hmsengine.client import Client
    with Client("http://127.0.0.1:8080", api_key=None, tenant=None) as hms:
        hms.memory.remember("Alice lives in Berlin", subject="alice/city")
        hits = hms.memory.recall("where does Alice live?")       # list[RecallHit]
        hms.documents.put("readme", "...")

``client.memory`` has the methods and parameters of :class:`hmsengine.Memory` (times as aware
datetimes or integer ms; values come back as the same attrs classes: ``RememberResult``,
``RecallHit``, ``Fact``, ...), less what cannot travel over JSON (an extractor for ``load``,
``capture``, an embedder). ``client.documents`` has ``put``, ``get``, ``delete`` and ``search``.
``get`` returns None for an unknown id, as ``Memory.get`` does.

Errors are the same :class:`HmsError` subclasses as in-process (``InvalidRequest``,
``NotFound``, ``Conflict``, ...), with the HTTP status as ``.status`` and the server's error code
as ``.code`` (both from ``wire.ERRORS``); a refused key is :class:`~hmsengine.errors.Unauthorized` (401) or
``Forbidden`` (403); a server that cannot be reached is :class:`ServerUnavailable`.

``vector_mask=VectorMask(key)`` (``hmsengine.vectormask``) masks every embedding a client sends
and unmasks those its answers carry, so the server holds masked vectors only (``call`` sends
its body as it is); docs/SECURITY.md says what that protects and what it does not.

``AsyncClient`` is the same API with ``await``; it runs under trio and under asyncio (httpx's
async client sits on anyio). Requests are built and answers decoded by code shared by both
clients (``_Call``); only the sending differs. ``timeout`` (seconds, default 60) bounds each
request; with ``AsyncClient``, cancel scopes and ``asyncio.timeout`` work as well.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .extras import MissingExtra

try:
    import httpx
except ImportError:  # one line naming the extra and its install command, not a bare import error
    raise MissingExtra("hmsengine.client", "server", "httpx") from None

from ._client_async import AsyncClient, AsyncDocumentsClient, AsyncMemoryClient
from ._client_wire import (
    _CALLS,
    API,
    DEFAULT_TIMEOUT,
    BadResponse,
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

__all__ = ["AsyncClient", "AsyncDocumentsClient", "AsyncMemoryClient", "BadResponse", "Client",
           "DocumentsClient", "MemoryClient", "ServerUnavailable"]


class MemoryClient:
    """``Memory``'s methods over HTTP (blocking)."""

    def __init__(self, send: Any) -> None:
        self._send = send

    def call(self, op: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON contract itself: ``memory.call(op, body)`` on the server."""
        result: dict[str, Any] = self._send(_CALLS.op(op, dict(body), raw=True))
        return result

    def remember(self, text: str, *, id: str | None = None, subject: str | None = None,
                 entities: Sequence[str] = (), metadata: Mapping[str, Any] | None = None,
                 embedding: Sequence[float] | None = None, event_time: Time | None = None,
                 valid_from: Time | None = None, valid_to: Time | None = None,
                 supersedes: Sequence[str] = (), kind: str = "fact", namespace: str = "default",
                 sources: Sequence[str] = (), actor: str | None = None,
                 importance: float | None = None,
                 retain_until: Time | None = None) -> RememberResult:
        """Remember one fact (durable when it returns); see ``Memory.remember``."""
        result: RememberResult = self._send(_CALLS.remember(
            text, id=id, subject=subject, entities=entities, metadata=metadata,
            embedding=embedding, event_time=event_time, valid_from=valid_from, valid_to=valid_to,
            supersedes=supersedes, kind=kind, namespace=namespace, sources=sources, actor=actor,
            importance=importance, retain_until=retain_until))
        return result

    def remember_many(self, inputs: Sequence[RememberInput | Mapping[str, Any]]
                      ) -> list[RememberResult]:
        """Remember facts in one transaction, all or none."""
        result: list[RememberResult] = self._send(_CALLS.remember_many(inputs))
        return result

    def recall(self, query: str, *, k: int = 10, as_of: Time | None = None,
               known_at: Time | None = None, history: str = "current",
               subject: str | None = None, entity: str | None = None,
               namespace: str | None = None, kinds: str | Sequence[str] | None = None,
               embedding: Sequence[float] | None = None, candidate_limit: int = 100,
               explain: bool = False) -> list[RecallHit]:
        """Search the facts; see ``Memory.recall``."""
        result: list[RecallHit] = self._send(_CALLS.recall(
            query, k=k, as_of=as_of, known_at=known_at, history=history, subject=subject,
            entity=entity, namespace=namespace, kinds=kinds, embedding=embedding,
            candidate_limit=candidate_limit, explain=explain))
        return result

    def explain(self, query: str, id: str, *, k: int = 10, as_of: Time | None = None,
                known_at: Time | None = None, history: str = "current",
                subject: str | None = None, entity: str | None = None,
                namespace: str | None = None, kinds: str | Sequence[str] | None = None,
                embedding: Sequence[float] | None = None,
                candidate_limit: int = 100) -> Explanation:
        """Why ``id`` came back for ``query``, or why not; ``NotFound`` for an unknown id."""
        result: Explanation = self._send(_CALLS.explain(
            query, id, k=k, as_of=as_of, known_at=known_at, history=history, subject=subject,
            entity=entity, namespace=namespace, kinds=kinds, embedding=embedding,
            candidate_limit=candidate_limit))
        return result

    def forget(self, scope: ForgetScope, *, include_chain: bool = False, dry_run: bool = False,
               purge: bool = False) -> ForgetReport:
        """Remove the facts of one scope; see ``Memory.forget``."""
        result: ForgetReport = self._send(_CALLS.op("forget", {
            "scope": _scope(scope), "includeChain": include_chain, "dryRun": dry_run,
            "purge": purge}, _value(ForgetReport)))
        return result

    def history(self, id: str) -> list[Fact]:
        """The supersession chain of ``id``, oldest first; ``NotFound`` if unknown."""
        result: list[Fact] = self._send(_CALLS.op("history", {"id": id}, _list(Fact)))
        return result

    def get(self, id: str) -> Fact | None:
        """The fact ``id``, or None."""
        result: Fact | None = self._send(_CALLS.op("get", {"id": id}, _value(Fact), None))
        return result

    def apply_forgetting(self, *, dry_run: bool = True) -> ForgetReport:
        """Forget what the server's forgetting policy selects (dry run by default)."""
        result: ForgetReport = self._send(_CALLS.op("applyForgetting", {"dryRun": dry_run},
                                                    _value(ForgetReport)))
        return result

    def consolidate(self, *, dry_run: bool = True,
                    allow_destructive: bool = False) -> ConsolidateReport:
        """Merge exact duplicates per the server's consolidation policy (dry run by default)."""
        result: ConsolidateReport = self._send(_CALLS.op(
            "consolidate", {"dryRun": dry_run, "allowDestructive": allow_destructive},
            _value(ConsolidateReport)))
        return result

    def load(self, document: str, text: str, *, namespace: str = "default",
             actor: str | None = None, observed_at: Time | None = None,
             chunk_chars: int = 2000) -> LoadResult:
        """Load a Markdown document as episodes (no extractor: one cannot travel over JSON)."""
        result: LoadResult = self._send(_CALLS.op("load", {
            "document": document, "text": text, **_body(namespace=namespace, actor=actor,
                                                         observed_at=observed_at,
                                                         chunk_chars=chunk_chars)},
            _value(LoadResult)))
        return result

    def profile(self, namespace: str = "default", *, budget_chars: int = 4000) -> Profile:
        """The prompt-ready block of the namespace's current facts."""
        result: Profile = self._send(_CALLS.op(
            "profile", {"namespace": namespace, "budgetChars": budget_chars}, _value(Profile)))
        return result

    def list(self, namespace: str | None = None, subject: str | None = None,
             entity: str | None = None, kind: str | Sequence[str] | None = None,
             status: str | Sequence[str] | None = None, metadata: Mapping[str, Any] | None = None,
             as_of: Time | None = None, known_at: Time | None = None, limit: int = 100,
             cursor: str | None = None) -> Page:
        """One page of facts, newest first, and the next page's cursor; see ``Memory.list``."""
        result: Page = self._send(_CALLS.list(
            namespace=namespace, subject=subject, entity=entity, kind=kind, status=status,
            metadata=metadata, as_of=as_of, known_at=known_at, limit=limit, cursor=cursor))
        return result

    def count(self, namespace: str | None = None, subject: str | None = None,
              entity: str | None = None, kind: str | Sequence[str] | None = None,
              status: str | Sequence[str] | None = None, metadata: Mapping[str, Any] | None = None,
              as_of: Time | None = None, known_at: Time | None = None) -> int:
        """How many facts ``list`` returns with the same filters."""
        result: int = self._send(_CALLS.count(
            namespace=namespace, subject=subject, entity=entity, kind=kind, status=status,
            metadata=metadata, as_of=as_of, known_at=known_at))
        return result

    def apply_retention(self, *, dry_run: bool = True, purge: bool = False) -> ForgetReport:
        """Forget the facts past their retention (dry run by default)."""
        result: ForgetReport = self._send(_CALLS.apply_retention(dry_run=dry_run, purge=purge))
        return result

    def set_retention(self, namespace: str, keep_for: Any) -> dict[str, int]:
        """Set (ms or a timedelta) or remove (None) a namespace's default retention; the
        defaults after the change."""
        result: dict[str, int] = self._send(_CALLS.set_retention(namespace, keep_for))
        return result


class DocumentsClient:
    """The document routes (blocking): ``put``, ``get``, ``delete``, ``search``."""

    def __init__(self, send: Any) -> None:
        self._send = send

    def put(self, id: str, text: str, *, metadata: Mapping[str, Any] | None = None,
            embedding: Sequence[float] | None = None) -> PutResult:
        """Store ``text`` under ``id`` (replacing it); durable when it returns."""
        result: PutResult = self._send(_Call("PUT", _doc_path(id), {
            "text": text, **_body(metadata=metadata, embedding=embedding)},
            decode=_value(PutResult)))
        return result

    def get(self, id: str) -> Document | None:
        """The document ``id``, or None."""
        result: Document | None = self._send(_Call("GET", _doc_path(id), missing=None,
                                                   decode=_value(Document)))
        return result

    def delete(self, id: str, *, purge: bool = False) -> bool:
        """Delete a document; True if it existed."""
        result: Any = self._send(_Call("DELETE", _doc_path(id),
                                       params={"purge": "true"} if purge else None,
                                       missing=False))
        return result is not False

    def search(self, query: str, *, k: int = 10, embedding: Sequence[float] | None = None,
               ids: Sequence[str] | None = None, metadata: Mapping[str, Any] | None = None,
               semantic: str | None = None, lexical_weight: float = 1.0,
               semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT) -> list[Hit]:
        """Rank documents; see ``Engine.search_documents``."""
        result: list[Hit] = self._send(_Call("POST", f"{API}/documents/search", _search_body(
            query, k, embedding, ids, metadata, semantic, lexical_weight, semantic_weight),
            decode=_list(Hit)))
        return result


class Client:
    """A blocking client of ``hms serve``. Use it as a context manager, or call ``close()``."""

    def __init__(self, base_url: str, api_key: str | None = None, tenant: str | None = None, *,
                 timeout: float | None = DEFAULT_TIMEOUT,
                 transport: httpx.BaseTransport | None = None,
                 vector_mask: VectorMask | None = None) -> None:
        if vector_mask is not None and not isinstance(vector_mask, VectorMask):
            raise InvalidRequest("vector_mask: expected a hmsengine.vectormask.VectorMask")
        self._mask = vector_mask
        self._http = httpx.Client(base_url=base_url, headers=_headers(api_key, tenant),
                                  timeout=timeout, transport=transport)
        self.memory = MemoryClient(self._send)
        self.documents = DocumentsClient(self._send)

    def _send(self, call: _Call) -> Any:
        call = call.masked(self._mask)
        content = _content(call)
        try:
            response = self._http.request(
                call.method, call.path, content=content, params=call.params,
                headers={"Content-Type": "application/json"} if content is not None else None)
        except httpx.TransportError as exc:
            raise ServerUnavailable(f"{call.method} {call.path}: {exc!s} ({type(exc).__name__})",
                                    ) from exc
        return call.result(response)

    def healthz(self) -> dict[str, Any]:
        """The server's health answer (``{"status": "ok"}``)."""
        result: dict[str, Any] = self._send(_Call("GET", "/healthz"))
        return result

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- the asynchronous client ------------------------------------------------------------------
