"""The memory index's first build, from the engine's packed metadata (``scan_metadata_chunks``).

A million facts at open: every fact's metadata differs (its stamp holds the fact's digest), but
the compact stamp the index keeps drops the digest, so the facts of one ``remember_many`` batch
share one stamp (see ``StampParser``). Decoding and parsing a million JSON strings to find that
out cost ~1.5 s; here it is found on the packed bytes instead, a chunk at a time:

1. rows that *start* with their stamp (``{"_hms":[1,"`` then a 32-byte string: no caller
   metadata before it, the usual fact) are found column-wise (numpy), and that string, the
   digest, is overwritten with zeros in a copy of the chunk. The JSON is otherwise unchanged
   and the compact stamp never reads the digest, so a row's compact stamp is that of its
   blanked form;
2. equal adjacent rows are found on those bytes (numpy: each row against the one before, a
   run of equal-length rows at a time): a million facts remembered in batches of thousands are
   ~200 runs. Each run's row is decoded and classified once (plain document, tombstone, stamp
   through the index's ``StampParser``, so equal compact stamps share one object across chunks);
   a run of facts whose stamp needs nothing indexed beyond its kind (no subject, entity, link,
   window or retention end) goes into ``facts`` at once (``dict.fromkeys``), its kind counted,
   the others through ``MemoryIndex._add``, one by one, in order;
3. a chunk of mostly distinct rows (more than one run per ``_RUN_RATIO`` rows) is split into
   rows instead, equal rows grouped by a ``dict`` (C speed) and classified once, the simple
   facts inserted a run at a time (``dict.update``), the others through ``_add``.

The result equals ``MemoryIndex.load`` over ``scan_metadata()`` (same facts in the same order,
same counters); tests/memory/test_index_load.py proves it on mixed stores.
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Callable, Iterable

import numpy as np

from ..engine import TOMBSTONE_PREFIX, MetadataChunk
from .stamp import STAMP_KEY, Stamp, plain_stamp

_HEAD = b'{"_hms":[1,"'
_DIGEST = 32
_QUOTE_AT = len(_HEAD) + _DIGEST  # the digest's closing quote
# Eight bytes at a time (a 64-bit word read at any byte offset): the head as one word and a
# half, the digest as four words, each tested for a quote or a backslash (either would end or
# escape the string early) with the exact "has a byte equal to" bit trick.
_WORD = np.dtype("<u8")
_HEAD_WORD = np.uint64(int.from_bytes(_HEAD[:8], "little"))
_HEAD_HALF = np.uint64(int.from_bytes(_HEAD[8:], "little"))
_LOW_HALF = np.uint64(0xFFFF_FFFF)
_ONES = np.uint64(0x0101_0101_0101_0101)
_HIGHS = np.uint64(0x8080_8080_8080_8080)
_QUOTES = np.uint64(0x2222_2222_2222_2222)
_BACKSLASHES = np.uint64(0x5C5C_5C5C_5C5C_5C5C)
_ZEROS = np.uint64(int.from_bytes(b"0" * 8, "little"))
_DIGEST_WORDS = tuple(range(len(_HEAD), _QUOTE_AT, 8))
# Runs of equal rows are loaded a run at a time only while there are at most one per this many
# rows (a million facts remembered in batches: ~200 runs); else row by row.
_RUN_RATIO = 8


def _has_byte(words: np.ndarray, spread: np.uint64) -> np.ndarray:
    """Whether each word holds a byte equal to ``spread``'s (that byte in all eight)."""
    x = words ^ spread
    return ((x - _ONES) & ~x & _HIGHS) != 0  # type: ignore[no-any-return]


def blanked_rows(chunk: MetadataChunk) -> list[bytes]:
    """The chunk's rows (UTF-8 metadata, empty for none), each row that starts with a stamp
    having its digest replaced by 32 zeros (module docstring, step 1)."""
    if not chunk.ids:
        return []
    rows = bytes(_blanked(chunk)).split(b"\n")[:-1]
    if len(rows) != len(chunk.ids):
        raise ValueError(f"{len(chunk.ids)} metadata rows expected, {len(rows)} found")
    return rows


