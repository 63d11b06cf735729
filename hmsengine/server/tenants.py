"""Tenants: one store per tenant under the server's root, opened on first use, a cap on open ones.

A tenant name is 1 to 64 of ``[A-Za-z0-9_-]`` (case-sensitive; ``default`` when the header is
absent). Anything else is refused before the file system is touched, so no directory is ever
created for an invalid name (and no name can climb out of the root: ``.``, ``/`` and ``..`` are
not in the alphabet).

Each open tenant is held by its own task in the pool's nursery: ``Engine.open`` is an async
context manager with a nursery inside, which must be entered and left by one task, so a request
never opens a store itself; it asks the pool, which starts a holder task and waits until the
store is ready. Holders live as long as the pool, or until evicted: when more than ``max_open``
tenants are open, the least recently used idle ones (no request in flight) are closed. A request
for a tenant that is being closed waits for the close to finish, then opens it again (a store
directory can be opened once at a time).

Closing the pool closes every store after their in-flight writes are durable (``Engine.open``'s
own guarantee); the server drains requests before that.

File bases are per tenant: with ``fileBase`` set in the memory configuration, tenant ``T`` reads
files only under ``<fileBase>/T`` (``file_base_of``), so no tenant can remember, hydrate or learn
anything of another tenant's files. A file base that overlaps the root (one inside the other) is
refused when the pool opens: no tenant may reach any store's files (the memory layer also refuses
any path inside its own store, whatever the base).
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from ..engine import adopt_replica, replicated_stores
from ..errors import EngineClosed, HmsError, InvalidRequest, InvalidTenant
from ..facade import Engine
from ..memory import Memory
from ..memory.config import MemoryConfig
from ..memory.stored_policies import for_store
from ..replication.options import Replication

TENANT_HEADER = "x-hms-tenant"
DEFAULT_TENANT = "default"
TENANT_PATTERN = r"[A-Za-z0-9_-]{1,64}"
_TENANT_RE = re.compile(TENANT_PATTERN)
DEFAULT_MAX_OPEN = 64
logger = logging.getLogger("hmsengine.server")


def check_tenant(value: str | None) -> str:
    """The tenant named by a header value (``default`` when absent); ``InvalidTenant`` otherwise."""
    if value is None:
        return DEFAULT_TENANT
    if not _TENANT_RE.fullmatch(value):
        shown = value if len(value) <= 80 else value[:80] + "..."
        raise InvalidTenant(f"X-HMS-Tenant: {shown!r} is not a valid tenant name")
    return value


def check_file_base(root: str | os.PathLike[str], base: str | None) -> None:
    """Refuse (``InvalidRequest``) a file base that overlaps the root of the tenants' stores."""
    if base is None:
        return
    root_real, base_real = os.path.realpath(root), os.path.realpath(base)
    if _inside(base_real, root_real) or _inside(root_real, base_real):
        raise InvalidRequest(
            f"fileBase {base} overlaps the stores' root {os.fspath(root)}: tenants could read "
            "store files through it", hint="keep the file base and --root in separate directories")


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


async def replicated_tenants(replication: Replication) -> list[str]:
    """The tenants whose stores are in the bucket (``target/<tenant>/format.json``)."""
    names = await replicated_stores(replication.target)
    return [n for n in names if _TENANT_RE.fullmatch(n)]


@attrs.define(eq=False)
class _Tenant:
    """One tenant's open (or opening, or closing) store."""

    name: str
    memory: Memory | None = None
    engine: Engine | None = None
    users: int = 0
    last_used: float = 0.0
    closing: bool = False
    error: BaseException | None = None
    ready: trio.Event = attrs.field(factory=trio.Event)
    close_requested: trio.Event = attrs.field(factory=trio.Event)
    # Around a takeover's wait for the lease: closing the pool cancels it (it may wait long).
    adopting: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    closed: trio.Event = attrs.field(factory=trio.Event)


