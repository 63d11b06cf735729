"""ASCII batch tokenizing for the lexical index: bytes -> token occurrences and distinct tokens.

The analyzer's ASCII fast path (``index.analyzer.Analyzer.term_ids``) hands the batch's texts as
one byte array with document boundaries; ``ascii_tokens`` finds the tokens (maximal runs of
``[0-9a-z]`` after folding ``A-Z`` to lower case: exactly ``re.findall(r"[0-9a-z]+",
text.lower())`` per document, every other byte, NUL included, separates tokens) and numbers the
distinct tokens in order of first occurrence with an open-addressing hash table that compares
the tokens' bytes on every hash match (so collisions never merge two tokens). The analyzer maps
the distinct tokens to terms in Python (stop words, stems); ``term_ranks`` finds the distinct
terms and their sorted order (new terms get ids in sorted order), and ``apply_lut`` turns the
occurrences into the index's ``(term_ids_flat, doc_starts)``, dropping the tokens mapped to -1.

The kernels run without the GIL, so batches tokenized in worker threads do not stall the event
loop or each other. Every array is allocated per call: no state is shared between calls.

The hash is 32-bit FNV-1a over the folded bytes, in int64 arithmetic masked to 32 bits, so it
never wraps or warns and gives the same values compiled and as plain Python. The table slot is
taken from the middle bits of the hash times an odd constant (FNV's low bits depend only on the
inputs' low bits). A slot holds ``hash << 31 | distinct index`` (-1 when empty), so most probes
that miss are rejected without touching the per-token arrays.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hmsengine.kernels.jit import inline, jit

U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]

#: Byte -> its folded token byte, or 0 for a separator: ``0-9`` and ``a-z`` map to themselves,
#: ``A-Z`` to ``a-z``; every other byte (punctuation, space, NUL, control, >= 0x80) separates.
FOLD: U8 = np.zeros(256, dtype=np.uint8)
FOLD[ord("0") : ord("9") + 1] = np.arange(ord("0"), ord("9") + 1, dtype=np.uint8)
FOLD[ord("a") : ord("z") + 1] = np.arange(ord("a"), ord("z") + 1, dtype=np.uint8)
FOLD[ord("A") : ord("Z") + 1] = np.arange(ord("a"), ord("z") + 1, dtype=np.uint8)
FOLD.flags.writeable = False

_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193
_MASK32 = 0xFFFFFFFF
_MIX = 0x5BD1E995  # < 2**31: hash * _MIX < 2**63, no int64 overflow
_LOW31 = 0x7FFFFFFF
_KEY_BYTES = 7  # bytes per sort key in term_ranks
# The first table; it doubles when it is half full, so it stays small for small batches.
_TABLE0 = 1024
#: Byte written after each distinct token in ``ascii_tokens``'s ``distinct`` (splits them).
DISTINCT_SEP = 32  # ord(" ")


@jit
def _slot(h: int, mask: int) -> int:
    return ((h * _MIX) >> 16) & mask


@jit
def _grow(table: I64, meta: I64, n_dist: int) -> tuple[I64, I64]:
    # Double the table, re-placing the entries by their stored hashes; ``meta`` keeps room for
    # half the new table's entries.
    size = 2 * table.shape[0]
    mask = size - 1
    new = np.full(size, -1, dtype=np.int64)
    for s in range(table.shape[0]):
        e = table[s]
        if e >= 0:
            slot = _slot(e >> 31, mask)
            while new[slot] >= 0:
                slot = (slot + 1) & mask
            new[slot] = e
    new_meta = np.empty(size, dtype=np.int64)
    new_meta[: 2 * n_dist] = meta[: 2 * n_dist]
    return new, new_meta


@jit
def _batch_bytes(data: U8, bounds: I64) -> int:
    # The bytes the documents span, after checking ``bounds`` (compiled kernels do not
    # bounds-check their indexing).
    n_docs = max(bounds.shape[0] - 1, 0)
    for d in range(n_docs):
        if bounds[d] > bounds[d + 1]:
            raise ValueError("ascii_tokens: bounds must be non-decreasing")
    if n_docs > 0 and (bounds[0] < 0 or bounds[n_docs] > data.shape[0]):
        raise ValueError("ascii_tokens: bounds must lie within data")
    nbytes = bounds[n_docs] - bounds[0] if n_docs > 0 else 0
    if nbytes > _LOW31:
        raise ValueError("ascii_tokens: a batch must be shorter than 2**31 bytes")
    return nbytes


@inline
def _find_token(table: I64, meta: I64, distinct: U8, h: int, pos: int,
                length: int) -> tuple[int, int]:
    # The token at ``distinct[pos:pos+length]`` (hash ``h``) in the table: (its slot, its
    # distinct index), or (the empty slot where it goes, -1). Bytes are compared on every hash
    # match, so a collision never merges two tokens.
    mask = table.shape[0] - 1
    slot = _slot(h, mask)
    e = table[slot]
    while e >= 0:
        if e >> 31 == h:
            found = e & _LOW31
            if meta[2 * found + 1] == length:
                off = meta[2 * found]
                j = 0
                while j < length and distinct[off + j] == distinct[pos + j]:
                    j += 1
                if j == length:
                    return slot, found
        slot = (slot + 1) & mask
        e = table[slot]
    return slot, -1


@jit
def ascii_tokens(data: U8, bounds: I64) -> tuple[I32, I64, U8]:
    """Token occurrences of ASCII documents, as indices into the batch's distinct tokens.

    ``data: uint8`` holds the documents' bytes back to back, document ``i`` being
    ``data[bounds[i]:bounds[i+1]]`` (``bounds: int64[n_docs+1]``, non-decreasing; bytes outside
    ``bounds[0]:bounds[-1]`` are not read). Returns ``(occ, occ_starts, distinct)``:

    - ``occ: int32[n_tokens]``: per token occurrence, in document order, its distinct index;
    - ``occ_starts: int64[n_docs+1]``: document ``i``'s occurrences are
      ``occ[occ_starts[i]:occ_starts[i+1]]``;
    - ``distinct: uint8``: the distinct tokens (folded to lower case) in order of first
      occurrence, each followed by one ``DISTINCT_SEP`` byte, so that
      ``distinct.tobytes().decode("ascii").split()`` lists them by distinct index.

    Tokens never span two documents. Memory is O(len(data)). Raises ValueError when ``bounds``
    decreases or leaves ``data``, or spans 2**31 bytes or more (distinct indices are 31-bit).
    Per token: fold, hash and copy it, look it up (``_find_token``); a new token keeps its copy
    and gets the next distinct index.
    """
    nbytes = _batch_bytes(data, bounds)
    n_docs = max(bounds.shape[0] - 1, 0)
    occ = np.empty(nbytes, dtype=np.int32)
    occ_starts = np.zeros(n_docs + 1, dtype=np.int64)
    # The distinct tokens are tokens of data, one separator byte after each, and tokens number at
    # most the bytes: 2 * nbytes bounds them. (np.empty: pages never written cost no memory.)
    distinct = np.empty(2 * nbytes, dtype=np.uint8)
    table = np.full(_TABLE0, -1, dtype=np.int64)
    # Per distinct token k: meta[2k] is where its bytes start in ``distinct``, meta[2k+1] its
    # length (side by side: one cache line for both).
    meta = np.empty(_TABLE0, dtype=np.int64)
    n_dist = 0
    pos = 0  # end of the distinct bytes written so far
    n_occ = 0
    for d in range(n_docs):
        i = bounds[d]
        end = bounds[d + 1]
        while i < end:
            c = int(FOLD[data[i]])
            i += 1
            if c == 0:
                continue
            # A token starts: fold and hash it while copying it after the distinct bytes, where
            # it stays only if it is new (so a repeat costs no second pass over the input).
            h = _FNV32_OFFSET
            length = 0
            while c != 0:
                h = ((h ^ c) * _FNV32_PRIME) & _MASK32
                distinct[pos + length] = c
                length += 1
                if i >= end:
                    break
                c = int(FOLD[data[i]])
                i += 1
            slot, k = _find_token(table, meta, distinct, h, pos, length)
            if k < 0:
                k = n_dist
                table[slot] = (h << 31) | k
                meta[2 * k] = pos
                meta[2 * k + 1] = length
                pos += length
                distinct[pos] = DISTINCT_SEP
                pos += 1
                n_dist += 1
                # Keep n_dist < len(table) // 2: the table stays at most half full (short probe
                # chains that always end) and meta has room for the next token.
                if 2 * n_dist >= table.shape[0]:
                    table, meta = _grow(table, meta, n_dist)
            occ[n_occ] = k
            n_occ += 1
        occ_starts[d + 1] = n_occ
    return occ[:n_occ], occ_starts, distinct[:pos]


@jit
def apply_lut(occ: I32, occ_starts: I64, lut: I32) -> tuple[I32, I64]:
    """Map occurrences through ``lut`` (distinct index -> term id, -1 = drop) per document.

    ``occ`` and ``occ_starts`` as returned by ``ascii_tokens``; ``lut: int32[n_distinct]``.
    Returns ``(term_ids_flat int32, doc_starts int64[n_docs+1])`` with the dropped occurrences
    left out: document ``i``'s terms in order are ``term_ids_flat[doc_starts[i]:doc_starts[i+1]]``
    (a document whose every token was dropped has none). ``doc_starts[0]`` is 0.
    """
    n_docs = max(occ_starts.shape[0] - 1, 0)
    flat = np.empty(occ.shape[0], dtype=np.int32)
    doc_starts = np.zeros(n_docs + 1, dtype=np.int64)
    n = 0
    for d in range(n_docs):
        for j in range(occ_starts[d], occ_starts[d + 1]):
            t = lut[occ[j]]
            if t >= 0:
                flat[n] = t
                n += 1
        doc_starts[d + 1] = n
    return flat[:n], doc_starts


@jit
def _key(blob: U8, start: int, length: int, depth: int) -> int:
    # Bytes depth .. depth+6 of a field as a big-endian integer, zero-padded past its end: keys
    # order like the bytes, a shorter field first (fields hold no zero bytes). 7 bytes: < 2**56.
    k = 0
    for j in range(depth, depth + _KEY_BYTES):
        k = k << 8
        if j < length:
            k = k | int(blob[start + j])
    return k


@jit
def _same(blob: U8, a: int, a_len: int, b: int, b_len: int) -> bool:
    if a_len != b_len:
        return False
    j = 0
    while j < a_len and blob[a + j] == blob[b + j]:
        j += 1
    return j == a_len


@jit
def _goes_on(lens: I64, idx: I64, lo: int, hi: int, end: int) -> bool:
    # Whether any of the fields idx[lo:hi] is longer than ``end`` bytes.
    p = lo
    while p < hi and lens[idx[p]] <= end:
        p += 1
    return p < hi


@jit
def _split_fields(blob: U8, n_fields: int, sep: int) -> tuple[I64, I64]:
    # (start, length) of each of the ``n_fields`` fields of ``blob``; ValueError unless it holds
    # exactly n_fields - 1 separators.
    starts = np.empty(n_fields, dtype=np.int64)
    lens = np.empty(n_fields, dtype=np.int64)
    f = 0
    s = 0
    for i in range(blob.shape[0]):
        if blob[i] == sep:
            if f == n_fields - 1:
                raise ValueError("term_ranks: more than n_fields - 1 separators")
            starts[f] = s
            lens[f] = i - s
            f += 1
            s = i + 1
    if f != n_fields - 1:
        raise ValueError("term_ranks: fewer than n_fields - 1 separators")
    starts[f] = s
    lens[f] = blob.shape[0] - s
    return starts, lens


@jit
def _by_first_digit(blob: U8, starts: I64, lens: I64) -> tuple[I64, I64]:
    # The non-empty fields (indices) stably sorted by their first 7-byte key, and those keys.
    n_fields = lens.shape[0]
    m = 0
    for f in range(n_fields):
        if lens[f] > 0:
            m += 1
    idx = np.empty(m, dtype=np.int64)
    keys = np.empty(m, dtype=np.int64)
    m = 0
    for f in range(n_fields):
        if lens[f] > 0:
            idx[m] = f
            keys[m] = _key(blob, starts[f], lens[f], 0)
            m += 1
    order = np.argsort(keys, kind="mergesort")
    return idx[order], keys[order]


@jit
def _push_runs(keys: I64, lens: I64, idx: I64, base: int, depth: int, run_lo: I64, run_hi: I64,
               run_depth: I64, n_runs: int) -> int:
    # Push every run of equal ``keys`` (positions ``base + i``) with a field going on past
    # ``depth`` bytes, to be sorted by its next digit; the new number of pending runs.
    m = keys.shape[0]
    lo = 0
    while lo < m:
        hi = lo + 1
        while hi < m and keys[hi] == keys[lo]:
            hi += 1
        if hi - lo > 1 and _goes_on(lens, idx, base + lo, base + hi, depth):
            run_lo[n_runs] = base + lo
            run_hi[n_runs] = base + hi
            run_depth[n_runs] = depth
            n_runs += 1
        lo = hi
    return n_runs


@jit
def _radix_refine(blob: U8, starts: I64, lens: I64, idx: I64, keys: I64) -> None:
    # MSD radix by 7-byte digits, in place on ``idx`` (sorted by the first digit): each run of
    # equal keys is sorted again by the next digit while any of its fields goes on past the
    # digit (one that ends exactly at it gets key 0 next, so it sorts first, as a prefix
    # should). A run none of whose fields goes on is one term. Pending runs are disjoint, so at
    # most m of them.
    m = idx.shape[0]
    run_lo = np.empty(m + 1, dtype=np.int64)
    run_hi = np.empty(m + 1, dtype=np.int64)
    run_depth = np.empty(m + 1, dtype=np.int64)
    n_runs = _push_runs(keys, lens, idx, 0, _KEY_BYTES, run_lo, run_hi, run_depth, 0)
    while n_runs > 0:
        n_runs -= 1
        lo = run_lo[n_runs]
        hi = run_hi[n_runs]
        depth = run_depth[n_runs]
        sub = np.empty(hi - lo, dtype=np.int64)
        for p in range(lo, hi):
            sub[p - lo] = _key(blob, starts[idx[p]], lens[idx[p]], depth)
        sub_order = np.argsort(sub, kind="mergesort")
        idx[lo:hi] = idx[lo:hi][sub_order]
        n_runs = _push_runs(sub[sub_order], lens, idx, lo, depth + _KEY_BYTES, run_lo, run_hi,
                            run_depth, n_runs)


@jit
def term_ranks(blob: U8, n_fields: int, sep: int) -> tuple[I32, I32]:
    """Distinct terms of a list of terms, ranked in byte order.

    ``blob: uint8`` is ``n_fields`` fields (terms) joined by the byte ``sep``; an empty field is
    a dropped term. No field may contain ``sep`` or a zero byte. Returns ``(ranks, first)``:
    ``ranks: int32[n_fields]`` gives each field the rank of its term among the distinct
    non-empty terms sorted by bytes (UTF-8 byte order is code point order, that is ``sorted``
    on ``str``), -1 for an empty field; ``first: int32[n_distinct]`` gives for each rank a field
    holding that term. Equal bytes, equal rank. Raises ValueError unless ``blob`` holds exactly
    ``n_fields - 1`` separators (a zero byte is not checked: it only misorders that term).
    The steps: split the fields, sort them by their first 7 bytes, refine equal runs by the
    next 7 (``_radix_refine``), then rank the sorted fields, equal bytes sharing a rank.
    """
    if n_fields <= 0:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    starts, lens = _split_fields(blob, n_fields, sep)
    idx, keys = _by_first_digit(blob, starts, lens)
    _radix_refine(blob, starts, lens, idx, keys)
    m = idx.shape[0]
    ranks = np.full(n_fields, -1, dtype=np.int32)
    first = np.empty(m, dtype=np.int32)
    r = -1
    prev = -1
    for p in range(m):
        f = idx[p]
        if prev < 0 or not _same(blob, starts[prev], lens[prev], starts[f], lens[f]):
            r += 1
            first[r] = f
        ranks[f] = r
        prev = f
    return ranks, first[: r + 1]