def _blanked(chunk: MetadataChunk) -> bytearray:
    """A copy of the chunk's blob, digests blanked (``blanked_rows``), with a newline after the
    last row too: row ``i`` and its newline are ``[bounds[i]:bounds[i + 1]]``."""
    copy = bytearray(chunk.blob)
    copy += b"\n"
    if len(copy) != int(chunk.bounds[-1]):
        raise ValueError(f"metadata rows of {int(chunk.bounds[-1])} bytes expected, {len(copy)} found")
    starts = chunk.bounds[:-1]
    at = starts[chunk.bounds[1:] - 1 - starts > _QUOTE_AT]
    if not len(at):
        return copy
    data = np.frombuffer(copy, dtype=np.uint8)
    # Overlapping words, one starting at every byte (strides of 1): a view, nothing copied.
    words = np.ndarray(shape=(len(copy) - 7,), dtype=_WORD, buffer=copy, strides=(1,))
    ok = (words[at] == _HEAD_WORD) & ((words[at + 8] & _LOW_HALF) == _HEAD_HALF) \
        & (data[at + _QUOTE_AT] == ord('"'))
    for offset in _DIGEST_WORDS:
        digest = words[at + offset]
        ok &= ~(_has_byte(digest, _QUOTES) | _has_byte(digest, _BACKSLASHES))
    at = at[ok]
    for offset in _DIGEST_WORDS:
        words[at + offset] = _ZEROS
    del data, words  # views of ``copy``, which could not grow while they live
    return copy


def _run_starts(data: np.ndarray, bounds: np.ndarray) -> np.ndarray | None:
    """The first row of each run of equal adjacent rows (``data``: the rows, each with its
    newline, as ``_blanked`` makes them), found by comparing each row with the one before as
    bytes, a run of equal-length rows at a time (numpy); None when there are too many runs for
    runs to pay (rows of every length, or mostly distinct)."""
    lengths = np.diff(bounds)
    n = len(lengths)
    cuts = np.flatnonzero(lengths[1:] != lengths[:-1]) + 1
    if len(cuts) * _RUN_RATIO > n:
        return None
    same = np.zeros(n, dtype=bool)
    edges = [0, *cuts.tolist(), n]
    for start, stop in itertools.pairwise(edges):
        if stop - start > 1:
            rows = data[bounds[start]:bounds[stop]].reshape(stop - start, int(lengths[start]))
            same[start + 1:stop] = (rows[1:] == rows[:-1]).all(axis=1)
    starts = np.flatnonzero(~same)
    return None if len(starts) * _RUN_RATIO > n else starts


class _Skip:
    """A tombstone's row: a purged id, no fact."""


_SKIP = _Skip()
Parse = Callable[[str], "Stamp | None"]
Add = Callable[[str, Stamp], None]


def load_chunks(chunks: Iterable[MetadataChunk], *, facts: dict[str, Stamp],
                kind_counts: dict[str, int], parse: Parse, add: Add) -> None:
    """Add every document of ``chunks`` to an empty memory index (module docstring): simple
    facts straight into ``facts`` and ``kind_counts``, the others through ``add``; ``parse``
    is the index's ``StampParser.parse``. The cyclic collector pauses meanwhile: millions of
    small objects that all survive, none in a cycle, which it would otherwise rescan again and
    again."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        plain = plain_stamp()  # never mutated: every plain document shares it
        for chunk in chunks:
            _load_chunk(chunk, plain, facts, kind_counts, parse, add)
    finally:
        if collecting:
            gc.enable()


def _classify(row: bytes, plain: Stamp, parse: Parse) -> Stamp | _Skip:
    """What one distinct row is: a tombstone, a plain document, or a fact's compact stamp."""
    if not row:
        return plain
    metadata_json = row.decode("utf-8")
    if STAMP_KEY not in metadata_json:
        return plain
    if metadata_json.startswith(TOMBSTONE_PREFIX):
        return _SKIP
    return parse(metadata_json) or plain


