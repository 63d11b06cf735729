"""Pacing a loop of searches: cancellation and fairness without a schedule point per query.

A search answered inline (the plain lane, or a small query on the general path) returns without
a schedule point: one per query cost ~30% of throughput (PERF-NOTES.md; ~3.6 us here, against
~17 us for a query). Two checks keep a loop of such searches a good trio citizen (the engine's
search methods, through one ``SearchPacer`` per engine):

- cancellation: at most ``SEARCH_CANCEL_CHECK_SECONDS`` after the last check, a search checks
  whether its caller is cancelled or past its deadline (no schedule point, ~1.5 us), and raises
  ``Cancelled`` if so;
- fairness: at most ``SEARCH_YIELD_SECONDS`` after the last one, a search lets the program's
  other tasks and the index builder run (a tail left unfolded, merges waiting to land).
"""

from __future__ import annotations

import time

import trio

SEARCH_CANCEL_CHECK_SECONDS = 0.001
# 100 ms, the delay asyncio's debug mode reports as a slow callback. More often, the builder's
# merges and folds ran beside the first timed passes of bench/lexical.py right after a burst of
# writes and cost them ~30% (a schedule point every 10 ms: 20.5k against 28-29k q/s at 50k);
# and at 1 ms its worker threads never got the GIL during such a loop: each schedule point gives
# the GIL away for an instant (trio's I/O poll), which restarts a waiting thread's wait for it
# (Python's switch interval, 5 ms), so the search loop kept it (tests/engine/test_search_yields.py).
SEARCH_YIELD_SECONDS = 0.1

# Schedule points a yield makes (~3.6 us each): a worker thread's result reaches the task that
# waits for it in two (trio's queue of calls from threads, then the task), which then takes a
# step of its own (the index builder: install a fold or a merge, start the next one) in a third.
# With one, the builder took 3-5 yields, 0.3-0.5 s, to land a fold during a loop of searches.
SCHEDULE_POINTS = 3

#: The pacer's clock (the engine compares it with ``SearchPacer.check_at`` before awaiting).
pacing_now = time.perf_counter


class SearchPacer:
    """When a search answered inline next checks for cancellation (``check_at``, a
    ``pacing_now`` time) and when it next yields. One per engine; event-loop thread only."""

    __slots__ = ("_yield_at", "check_at")

    def __init__(self) -> None:
        self.check_at = 0.0
        self._yield_at = 0.0

    async def between_searches(self) -> None:
        """Called by a search once ``pacing_now() >= check_at``: raise ``Cancelled`` if the
        caller is cancelled or past its deadline; a schedule point if ``SEARCH_YIELD_SECONDS``
        have passed since the last one."""
        now = pacing_now()
        self.check_at = now + SEARCH_CANCEL_CHECK_SECONDS
        if now >= self._yield_at or trio.current_effective_deadline() <= trio.current_time():
            for _ in range(SCHEDULE_POINTS):
                await trio.lowlevel.checkpoint()  # past its deadline: raises Cancelled here
            self._yield_at = pacing_now() + SEARCH_YIELD_SECONDS
        else:
            await trio.lowlevel.checkpoint_if_cancelled()
