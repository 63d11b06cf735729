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
as ``.code``; a refused key is :class:`~hmsengine.server.auth.Unauthorized` (401) or
``Forbidden`` (403); a server that cannot be reached is :class:`ServerUnavailable`.

``AsyncClient`` is the same API with ``await``; it runs under trio and under asyncio (httpx's
async client sits on anyio). Requests are built and answers decoded by code shared by both
clients (``_Call``); only the sending differs. ``timeout`` (seconds, default 60) bounds each
request; with ``AsyncClient``, cancel scopes and ``asyncio.timeout`` work as well.
"""

from __future__ import annotations

import datetime as _dt
import json
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import attrs
import httpx

from .clock import to_ms
from .engine.values import Document, Hit, PutResult
from .errors import (
    Conflict,
    CorruptStore,
    DurabilityError,
    EngineClosed,
    HmsError,
    IncompatibleStore,
    InvalidRequest,
    NotFound,
    ProvenanceError,
    StoreLocked,
    WrongKey,
)
from .memory.values import (
    ConsolidateReport,
    Explanation,
    Fact,
    ForgetReport,
    ForgetScope,
    LoadResult,
    Profile,
    RecallHit,
    RememberInput,
    RememberResult,
)
from .server.auth import Forbidden, Unauthorized
from .server.tenants import InvalidTenant

__all__ = ["AsyncClient", "Client", "ServerUnavailable"]

Time = int | _dt.datetime
T = TypeVar("T")
API = "/api/v1"
DEFAULT_TIMEOUT = 60.0


class ServerUnavailable(HmsError, ConnectionError):
    """The server could not be reached, or the connection broke before an answer came."""

    code = "unavailable"
    default_hint = "check that `hms serve` runs at this address, then retry"


class BadResponse(HmsError):
    """The server answered something that is not this API's JSON (a proxy page, a newer server)."""

    code = "bad_response"


