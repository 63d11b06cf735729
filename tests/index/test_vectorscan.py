"""A large view's cosine scan split between threads (``index/vectorscan.py``) gives one scan's
rows and scores, bit for bit: over rows that tie across the ranges' bounds, zero rows, masks and
depths past a range's rows; a busy pool is not waited for; scans running at once share the
threads; a forked child scans with a pool of its own; a pool that takes no work is scanned
around. The engine's threaded queries over split scans: tests/engine/test_search.py
(``test_fused_semantic_scores_are_exact_over_several_segments``)."""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np
import pytest

from hmsengine.index import vectorscan
from hmsengine.kernels.cosine import cosine_topk, l2_normalise, l2_normalise_rows


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Ranges of 100 entries, three threads; the ranges scanned, as (lo, hi)."""
    monkeypatch.setattr(vectorscan, "SPLIT_ENTRIES", 100)
    monkeypatch.setattr(vectorscan, "scan_threads", lambda: 3)
    scanned: list[tuple[int, int]] = []
    real = vectorscan._range

    def counted(*args: Any) -> Any:
        scanned.append((args[-2], args[-1]))
        return real(*args)

    monkeypatch.setattr(vectorscan, "_range", counted)
    return scanned


def _case(rng: np.random.Generator, n: int, dim: int) -> tuple[np.ndarray, ...]:
    matrix = l2_normalise_rows(rng.standard_normal((n, dim)))
    matrix[rng.choice(n, n // 4)] = matrix[rng.choice(n, n // 4)]  # ties, across the bounds too
    matrix[rng.choice(n, 3)] = 0.0
    query = l2_normalise(rng.standard_normal(dim))
    allowed = (rng.random(n) < 0.85).astype(np.uint8)
    has = (rng.random(n) < 0.9).astype(np.uint8)
    return matrix, query, allowed, has


def test_a_split_scan_is_one_scan(small_ranges: list[tuple[int, int]]) -> None:
    rng = np.random.default_rng(31)
    for _ in range(40):
        n, dim = int(rng.integers(20, 400)), int(rng.choice([5, 16, 40]))
        matrix, query, allowed, has = _case(rng, n, dim)
        depth = int(rng.choice([1, 10, 100, 1000]))
        small_ranges.clear()
        got = vectorscan.cosine_rows(matrix, query, allowed, has, depth, inline=False)
        want = cosine_topk(matrix, query, allowed, depth, has)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
        parts = min(3, matrix.size // 100)
        assert len(small_ranges) == (parts if parts > 1 else 0)
        if parts > 1:
            assert sorted(small_ranges)[0][0] == 0 and sorted(small_ranges)[-1][1] == n
    # On the event loop's thread: one scan, keeping the GIL.
    small_ranges.clear()
    vectorscan.cosine_rows(matrix, query, allowed, has, 10, inline=True)
    assert small_ranges == []


def test_a_busy_pool_is_not_waited_for(small_ranges: list[tuple[int, int]]) -> None:
    """With the pool's threads all busy, the calling thread scans every range itself."""
    rng = np.random.default_rng(32)
    matrix, query, allowed, has = _case(rng, 300, 16)
    release = threading.Event()
    pool = vectorscan._the_pool()
    blockers = [pool.submit(release.wait, 30) for _ in range(pool._max_workers)]
    try:
        got = vectorscan.cosine_rows(matrix, query, allowed, has, 10, inline=False)
    finally:
        release.set()
    for b in blockers:
        b.result(timeout=30)
    want = cosine_topk(matrix, query, allowed, 10, has)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    assert len(small_ranges) == 3  # all three by this thread: the pool's were cancelled


def test_scans_running_at_once_share_the_threads(small_ranges: list[tuple[int, int]],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(33)
    matrix, query, allowed, has = _case(rng, 300, 16)
    want = cosine_topk(matrix, query, allowed, 10, has)
    for running, parts in ((2, 0), (1, 2), (0, 3)):
        monkeypatch.setattr(vectorscan, "_scans", [running])
        small_ranges.clear()
        got = vectorscan.cosine_rows(matrix, query, allowed, has, 10, inline=False)
        assert got[1].tolist() == want[1].tolist()
        assert len(small_ranges) == parts
        assert vectorscan._scans == [running]  # this scan's count is given back


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_scans_with_a_pool_of_its_own(small_ranges: list[tuple[int, int]]) -> None:
    rng = np.random.default_rng(34)
    matrix, query, allowed, has = _case(rng, 300, 16)
    want = cosine_topk(matrix, query, allowed, 10, has)
    vectorscan.cosine_rows(matrix, query, allowed, has, 10, inline=False)  # the parent's pool
    parent_pool = vectorscan._the_pool()
    pid = os.fork()
    if pid == 0:  # the child: the parent's pool threads do not exist here
        code = 1
        try:
            got = vectorscan.cosine_rows(matrix, query, allowed, has, 10, inline=False)
            fresh = vectorscan._the_pool() is not parent_pool
            code = 0 if fresh and got[1].tolist() == want[1].tolist() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_pool_that_takes_no_work_scans_alone(small_ranges: list[tuple[int, int]],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """At interpreter shutdown a pool refuses new work (RuntimeError): the scan runs in one
    piece on the calling thread, with the same answer."""
    rng = np.random.default_rng(36)
    matrix, query, allowed, has = _case(rng, 300, 16)

    class Closed:
        def submit(self, *args: Any) -> Any:
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(vectorscan, "_the_pool", Closed)
    got = vectorscan.cosine_rows(matrix, query, allowed, has, 10, inline=False)
    want = cosine_topk(matrix, query, allowed, 10, has)
    assert got[1].tolist() == want[1].tolist() and small_ranges == []
