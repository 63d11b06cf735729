"""The object-store client: a thin, synchronous face over ``obstore`` for one bucket.

Why obstore (the ``replicate`` extra): it binds the Rust ``object_store`` crate (the one Apache
Arrow, DataFusion and delta-rs use), so signing, HTTP and retries run outside the GIL, next to
an engine whose event loop and kernels want the two cores; it has S3's conditional writes as
put modes (create = ``If-None-Match: *``, update = ``If-Match: <etag>``); it ships type stubs;
and it reads the standard ``AWS_*`` variables, so MinIO, R2 and S3 work unchanged. Its async
API is bound to asyncio, so the engine calls these synchronous methods from trio worker threads,
as it does every blocking file call.

Every call raises :class:`ReplicaUnavailable` when the store cannot be reached (after a short,
bounded retry inside the client: the shipper has its own backoff), :class:`ObjectExists` or
:class:`PreconditionFailed` for a failed conditional write, and returns None for a missing object.
"""

from __future__ import annotations

import builtins
import datetime
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import attrs

from ..errors import ReplicaUnavailable
from .options import ReplicaTarget, require_client


class ObjectExists(Exception):
    """A create-only put found the key taken (HTTP 412 on ``If-None-Match: *``)."""


class PreconditionFailed(Exception):
    """An ``If-Match`` put found another ETag (HTTP 412)."""


@attrs.frozen(kw_only=True)
class ObjectInfo:
    key: str  # relative to the client's prefix
    size: int
    etag: str | None


class ObjectStore:
    """One bucket and key prefix. Keys given to the methods are relative to the prefix."""

    def __init__(self, target: ReplicaTarget, *, timeout: float = 30.0) -> None:
        obstore = require_client()
        from obstore.store import S3Store

        self.target = target
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
        client_options: dict[str, Any] = {"timeout": f"{max(1, int(timeout))}s",
                                          "connect_timeout": "5s"}
        if endpoint.startswith("http://"):
            client_options["allow_http"] = True  # a local MinIO or test server
        # Few retries inside the client: the shipper retries with its own backoff and reports
        # the lag meanwhile, rather than being stuck in one call for minutes.
        retry = {"max_retries": 2, "retry_timeout": datetime.timedelta(seconds=timeout),
                 "backoff": {"init_backoff": datetime.timedelta(milliseconds=100),
                             "max_backoff": datetime.timedelta(seconds=2), "base": 2.0}}
        with self._mapped("connecting"):
            self._store = S3Store(target.bucket, prefix=target.prefix or None,
                                  client_options=client_options, retry_config=retry)  # type: ignore[arg-type]
        self._ob = obstore

    def describe(self, key: str) -> str:
        """``s3://bucket/prefix/key``: how errors name an object."""
        return f"s3://{self.target.bucket}/{self.target.key(key)}"

    @contextmanager
    def _mapped(self, what: str, key: str = "") -> Iterator[None]:
        from obstore.exceptions import AlreadyExistsError, BaseError, PreconditionError

        try:
            yield
        except AlreadyExistsError as exc:
            raise ObjectExists(key) from exc
        except PreconditionError as exc:
            raise PreconditionFailed(key) from exc
        except FileNotFoundError:
            raise
        except (BaseError, OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ReplicaUnavailable(f"{what} {self.describe(key)} failed: {first[:300]}") from exc

    def put(self, key: str, data: bytes, *, create: bool = False, if_match: str | None = None) -> str:
        """Write ``data`` at ``key`` (atomic: all or nothing); return the new ETag.

        ``create``: only if no object has the key (``ObjectExists`` otherwise); ``if_match``:
        only if the object's ETag is this one (``PreconditionFailed`` otherwise)."""
        mode: Any = "create" if create else ({"e_tag": if_match} if if_match is not None else None)
        with self._mapped("writing", key):
            result = self._ob.put(self._store, key, data, mode=mode, use_multipart=False)
        return str(result.get("e_tag") or "")

    def get(self, key: str) -> tuple[bytes, str] | None:
        """The object's bytes and ETag, or None if there is none."""
        try:
            with self._mapped("reading", key):
                response = self._ob.get(self._store, key)
                data = bytes(response.bytes())
        except FileNotFoundError:
            return None
        return data, str(response.meta.get("e_tag") or "")

    def head(self, key: str) -> ObjectInfo | None:
        try:
            with self._mapped("reading", key):
                meta = self._ob.head(self._store, key)
        except FileNotFoundError:
            return None
        return ObjectInfo(key=str(meta["path"]), size=int(meta["size"]), etag=meta.get("e_tag"))

    def list(self, prefix: str) -> list[ObjectInfo]:
        """Every object whose key starts with ``prefix`` (relative), in key order.

        (object_store lists by whole path segments: a prefix ending in ``/`` is listed as such
        a "directory"; any other prefix is matched against the keys of the whole listing.)"""
        out: list[ObjectInfo] = []
        where = prefix.rstrip("/") if prefix.endswith("/") else None
        with self._mapped("listing", prefix):
            for chunk in self._ob.list(self._store, where, chunk_size=1000):
                out.extend(ObjectInfo(key=str(m["path"]), size=int(m["size"]), etag=m.get("e_tag"))
                           for m in chunk if str(m["path"]).startswith(prefix))
        out.sort(key=lambda info: info.key)
        return out

    def list_dirs(self, prefix: str = "") -> builtins.list[str]:
        """The names of the "directories" right under ``prefix`` (common prefixes)."""
        with self._mapped("listing", prefix):
            result = self._ob.list_with_delimiter(self._store, prefix or None)
        base = f"{prefix.rstrip('/')}/" if prefix else ""
        names = [str(p)[len(base):].strip("/") for p in result["common_prefixes"]]
        return sorted(n for n in names if n)

    def delete(self, keys: Sequence[str]) -> None:
        """Delete ``keys`` (missing ones are not an error)."""
        for start in range(0, len(keys), 1000):
            batch = list(keys[start : start + 1000])
            with self._mapped("deleting", batch[0] if batch else ""):
                try:
                    self._ob.delete(self._store, batch)
                except FileNotFoundError:
                    pass