_BY_CODE: dict[str, type[HmsError]] = {
    cls.code: cls for cls in (
        InvalidRequest, NotFound, Conflict, WrongKey, CorruptStore, StoreLocked, DurabilityError,
        ProvenanceError, IncompatibleStore, EngineClosed, InvalidTenant, Unauthorized, Forbidden,
    )
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _error(status: int, body: Any) -> HmsError:
    """The HmsError for an error answer, with ``.status`` and the server's ``.code``."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code, message = error["code"], str(error.get("message", ""))
        hint = error.get("hint") if isinstance(error.get("hint"), str) else None
    else:
        code, message, hint = "http_error", f"HTTP {status} without an error body", None
    cls = _BY_CODE.get(code) or (InvalidRequest if status in (400, 408, 413, 422) else HmsError)
    exc = ProvenanceError(message, reason=code, hint=hint) if cls is ProvenanceError \
        else cls(message, hint=hint)
    if exc.code != code:
        exc.code = code  # type: ignore[misc]  # the server's code on this instance
    exc.status = status  # type: ignore[attr-defined]
    return exc


# -- JSON <-> values ---------------------------------------------------------------------------

_HINTS: dict[type, dict[str, Any]] = {}


def _decode(tp: Any, value: Any) -> Any:
    """A JSON value as the attrs value (or tuple, or plain JSON) that ``tp`` describes."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        arms = [a for a in typing.get_args(tp) if a is not type(None)]
        for arm in arms:
            if attrs.has(arm) and isinstance(value, dict):
                return _decode(arm, value)
        return _decode(arms[0], value) if len(arms) == 1 else value
    if isinstance(tp, type) and attrs.has(tp):
        if not isinstance(value, dict):
            raise BadResponse(f"expected an object for {tp.__name__}, got {type(value).__name__}")
        hints = _HINTS.get(tp)
        if hints is None:
            hints = _HINTS[tp] = typing.get_type_hints(tp)
        kwargs = {f.name: _decode(hints[f.name], value[_camel(f.name)])
                  for f in attrs.fields(tp) if _camel(f.name) in value}
        try:
            return tp(**kwargs)
        except TypeError as exc:
            raise BadResponse(f"an incomplete {tp.__name__}: {exc}") from None
    if origin is tuple and isinstance(value, list):
        item = typing.get_args(tp)[0] if typing.get_args(tp) else Any
        return tuple(_decode(item, v) for v in value)
    return value


def _items(tp: type[T], body: Any) -> list[T]:
    if not isinstance(body, dict) or not isinstance(body.get("items"), list):
        raise BadResponse("expected {\"items\": [...]}")
    return [_decode(tp, v) for v in body["items"]]


def _plain(value: Any, field: str) -> Any:
    """A parameter as JSON: aware datetimes stay for ``_time``; tuples and arrays become lists."""
    if isinstance(value, (str, bytes, Mapping)) or value is None:
        return dict(value) if isinstance(value, Mapping) else value
    if hasattr(value, "tolist"):  # numpy arrays
        return value.tolist()
    if isinstance(value, Sequence):
        return [_plain(v, field) for v in value]
    return value


def _time(value: Time | None, field: str) -> int | None:
    return None if value is None else to_ms(value, field=field)


_TIME_FIELDS = frozenset({"event_time", "valid_from", "valid_to", "as_of", "known_at",
                          "observed_at", "ingested_before", "event_before"})


def _body(**params: Any) -> dict[str, Any]:
    """The camelCase JSON body of a call: times in ms, None left out (the server's default)."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        if value is None:
            continue
        out[_camel(name)] = _time(value, name) if name in _TIME_FIELDS else _plain(value, name)
    return out


def _input(value: RememberInput | Mapping[str, Any], where: str) -> dict[str, Any]:
    if isinstance(value, RememberInput):
        return _body(**{f.name: getattr(value, f.name) for f in attrs.fields(RememberInput)})
    if isinstance(value, Mapping):
        known = {f.name for f in attrs.fields(RememberInput)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise InvalidRequest(f"{where}{unknown[0]}: unknown field")
        return _body(**value)
    raise InvalidRequest(f"{where.rstrip('.') or 'input'}: expected a RememberInput or a dict")


def _scope(scope: ForgetScope) -> dict[str, Any]:
    if not isinstance(scope, ForgetScope):
        raise InvalidRequest("scope: expected a ForgetScope (ForgetScope.ids([...]), ...)")
    value = scope.value
    if scope.kind in _TIME_FIELDS:
        value = _time(value, f"scope.{scope.kind}")
    return {_camel(scope.kind): _plain(value, "scope")}


def _doc_path(doc_id: str) -> str:
    if not isinstance(doc_id, str):
        raise InvalidRequest(f"id: expected a string, got {type(doc_id).__name__}")
    # Every byte but unreserved ones escaped, dots too: "." and ".." must stay ids, not
    # path segments that a URL normaliser would remove.
    return f"{API}/documents/" + quote(doc_id, safe="").replace(".", "%2E")


_RAISE: Any = object()  # _Call.missing: a 404 raises NotFound


@attrs.frozen
class _Call:
    """One request and how to read its answer: the protocol, shared by both clients."""

    method: str
    path: str
    body: Any = None
    params: dict[str, str] | None = None
    # A 404 answer is this value instead of NotFound (get of an unknown id: None).
    missing: Any = _RAISE
    decode: Any = None  # callable(body) -> value

    def result(self, response: httpx.Response) -> Any:
        try:
            body = response.json() if response.content else None
        except (ValueError, UnicodeDecodeError):
            body = None
        if response.status_code == 404 and self.missing is not _RAISE \
                and isinstance(body, dict) and body.get("error", {}).get("code") == "not_found":
            return self.missing
        if response.status_code >= 400:
            raise _error(response.status_code, body)
        if not isinstance(body, dict):
            raise BadResponse(f"HTTP {response.status_code} without a JSON object")
        return self.decode(body) if self.decode is not None else body


def _value(tp: type[T]) -> Any:
    return lambda body: _decode(tp, body)


def _list(tp: type[T]) -> Any:
    return lambda body: _items(tp, body)


# -- the calls, once --------------------------------------------------------------------------

class _MemoryCalls:
    """Builds the memory calls; the sync and async faces below send them."""

    @staticmethod
    def op(op: str, body: Any, decode: Any = None, missing: Any = _RAISE) -> _Call:
        return _Call("POST", f"{API}/memory/{quote(op, safe='')}", body, missing=missing,
                     decode=decode)

    def remember(self, text: str, **fields: Any) -> _Call:
        return self.op("remember", _input({"text": text, **fields}, ""), _value(RememberResult))

    def remember_many(self, inputs: Sequence[RememberInput | Mapping[str, Any]]) -> _Call:
        if isinstance(inputs, (str, bytes, Mapping)) or not isinstance(inputs, Sequence):
            raise InvalidRequest("inputs: expected a list of RememberInput")
        return self.op("rememberMany",
                       {"inputs": [_input(v, f"inputs[{i}].") for i, v in enumerate(inputs)]},
                       _list(RememberResult))

    def recall(self, query: str, **options: Any) -> _Call:
        return self.op("recall", {"query": query, **_body(**options)}, _list(RecallHit))

    def explain(self, query: str, id: str, **options: Any) -> _Call:
        return self.op("explain", {"query": query, "id": id, **_body(**options)},
                       _value(Explanation))


_CALLS = _MemoryCalls()


# -- the synchronous client -------------------------------------------------------------------

class MemoryClient:
    """``Memory``'s methods over HTTP (blocking)."""

    def __init__(self, send: Any) -> None:
        self._send = send

    def call(self, op: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON contract itself: ``memory.call(op, body)`` on the server."""
        result: dict[str, Any] = self._send(_CALLS.op(op, dict(body)))
        return result

    def remember(self, text: str, *, id: str | None = None, subject: str | None = None,
                 entities: Sequence[str] = (), metadata: Mapping[str, Any] | None = None,
                 embedding: Sequence[float] | None = None, event_time: Time | None = None,
                 valid_from: Time | None = None, valid_to: Time | None = None,
                 supersedes: Sequence[str] = (), kind: str = "fact", namespace: str = "default",
                 sources: Sequence[str] = (), actor: str | None = None,
                 importance: float | None = None) -> RememberResult:
        """Remember one fact (durable when it returns); see ``Memory.remember``."""
        result: RememberResult = self._send(_CALLS.remember(
            text, id=id, subject=subject, entities=entities, metadata=metadata,
            embedding=embedding, event_time=event_time, valid_from=valid_from, valid_to=valid_to,
            supersedes=supersedes, kind=kind, namespace=namespace, sources=sources, actor=actor,
            importance=importance))
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


def _search_body(query: str, k: int, embedding: Any, ids: Any, metadata: Any, semantic: Any,
                 lexical_weight: float, semantic_weight: float) -> dict[str, Any]:
    return {"query": query, **_body(k=k, embedding=embedding, ids=ids, metadata=metadata,
                                    semantic=semantic, lexical_weight=lexical_weight,
                                    semantic_weight=semantic_weight)}


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
               semantic_weight: float = 1.0) -> list[Hit]:
        """Rank documents; see ``Engine.search_documents``."""
        result: list[Hit] = self._send(_Call("POST", f"{API}/documents/search", _search_body(
            query, k, embedding, ids, metadata, semantic, lexical_weight, semantic_weight),
            decode=_list(Hit)))
        return result


def _headers(api_key: str | None, tenant: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    if tenant is not None:
        headers["X-HMS-Tenant"] = tenant
    return headers


def _content(call: _Call) -> bytes | None:
    if call.body is None:
        return None
    return json.dumps(call.body, ensure_ascii=False, allow_nan=False).encode("utf-8")


class Client:
    """A blocking client of ``hms serve``. Use it as a context manager, or call ``close()``."""

    def __init__(self, base_url: str, api_key: str | None = None, tenant: str | None = None, *,
                 timeout: float | None = DEFAULT_TIMEOUT,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._http = httpx.Client(base_url=base_url, headers=_headers(api_key, tenant),
                                  timeout=timeout, transport=transport)
        self.memory = MemoryClient(self._send)
        self.documents = DocumentsClient(self._send)

    def _send(self, call: _Call) -> Any:
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

class AsyncMemoryClient:
    """``Memory``'s methods over HTTP (``await``; trio or asyncio)."""

    def __init__(self, send: Any) -> None:
        self._send = send

    async def call(self, op: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON contract itself: ``memory.call(op, body)`` on the server."""
        result: dict[str, Any] = await self._send(_CALLS.op(op, dict(body)))
        return result

    async def remember(self, text: str, *, id: str | None = None, subject: str | None = None,
                       entities: Sequence[str] = (), metadata: Mapping[str, Any] | None = None,
                       embedding: Sequence[float] | None = None, event_time: Time | None = None,
                       valid_from: Time | None = None, valid_to: Time | None = None,
                       supersedes: Sequence[str] = (), kind: str = "fact",
                       namespace: str = "default", sources: Sequence[str] = (),
                       actor: str | None = None, importance: float | None = None) -> RememberResult:
        """Remember one fact (durable when it returns); see ``Memory.remember``."""
        result: RememberResult = await self._send(_CALLS.remember(
            text, id=id, subject=subject, entities=entities, metadata=metadata,
            embedding=embedding, event_time=event_time, valid_from=valid_from, valid_to=valid_to,
            supersedes=supersedes, kind=kind, namespace=namespace, sources=sources, actor=actor,
            importance=importance))
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
                     semantic_weight: float = 1.0) -> list[Hit]:
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
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._http = httpx.AsyncClient(base_url=base_url, headers=_headers(api_key, tenant),
                                       timeout=timeout, transport=transport)
        self.memory = AsyncMemoryClient(self._send)
        self.documents = AsyncDocumentsClient(self._send)

    async def _send(self, call: _Call) -> Any:
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
