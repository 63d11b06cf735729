"""``hms serve``: the ASGI app under hypercorn's trio worker, with an ordered, graceful shutdown.

Nursery layout (outermost first; shutdown runs inside out)::

    signal receiver (SIGINT, SIGTERM)      opened first: a signal never kills the process raw
      tenant pool                          holder tasks of the open stores (tenants.py)
        watcher                            first signal: drain; second: stop waiting for requests
        hypercorn                          accepts, serves; on shutdown stops accepting, lets
                                           in-flight requests finish within the grace period

On SIGINT or SIGTERM, hypercorn stops accepting and waits (at most ``--grace`` seconds) for the
requests in flight, then the pool closes every store (each ``Engine.open`` block finishes its
queued writes and syncs), and the process exits 0. A write that was answered was durable before
its answer went out, so no acknowledged write is lost whatever the timing of the signal.

Start-up checks everything it can before binding: the ``--memory-config`` and ``--api-keys``
files are read and validated (a bad one stops the server with a message and exit code 2);
without ``--memory-config``, the ``HMS_MEMORY_CONFIG`` environment variable gives the memory
configuration (a path to its JSON file, or the JSON itself when it starts with ``{``), checked
the same way; a ``fileBase`` overlapping ``--root`` is refused (exit 2), ``--allow-host`` and
``--allow-origin`` entries are checked, and the root is created. Binding a non-loopback address
without ``--api-keys`` prints a warning. Once bound, one line ``hms serve: listening on
http://HOST:PORT`` goes to standard output (tests and scripts read the port from it when
``--port 0`` asked for any free one).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import logging
import math
import os
import signal
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import trio

from ..errors import HmsError, InvalidRequest
from ..memory.config import MemoryConfig
from ..replication.options import Replication, check_segment, parse_target
from .auth import KeyRing
from .guard import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY,
    RequestGuard,
    check_host_argument,
    check_origin_argument,
)
from .tenants import DEFAULT_MAX_OPEN, TenantPool, check_file_base, replicated_tenants

if TYPE_CHECKING:
    from .app import ServerApp

logger = logging.getLogger("hmsengine.server")
EXIT_OK, EXIT_BAD_INPUT, EXIT_FAILED = 0, 2, 4
MEMORY_CONFIG_ENV = "HMS_MEMORY_CONFIG"
MEMORY_CONFIG_HINT = (f"{MEMORY_CONFIG_ENV} holds the path of a MemoryConfig JSON file, or the "
                      "JSON itself ('{\"supersession\": \"latest-by-subject\"}'); unset it for "
                      "the defaults")
DEFAULT_GRACE = 10.0


@attrs.frozen(kw_only=True)
class ServeOptions:
    """What ``hms serve`` runs with, validated."""

    root: Path
    host: str = "127.0.0.1"
    port: int = 8080
    keys: KeyRing | None = None
    config: MemoryConfig = attrs.field(factory=MemoryConfig)
    config_source: str = "the defaults"  # where the memory configuration came from
    embedding_dim: int | None = None
    max_body: int = DEFAULT_MAX_BODY
    timeout: float = DEFAULT_BODY_TIMEOUT
    grace: float = DEFAULT_GRACE
    max_tenants: int = DEFAULT_MAX_OPEN
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    replication: Replication | None = None  # each tenant under target/<tenant>
    takeover: str | None = None  # "wait" or "now": take tenants over from another node

    def guard(self) -> RequestGuard:
        """The Host and Origin allow-lists these options give (server/guard.py)."""
        return RequestGuard.build(bind_host=self.host, allow_hosts=self.allow_hosts,
                                  allow_origins=self.allow_origins)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``hms serve`` (shared by the ``hms`` parser and ``main``)."""
    parser.add_argument("--root", required=True, help="directory holding one store per tenant")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s)")
    parser.add_argument("--port", type=int, default=8080,
                        help="port to bind; 0 picks a free one (default %(default)s)")
    parser.add_argument("--api-keys", metavar="FILE",
                        help="JSON: tenant -> list of sha256 hex of its keys; then every request "
                             "needs Authorization: Bearer <key>")
    parser.add_argument("--memory-config", metavar="FILE",
                        help="a MemoryConfig as JSON, used for every tenant (default: "
                             f"${MEMORY_CONFIG_ENV}, a path or inline JSON, if set)")
    parser.add_argument("--input-dim", type=int, metavar="N",
                        help="dimension of caller-supplied embeddings (Engine.open's embedding_dim)")
    parser.add_argument("--max-body", type=int, default=DEFAULT_MAX_BODY, metavar="BYTES",
                        help="largest request body accepted (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_BODY_TIMEOUT, metavar="SECONDS",
                        help="slow clients: idle connections, each read and a whole body must "
                             "take less (default %(default)s)")
    parser.add_argument("--grace", type=float, default=DEFAULT_GRACE, metavar="SECONDS",
                        help="on SIGINT/SIGTERM, how long in-flight requests may still run "
                             "(default %(default)s)")
    parser.add_argument("--max-tenants", type=int, default=DEFAULT_MAX_OPEN, metavar="N",
                        help="stores open at once; the least recently used idle one is closed "
                             "beyond it (default %(default)s)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="a host name clients may use in the Host header besides localhost, "
                             "127.0.0.1, [::1] and --host (repeatable; any port)")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="a web origin (scheme://host[:port]) whose pages may call the API, "
                             "with CORS answers (repeatable); every other Origin is refused")
    parser.add_argument("--replicate-to", metavar="s3://BUCKET/PREFIX",
                        help="ship every tenant's journal to PREFIX/<tenant>/ in this bucket "
                             "(endpoint and credentials from AWS_*; needs the 'replicate' extra)")
    parser.add_argument("--takeover", nargs="?", const="wait", choices=("wait", "now"),
                        help="with --replicate-to: take the bucket's tenants over from the node "
                             "that served them: wait for each lease to expire (or 'now': the old "
                             "node is known to be gone), restore the tenants missing here, serve")
    parser.add_argument("--replica-lag", type=float, default=1.0, metavar="SECONDS",
                        help="replication lag bound (default %(default)s)")
    parser.add_argument("--lease-ttl", type=float, default=15.0, metavar="SECONDS",
                        help="a tenant's lease expires this long after its node stopped "
                             "renewing it (default %(default)s)")
    parser.add_argument("--node", metavar="NAME",
                        help="this node's name in the leases (default: the host name)")


