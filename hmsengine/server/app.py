"""The ASGI application: routes to ``memory.call`` and the engine's document methods.

Every request goes through the same steps, in this order: the tenant header is checked (400
``invalid_tenant``, before anything touches the file system), the API key (401/403, with
``--api-keys``), the body is read within ``max_body`` bytes (413, also for chunked bodies: the
limit is counted while the stream is read, never trusted from a header alone) and within
``body_timeout`` seconds (408), parsed as JSON (400), and the tenant's store is opened if needed
(tenants.py). Then the operation runs and its result is the response.

Errors are always ``{"error": {"code", "message"[, "hint"]}}``; the table ``STATUS`` maps the
error classes to HTTP statuses at this boundary. Store-side failures (a corrupt or locked store,
a failed fsync) answer with their code and a fixed message (the details, which name server paths,
go to the log); anything unexpected is a 500 with a fixed message, logged with its traceback.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..engine.values import Document, Hit, PutResult
from ..errors import (
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
from ..memory import Memory
from ..memory.jsonapi import OPERATIONS, to_json
from .auth import Forbidden, KeyRing, Unauthorized
from .openapi import API, build_openapi
from .tenants import TENANT_HEADER, InvalidTenant, TenantPool, check_tenant

logger = logging.getLogger("hmsengine.server")

DEFAULT_MAX_BODY = 8 * 1024 * 1024
DEFAULT_BODY_TIMEOUT = 30.0
# After the limit is crossed, up to this much more of the body is read and dropped before the
# 413 goes out, so that the client (still sending) reads the answer instead of a reset.
DRAIN_BYTES = 1024 * 1024
INTERNAL_MESSAGE = "internal server error; the details are in the server log"

# Error class -> (HTTP status, message sent: None = the error's own, else this fixed one).
STATUS: tuple[tuple[type[HmsError], int, str | None], ...] = (
    (InvalidTenant, 400, None),
    (Unauthorized, 401, None),
    (Forbidden, 403, None),
    (InvalidRequest, 422, None),
    (NotFound, 404, None),
    (Conflict, 409, None),
    (ProvenanceError, 409, None),
    (StoreLocked, 503, "the tenant's store is locked by another process"),
    (EngineClosed, 503, "the server is shutting down"),
    (DurabilityError, 503, "the tenant's store refuses writes after an I/O error; see the log"),
    (CorruptStore, 500, "the tenant's store is damaged; see the server log"),
    (WrongKey, 500, "the tenant's store cannot be opened; see the server log"),
    (IncompatibleStore, 500, "the tenant's store has a newer format; see the server log"),
)


class HttpError(Exception):
    """A transport-level refusal with its status and error code (bad JSON, 405, 408, 413)."""

    def __init__(self, status: int, code: str, message: str, *,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


def render(value: Any) -> bytes:
    """JSON bytes of a response. Strict (no NaN); non-ASCII as UTF-8 unless it cannot be
    (a lone surrogate from a request echoed in a message), then escaped."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, allow_nan=False, separators=(",", ":")).encode("ascii")


def json_response(status: int, value: Any, headers: Mapping[str, str] | None = None) -> Response:
    return Response(render(value), status_code=status, media_type="application/json",
                    headers=dict(headers or {}))


def error_response(status: int, code: str, message: str, hint: str | None = None,
                   headers: Mapping[str, str] | None = None) -> Response:
    body: dict[str, str] = {"code": code, "message": message}
    if hint:
        body["hint"] = hint
    return json_response(status, {"error": body}, headers)


