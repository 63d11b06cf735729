"""``DocnumMap``: id -> document number of every document the search index holds.

A ``dict`` in behaviour. After an open that adopted persisted index segments for the table's
snapshot rows (the usual reopen, ``loaded.adopt_all``), those documents' numbers are kept as
a column indexed by the table's own id -> row map (``Entries.row_map``, fixed once the snapshot
is installed) instead of a dict entry each: building a million-entry dict cost ~0.4 s of the
open and ~90 MB, for numbers the column holds in 8 MB. Everything set later (every commit's
documents, re-indexed ones) lives in a plain dict beside it, and a base id that is popped or
set again leaves the column (-1), so each id is in one place at most.

Owned by the event loop (the indexer mutates it in ``install`` and ``rebuild``); readers look
ids up from any thread, as they did in the dict.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from itertools import repeat
from typing import Any

import numpy as np

_ABSENT = -1
_MISSING: Any = object()  # pop's default when none is given


class DocnumMap(MutableMapping[str, int]):
    def __init__(self) -> None:
        self._over: dict[str, int] = {}
        self._row_of: Mapping[str, int] = {}
        self._base = array("q")  # per table row: its document number here, or -1
        self._n_base = 0

    def adopt_base(self, row_of: Mapping[str, int], rows: np.ndarray, docnums: np.ndarray) -> None:
        """Hold ``docnums[i]`` for the id of table row ``rows[i]`` (``row_of``: the table's id ->
        row map, never changed while this map lives). Only into an empty map."""
        if self._over or self._n_base:
            raise RuntimeError("a base is adopted into an empty map only")
        # Filled in place through a numpy view of the array's own buffer: no column built
        # aside and copied in (two 8 MB copies and their page faults at a million rows).
        base = array("q", [_ABSENT]) * len(row_of)
        np.frombuffer(base, dtype=np.int64)[rows] = docnums
        self._row_of, self._base, self._n_base = row_of, base, len(rows)

    def _base_row(self, doc_id: object) -> int | None:
        """The table row of ``doc_id`` when the base holds it, else None."""
        row = self._row_of.get(doc_id) if self._n_base else None  # type: ignore[call-overload]
        return row if row is not None and self._base[row] != _ABSENT else None

    def get(self, doc_id: str, default: Any = None) -> Any:
        value = self._over.get(doc_id)
        if value is not None:
            return value
        row = self._row_of.get(doc_id)  # inlined _base_row: the readers' per-id lookup
        if row is None:
            return default
        value = self._base[row]
        return default if value == _ABSENT else value

    def get_many(self, ids: Sequence[str]) -> np.ndarray:
        """The number of each of ``ids`` (hashable values), -1 for those absent, as int64:
        the lookups run in C (``map`` over the dicts' ``get``), ~0.1 us an id against ~0.4 us
        through ``get`` (a search filter of 10k ids paid ~4 ms for it)."""
        count = len(ids)
        found = np.fromiter(map(self._over.get, ids, repeat(_ABSENT)), dtype=np.int64, count=count)
        if self._n_base:
            rows = np.fromiter(map(self._row_of.get, ids, repeat(-1)), dtype=np.int64, count=count)
            # An id set again after the base was adopted is in the dict (its row holds -1).
            in_base = (rows >= 0) & (found == _ABSENT)
            base = np.frombuffer(self._base, dtype=np.int64)
            found[in_base] = base[rows[in_base]]
        return found

    def __getitem__(self, doc_id: str) -> int:
        if doc_id in self._over:
            return self._over[doc_id]
        row = self._base_row(doc_id)
        if row is None:
            raise KeyError(doc_id)
        return self._base[row]

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._over or self._base_row(doc_id) is not None

    def __setitem__(self, doc_id: str, docnum: int) -> None:
        row = self._base_row(doc_id)
        if row is not None:
            self._base[row] = _ABSENT
            self._n_base -= 1
        self._over[doc_id] = docnum

    def __delitem__(self, doc_id: str) -> None:
        if doc_id in self._over:
            del self._over[doc_id]
            return
        row = self._base_row(doc_id)
        if row is None:
            raise KeyError(doc_id)
        self._base[row] = _ABSENT
        self._n_base -= 1

    def pop(self, doc_id: str, default: Any = _MISSING) -> Any:
        """Remove ``doc_id`` and return its number (``default`` when absent, ``KeyError``
        without one): one lookup, on the writer's path for every committed document."""
        value = self._over.pop(doc_id, None)
        if value is not None:
            return value
        row = self._base_row(doc_id)
        if row is None:
            if default is _MISSING:
                raise KeyError(doc_id)
            return default
        value = self._base[row]
        self._base[row] = _ABSENT
        self._n_base -= 1
        return value

    def __len__(self) -> int:
        return self._n_base + len(self._over)

    def __iter__(self) -> Iterator[str]:
        if self._n_base:
            base = self._base
            for doc_id, row in list(self._row_of.items()):
                if base[row] != _ABSENT:
                    yield doc_id
        yield from list(self._over)


def kept_ids(ids: Sequence[str], theirs: tuple[str, ...], at: np.ndarray, keep: np.ndarray
             ) -> tuple[tuple[str, ...], list[int]] | None:
    """For ``loaded.adopt_all``, one persisted segment: its ids with each kept document's id
    replaced by the table's equal string (``ids[at[j]]``), and the local numbers of the
    documents not kept; None when a kept document's id is not the table's id of that row (exact: every kept
    id compared in full). The usual segment is kept whole over a run of consecutive table rows:
    then the run is sliced out and compared at once, no per-document Python work."""
    n = len(theirs)
    if n and bool(keep.all()) and int(at[-1]) - int(at[0]) == n - 1:
        # ``at`` rises strictly (the document numbers do, and the keys are distinct), so n rows
        # from at[0] to at[0] + n - 1 are exactly that run.
        first = int(at[0])
        swapped = tuple(ids[first:first + n])
        return (swapped, []) if swapped == theirs else None
    flags = keep.tolist()
    mine = [ids[r] for r in at[keep].tolist()]
    if mine != [doc_id for doc_id, k in zip(theirs, flags, strict=True) if k]:
        return None
    taken = iter(mine)
    return (tuple(next(taken) if k else doc_id for doc_id, k in zip(theirs, flags, strict=True)),
            [local for local, k in enumerate(flags) if not k])