def _read_json(path: str, option: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"{option} {path}: cannot read it ({exc})") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidRequest(f"{option} {path}: not valid JSON ({exc})") from None


def _positive(value: float, option: str) -> float:
    if not math.isfinite(value) or value <= 0:
        raise InvalidRequest(f"{option}: expected a positive number, got {value}")
    return value


def memory_config(option: str | None, environ: Any = os.environ) -> tuple[MemoryConfig, str]:
    """The memory configuration and where it came from (for messages): the ``--memory-config``
    file, else ``HMS_MEMORY_CONFIG`` (a path, or inline JSON when it starts with ``{``; empty
    counts as unset), else the defaults. ``InvalidRequest`` naming the source when it cannot be
    read or is not a valid MemoryConfig."""
    if option:
        source, body = f"--memory-config {option}", _read_json(option, "--memory-config")
    else:
        raw = (environ.get(MEMORY_CONFIG_ENV) or "").strip()
        if not raw:
            return MemoryConfig(), "the defaults"
        if raw.startswith("{"):
            source = f"{MEMORY_CONFIG_ENV} (inline JSON)"
            try:
                body = json.loads(raw)
            except ValueError as exc:
                raise InvalidRequest(f"{source}: not valid JSON ({exc})",
                                     hint=MEMORY_CONFIG_HINT) from None
        else:
            source = f"{MEMORY_CONFIG_ENV}={raw}"
            try:
                body = _read_json(raw, MEMORY_CONFIG_ENV)
            except InvalidRequest as exc:
                raise InvalidRequest(exc.message, hint=MEMORY_CONFIG_HINT) from None
    try:
        return MemoryConfig.from_json(body), source
    except InvalidRequest as exc:
        raise InvalidRequest(f"{source}: {exc.message}", hint=exc.hint) from None


