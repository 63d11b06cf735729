"""What a request must show before any route sees it: an expected Host, no foreign Origin, and a
JSON body labelled as JSON.

Why (docs/SECURITY.md has the threat model): a server on 127.0.0.1 without ``--api-keys`` is
reachable by every web page the machine's browser opens.

* **Host** (DNS rebinding): a page on ``http://attacker.example:8080`` whose name the attacker
  re-points at 127.0.0.1 talks to this server as its own origin, so the browser lets it read the
  answers. Its requests carry ``Host: attacker.example:8080``. Only the names this server is
  known by are accepted: ``localhost``, ``127.0.0.1``, ``[::1]``, the ``--host`` it binds, and
  each ``--allow-host``, with any port. Anything else is ``421 invalid_host``.
* **Origin** (cross-site requests): a browser names the page's origin on every cross-origin
  request (and on every POST, PUT and DELETE). This server serves no pages, so any ``Origin``
  is foreign unless ``--allow-origin`` names it: ``403 forbidden_origin``, before the body is
  read or any store opened. Allowed origins get CORS answers (``ServerApp``), so a web app the
  operator trusts can call the API.
* **Content-Type**: a page may send a cross-origin POST without asking first (a CORS "simple
  request") only as ``text/plain``, a form or multipart. A POST or PUT must therefore say
  ``application/json`` (optionally with ``charset=utf-8``): anything else is ``415
  unsupported_media_type``, so no page can get a body past the browser's preflight.

The same rules hold with ``--api-keys`` (where a page cannot send a key it does not know, so they
are defence in depth); ``/healthz`` and ``/openapi.json`` carry no data and are not checked, so
load balancers and probes reach them by any name.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

import attrs

from ..errors import InvalidRequest

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
# The request limits' defaults (``--max-body``, ``--timeout``), here so that ``hms serve``'s
# options can be parsed without the server extra installed (its absence is said on use).
DEFAULT_MAX_BODY = 8 * 1024 * 1024
DEFAULT_BODY_TIMEOUT = 30.0
JSON_MEDIA_TYPE = "application/json"


class Refused(Exception):
    """A request the guard turns away: status, error code, message (a hint for the client)."""

    def __init__(self, status: int, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.hint = hint


def host_name(value: str) -> str:
    """The name part of a Host header value or a ``--host``/``--allow-host`` argument:
    lower case, without the port, without the brackets of an IPv6 literal or a trailing dot."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 0 else value
    if value.count(":") == 1:  # name:port (a bare IPv6 literal has more than one colon)
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def check_host_argument(value: str, option: str) -> str:
    """A ``--allow-host`` entry, normalised; ``InvalidRequest`` if it cannot be a host name."""
    name = host_name(value)
    if not name or any(c in name for c in "/ \t@?#*"):
        raise InvalidRequest(f"{option}: {value!r} is not a host name or address",
                             hint="give a name such as hms.internal, or an address")
    return name


def origin_key(value: str) -> str:
    """An origin as compared: ``scheme://host[:port]`` in lower case, no trailing slash."""
    return value.strip().rstrip("/").lower()


def check_origin_argument(value: str) -> str:
    """A ``--allow-origin`` entry, normalised; ``InvalidRequest`` unless it is an origin."""
    key = origin_key(value)
    scheme, sep, rest = key.partition("://")
    if not sep or scheme not in ("http", "https") or not rest or "/" in rest or "*" in rest:
        raise InvalidRequest(f"--allow-origin: {value!r} is not an origin",
                             hint="give scheme://host[:port], e.g. https://app.example.com "
                                  "(no path, no wildcard)")
    return key


@attrs.frozen(kw_only=True)
class RequestGuard:
    """The Host and Origin allow-lists of one server, and the checks that use them."""

    hosts: frozenset[str] = frozenset(LOOPBACK_NAMES)
    origins: frozenset[str] = frozenset()

    @classmethod
    def build(cls, *, bind_host: str | None = None, allow_hosts: Iterable[str] = (),
              allow_origins: Iterable[str] = ()) -> RequestGuard:
        """The guard of a server bound to ``bind_host`` with the given extra names/origins."""
        hosts = set(LOOPBACK_NAMES)
        if bind_host:
            hosts.add(host_name(bind_host))
        hosts.update(host_name(h) for h in allow_hosts)
        return cls(hosts=frozenset(hosts), origins=frozenset(origin_key(o) for o in allow_origins))

    def check_host(self, value: str | None) -> None:
        """Refuse (421) a Host header that names none of this server's names."""
        if value is None:
            raise Refused(421, "invalid_host", "the request has no Host header",
                          "send Host: 127.0.0.1:PORT (or a name the server allows)")
        name = host_name(value)
        if name in self.hosts or _is_loopback_literal(name):
            return
        shown = value if len(value) <= 80 else value[:80] + "..."
        raise Refused(421, "invalid_host", f"this server does not answer to the host {shown!r}",
                      "connect by a name the server was started with, or restart it with "
                      "--allow-host NAME")

    def check_origin(self, value: str | None) -> None:
        """Refuse (403) a request a browser sent from a page whose origin is not allowed."""
        if value is None or origin_key(value) in self.origins:
            return
        shown = value if len(value) <= 80 else value[:80] + "..."
        raise Refused(403, "forbidden_origin",
                      f"requests from the web origin {shown!r} are not allowed",
                      "to let a web app call this server, start it with --allow-origin ORIGIN")

    def origin_allowed(self, value: str | None) -> bool:
        return value is not None and origin_key(value) in self.origins


def check_json_content_type(value: str | None) -> None:
    """Refuse (415) a body not labelled ``application/json`` (``charset=utf-8`` allowed)."""
    if value is not None:
        media, *params = (part.strip().lower() for part in value.split(";"))
        if media == JSON_MEDIA_TYPE and all(p.replace(" ", "") in ("charset=utf-8", "charset=\"utf-8\"")
                                            for p in params if p):
            return
    shown = "no Content-Type" if value is None else f"Content-Type {value[:80]!r}"
    raise Refused(415, "unsupported_media_type",
                  f"the body must be JSON sent as {JSON_MEDIA_TYPE}, not {shown}",
                  "send the header Content-Type: application/json")


def _is_loopback_literal(name: str) -> bool:
    """127.0.0.0/8 and ::1 written as addresses: only this machine can be reached by them, and
    a page can name them only as its own origin (which the Origin check refuses)."""
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


__all__ = ["JSON_MEDIA_TYPE", "LOOPBACK_NAMES", "Refused", "RequestGuard", "check_host_argument",
           "check_json_content_type", "check_origin_argument", "host_name", "origin_key"]
