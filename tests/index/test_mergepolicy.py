"""The size-ratio merge policy: few segments at every moment, few rewrites per document.

Checked on simulated streams of folds (index/mergepolicy.py ``simulate``), at the sizes the
benchmarks use, against bounds derived from the policy's invariant: after the builder has merged,
every segment holds more than ``ratio`` times all later segments together, so there are at most
``log(n / fold) / log(ratio + 1) + 1`` of them below the merge cap.
"""

from __future__ import annotations

import math
import random

import pytest

from hmsengine.engine import indexer as indexer_module
from hmsengine.index.mergepolicy import MergePolicy, consolidation_window, simulate

POLICY = indexer_module.MERGE_POLICY
SIZES = [10_000, 50_000, 200_000, 1_000_000]
# Documents written by merges per document indexed, from simulate() with folds of 512 (4.4, 6.9,
# 9.1 and 10.5), with ~15% headroom: a change of policy that rewrites more fails here.
REWRITES = {10_000: 5.0, 50_000: 8.0, 200_000: 10.5, 1_000_000: 12.0}


def _count_bound(policy: MergePolicy, documents: int, fold: int) -> int:
    levels = math.log(max(documents / fold, 1.0)) / math.log(policy.ratio + 1)
    return math.floor(levels) + 1 + documents // policy.max_merge


@pytest.mark.parametrize("documents", SIZES)
def test_segment_count_and_rewrites_stay_bounded(documents):
    """Folds of 512 documents up to 10k..1M: the segment count never passes the log bound and
    each document is rewritten by merges no more than the bound of its size."""
    result = simulate(POLICY.pick, documents, fold=512)
    assert result.max_segments <= _count_bound(POLICY, documents, 512)
    assert result.rewrites_per_document <= REWRITES[documents]


def test_fewer_segments_and_rewrites_than_the_former_cap():
    """At 50k and 1M the policy leaves fewer segments on average than the former policy (at most
    6 segments, the 4 smallest neighbours merged) and rewrites far less at 1M."""
    former = MergePolicy(ratio=0.0, max_merge=0, max_segments=6, window=4)
    for documents in (50_000, 1_000_000):
        new, old = simulate(POLICY.pick, documents), simulate(former.pick, documents)
        assert new.mean_segments < old.mean_segments
        assert new.rewrites_per_document < old.rewrites_per_document
    assert simulate(former.pick, 1_000_000).rewrites_per_document > 100


def test_invariant_holds_after_every_fold_of_any_size():
    """Folds of random sizes (the builder folds whatever the tail holds): after each round of
    merges every segment below the cap holds more than ``ratio`` times the segments after it,
    each window is a run of neighbours, and no document is lost or duplicated."""
    rng = random.Random(5)
    policy = MergePolicy(ratio=4.0, max_merge=60_000, max_segments=12, window=4)
    sizes: list[int] = []
    total = 0
    for _ in range(2_000):
        fold = rng.randint(1, 3_000)
        sizes.append(fold)
        total += fold
        while (window := policy.pick(sizes)) is not None:
            a, b = window
            assert 0 <= a < b <= len(sizes) and b - a >= 2
            sizes[a:b] = [sum(sizes[a:b])]
        assert sum(sizes) == total and len(sizes) <= policy.max_segments
        for k in range(1, len(sizes)):
            rest = sum(sizes[k:])
            assert sizes[k - 1] + rest > policy.max_merge or rest * policy.ratio < sizes[k - 1]


def test_capped_segments_are_left_alone_until_too_many():
    """A merge by the ratio rule never makes a segment above ``max_merge``; past
    ``max_segments`` the lightest window of neighbours merges whatever its size."""
    policy = MergePolicy(ratio=4.0, max_merge=1_000, max_segments=4, window=2)
    assert policy.pick([900, 300]) is None  # 1,200 documents: over the cap
    assert policy.pick([900, 50, 30]) == (1, 3)  # the run after the capped one still merges
    assert policy.pick([900, 800, 700, 600, 500]) == (3, 5)  # five > 4: the lightest pair
    assert policy.pick([100, 30, 20]) == (0, 3)  # the longest qualifying run, in one merge
    assert policy.pick([100, 20, 3]) is None  # 3 < 20 / 4 and 23 < 100 / 4


def test_a_segment_with_no_live_document_merges_away():
    """A segment whose documents all died merges with the segments after it (so it is gone);
    a single segment never merges with itself."""
    assert POLICY.pick([5_000, 0, 700]) == (1, 3)
    assert POLICY.pick([0]) is None


@pytest.mark.parametrize(("live", "window"), [
    ([], None), ([900], None),                                     # nothing to merge
    ([1000, 40], (0, 2)),                                          # 1/25 outside: all
    ([1000, 20], None),                                            # 1/50, one small: none
    ([1000, 10, 10], (1, 3)),                                      # the small ones after it
    ([5, 5, 1000], (0, 2)),                                        # ... or before it
    ([5, 1000, 5], None),                                          # one on each side: none
    ([400_000, 90_000, 20_000], None),                             # over max_docs: none
    ([400_000, 4_000, 4_000], (1, 3)),                             # small ones under it
])
def test_consolidation_window(live: list[int], window: tuple[int, int] | None) -> None:
    """The idle merge takes everything past the fraction, else the small neighbours, within
    max_docs."""
    assert consolidation_window(live, fraction=1 / 32, max_docs=500_000) == window
