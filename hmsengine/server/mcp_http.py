"""``/mcp``: the MCP tools of ``hms mcp`` over Streamable HTTP, for every tenant of ``hms serve``.

The transport is the ``mcp`` SDK's, in stateless mode with JSON responses: every POST carries
one JSON-RPC message and gets its answer in the response, so no session outlives a request and
any tenant's store may close between two calls. The tools are those of ``hms mcp``
(hmsengine/mcp.py), each call run on the memory of the request's tenant.

What a request must show, in this order, as on the JSON routes (server/app.py):

* Host and Origin (guard.py, checked by ``ServerApp`` before any route): DNS rebinding and
  cross-site requests are exactly what the MCP specification tells a local server to refuse.
  An MCP client sends no Origin (a browser-based one does, and needs ``--allow-origin``).
* ``X-HMS-Tenant`` picks the tenant (400 ``invalid_tenant``); with ``--api-keys``,
  ``Authorization: Bearer <key>`` valid for that tenant (401/403), before any store is opened.
* A POST must say ``Content-Type: application/json`` (415), which every MCP client sends; the
  SDK then checks its own protocol headers (``Accept``, ``MCP-Protocol-Version``) and answers
  GET and DELETE (sessions, which stateless mode has none of) with 405.
* The body is bounded by ``--max-body`` (413), counted by the SDK while it reads.

The SDK's own Host/Origin check is off: the guard above is the one list of allowed names, shared
with the JSON routes. Errors before the MCP layer are the server's JSON error bodies; a tool's
failure is an MCP tool result with ``isError`` (hmsengine/mcp.py).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.datastructures import Headers

from ..errors import HmsError
from ..memory import Memory
from .auth import KeyRing
from .guard import Refused, check_json_content_type
from .tenants import TENANT_HEADER, TenantPool, check_tenant

logger = logging.getLogger("hmsengine.server")
PATH = "/mcp"
SCOPE_KEY = "hms.memory"


def _memory_of(ctx: Any) -> Memory:
    """The tenant's memory the endpoint put in the ASGI scope of the request being served."""
    request = getattr(ctx, "request", None)
    memory = request.scope.get(SCOPE_KEY) if request is not None else None
    if not isinstance(memory, Memory):
        raise RuntimeError("an MCP call without its tenant's memory")
    return memory


class McpEndpoint:
    """The ASGI app of ``/mcp``; ``running()`` must be entered while it serves."""

    def __init__(self, pool: TenantPool, *, keys: KeyRing | None, max_body: int,
                 respond: Any) -> None:
        self.pool = pool
        self.keys = keys
        self.max_body = max_body
        # respond(exc, tenant) -> a Response for an HmsError or a Refused (the app's mapping).
        self._respond = respond
        self._manager: Any = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the SDK's session manager (its task group) for as long as the block runs."""
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from ..mcp import build_server

        manager = StreamableHTTPSessionManager(
            app=build_server(_memory_of), stateless=True, json_response=True,
            security_settings=None, max_request_body_size=self.max_body)
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = Headers(scope=scope)
        tenant: str | None = None
        try:
            tenant = check_tenant(headers.get(TENANT_HEADER))
            if self.keys is not None:
                self.keys.check(tenant, headers.getlist("authorization"))
            if scope["method"] == "POST":
                check_json_content_type(headers.get("content-type"))
            manager = self._manager
            if manager is None:
                raise Refused(503, "unavailable", "the MCP endpoint is not running",
                              "retry once the server has started")
            async with self.pool.use(tenant) as memory:
                await manager.handle_request({**scope, SCOPE_KEY: memory}, receive, send)
        except (Refused, HmsError) as exc:
            response = self._respond(exc, tenant)
            await response(scope, receive, send)


__all__ = ["PATH", "McpEndpoint"]
