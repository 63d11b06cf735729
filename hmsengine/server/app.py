"""The ASGI application: routes to ``memory.call`` and the engine's document methods.

Every data request goes through the same steps, in this order: the Host and Origin headers
(421/403, guard.py: before anything else, so a web page the browser opens gets nothing), the
tenant header (400 ``invalid_tenant``, before anything touches the file system), the API key
(401/403, with ``--api-keys``), the method (405: routes dispatch on exact methods, ``HEAD`` and
``OPTIONS`` included), a POST or PUT body's ``Content-Type`` (415 unless ``application/json``),
the body is read within ``max_body`` bytes (413, also for chunked bodies: the limit is counted
while the stream is read, never trusted from a header alone) and within ``body_timeout`` seconds
(408), parsed as JSON (400), checked for lone surrogates (422), and the tenant's store is opened
if needed (tenants.py). Then the operation runs and its result is the response.

Errors are always ``{"error": {"code", "message"[, "hint"]}}``; the table ``wire.ERRORS`` (which
the client reads errors back with) maps the error classes to HTTP statuses at this boundary.
Store-side failures (a corrupt or locked store, a failed fsync) answer with their code and a
fixed message (the details, which name server paths, go to the log); anything unexpected is a
500 with a fixed message, logged with its traceback. Other messages never show a server path:
the tenant's store directory and file base are written as paths relative to them
(``relative_paths``).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import trio
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..engine import DEFAULT_SEMANTIC_WEIGHT, Document, Hit, PutResult, check_unicode
from ..errors import HmsError, InvalidRequest, NotFound
from ..memory import Memory
from ..memory.jsonapi import OPERATIONS, whole, wire_error
from ..wire import error_body, http_status, to_json
from .auth import KeyRing
from .guard import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY,
    Refused,
    RequestGuard,
    check_json_content_type,
)
from .mcp_http import PATH as MCP_PATH
from .mcp_http import McpEndpoint
from .openapi import API, build_openapi
from .tenants import TENANT_HEADER, TenantPool, check_tenant

logger = logging.getLogger("hmsengine.server")

# After the limit is crossed, up to this much more of the body is read and dropped before the
# 413 goes out, so that the client (still sending) reads the answer instead of a reset.
DRAIN_BYTES = 1024 * 1024
INTERNAL_MESSAGE = "internal server error; the details are in the server log"
# Routes with no data: no Host, Origin or Content-Type check (probes reach them by any name).
UNGUARDED = frozenset({"/healthz", "/openapi.json"})
DOCUMENT_METHODS = ("GET", "PUT", "DELETE")
# A lone surrogate can come into a parsed body only from a \uD800-\uDFFF escape (UTF-8 bytes
# cannot encode one): bodies without such an escape skip the walk that looks for it.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# What a web app an operator allowed (--allow-origin) may send across origins.
CORS_HEADERS = ("authorization", "content-type", "x-hms-tenant", "mcp-protocol-version",
                "mcp-session-id")

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
    return json_response(status, error_body(code, message, hint), headers)


def relative_paths(text: str, places: Sequence[tuple[str, str]]) -> str:
    """``text`` with every ``(directory, name)`` of ``places`` written relative: a path under
    the directory loses it, the directory itself becomes ``name``. Longest directories first,
    so a file base inside a store directory is not half replaced."""
    for directory, name in sorted(places, key=lambda p: -len(p[0])):
        if directory and directory != os.sep:
            text = text.replace(directory + os.sep, "").replace(directory, name)
    return text


def hms_error_response(exc: HmsError, places: Sequence[tuple[str, str]] = ()) -> Response:
    """The answer for an ``HmsError``: its status from ``wire.ERRORS``; a fixed message instead
    of the error's own where that names server-side details (logged); 500 for any other. The
    error's own message and hint show ``places`` (directory, name) relatively."""
    mapped = http_status(exc)
    if mapped is None:
        logger.error("unmapped %s: %s", type(exc).__name__, exc)
        return error_response(500, exc.code, INTERNAL_MESSAGE)
    status, fixed = mapped
    if fixed is not None:
        logger.error("%s: %s", exc.code, exc)
        return error_response(status, exc.code, fixed, None,
                              {"Retry-After": "1"} if status == 503 else None)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return error_response(status, exc.code, relative_paths(exc.message, places),
                          relative_paths(exc.hint, places) or None, headers)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(raw: bytes) -> Any:
    """The JSON value of a body; ``HttpError`` 400 if it is not JSON, an empty body included
    (an operation without parameters takes ``{}``, as the OpenAPI document says)."""
    if not raw.strip():
        raise HttpError(400, "invalid_json", "the body is empty: send a JSON object ({} for an "
                                             "operation without parameters)")
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
                 body_timeout: float = DEFAULT_BODY_TIMEOUT,
                 guard: RequestGuard | None = None) -> None:
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
        self.guard = guard or RequestGuard()
        self.openapi = render(build_openapi(OPERATIONS,
                                            embedding_dim=getattr(pool, "embedding_dim", None)))
        # /mcp: the MCP tools over Streamable HTTP (mcp_http.py); serve() runs it.
        self.mcp = McpEndpoint(pool, keys=keys, max_body=max_body, respond=self._refusal)
        routes = Starlette(
            routes=[
                Route("/healthz", self.healthz, methods=["GET"]),
                Route("/openapi.json", self.openapi_json, methods=["GET"]),
                _exact(API + "/memory/{op}", self._route(self.memory_op), ("POST",)),
                _exact(API + "/memories", self._route(self.memories), ("GET",)),
                # The same listing under the name API.md gives it.
                _exact("/v1/memories", self._route(self.memories), ("GET",)),
                _exact(API + "/documents/search", self._route(self.search), ("POST",)),
                _exact(API + "/documents/{id:path}", self._route(self.document), DOCUMENT_METHODS),
                Route(MCP_PATH, self.mcp, methods=["POST"]),
            ],
            exception_handlers={HTTPException: self._http_exception},
        )
        # Only origins the operator allowed get CORS answers (preflights included); the guard
        # has refused every other Origin before this point.
        self.app: Any = routes if not self.guard.origins else CORSMiddleware(
            routes, allow_origins=sorted(self.guard.origins),
            allow_methods=["GET", "POST", "PUT", "DELETE"], allow_headers=CORS_HEADERS)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """The ASGI entry point: the Starlette app, counting the HTTP requests in flight."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.in_flight == 0:
            self._idle = trio.Event()
        self.in_flight += 1
        try:
            if scope["path"] not in UNGUARDED:
                headers = Headers(scope=scope)
                try:
                    self.guard.check_host(headers.get("host"))
                    self.guard.check_origin(headers.get("origin"))
                except Refused as refused:
                    response = error_response(refused.status, refused.code, refused.message,
                                              refused.hint, _closing(headers))
                    await response(scope, receive, send)
                    return
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
            response = await answer(request)
            if response.status_code >= 400 and not request.scope.get("hms.body_read"):
                response.headers.update(_closing(request.headers))
            return response

        async def answer(request: Request) -> Response:
            tenant: str | None = None
            try:
                tenant = check_tenant(request.headers.get(TENANT_HEADER))
                if self.keys is not None:
                    self.keys.check(tenant, request.headers.getlist("authorization"))
                body: Any = None
                if request.method in ("POST", "PUT"):
                    check_json_content_type(request.headers.get("content-type"))
                    raw = await read_body(request, self.max_body, self.body_timeout)
                    request.scope["hms.body_read"] = True
                    body = parse_json(raw)
                    if not isinstance(body, dict):
                        raise InvalidRequest("the body must be a JSON object")
                    if _SURROGATE_ESCAPE.search(raw):  # a surrogate comes only from an escape
                        check_unicode(body, "")
                async with self.pool.use(tenant) as memory:
                    result = await handler(memory, request, body)
                return json_response(200, result)
            except HttpError as exc:
                return error_response(exc.status, exc.code, exc.message, None, exc.headers)
            except Refused as exc:
                return error_response(exc.status, exc.code, exc.message, exc.hint)
            except HmsError as exc:
                return hms_error_response(exc, self.pool.places(tenant) if tenant else ())
            except Exception:
                logger.exception("internal error on %s %s", request.method, request.url.path)
                return error_response(500, "internal", INTERNAL_MESSAGE)

        return endpoint

    def _refusal(self, exc: Exception, tenant: str | None) -> Response:
        """The response to a refusal of the guard or an HmsError (the /mcp endpoint's too)."""
        if isinstance(exc, Refused):
            return error_response(exc.status, exc.code, exc.message, exc.hint)
        assert isinstance(exc, HmsError)
        return hms_error_response(exc, self.pool.places(tenant) if tenant else ())

    async def _http_exception(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        codes = {404: "not_found", 405: "method_not_allowed"}
        code = codes.get(exc.status_code, "http_error")
        headers = dict(exc.headers or {})
        if "Allow" in headers:  # Starlette joins a set: give the methods in a stable order
            headers["Allow"] = ", ".join(sorted(m.strip() for m in headers["Allow"].split(",")))
        message = {404: f"no route {request.url.path}",
                   405: f"{request.method} is not allowed on {request.url.path}"}.get(
            exc.status_code, str(exc.detail))
        headers.update(_closing(request.headers))
        return error_response(exc.status_code, code, message, None, headers)

    # -- routes ---------------------------------------------------------------------------------

    async def healthz(self, request: Request) -> Response:
        """Liveness; with ``--replicate-to`` also each open tenant's replication lag."""
        body: dict[str, Any] = {"status": "ok"}
        target = self.pool.replication_target
        if target is not None:
            tenants = self.pool.replication_status()
            body["replication"] = {
                "target": target, "tenants": tenants,
                "maxLagMs": max((t["lagMs"] for t in tenants.values()), default=0)}
        return json_response(200, body)

    async def openapi_json(self, request: Request) -> Response:
        return Response(self.openapi, media_type="application/json")

    async def memory_op(self, memory: Memory, request: Request, body: Any) -> Any:
        op = request.path_params["op"]
        if op not in OPERATIONS:
            raise HttpError(404, "not_found", f"no memory operation {op!r}")
        return await memory.call(op, body)

    async def memories(self, memory: Memory, request: Request, body: Any) -> Any:
        """``GET /api/v1/memories?namespace=&subject=&limit=&cursor=...``: ``list`` by query."""
        return await memory.call("list", list_query(request.query_params.multi_items()))

    async def search(self, memory: Memory, request: Request, body: Any) -> Any:
        fields = _fields(body, "search", {"query", "k", "embedding", "ids", "metadata", "semantic",
                                          "lexicalWeight", "semanticWeight"}, ("query",))
        try:
            hits: list[Hit] = await memory.engine.search_documents(
                fields.pop("query"), k=whole(fields.pop("k", 10)),
                embedding=fields.pop("embedding", None), ids=fields.pop("ids", None),
                metadata=fields.pop("metadata", None), semantic=fields.pop("semantic", None),
                lexical_weight=fields.pop("lexicalWeight", 1.0),
                semantic_weight=fields.pop("semanticWeight", DEFAULT_SEMANTIC_WEIGHT))
        except HmsError as exc:  # messages name the fields as the request does (camelCase)
            wire_error(exc)
            raise
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
        if request.method != "DELETE":  # the route answers no other method; never guess one
            raise HttpError(405, "method_not_allowed",
                            f"{request.method} is not allowed on {request.url.path}",
                            headers={"Allow": ", ".join(sorted(DOCUMENT_METHODS))})
        purge = _flag(request.query_params.get("purge"), "purge")
        unknown = sorted(set(request.query_params) - {"purge"})
        if unknown:
            raise InvalidRequest(f"{unknown[0]}: unknown query parameter")
        if not await engine.delete_document(doc_id, purge=purge):
            raise NotFound(f"no document {doc_id!r}")
        return {"id": doc_id, "deleted": True}


def _closing(headers: Headers) -> dict[str, str]:
    """``Connection: close`` for a refusal of a request whose body was not read: the server
    closes such a connection, and a client told so opens a new one for its next request
    instead of sending it into the closed one."""
    length = headers.get("content-length")
    if headers.get("transfer-encoding") is not None or (length is not None and length.strip() != "0"):
        return {"Connection": "close"}
    return {}


def _exact(path: str, endpoint: Callable[[Request], Awaitable[Response]],
           methods: Sequence[str]) -> Route:
    """A route answering exactly ``methods``: Starlette adds HEAD to every GET route, and a
    data route must never run for a method it does not name (405 with ``Allow`` instead)."""
    route = Route(path, endpoint, methods=list(methods))
    route.methods = set(methods)
    return route


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


# The query parameters of GET /api/v1/memories: name -> (repeatable, integer).
LIST_PARAMETERS = {"namespace": (False, False), "subject": (False, False),
                   "entity": (False, False), "kind": (True, False), "status": (True, False),
                   "asOf": (False, True), "knownAt": (False, True), "limit": (False, True),
                   "cursor": (False, False)}


def list_query(pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The ``list`` body of a query string (``kind`` and ``status`` may repeat)."""
    body: dict[str, Any] = {}
    for name, value in pairs:
        shape = LIST_PARAMETERS.get(name)
        if shape is None:
            raise InvalidRequest(f"{name}: unknown query parameter",
                                 hint=f"known: {', '.join(LIST_PARAMETERS)}")
        repeatable, integer = shape
        parsed: Any = value
        if integer:
            if not value.lstrip("-").isdigit() or len(value) > 20:
                raise InvalidRequest(f"{name}: expected an integer, got {value!r}")
            parsed = int(value)
        if repeatable:
            body.setdefault(name, []).append(parsed)
        elif name in body:
            raise InvalidRequest(f"{name}: given more than once")
        else:
            body[name] = parsed
    for name in ("kind", "status"):
        if name in body and len(body[name]) == 1:
            body[name] = body[name][0]
    return body


def _flag(value: str | None, name: str) -> bool:
    if value is None or value == "false":
        return False
    if value == "true":
        return True
    raise InvalidRequest(f"{name}: expected true or false, got {value!r}")
