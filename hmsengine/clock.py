"""Time: integer milliseconds since the Unix epoch (UTC), and the injectable clock.

Every public call that takes a time accepts an ``int`` (ms) or a timezone-aware
:class:`datetime.datetime`; a naive datetime is ambiguous and is refused.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable
from typing import Protocol

from .errors import InvalidRequest

# Bounds that keep every stored time representable in JSON, ISO 8601 and int64 arithmetic.
MIN_MS = -62_135_596_800_000  # 0001-01-01T00:00:00Z
MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


class Clock(Protocol):
    """A zero-argument callable returning the current time in ms since the epoch."""

    def __call__(self) -> int: ...


def wall_clock() -> int:
    """The default clock: the system's wall time in ms."""
    return time.time_ns() // 1_000_000


def to_ms(value: int | _dt.datetime, *, field: str) -> int:
    """Convert an ``int`` (ms) or an aware ``datetime`` to ms; anything else is ``InvalidRequest``."""
    if isinstance(value, bool):
        raise InvalidRequest(f"{field}: expected integer ms or an aware datetime, got a bool")
    if isinstance(value, int):
        ms = value
    elif isinstance(value, _dt.datetime):
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            raise InvalidRequest(
                f"{field}: a naive datetime is ambiguous",
                hint="attach a timezone, e.g. datetime(..., tzinfo=timezone.utc)",
            )
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
        ms = (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
    else:
        raise InvalidRequest(
            f"{field}: expected integer ms or an aware datetime, got {type(value).__name__}"
        )
    if not MIN_MS <= ms <= MAX_MS:
        raise InvalidRequest(f"{field}: {ms} ms is outside the years 1 to 9999")
    return ms


def checked_clock(clock: Callable[[], int] | None) -> Callable[[], int]:
    """Wrap a caller's clock so that a bad reading fails loudly instead of stamping garbage."""
    if clock is None:
        return wall_clock
    if not callable(clock):
        raise InvalidRequest("clock: expected a zero-argument callable returning ms")

    def read() -> int:
        value = clock()
        return to_ms(value, field="clock()")

    return read