def options_from_args(args: argparse.Namespace) -> ServeOptions:
    """Validate the command line and read the files it names; ``InvalidRequest`` if bad."""
    config, source = memory_config(args.memory_config)
    keys = KeyRing.from_file(args.api_keys) if args.api_keys else None
    if not 0 <= args.port <= 65535:
        raise InvalidRequest(f"--port: expected 0 to 65535, got {args.port}")
    if args.input_dim is not None and not 1 <= args.input_dim <= 65536:
        raise InvalidRequest(f"--input-dim: expected 1 to 65536, got {args.input_dim}")
    if args.max_body < 1:
        raise InvalidRequest(f"--max-body: expected a positive number of bytes, got {args.max_body}")
    if args.max_tenants < 1:
        raise InvalidRequest(f"--max-tenants: expected a positive integer, got {args.max_tenants}")
    root = Path(args.root)
    if root.exists() and not root.is_dir():
        raise InvalidRequest(f"--root {root}: exists and is not a directory")
    try:
        check_file_base(root, config.file_base)
    except InvalidRequest as exc:
        raise InvalidRequest(f"{source}: {exc.message}", hint=exc.hint) from None
    hosts = tuple(check_host_argument(h, "--allow-host") for h in getattr(args, "allow_host", []))
    origins = tuple(check_origin_argument(o) for o in getattr(args, "allow_origin", []))
    return ServeOptions(root=root, host=args.host, port=args.port, keys=keys, config=config,
                        config_source=source,
                        embedding_dim=args.input_dim, max_body=args.max_body,
                        timeout=_positive(args.timeout, "--timeout"),
                        grace=_positive(args.grace, "--grace"), max_tenants=args.max_tenants,
                        allow_hosts=hosts, allow_origins=origins,
                        replication=_replication(args), takeover=args.takeover)


def _replication(args: argparse.Namespace) -> Replication | None:
    if args.replicate_to is None:
        if args.takeover is not None:
            raise InvalidRequest("--takeover needs --replicate-to (the bucket to take over from)")
        return None
    target = parse_target(args.replicate_to, "--replicate-to")
    replication = Replication(target=target, max_lag=_positive(args.replica_lag, "--replica-lag"),
                              lease_ttl=_positive(args.lease_ttl, "--lease-ttl"))
    if args.node:
        replication = attrs.evolve(replication, node=check_segment(args.node, "--node"))
    return replication


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(options: ServeOptions) -> str | None:
    """The warning printed when a non-loopback address is bound without API keys, or a
    wildcard address without any --allow-host (clients then reach it only by loopback names)."""
    if options.keys is None and not is_loopback(options.host):
        return (f"warning: binding {options.host} without --api-keys: anyone who can reach this "
                "address can read and change every tenant's memory")
    if options.host in ("0.0.0.0", "::") and not options.allow_hosts:
        return (f"warning: binding {options.host} without --allow-host: requests are answered "
                "only when their Host header is localhost, a loopback address or "
                f"{options.host}; name the others with --allow-host NAME")
    return None


def hypercorn_config(options: ServeOptions) -> Any:
    from hypercorn.config import Config

    config = Config()
    host = f"[{options.host}]" if ":" in options.host else options.host
    config.bind = [f"{host}:{options.port}"]
    # Slow clients: a connection with no request under way (also one still sending its headers)
    # is closed after keep_alive_timeout; each read of a request must complete within
    # read_timeout; the app bounds the whole body (ServerApp's body_timeout).
    config.keep_alive_timeout = options.timeout
    config.read_timeout = max(1, math.ceil(options.timeout))
    config.graceful_timeout = options.grace
    config.accesslog = None
    # Hypercorn's own messages go through logging like ours (one handler, one format).
    config.errorlog = logging.getLogger("hypercorn.error")
    config.include_server_header = False
    return config


