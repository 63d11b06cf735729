"""One error hierarchy for every public call.

Every error raised by a public call of hmsengine is an :class:`HmsError`: it carries a stable
machine-readable ``code`` (the JSON contract and the server put it in their error bodies), a
human message, and a ``hint`` saying what to do about it. Subclasses also inherit the matching
builtin where one exists (``InvalidRequest`` is a ``ValueError``, ``NotFound`` a ``LookupError``,
``DurabilityError`` an ``OSError``), so code that catches builtins keeps working.

Foreign errors (``OSError``, zstandard, cryptography) are translated at the boundary with
:func:`map_errors`; they never leak out of a public call.
"""

from __future__ import annotations

import errno
from typing import ClassVar, Literal


class HmsError(Exception):
    """Base of every hmsengine error: ``.code``, ``.message`` and ``.hint``."""

    code: ClassVar[str] = "error"
    default_hint: ClassVar[str] = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = self.default_hint if hint is None else hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} (hint: {self.hint})"
        return self.message

    def to_json(self) -> dict[str, str]:
        """The error body of the JSON contract: ``{"code", "message"}`` (and the hint)."""
        body = {"code": self.code, "message": self.message}
        if self.hint:
            body["hint"] = self.hint
        return body


class InvalidRequest(HmsError, ValueError):
    """The caller's input is malformed or out of limits; nothing was written."""

    code = "invalid_request"
    default_hint = "fix the named field and retry"


class NotFound(HmsError, LookupError):
    """The named id does not exist (or was forgotten)."""

    code = "not_found"


class Conflict(HmsError):
    """The request contradicts what the store already holds (e.g. a different payload under an id)."""

    code = "conflict"
    default_hint = "use a new id, or send exactly the stored payload for an idempotent retry"


class WrongKey(HmsError):
    """The store is encrypted and the key is missing or wrong; nothing was read."""

    code = "wrong_key"
    default_hint = "open the store with the key it was created with"


class CorruptStore(HmsError):
    """A file of the store is damaged somewhere other than a torn tail; nothing was dropped."""

    code = "corrupt_store"
    default_hint = "restore the store from a snapshot or backup; the named file and offset are damaged"

    def __init__(
        self, message: str, *, file: str | None = None, offset: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = ""
        if file is not None:
            where = f" [file {file}" + (f", offset {offset}" if offset is not None else "") + "]"
        super().__init__(message + where, hint=hint)
        self.file = file
        self.offset = offset


class StoreLocked(HmsError):
    """Another open handle (this process or another) holds the store's lock."""

    code = "store_locked"
    default_hint = "close the other Engine on this directory first; one process opens a store at a time"


class DurabilityError(HmsError, OSError):
    """A write or fsync failed: the store refuses every further write until it is reopened.

    An fsync is never retried: after a failed fsync the kernel may already have dropped the dirty
    pages, so a retry that "succeeds" would acknowledge data that is not on disk.
    """

    code = "durability_error"
    default_hint = "reopen the store; writes acknowledged before the failure are intact"


class ProvenanceError(HmsError):
    """A file-backed memory no longer matches its recorded provenance."""

    code = "provenance_error"

    def __init__(self, message: str, *, reason: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason


class IncompatibleStore(HmsError):
    """The store was written by a newer (or unknown) format version; it was not changed."""

    code = "incompatible_store"
    default_hint = "open it with a newer hmsengine release"


class PolicyError(HmsError):
    """A memory policy (``MemoryConfig``'s supersession, recency, importance, forgetting or
    consolidation) raised or returned something it may not; nothing was written."""

    code = "policy_error"
    default_hint = "fix the policy; nothing was written"


class InvalidTenant(HmsError, ValueError):
    """The ``X-HMS-Tenant`` header is not 1 to 64 of ``[A-Za-z0-9_-]`` (HTTP 400)."""

    code = "invalid_tenant"
    default_hint = "send X-HMS-Tenant with 1 to 64 of A-Z, a-z, 0-9, '_' and '-' (or omit it)"


class Unauthorized(HmsError, PermissionError):
    """No valid ``Authorization: Bearer <key>`` for any tenant (HTTP 401)."""

    code = "unauthorized"
    default_hint = "send Authorization: Bearer <key> with a key issued for this tenant"


class Forbidden(HmsError, PermissionError):
    """The key is valid, but for another tenant (HTTP 403)."""

    code = "forbidden"
    default_hint = "use a key issued for the tenant named in X-HMS-Tenant"


class ReplicaUnavailable(HmsError):
    """The object store a store replicates to could not be reached or refused the request."""

    code = "replica_unavailable"
    default_hint = ("check AWS_ENDPOINT_URL, the credentials (AWS_ACCESS_KEY_ID, "
                    "AWS_SECRET_ACCESS_KEY, AWS_REGION), the bucket and the network")


class EngineClosed(HmsError):
    """The engine was used after its ``async with`` block ended."""

    code = "engine_closed"
    default_hint = "keep using the engine inside its `async with Engine.open(...)` block"


_ERRNO_HINTS = {
    errno.ENOSPC: "the disk is full; free space and reopen the store",
    errno.EDQUOT: "the disk quota is exhausted; free space and reopen the store",
    errno.EIO: "the device reported an I/O error; check the disk, then reopen the store",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "the process lacks permission on the store directory",
}


def os_error_hint(exc: OSError) -> str:
    """A short actionable hint for a foreign ``OSError``."""
    return _ERRNO_HINTS.get(exc.errno or 0, "check the store directory and the disk")


class map_errors:  # lower case: used like a function, ``with map_errors("what"):``
    """Translate foreign exceptions raised inside the block into :class:`HmsError`.

    The table: ``HmsError`` passes through; ``OSError`` becomes ``DurabilityError`` (the store can
    no longer promise durability for this operation); zstandard errors become ``CorruptStore``
    (a frame that passed its checksum but does not decompress is damage, not a torn tail);
    anything else (and every ``BaseException`` that is not an ``Exception``) passes unchanged.

    A class rather than a generator-based context manager: it wraps every document read and
    every commit, and costs a fraction of a generator's set-up.
    """

    __slots__ = ("_file", "_what")

    def __init__(self, what: str, *, file: str | None = None) -> None:
        self._what = what
        self._file = file

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> Literal[False]:
        if exc is None or isinstance(exc, HmsError) or not isinstance(exc, Exception):
            return False
        what, file = self._what, self._file
        if isinstance(exc, OSError):
            raise DurabilityError(
                f"{what} failed: {exc.strerror or exc}" + (f" [file {file}]" if file else ""),
                hint=os_error_hint(exc),
            ) from exc
        # zstandard raises zstd.ZstdError (a plain Exception subclass); import lazily so that this
        # module stays import-light.
        import zstandard

        if isinstance(exc, zstandard.ZstdError):
            raise CorruptStore(f"{what}: undecodable compressed data ({exc})", file=file) from exc
        return False
