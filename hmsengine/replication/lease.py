"""The lease: one writer per replicated store, across nodes, by conditional writes.

``lease.json`` under the store's prefix names its holder (``node:store directory``), a session,
when it was last renewed (the holder's wall clock, ms) and its time to live. It is only ever
written conditionally: created with ``If-None-Match: *``, replaced with ``If-Match: <the ETag
the writer read>``. So of two nodes racing for it, exactly one write succeeds, and a holder
that renews learns at once (HTTP 412) that someone took the lease from it.

- Acquire (``Engine.open`` with ``replicate_to``): no lease, a released one, or our own (the
  same node and directory: a restart after a crash) is taken at once. A lease whose holder has
  not renewed it for ``ttl`` by our clock is expired and taken too. Otherwise ``StoreLocked``.
- Take over (``hms serve --takeover``): wait until the lease is released or expired, judged by
  our clock or, should the clocks disagree, by its ETag not changing for ``ttl`` seconds of our
  own monotonic clock; ``now`` takes it at once (the operator says the old node is gone).
- Renew every ``ttl / 3`` while open; a 412 means another node took it: the store stops
  shipping and refuses writes (``StoreLocked``). An unreachable store does not stop writes.
- Release at a clean close, once everything is shipped.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import attrs
import trio

from ..errors import CorruptStore, StoreLocked
from .client import ObjectExists, ObjectStore, PreconditionFailed
from .layout import LEASE_OBJECT

LEASE_FORMAT = "hmsengine-replica-lease"
_log = logging.getLogger("hmsengine.replication")


def holder_name(node: str, store_path: str | os.PathLike[str]) -> str:
    """Who holds a lease: the node and the absolute store directory (so the same node
    restarting on the same directory takes its own lease back at once)."""
    return f"{node}:{os.path.realpath(os.fspath(store_path))}"


@attrs.frozen(kw_only=True)
class LeaseState:
    """A lease as read from the bucket, with the ETag it was read at."""

    holder: str
    session: str
    store_id: str
    renewed_ms: int
    ttl_ms: int
    released: bool
    etag: str

    def expired(self, now_ms: int) -> bool:
        return self.released or now_ms > self.renewed_ms + self.ttl_ms

    def describe(self, now_ms: int) -> str:
        if self.released:
            return f"released by {self.holder}"
        left = (self.renewed_ms + self.ttl_ms - now_ms) / 1000
        return (f"held by {self.holder}, renewed {max(0.0, (now_ms - self.renewed_ms) / 1000):.1f} s "
                f"ago, expires in {max(0.0, left):.1f} s")


def _body(*, holder: str, session: str, store_id: str, ttl: float, released: bool = False) -> bytes:
    return json.dumps({"format": LEASE_FORMAT, "version": 1, "holder": holder, "session": session,
                       "store_id": store_id, "renewed_ms": int(time.time() * 1000),
                       "ttl_ms": int(ttl * 1000), "released": released},
                      sort_keys=True).encode() + b"\n"


def read_lease(client: ObjectStore) -> LeaseState | None:
    """The current lease, or None when there is none."""
    found = client.get(LEASE_OBJECT)
    if found is None:
        return None
    data, etag = found
    try:
        body: dict[str, Any] = json.loads(data)
        if body.get("format") != LEASE_FORMAT:
            raise ValueError("not a lease")
        return LeaseState(holder=str(body["holder"]), session=str(body["session"]),
                          store_id=str(body["store_id"]), renewed_ms=int(body["renewed_ms"]),
                          ttl_ms=int(body["ttl_ms"]), released=bool(body["released"]), etag=etag)
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptStore(f"the lease object is damaged ({exc})", file=client.describe(LEASE_OBJECT),
                           hint="delete it once no node serves this store") from exc


@attrs.define(eq=False)
class Lease:
    """A lease this process holds."""

    _client: ObjectStore
    holder: str
    session: str
    store_id: str
    ttl: float
    _etag: str
    released: bool = False

    def renew(self) -> None:
        """Write a fresh renewal time (``If-Match`` our last ETag). ``StoreLocked`` if another
        node took the lease meanwhile; ``ReplicaUnavailable`` if the bucket cannot be reached."""
        body = _body(holder=self.holder, session=self.session, store_id=self.store_id, ttl=self.ttl)
        try:
            self._etag = self._client.put(LEASE_OBJECT, body, if_match=self._etag)
        except PreconditionFailed:
            current = read_lease(self._client)
            if current is not None and current.session == self.session:
                self._etag = current.etag  # our own write whose answer was lost
                return
            who = current.holder if current is not None else "nobody (it was deleted)"
            raise StoreLocked(
                f"this node lost the lease on {self._client.target.url} to {who}; it no longer "
                "writes this store", hint="another node took the store over; restore it from the "
                "bucket before writing here again") from None

    def verify(self) -> None:
        """Check that the lease is still ours (a HEAD, then a GET if its ETag moved); raise
        ``StoreLocked`` if another node took it. The shipper calls it before every upload, so
        a node that was taken over stops within one upload, not one renewal period."""
        info = self._client.head(LEASE_OBJECT)
        if info is not None and info.etag == self._etag:
            return
        current = read_lease(self._client)
        if current is not None and current.session == self.session:
            self._etag = current.etag
            return
        who = current.holder if current is not None else "nobody (it was deleted)"
        raise StoreLocked(f"this node lost the lease on {self._client.target.url} to {who}; it no "
                          "longer writes this store", hint="another node took the store over; "
                          "restore it from the bucket before writing here again")

    def release(self) -> None:
        body = _body(holder=self.holder, session=self.session, store_id=self.store_id,
                     ttl=self.ttl, released=True)
        self._etag = self._client.put(LEASE_OBJECT, body, if_match=self._etag)
        self.released = True


def try_acquire(client: ObjectStore, *, holder: str, store_id: str, ttl: float,
                force_etag: str | None = None) -> Lease | LeaseState:
    """Take the lease if it is free, ours, released or expired (or its ETag is ``force_etag``);
    otherwise return the live lease that blocks us. One conditional write: a race is lost
    cleanly (the caller tries again)."""
    session = uuid.uuid4().hex
    body = _body(holder=holder, session=session, store_id=store_id, ttl=ttl)
    current = read_lease(client)
    try:
        if current is None:
            etag = client.put(LEASE_OBJECT, body, create=True)
        elif (current.holder == holder or current.expired(int(time.time() * 1000))
              or current.etag == force_etag):
            etag = client.put(LEASE_OBJECT, body, if_match=current.etag)
        else:
            return current
    except (ObjectExists, PreconditionFailed):
        again = read_lease(client)
        if again is None:
            raise StoreLocked("the lease changed while it was being taken; try again") from None
        return again
    return Lease(client, holder, session, store_id, ttl, etag)


def acquire(client: ObjectStore, *, holder: str, store_id: str, ttl: float) -> Lease:
    """Take the lease now or raise ``StoreLocked`` naming who holds it."""
    got = try_acquire(client, holder=holder, store_id=store_id, ttl=ttl)
    if isinstance(got, Lease):
        return got
    now_ms = int(time.time() * 1000)
    raise StoreLocked(f"{client.target.url} is leased to another node ({got.describe(now_ms)})",
                      hint="stop that node, or take the store over with `hms serve --takeover`")


async def acquire_waiting(client: ObjectStore, *, holder: str, store_id: str, ttl: float,
                          now: bool = False, announce: Callable[[str], None] | None = None) -> Lease:
    """Take the lease, waiting for a live one to expire (``now``: take it at once).

    Expiry is judged by our wall clock against the holder's renewal time, or by the lease's
    ETag staying the same for ``ttl`` seconds of our monotonic clock (the holder stopped
    renewing, whatever the clocks say). Cancellable: the caller bounds the wait."""
    seen: tuple[str, float] | None = None
    poll = min(1.0, max(0.05, ttl / 5))
    said = False
    while True:
        force = seen[0] if seen is not None and (now or trio.current_time() - seen[1] >= ttl) else None
        got = await trio.to_thread.run_sync(functools.partial(
            try_acquire, client, holder=holder, store_id=store_id, ttl=ttl, force_etag=force))
        if isinstance(got, Lease):
            return got
        if seen is None or seen[0] != got.etag:
            seen = (got.etag, trio.current_time())
            if now:
                continue  # take it at the very ETag just read
        if not said and announce is not None:
            announce(f"waiting for the lease on {client.target.url} "
                     f"({got.describe(int(time.time() * 1000))})")
            said = True
        await trio.sleep(poll if math.isfinite(poll) else 1.0)
