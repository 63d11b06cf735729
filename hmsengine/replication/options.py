"""Where a store replicates to, and how: ``s3://bucket/prefix`` and the shipping options.

``Engine.open(path, replicate_to="s3://bucket/prefix")`` takes the URL as a string; a
:class:`Replication` value gives the same target with options other than the defaults (the
lag bound, the lease's time to live, retries, retention). Both are checked here, before anything
touches the network, so a malformed URL or option is an ``InvalidRequest`` naming it.
"""

from __future__ import annotations

import math
import re
import socket
from collections.abc import Callable
from typing import Any

import attrs

from ..errors import InvalidRequest

# S3's bucket naming rules (the common subset MinIO and R2 accept too).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
# A key prefix: segments of printable characters without the ones S3 tools mangle.
_SEGMENT = re.compile(r"^[A-Za-z0-9._=+@,-]{1,200}$")


@attrs.frozen(kw_only=True)
class ReplicaTarget:
    """A bucket and a key prefix; a store's objects live under ``prefix/`` (``prefix`` may be
    empty: then at the bucket's root)."""

    bucket: str
    prefix: str = ""

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def key(self, name: str) -> str:
        """The full object key of ``name`` under this target."""
        return f"{self.prefix}/{name}" if self.prefix else name

    def child(self, name: str) -> ReplicaTarget:
        """The target of one tenant: ``prefix/name``."""
        check_segment(name, "tenant")
        return ReplicaTarget(bucket=self.bucket, prefix=self.key(name))


def check_segment(value: str, field: str) -> str:
    if value in (".", "..") or not _SEGMENT.match(value):
        raise InvalidRequest(f"{field}: {value!r} is not a valid key segment",
                             hint="use letters, digits and . _ = + @ , -")
    return value


def parse_target(url: object, field: str = "replicate_to") -> ReplicaTarget:
    """``s3://bucket[/prefix]`` as a :class:`ReplicaTarget`; anything else is ``InvalidRequest``."""
    if isinstance(url, ReplicaTarget):
        return url
    if not isinstance(url, str):
        raise InvalidRequest(f"{field}: expected an s3://bucket/prefix URL, got {type(url).__name__}")
    if not url.startswith("s3://"):
        raise InvalidRequest(f"{field}: {url!r} is not an s3:// URL",
                             hint="write s3://bucket/prefix; the endpoint comes from AWS_ENDPOINT_URL")
    bucket, _, prefix = url[len("s3://"):].partition("/")
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise InvalidRequest(f"{field}: {bucket!r} is not a valid bucket name",
                             hint="3 to 63 of a-z, 0-9, '.' and '-'")
    stripped = prefix[:-1] if prefix.endswith("/") else prefix  # one trailing slash is fine
    segments = stripped.split("/") if stripped else []
    if "" in segments:
        raise InvalidRequest(f"{field}: {url!r} has an empty path segment")
    for segment in segments:
        check_segment(segment, field)
    return ReplicaTarget(bucket=bucket, prefix="/".join(segments))


def _positive(name: str) -> Callable[[Any, Any, Any], None]:
    def check(_instance: object, _attribute: object, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value <= 0:
            raise InvalidRequest(f"{name}: expected a positive number of seconds, got {value!r}")
    return check


def default_node() -> str:
    """This machine's name: the lease names its holder by node and store directory."""
    return socket.gethostname() or "node"


@attrs.frozen(kw_only=True)
class Replication:
    """Continuous replication of one store to ``target`` (see docs/replication.md).

    - ``max_lag``: the bound, in seconds: every transaction committed longer ago than this is
      in the bucket while the bucket is reachable. Shipping waits ``max_lag / 4`` after a
      commit to gather more into one object (fewer, larger PUTs), then uploads.
    - ``lease_ttl``: a lease not renewed for this long is expired; the holder renews it every
      third of it. A takeover waits at most about this long after the old node stopped.
    - ``retry_min`` / ``retry_max``: the backoff between failed uploads doubles from the first
      to the second.
    - ``retention``: generations replaced by a compaction (not a purge) stay in the bucket this
      long, for point-in-time restores across the compaction; a purge deletes them at once.
    - ``node``: this node's name in the lease (default: the host name).
    - ``close_timeout``: at close, how long to keep trying to ship what is left.
    """

    target: ReplicaTarget
    max_lag: float = attrs.field(default=1.0, validator=_positive("max_lag"))
    lease_ttl: float = attrs.field(default=15.0, validator=_positive("lease_ttl"))
    retry_min: float = attrs.field(default=0.2, validator=_positive("retry_min"))
    retry_max: float = attrs.field(default=10.0, validator=_positive("retry_max"))
    retention: float = attrs.field(default=86_400.0, validator=_positive("retention"))
    close_timeout: float = attrs.field(default=10.0, validator=_positive("close_timeout"))
    node: str = attrs.field(factory=default_node)
    segment_bytes: int = 16 * 1024 * 1024

    @property
    def interval(self) -> float:
        """How long shipping gathers commits before an upload."""
        return self.max_lag / 4

    def for_tenant(self, name: str) -> Replication:
        """The same options for one tenant's store under ``target/name``."""
        return attrs.evolve(self, target=self.target.child(name))


INSTALL_HINT = "pip install 'hmsengine[replicate]'"


def require_client() -> Any:
    """The ``obstore`` module, or ``InvalidRequest`` naming the extra to install."""
    try:
        import obstore
    except ImportError:
        raise InvalidRequest("replication needs the 'replicate' extra (obstore is not installed)",
                             hint=INSTALL_HINT) from None
    return obstore


def replication_options(value: object) -> Replication | None:
    """``Engine.open``'s ``replicate_to``: None, an ``s3://`` URL, or a :class:`Replication`."""
    if value is None:
        return None
    options = value if isinstance(value, Replication) else Replication(target=parse_target(value))
    require_client()  # a missing extra is refused before anything is touched
    return options
