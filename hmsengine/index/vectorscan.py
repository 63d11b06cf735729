"""One view's cosine top k, its rows scanned by several threads when the scan is large.

A vector query above ``INLINE_WORK`` (engine/readers.py) runs in a worker thread, and its cosine
scan is bound by memory bandwidth, which one core does not use up: 50k x 384 on this 2-core VM
took 3.3 ms on one thread and 2.4 ms in two halves (with the thread hops), 200k x 384 14 ms and
9-10 ms. So a large view is scanned in row ranges, the first by the calling thread and the others
by a small pool, and the ranges' top lists are merged (``topk.merge_topk``): each row is summed
alone in its fixed order (``kernels/cosine.py``), so the rows and scores are one scan's, bit for
bit, ties by row number.

A split never makes a query slower than one thread: a range the pool has not started when the
calling thread is done with its own is scanned by the calling thread, and scans running at once
share the threads (each counts as one: with as many scans as threads, a scan is not split).
Measured with four concurrent vector queries at 50k: the same throughput as without splitting,
where always splitting lost ~15% (the pool's queue behind the other queries' ranges).

A view whose segment has int8 codes of its rows (``Segment.vector_codes``) is scanned through
them (``kernels.quantized.quantized_topk``): the codes bound every row's score, and only the
rows that can reach the top k are scored from the float32 rows, so the rows and scores are
still one ``cosine_topk`` scan's. A quarter of the bytes: 100k x 384 in ~2 ms against ~6.5 on
one thread. Such a scan counts half of its entries toward a split.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading

import numpy as np

from ..kernels.cosine import cosine_topk
from ..kernels.quantized import Quantized, quantized_topk
from ..kernels.topk import merge_topk

#: A range holds at least this many vector entries (rows x dimensions): a pool hop costs
#: ~0.1-0.2 ms here, a range of 2M entries ~0.35 ms of scanning.
SPLIT_ENTRIES = 2_000_000
#: A scan through int8 codes reads a quarter of the bytes and costs a half to a third of a
#: float32 scan of the same entries (384 dimensions, random unit rows, one thread: 5k rows
#: 127-196 against 314-341 us, 50k 1.0-1.2 against 3.3 ms, the more for a deeper top k), so its
#: entries count half toward a split and toward the work that decides a thread (search.prepare).
CODES_COST_RATIO = 2
#: The most threads one scan uses.
MAX_THREADS = 4

_lock = threading.Lock()
_pool: list[concurrent.futures.ThreadPoolExecutor] = []
_scans = [0]  # split-eligible scans running now, each holding one thread


def scan_threads() -> int:
    """The threads large scans share: one per CPU this process may run on, at most
    ``MAX_THREADS``."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cpus))


def cosine_rows(matrix: np.ndarray, query: np.ndarray, allowed: np.ndarray, has: np.ndarray,
                depth: int, inline: bool,
                codes: Quantized | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``cosine_topk(matrix, query, allowed, depth, has, held=inline)``: (scores, rows), best
    first, ties by row; through ``codes`` (``quantize_rows(matrix)``) when given, the same
    answer. ``inline`` (on the event loop's thread): one scan keeping the GIL. Otherwise a view
    of at least ``2 * SPLIT_ENTRIES`` entries (a third of them with codes) is scanned in ranges
    of at least ``SPLIT_ENTRIES``, one per thread the other running scans leave free (module
    docstring)."""
    threads = 1 if inline else scan_threads()
    work = matrix.size if codes is None else matrix.size // CODES_COST_RATIO
    parts = min(threads, work // SPLIT_ENTRIES)
    if parts <= 1:
        return _whole(matrix, query, allowed, has, depth, codes, inline)
    with _lock:
        parts = min(parts, threads - _scans[0])
        _scans[0] += 1
    try:
        if parts <= 1:
            return _whole(matrix, query, allowed, has, depth, codes, False)
        return _split(matrix, query, allowed, has, depth, codes, parts)
    finally:
        with _lock:
            _scans[0] -= 1


def _split(matrix: np.ndarray, query: np.ndarray, allowed: np.ndarray, has: np.ndarray,
           depth: int, codes: Quantized | None, parts: int) -> tuple[np.ndarray, np.ndarray]:
    n = matrix.shape[0]
    bounds = [n * i // parts for i in range(parts + 1)]
    pool = _the_pool()
    try:
        later = [pool.submit(_range, matrix, query, allowed, has, depth, codes, False, bounds[i],
                             bounds[i + 1]) for i in range(1, parts)]
    except RuntimeError:  # the interpreter is shutting down: no new pool work
        return _whole(matrix, query, allowed, has, depth, codes, False)
    found = [_range(matrix, query, allowed, has, depth, codes, False, bounds[0], bounds[1])]
    for i, future in enumerate(later, start=1):
        # Not started yet (the pool is busy): scanned here rather than waited for.
        found.append(_range(matrix, query, allowed, has, depth, codes, False, bounds[i],
                            bounds[i + 1]) if future.cancel() else future.result())
    return merge_topk(found, depth)


def _whole(matrix: np.ndarray, query: np.ndarray, allowed: np.ndarray, has: np.ndarray,
           depth: int, codes: Quantized | None, held: bool) -> tuple[np.ndarray, np.ndarray]:
    """The top ``depth`` of all the rows in one scan: through ``codes`` when given."""
    if codes is not None:
        return quantized_topk(codes, matrix, query, allowed, has, depth, held=held)
    return cosine_topk(matrix, query, allowed, depth, has, held=held)


def _range(matrix: np.ndarray, query: np.ndarray, allowed: np.ndarray, has: np.ndarray,
           depth: int, codes: Quantized | None, held: bool, lo: int,
           hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The top ``depth`` of rows ``lo:hi``, with the view's row numbers: through ``codes`` when
    given, else one float32 scan of C-contiguous slices of the view's arrays."""
    if codes is not None:
        return quantized_topk(codes, matrix, query, allowed, has, depth, lo, hi, held=held)
    scores, rows = cosine_topk(matrix[lo:hi], query, allowed[lo:hi], depth, has[lo:hi],
                               held=held)
    return scores, rows + lo


def _the_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The pool that scans the ranges past the first: ``MAX_THREADS - 1`` threads at most, made
    on first use (idle, they wait on a queue; the interpreter joins them at exit)."""
    with _lock:
        if not _pool:
            _pool.append(concurrent.futures.ThreadPoolExecutor(
                max(1, scan_threads() - 1), thread_name_prefix="hmsengine-cosine"))
        return _pool[0]


def _after_fork_in_child() -> None:
    # The parent's pool threads and running scans do not exist in a forked child, and the lock
    # may have been held by one of them: the child starts afresh.
    global _lock
    _lock = threading.Lock()
    _pool.clear()
    _scans[0] = 0


os.register_at_fork(after_in_child=_after_fork_in_child)