async def serve(options: ServeOptions, *, announce: Any = None) -> None:
    """Serve until SIGINT or SIGTERM, then drain, close every store and return."""
    from hypercorn.trio import serve as hypercorn_serve

    from .app import ServerApp  # starlette: imported only when serving (the server extra)

    announce = announce or (lambda line: print(line, flush=True))
    logger.info("memory configuration: %s", options.config_source)
    shutdown = trio.Event()
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with TenantPool.open(options.root, max_open=options.max_tenants,
                                   config=options.config, embedding_dim=options.embedding_dim,
                                   replication=options.replication,
                                   takeover=options.takeover) as pool:
            if options.replication is not None and options.takeover is not None:
                pool.warm(await replicated_tenants(options.replication))
            server = ServerApp(pool, keys=options.keys, max_body=options.max_body,
                               body_timeout=options.timeout, guard=options.guard())
            http_scope = trio.CancelScope()
            async with server.mcp.running(), trio.open_nursery() as nursery:
                nursery.start_soon(_watch, signals, shutdown, http_scope)
                nursery.start_soon(_drain, server, shutdown, http_scope, options.grace)
                with http_scope:
                    async with trio.open_nursery() as http:
                        binds = await http.start(partial(
                            hypercorn_serve, server, hypercorn_config(options),
                            shutdown_trigger=shutdown.wait))
                        announce(f"hms serve: listening on {binds[0] if binds else '?'}")
                nursery.cancel_scope.cancel()
            logger.info("requests drained; closing %d open store(s)", len(pool.open_tenants))
    logger.info("stopped")


async def _watch(signals: Any, shutdown: trio.Event, http_scope: trio.CancelScope) -> None:
    async for signum in signals:
        if not shutdown.is_set():
            logger.info("%s: draining in-flight requests, then closing the stores",
                        signal.Signals(signum).name)
            shutdown.set()
        else:
            logger.warning("%s again: no longer waiting for in-flight requests",
                           signal.Signals(signum).name)
            http_scope.cancel()


async def _drain(server: ServerApp, shutdown: trio.Event, http_scope: trio.CancelScope,
                 grace: float) -> None:
    """After the shutdown signal, stop hypercorn once no request is in flight (or at the grace
    deadline). Hypercorn alone can wait the whole grace period on a keep-alive connection whose
    next request arrived as it shut down (its reader waits for a wake-up that never comes);
    such a request never reached the app, so it was never acknowledged, and dropping it loses
    nothing that was promised."""
    await shutdown.wait()
    with trio.move_on_after(grace):
        await server.wait_idle()
    http_scope.cancel()


def run(args: argparse.Namespace) -> int:
    """Run ``hms serve`` with parsed arguments; return the exit code."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # The MCP SDK logs every stateless request it ends at INFO: one line per /mcp call.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    try:
        options = options_from_args(args)
    except HmsError as exc:
        print(f"error [{exc.code}]: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return EXIT_BAD_INPUT
    warning = exposure_warning(options)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    try:
        trio.run(serve, options)
    except BaseException as raised:
        # The nurseries wrap a failure in exception groups; a lone one is reported as itself
        # (the policy of STYLE.md: no ExceptionGroup escapes), anything else re-raised.
        failure = _lone(raised)
        if isinstance(failure, KeyboardInterrupt):  # a SIGINT before the receiver was open
            return 130
        if isinstance(failure, OSError):  # the address is taken, the root cannot be made, ...
            where = failure.filename or f"{options.host}:{options.port}"
            print(f"error: {failure.strerror}: {where}" if failure.strerror
                  else f"error: {failure}", file=sys.stderr)
            return EXIT_FAILED
        if isinstance(failure, HmsError):
            print(f"error [{failure.code}]: {failure.message}", file=sys.stderr)
            return EXIT_FAILED
        raise
    return EXIT_OK


def _lone(exc: BaseException) -> BaseException:
    """The single exception inside nested exception groups, or ``exc`` itself."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def main(argv: list[str] | None = None) -> int:
    """``python -m hmsengine.server.serve``: the same as ``hms serve``."""
    parser = argparse.ArgumentParser(prog="hms serve", description="serve the JSON contract over HTTP")
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and EXIT_BAD_INPUT
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
