"""A query answered inline on the event loop calls none of numpy's sorts in the query path
(``index/search.py``, ``kernels/topk.py``): numpy's sorts give the GIL away however short the
array, and beside any busy Python thread the event loop then waits a switch interval (5 ms) to
get it back (at 5k x 384 beside one busy thread, a vector query's p90 was 5.7 ms with one such
sort, 0.49 ms without). The kernels that replace them keep the GIL."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
import trio

from hmsengine import Engine
from hmsengine.engine import indexer as indexer_module
from hmsengine.index import search
from hmsengine.kernels import topk

pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1",
                                reason="without the JIT the kernels themselves call numpy")
WORDS = [f"w{i:02d}" for i in range(30)]


class _NoSorts:
    """numpy, but its sorts raise."""

    def __getattr__(self, name: str) -> Any:
        if name in ("sort", "argsort", "lexsort", "unique", "partition", "argpartition"):
            raise AssertionError(f"np.{name} called on the inline query path")
        return getattr(np, name)


async def test_inline_queries_sort_nothing_with_numpy(no_merges: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexer_module, "CONSOLIDATE_IDLE_SECONDS", 3600.0)  # keep the segments
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((600, 16))
    async with Engine.open(None, analyzer="simple") as engine:
        for batch in range(3):  # two folded segments, then a tail
            await engine.put_documents([
                {"id": f"d{n}", "text": f"{WORDS[n % 30]} {WORDS[(n * 7) % 30]} rare{n % 97}",
                 "embedding": vectors[n]} for n in range(batch * 200, batch * 200 + 200)])
            with trio.fail_after(30):
                while batch < 2 and engine._indexer.snapshot.tail:
                    await trio.sleep(0.01)
        assert engine.statistics().index_segments >= 2
        await engine.search_documents("w01", semantic="ngram")  # n-gram postings built
        queries = [("", {"embedding": vectors[5]}),
                   ("w01 w02", {"embedding": vectors[7]}),
                   ("rare5 w03", {"embedding": vectors[9], "semantic_weight": 0.1}),
                   ("w04 w05", {"semantic": "ngram"}),
                   ("w06", {"ids": [f"d{n}" for n in range(0, 600, 7)]}),
                   ("w07", {"embedding": vectors[3], "ids": [f"d{n}" for n in range(0, 600, 5)]}),
                   ("", {"embedding": vectors[11], "k": 60})]
        want = [await engine.search_documents(q, **o) for q, o in queries]
        monkeypatch.setattr(search, "np", _NoSorts())
        monkeypatch.setattr(topk, "np", _NoSorts())
        got = [await engine.search_documents(q, **o) for q, o in queries]
        assert got == want and all(want)
