"""Which neighbouring segments the index builder merges next: a size-ratio (leveled) policy.

Segments are in document order and only neighbours merge, so the newest (smallest) segments sit
at the right. :func:`pick` merges the trailing run of segments into the segment before it as soon
as the run holds at least ``1 / ratio`` of that segment's documents, choosing the longest such
run. After it has run, every segment holds more than ``ratio`` times all the segments after it
together, so a store of ``n`` documents folded in chunks of ``f`` keeps at most about
``log(n / f) / log(ratio + 1) + 1`` segments at any moment (a query pays one kernel call per
segment), while a document is rewritten only a bounded number of times (about 7 at 50k
documents and 11 at 1M for ``ratio = 4`` and folds of 512; :func:`simulate`).

Two bounds keep a merge affordable: no merge by the ratio rule makes a segment of more than
``max_merge`` documents (a larger one would rewrite hundreds of MB in the background while
holding a second copy), and when there are still more than ``max_segments`` segments (a
rebuild's chunks, or runs of capped segments) the ``window`` neighbours with the fewest
documents are merged, whatever their size, so the count stays bounded.

Once writes stop, :func:`consolidation_window` says what the idle builder merges: everything
when what lies outside the largest segment is a given fraction of it, else the small ones.

Pure functions on sizes (live documents per segment), so the policy is tested on simulated
sequences of any length without building an index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

Pick = Callable[[Sequence[int]], "tuple[int, int] | None"]


@attrs.frozen(kw_only=True)
class MergePolicy:
    """The policy's knobs (see the module docstring)."""

    ratio: float = 4.0
    max_merge: int = 500_000
    max_segments: int = 12
    window: int = 4

    def pick(self, sizes: Sequence[int]) -> tuple[int, int] | None:
        """The window ``(a, b)`` of segments to merge into one next, or None."""
        n = len(sizes)
        suffix = 0
        start = None
        for k in range(n - 1, 0, -1):
            suffix += sizes[k]
            if sizes[k - 1] + suffix > self.max_merge:
                break
            if suffix * self.ratio >= sizes[k - 1]:
                start = k - 1  # the longest qualifying run wins: one merge instead of a cascade
        if start is not None:
            return start, n
        if n <= self.max_segments:
            return None
        width = min(self.window, n)
        best = min(range(n - width + 1), key=lambda i: (sum(sizes[i:i + width]), -i))
        return best, best + width


def consolidation_window(live: Sequence[int], *, fraction: float,
                         max_docs: int) -> tuple[int, int] | None:
    """The window ``(a, b)`` an idle builder merges, from the segments' live sizes, or None.

    All of them when the documents outside the largest segment are at least ``fraction`` of
    it; else the two or more segments on one side of the largest (they are in document order,
    so only neighbours can merge); else none. Never a window of more than ``max_docs`` live
    documents, nor one of fewer than two segments."""
    n = len(live)
    if n < 2:
        return None
    big = max(range(n), key=lambda i: (live[i], -i))
    if sum(live) - live[big] >= fraction * live[big]:
        window = (0, n)
    elif n - big - 1 >= 2:
        window = (big + 1, n)
    elif big >= 2:
        window = (0, big)
    else:
        return None
    return window if sum(live[window[0]:window[1]]) <= max_docs else None


@attrs.frozen(kw_only=True)
class Simulated:
    """What a policy did to a stream of folds: documents written by merges per document, the
    most segments at any moment, the segments at the end, and the mean count after each fold."""

    rewrites_per_document: float
    max_segments: int
    final_segments: int
    mean_segments: float
    merges: int


def simulate(pick: Pick, documents: int, fold: int = 512) -> Simulated:
    """Fold ``documents`` in chunks of ``fold``, applying ``pick`` after each fold until it
    has nothing to merge (as the index builder does; no deletions)."""
    sizes: list[int] = []
    written = merges = done = most = 0
    total_count = folds = 0
    while done < documents:
        chunk = min(fold, documents - done)
        done += chunk
        sizes.append(chunk)
        while (window := pick(sizes)) is not None:
            a, b = window
            merged = sum(sizes[a:b])
            written += merged
            merges += 1
            sizes[a:b] = [merged]
        folds += 1
        total_count += len(sizes)
        most = max(most, len(sizes))
    return Simulated(rewrites_per_document=written / max(documents, 1), max_segments=most,
                     final_segments=len(sizes), mean_segments=total_count / max(folds, 1),
                     merges=merges)