@attrs.define(eq=False)
class TenantPool:
    """The stores of every tenant under ``root``. Create it with ``async with TenantPool.open()``."""

    _root: Path
    _nursery: trio.Nursery
    _max_open: int
    _config: MemoryConfig
    _embedding_dim: int | None
    _replication: Replication | None = None
    _takeover: str | None = None
    _tenants: dict[str, _Tenant] = attrs.field(factory=dict)
    _closing: bool = False

    @staticmethod
    @asynccontextmanager
    async def open(root: str | os.PathLike[str], *, max_open: int = DEFAULT_MAX_OPEN,
                   config: MemoryConfig | None = None, embedding_dim: int | None = None,
                   replication: Replication | None = None,
                   takeover: str | None = None) -> AsyncIterator[TenantPool]:
        """A pool over ``root`` (created if missing). Leaving the block closes every store.

        With ``replication``, each tenant's store replicates to ``target/<tenant>``; with
        ``takeover`` (``"wait"`` or ``"now"``), opening a tenant first takes its lease over
        from the node that held it and restores it from the bucket if it is not here."""
        if isinstance(max_open, bool) or not isinstance(max_open, int) or max_open < 1:
            raise ValueError(f"max_open: expected a positive integer, got {max_open!r}")
        path = Path(root)
        check_file_base(path, (config or MemoryConfig()).file_base)
        await trio.to_thread.run_sync(lambda: path.mkdir(parents=True, exist_ok=True))
        async with trio.open_nursery() as nursery:
            pool = TenantPool(path, nursery, max_open, config or MemoryConfig(), embedding_dim,
                              replication, takeover)
            try:
                yield pool
            finally:
                pool._close_all()

    @property
    def embedding_dim(self) -> int | None:
        """The dimension every tenant's embeddings have (``--input-dim``), or None: each store's
        first embedding fixes its own."""
        return self._embedding_dim

    def file_base_of(self, name: str) -> str | None:
        """Tenant ``name``'s own file base: ``<fileBase>/<name>``, or None without a base."""
        base = self._config.file_base
        return None if base is None else os.path.join(base, name)

    def places(self, name: str) -> list[tuple[str, str]]:
        """The server directories a message about tenant ``name`` may name, each with what it
        is shown as instead (the HTTP layer writes paths relative to them)."""
        out = []
        for directory, shown in ((os.fspath(self._root / name), "<store>"),
                                 (self.file_base_of(name), "<file base>"),
                                 (os.fspath(self._root), "<root>")):
            if directory is not None:
                out.append((os.path.abspath(directory), shown))
                out.append((os.path.realpath(directory), shown))
        return out

    @property
    def open_tenants(self) -> list[str]:
        """Names of the tenants whose store is open now (for tests and statistics)."""
        return sorted(n for n, t in self._tenants.items() if t.memory is not None and not t.closing)

    @asynccontextmanager
    async def use(self, name: str) -> AsyncIterator[Memory]:
        """The memory of tenant ``name`` (already validated), open while the block runs."""
        tenant = await self._acquire(name)
        try:
            assert tenant.memory is not None
            yield tenant.memory
        finally:
            tenant.users -= 1
            tenant.last_used = trio.current_time()
            self._evict()

    async def _acquire(self, name: str) -> _Tenant:
        while True:
            if self._closing:
                raise EngineClosed("the server is shutting down")
            tenant = self._tenants.get(name)
            if tenant is None:
                return await self._open(name)
            if tenant.closing:
                await tenant.closed.wait()
                continue
            tenant.users += 1
            try:
                await tenant.ready.wait()
            except BaseException:
                tenant.users -= 1
                raise
            if tenant.error is not None:
                tenant.users -= 1
                raise tenant.error
            return tenant

    async def _open(self, name: str) -> _Tenant:
        tenant = _Tenant(name=name, users=1)
        self._tenants[name] = tenant
        try:
            # Shielded: a client that hangs up must not abandon a store half opened.
            with trio.CancelScope(shield=True):
                await self._nursery.start(self._hold, tenant)
        except BaseException as exc:
            # Forget the failed tenant so that a later request tries again (a lock held by
            # another process, for one, may go away); the requests waiting now see the error.
            # _hold's own cleanup may have removed it already: a second del was a KeyError,
            # which turned a 503 store_locked into a 500.
            if self._tenants.get(name) is tenant:
                del self._tenants[name]
            tenant.error = exc
            tenant.ready.set()
            tenant.closed.set()
            raise
        tenant.ready.set()
        self._evict()
        return tenant

    async def _hold(self, tenant: _Tenant, *, task_status: trio.TaskStatus[None]) -> None:
        started = False
        path = self._root / tenant.name
        replication = self._replication.for_tenant(tenant.name) if self._replication else None
        try:
            if replication is not None:
                restored = False
                with tenant.adopting:
                    restored = await adopt_replica(path, replication, takeover=self._takeover,
                                           announce=lambda line: logger.info("tenant %r: %s",
                                                                             tenant.name, line))
                if tenant.adopting.cancelled_caught:
                    raise EngineClosed("the server is shutting down")
                if restored:
                    logger.info("tenant %r: restored from %s", tenant.name, replication.target.url)
            async with Engine.open(path, embedding_dim=self._embedding_dim,
                                   replicate_to=replication) as engine:
                tenant.engine = engine
                config = self._config
                if config.file_base is not None:
                    config = attrs.evolve(config, file_base=self.file_base_of(tenant.name))
                # The server's policies are those of new stores: a tenant's record wins.
                tenant.memory = Memory(engine, for_store(engine, config))
                task_status.started()
                started = True
                await tenant.close_requested.wait()
                tenant.closing = True
        except Exception:
            if not started:
                raise  # to the request that asked for the store, through nursery.start
            # A store that fails while open (or while closing) must not take the server and
            # every other tenant down with it: log it; the next request opens it again.
            logger.exception("tenant %r: the store failed and was closed", tenant.name)
        finally:
            tenant.closing = True
            tenant.memory = None
            tenant.engine = None
            if self._tenants.get(tenant.name) is tenant:
                del self._tenants[tenant.name]
            tenant.closed.set()

    def warm(self, names: list[str]) -> None:
        """Open these tenants now, in the background (``--takeover`` at start-up: every
        tenant in the bucket is taken over before its first request arrives)."""
        for name in names:
            self._nursery.start_soon(self._warm_one, name)

    async def _warm_one(self, name: str) -> None:
        try:
            async with self.use(name):
                pass
        except HmsError as exc:
            logger.error("tenant %r could not be opened: %s", name, exc)

    def replication_status(self) -> dict[str, dict[str, Any]]:
        """Each open tenant's replication figures (for the health answer)."""
        out: dict[str, dict[str, Any]] = {}
        for name in self.open_tenants:
            engine = self._tenants[name].engine
            if engine is not None:
                stats = engine.statistics()
                out[name] = {"state": stats.replication_state, "lagMs": stats.replication_lag_ms,
                             "lagP99Ms": stats.replication_lag_p99_ms,
                             "pendingBytes": stats.replication_pending_bytes,
                             "errors": stats.replication_errors}
        return out

    @property
    def replication_target(self) -> str | None:
        return self._replication.target.url if self._replication is not None else None

    def _evict(self) -> None:
        """Close the least recently used idle tenants while more than ``max_open`` are open."""
        live = [t for t in self._tenants.values() if not t.closing and t.memory is not None]
        excess = len(live) - self._max_open
        if excess <= 0:
            return
        idle = sorted((t for t in live if t.users == 0), key=lambda t: t.last_used or -math.inf)
        for tenant in idle[:excess]:
            tenant.closing = True
            tenant.close_requested.set()

    def _close_all(self) -> None:
        self._closing = True
        for tenant in list(self._tenants.values()):
            tenant.closing = True
            tenant.close_requested.set()
            tenant.adopting.cancel()