def _simple(stamp: Stamp | _Skip) -> bool:
    """Nothing to index beyond the kind: no subject, entity, link, window or retention end."""
    return isinstance(stamp, Stamp) and (
        stamp.subject is None and not stamp.entities and not stamp.supersedes
        and stamp.valid_from is None and stamp.valid_to is None and stamp.retain_until is None)


def _load_chunk(chunk: MetadataChunk, plain: Stamp, facts: dict[str, Stamp],
                kind_counts: dict[str, int], parse: Parse, add: Add) -> None:
    if not chunk.ids:
        return
    blanked = _blanked(chunk)
    starts = _run_starts(np.frombuffer(blanked, dtype=np.uint8), chunk.bounds)
    if starts is None:
        rows = bytes(blanked).split(b"\n")[:-1]
        del blanked
        if len(rows) != len(chunk.ids):
            raise ValueError(f"{len(chunk.ids)} metadata rows expected, {len(rows)} found")
        _load_rows(chunk.ids, rows, plain, facts, kind_counts, parse, add)
    else:
        _load_runs(chunk, blanked, starts.tolist(), plain, facts, kind_counts, parse, add)


def _load_runs(chunk: MetadataChunk, blanked: bytearray, starts: list[int], plain: Stamp,
               facts: dict[str, Stamp], kind_counts: dict[str, int], parse: Parse, add: Add
               ) -> None:
    """The chunk's facts a run of equal rows at a time (one row of each run sliced out and
    classified, equal rows of other runs classified once): a run of simple facts goes into
    ``facts`` at C speed (``dict.fromkeys``), the others through ``add``, in order."""
    ids, bounds = chunk.ids, chunk.bounds.tolist()
    found: dict[bytes, Stamp | _Skip] = {}
    for start, stop in itertools.pairwise([*starts, len(ids)]):
        row = bytes(blanked[bounds[start]:bounds[start + 1] - 1])
        stamp = found.get(row)
        if stamp is None:
            stamp = found[row] = _classify(row, plain, parse)
        if not isinstance(stamp, Stamp):
            continue  # tombstones: no fact
        if _simple(stamp):
            kind_counts[stamp.kind] = kind_counts.get(stamp.kind, 0) + stop - start
            facts.update(dict.fromkeys(ids[start:stop], stamp))
        else:
            for doc_id in ids[start:stop]:
                add(doc_id, stamp)


def _load_rows(ids: list[str], rows: list[bytes], plain: Stamp, facts: dict[str, Stamp],
               kind_counts: dict[str, int], parse: Parse, add: Add) -> None:
    """The chunk's facts row by row: equal rows grouped by a dict and classified once, runs of
    simple facts into ``facts`` at C speed, the others through ``add``, in order."""
    code_of = dict.fromkeys(rows, 0)
    found: list[Stamp | _Skip] = []
    for n, row in enumerate(code_of):
        code_of[row] = n
        found.append(_classify(row, plain, parse))
    codes = np.fromiter(map(code_of.__getitem__, rows), dtype=np.int64, count=len(rows))
    simple = [s if isinstance(s, Stamp) and _simple(s) else None for s in found]
    row_special = np.asarray([s is None for s in simple], dtype=bool)[codes]
    counts = np.bincount(codes[~row_special], minlength=len(found)).tolist()
    for stamp, count in zip(simple, counts, strict=True):
        if count and stamp is not None:
            kind_counts[stamp.kind] = kind_counts.get(stamp.kind, 0) + count
    get: Callable[[int], Stamp] = simple.__getitem__  # type: ignore[assignment]  # simple rows
    done = 0
    # Runs of simple facts at C speed; the others one by one, in the scan's order.
    for at in np.flatnonzero(row_special).tolist():
        if at > done:
            facts.update(zip(ids[done:at], map(get, codes[done:at].tolist()), strict=True))
        stamp = found[codes[at]]
        if isinstance(stamp, Stamp):
            add(ids[at], stamp)
        done = at + 1
    if done < len(ids):
        facts.update(zip(ids[done:], map(get, codes[done:].tolist()), strict=True))