def hms_error_response(exc: HmsError) -> Response:
    for cls, status, fixed in STATUS:
        if isinstance(exc, cls):
            if fixed is not None:
                logger.error("%s: %s", exc.code, exc)
                return error_response(status, exc.code, fixed, None,
                                      {"Retry-After": "1"} if status == 503 else None)
            headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
            return error_response(status, exc.code, exc.message, exc.hint or None, headers)
    logger.error("unmapped %s: %s", type(exc).__name__, exc)
    return error_response(500, exc.code, INTERNAL_MESSAGE)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(raw: bytes) -> Any:
    """The JSON value of a body (an empty body is ``{}``); ``HttpError`` 400 if it is not JSON."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        detail = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        raise HttpError(400, "invalid_json", f"the body is not valid JSON: {detail}") from None


async def read_body(request: Request, max_body: int, timeout: float) -> bytes:
    """The request body, refusing more than ``max_body`` bytes (declared or streamed).

    The limit is counted on the ASGI stream itself, so a chunked body (no Content-Length) or a
    Content-Length that lies is caught as well. Once it is crossed, up to ``DRAIN_BYTES`` more
    are read and dropped (for at most a second) so that a client still sending reads the 413
    rather than a connection reset; the response then closes the connection.
    """
    too_large = HttpError(413, "payload_too_large",
                          f"the body is larger than the limit of {max_body} bytes",
                          headers={"Connection": "close"})
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_body + DRAIN_BYTES:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    with trio.move_on_after(timeout) as scope:
        more = True
        while more:
            chunk, more = await _receive_chunk(request)
            size += len(chunk)
            if size > max_body:
                with trio.move_on_after(1.0):
                    while more and size <= max_body + DRAIN_BYTES:
                        chunk, more = await _receive_chunk(request)
                        size += len(chunk)
                raise too_large
            chunks.append(chunk)
    if scope.cancelled_caught:
        raise HttpError(408, "request_timeout",
                        f"the body did not arrive within {timeout:g} seconds",
                        headers={"Connection": "close"})
    return b"".join(chunks)


async def _receive_chunk(request: Request) -> tuple[bytes, bool]:
    """One piece of the body from the ASGI stream: (bytes, more to come)."""
    message = await request.receive()
    if message["type"] == "http.disconnect":
        raise HttpError(400, "client_disconnected", "the client went away during the body")
    return bytes(message.get("body", b"")), bool(message.get("more_body", False))


Handler = Callable[[Memory, Request, Any], Awaitable[Any]]


class ServerApp:
    """The routes over a tenant pool. ``app`` is the ASGI application."""

    def __init__(self, pool: TenantPool, *, keys: KeyRing | None = None,
                 max_body: int = DEFAULT_MAX_BODY,
                 body_timeout: float = DEFAULT_BODY_TIMEOUT) -> None:
        if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 1:
            raise ValueError(f"max_body: expected a positive integer, got {max_body!r}")
        if not (isinstance(body_timeout, (int, float)) and math.isfinite(body_timeout)
                and body_timeout > 0):
            raise ValueError(f"body_timeout: expected a positive number, got {body_timeout!r}")
        self.pool = pool
        self.in_flight = 0
        self._idle = trio.Event()
        self._idle.set()
        self.keys = keys
        self.max_body = max_body
        self.body_timeout = float(body_timeout)
        self.openapi = render(build_openapi(OPERATIONS))
        self.app = Starlette(
            routes=[
                Route("/healthz", self.healthz, methods=["GET"]),
                Route("/openapi.json", self.openapi_json, methods=["GET"]),
                Route(API + "/memory/{op}", self._route(self.memory_op), methods=["POST"]),
                Route(API + "/documents/search", self._route(self.search), methods=["POST"]),
                Route(API + "/documents/{id:path}", self._route(self.document),
                      methods=["PUT", "GET", "DELETE"]),
            ],
            exception_handlers={HTTPException: self._http_exception},
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """The ASGI entry point: the Starlette app, counting the HTTP requests in flight."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.in_flight == 0:
            self._idle = trio.Event()
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self._idle.set()

    async def wait_idle(self, settle: float = 0.1) -> None:
        """Return once no request has been in flight for ``settle`` seconds (shutdown uses it:
        a response is on the socket before its request stops counting)."""
        while True:
            await self._idle.wait()
            await trio.sleep(settle)
            if self.in_flight == 0:
                return

    # -- the pipeline every data route shares -------------------------------------------------

    def _route(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                tenant = check_tenant(request.headers.get(TENANT_HEADER))
                if self.keys is not None:
                    self.keys.check(tenant, request.headers.getlist("authorization"))
                body: Any = None
                if request.method in ("POST", "PUT"):
                    body = parse_json(await read_body(request, self.max_body, self.body_timeout))
                    if not isinstance(body, dict):
                        raise InvalidRequest("the body must be a JSON object")
                async with self.pool.use(tenant) as memory:
                    result = await handler(memory, request, body)
                return json_response(200, result)
            except HttpError as exc:
                return error_response(exc.status, exc.code, exc.message, None, exc.headers)
            except HmsError as exc:
                return hms_error_response(exc)
            except Exception:
                logger.exception("internal error on %s %s", request.method, request.url.path)
                return error_response(500, "internal", INTERNAL_MESSAGE)

        return endpoint

    async def _http_exception(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        codes = {404: "not_found", 405: "method_not_allowed"}
        code = codes.get(exc.status_code, "http_error")
        message = {404: f"no route {request.url.path}",
                   405: f"{request.method} is not allowed on {request.url.path}"}.get(
            exc.status_code, str(exc.detail))
        return error_response(exc.status_code, code, message, None, exc.headers)

    # -- routes ---------------------------------------------------------------------------------

    async def healthz(self, request: Request) -> Response:
        return json_response(200, {"status": "ok"})

    async def openapi_json(self, request: Request) -> Response:
        return Response(self.openapi, media_type="application/json")

    async def memory_op(self, memory: Memory, request: Request, body: Any) -> Any:
        op = request.path_params["op"]
        if op not in OPERATIONS:
            raise HttpError(404, "not_found", f"no memory operation {op!r}")
        return await memory.call(op, body)

    async def search(self, memory: Memory, request: Request, body: Any) -> Any:
        fields = _fields(body, "search", {"query", "k", "embedding", "ids", "metadata", "semantic",
                                          "lexicalWeight", "semanticWeight"}, ("query",))
        hits: list[Hit] = await memory.engine.search_documents(
            fields.pop("query"), k=fields.pop("k", 10), embedding=fields.pop("embedding", None),
            ids=fields.pop("ids", None), metadata=fields.pop("metadata", None),
            semantic=fields.pop("semantic", None),
            lexical_weight=fields.pop("lexicalWeight", 1.0),
            semantic_weight=fields.pop("semanticWeight", 1.0))
        return {"items": to_json(hits)}

    async def document(self, memory: Memory, request: Request, body: Any) -> Any:
        doc_id: str = request.path_params["id"]
        engine = memory.engine
        if request.method == "PUT":
            fields = _fields(body, "put", {"text", "metadata", "embedding"}, ("text",))
            result: PutResult = await engine.put_document(
                doc_id, fields["text"], metadata=fields.get("metadata"),
                embedding=fields.get("embedding"))
            return to_json(result)
        if request.method == "GET":
            doc: Document | None = await engine.get_document(doc_id)
            if doc is None:
                raise NotFound(f"no document {doc_id!r}")
            return to_json(doc)
        purge = _flag(request.query_params.get("purge"), "purge")
        unknown = sorted(set(request.query_params) - {"purge"})
        if unknown:
            raise InvalidRequest(f"{unknown[0]}: unknown query parameter")
        if not await engine.delete_document(doc_id, purge=purge):
            raise NotFound(f"no document {doc_id!r}")
        return {"id": doc_id, "deleted": True}


def _fields(body: Any, what: str, allowed: set[str], required: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidRequest(f"{what}: the body must be a JSON object")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidRequest(f"{unknown[0]}: unknown field for {what}",
                             hint=f"known: {', '.join(sorted(allowed))}")
    for name in required:
        if name not in body:
            raise InvalidRequest(f"{name}: required for {what}")
    return dict(body)


def _flag(value: str | None, name: str) -> bool:
    if value is None or value == "false":
        return False
    if value == "true":
        return True
    raise InvalidRequest(f"{name}: expected true or false, got {value!r}")
