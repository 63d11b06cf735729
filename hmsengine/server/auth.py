"""API keys: which bearer keys may act for which tenant.

The keys file is JSON, tenant name to a list of SHA-256 hashes (hex) of its keys::

    {"acme": ["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"], "beta": []}

The server never holds a key itself, only hashes. Every request must carry exactly one
``Authorization: Bearer <key>`` header; the key's hash is compared with every stored hash with
``hmac.compare_digest`` and without stopping at the first match, so the time taken does not
depend on which hash (if any) matched or where it sits in the file. A missing or malformed
header, or a key that no tenant has, is 401; a key that belongs to another tenant is 403.

To make a key and its hash::

    python -c "import secrets; print(secrets.token_urlsafe(32))"
    printf %s "$KEY" | sha256sum
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Sequence
from pathlib import Path

import attrs

from ..errors import Forbidden, InvalidRequest, Unauthorized
from .tenants import TENANT_PATTERN

# RFC 6750's b64token: the characters a bearer token may hold.
_TOKEN_RE = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_HASH_RE = re.compile(r"[0-9a-fA-F]{64}")
_TENANT_RE = re.compile(TENANT_PATTERN)
MAX_KEYS = 100_000


def hash_key(key: str) -> str:
    """The hex SHA-256 of a key, as the keys file stores it."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _bearer_token(headers: Sequence[str]) -> str | None:
    """The token of the single ``Authorization: Bearer <token>`` header, or None."""
    if len(headers) != 1:
        return None
    scheme, sep, token = headers[0].partition(" ")
    if not sep or scheme.lower() != "bearer" or not _TOKEN_RE.fullmatch(token):
        return None
    return token


def _any_equal(digest: bytes, hashes: Sequence[bytes]) -> bool:
    found = False
    for candidate in hashes:
        found |= hmac.compare_digest(candidate, digest)  # no early exit: constant in the match
    return found


@attrs.frozen(kw_only=True)
class KeyRing:
    """Tenant name to the SHA-256 digests of its keys."""

    by_tenant: dict[str, tuple[bytes, ...]]

    @property
    def all_hashes(self) -> tuple[bytes, ...]:
        return tuple(h for hashes in self.by_tenant.values() for h in hashes)

    @classmethod
    def from_json(cls, body: object, *, source: str = "api keys") -> KeyRing:
        """Parse the keys file's JSON; ``InvalidRequest`` naming the bad entry."""
        if not isinstance(body, dict):
            raise InvalidRequest(f"{source}: expected a JSON object of tenant: [sha256 hex, ...]")
        out: dict[str, tuple[bytes, ...]] = {}
        total = 0
        for tenant, hashes in body.items():
            if not _TENANT_RE.fullmatch(tenant):
                raise InvalidRequest(f"{source}: {tenant!r} is not a valid tenant name")
            if not isinstance(hashes, list):
                raise InvalidRequest(f"{source}.{tenant}: expected a list of sha256 hex strings")
            digests = []
            for n, value in enumerate(hashes):
                if not isinstance(value, str) or not _HASH_RE.fullmatch(value):
                    raise InvalidRequest(
                        f"{source}.{tenant}[{n}]: expected 64 hex digits (the SHA-256 of a key)",
                        hint="store hashes, not keys: printf %s \"$KEY\" | sha256sum")
                digests.append(bytes.fromhex(value))
            total += len(digests)
            out[tenant] = tuple(digests)
        if total > MAX_KEYS:
            raise InvalidRequest(f"{source}: more than {MAX_KEYS} keys")
        return cls(by_tenant=out)

    @classmethod
    def from_file(cls, path: str | Path) -> KeyRing:
        """Read and parse the keys file; ``InvalidRequest`` if it is unreadable or malformed."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidRequest(f"--api-keys {path}: cannot read it ({exc})") from None
        try:
            body = json.loads(text)
        except ValueError as exc:
            raise InvalidRequest(f"--api-keys {path}: not valid JSON ({exc})") from None
        return cls.from_json(body, source=f"--api-keys {path}")

    def check(self, tenant: str, authorization: Sequence[str]) -> None:
        """Pass, or raise ``Unauthorized`` (401) or ``Forbidden`` (403).

        ``authorization`` is every ``Authorization`` header value of the request.
        """
        token = _bearer_token(authorization)
        if token is None:
            raise Unauthorized("missing or malformed Authorization header")
        digest = hashlib.sha256(token.encode("ascii")).digest()
        if _any_equal(digest, self.by_tenant.get(tenant, ())):
            return
        if _any_equal(digest, self.all_hashes):
            raise Forbidden(f"this key is not valid for tenant {tenant!r}")
        raise Unauthorized("the key is not valid")
