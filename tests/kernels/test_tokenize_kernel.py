"""ASCII tokenizing kernels, and Analyzer.term_ids on them against the former regex algorithm."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hmsengine.index import analyzer as analyzer_module
from hmsengine.index.analyzer import STOP_WORDS, Analyzer, get_analyzer
from hmsengine.kernels import reference, tokenize

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
SETTINGS = settings(
    max_examples=40 if NO_JIT else 300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
STANDARD = get_analyzer("standard")
SIMPLE = get_analyzer("simple")
ASCII_RE = re.compile(r"[0-9a-z]+", re.ASCII)

# Pairs of tokens with the same 32-bit FNV-1a hash (found by search): the table must still tell
# them apart by their bytes. The first pair has equal lengths, the second not.
COLLIDING = [("zb0h53", "beisw6"), ("faym66y6b", "h5wqpq")]
WORDS = [
    *sorted(STOP_WORDS)[:40], "The", "WHAT", "Is", "running", "RUNS", "ran", "easily", "dogs",
    "Dog", "cats", "x", "y", "42", "007", "v2", "abc123", "ZZZ", "café", *sum(COLLIDING, ()),
]  # fmt: skip
SEPARATORS = [" ", "  ", ", ", ".", "-", "_", "\x00", "\n", "\t", "'", "!?", "\x7f", "\x01"]


def _fnv32(token: bytes) -> int:
    h = 0x811C9DC5
    for c in token:
        h = ((h ^ c) * 0x01000193) & 0xFFFFFFFF
    return h


ascii_text = st.lists(
    st.one_of(
        st.sampled_from([w for w in WORDS if w.isascii()]),
        st.sampled_from(SEPARATORS),
        st.text(alphabet=st.characters(max_codepoint=127), max_size=12),
        st.text(alphabet="aAbBzZ09", min_size=40, max_size=200),  # long tokens
    ),
    max_size=30,
).map("".join)
ascii_texts = st.lists(ascii_text | st.sampled_from(["", "\x00", "the of, a!", "..."]), max_size=12)
# A vocab being extended: terms with ids 0..n-1 in some order, some of which the texts produce.
prior_vocab = st.lists(
    st.sampled_from(["run", "dog", "cat", "the", "zzz", "42", "café", "zb0h53", "aaaa"]),
    unique=True, max_size=6,
).map(lambda terms: {t: i for i, t in enumerate(terms)})  # fmt: skip


def _per_doc_tokens(texts: list[str]) -> tuple[list[list[str]], list[str]]:
    docs = [ASCII_RE.findall(t.lower()) for t in texts]
    distinct = list(dict.fromkeys(t for doc in docs for t in doc))
    return docs, distinct


def _kernel_tokens(texts: list[str]) -> tuple[list[list[int]], list[str]]:
    big = "\x00".join(texts)
    bounds = np.zeros(len(texts) + 1, dtype=np.int64)
    bounds[1:] = np.cumsum([len(t) + 1 for t in texts])
    if texts:
        bounds[-1] -= 1
    occ, occ_starts, distinct = tokenize.ascii_tokens(
        np.frombuffer(big.encode("ascii"), dtype=np.uint8), bounds
    )
    assert occ.dtype == np.int32 and occ_starts.dtype == np.int64 and distinct.dtype == np.uint8
    assert occ_starts.tolist()[0] == 0 and len(occ_starts) == len(texts) + 1
    docs = [occ[occ_starts[i] : occ_starts[i + 1]].tolist() for i in range(len(texts))]
    return docs, distinct.tobytes().decode("ascii").split()


@given(ascii_texts)
@SETTINGS
def test_ascii_tokens_equal_regex_tokens(texts: list[str]) -> None:
    """The kernel finds each text's [0-9a-z]+ tokens of lower(), numbered by first occurrence."""
    want_docs, want_distinct = _per_doc_tokens(texts)
    got_docs, got_distinct = _kernel_tokens(texts)
    assert got_distinct == want_distinct
    assert [[got_distinct[k] for k in doc] for doc in got_docs] == want_docs


def test_ascii_tokens_hash_collisions_stay_distinct() -> None:
    """Tokens with equal hashes (equal or different lengths) keep separate distinct indices."""
    for a, b in COLLIDING:
        assert _fnv32(a.encode()) == _fnv32(b.encode())
    texts = [" ".join(pair * 3) for pair in COLLIDING] + ["BEISW6 zb0h53"]
    docs, distinct = _kernel_tokens(texts)
    assert distinct == ["zb0h53", "beisw6", "faym66y6b", "h5wqpq"]
    assert docs == [[0, 1] * 3, [2, 3] * 3, [1, 0]]


def test_ascii_tokens_table_growth() -> None:
    """Thousands of distinct tokens (several table doublings) are all kept and found again."""
    words = [f"w{i}x{i * 7919 % 1000}" for i in range(5000)]
    texts = [" ".join(words[i : i + 50]) for i in range(0, 5000, 50)] + [" ".join(words[::-1])]
    docs, distinct = _kernel_tokens(texts)
    assert distinct == words
    assert docs[-1] == list(range(4999, -1, -1))


def test_ascii_tokens_bounds_select_bytes() -> None:
    """Only data[bounds[0]:bounds[-1]] is read; tokens end at document bounds; a read-only or
    writable array gives the same result."""
    raw = b"skipABCdef12GHI!tail"
    bounds = np.array([4, 7, 12, 16], dtype=np.int64)
    for data in (np.frombuffer(raw, dtype=np.uint8), np.frombuffer(bytearray(raw), np.uint8)):
        occ, occ_starts, distinct = tokenize.ascii_tokens(data, bounds)
        assert distinct.tobytes().decode().split() == ["abc", "def12", "ghi"]
        assert occ.tolist() == [0, 1, 2] and occ_starts.tolist() == [0, 1, 2, 3]
    occ, occ_starts, distinct = tokenize.ascii_tokens(
        np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    )
    assert occ.size == 0 and occ_starts.tolist() == [0] and distinct.size == 0


def test_malformed_inputs_are_value_errors() -> None:
    """Bounds that decrease or leave the data, and a separator count that does not match the
    field count, raise ValueError instead of reading out of bounds."""
    data = np.frombuffer(b"abc def", dtype=np.uint8)
    for bounds in ([0, 5, 3], [0, 8], [-1, 3]):
        with pytest.raises(ValueError):
            tokenize.ascii_tokens(data, np.array(bounds, dtype=np.int64))
    for n_fields in (1, 3):
        with pytest.raises(ValueError):
            tokenize.term_ranks(data, n_fields, ord(" "))


@given(st.lists(st.lists(st.integers(0, 9), max_size=8), max_size=10), st.data())
@SETTINGS
def test_apply_lut_equals_numpy(docs: list[list[int]], data: st.DataObject) -> None:
    """apply_lut maps through the lut, drops -1 and gives each document its kept count."""
    lut = np.array(data.draw(st.lists(st.integers(-1, 5), min_size=10, max_size=10)), np.int32)
    occ = np.array([k for doc in docs for k in doc], dtype=np.int32)
    occ_starts = np.zeros(len(docs) + 1, dtype=np.int64)
    occ_starts[1:] = np.cumsum([len(doc) for doc in docs])
    flat, starts = tokenize.apply_lut(occ, occ_starts, lut)
    want = [[int(lut[k]) for k in doc if lut[k] >= 0] for doc in docs]
    assert flat.dtype == np.int32 and starts.dtype == np.int64
    assert flat.tolist() == [t for doc in want for t in doc]
    assert starts.tolist() == [0, *np.cumsum([len(doc) for doc in want], dtype=np.int64).tolist()]


# Terms sharing long prefixes, some ending exactly at a 7-byte sort-key boundary, and empties.
sort_terms = st.lists(
    st.builds(
        lambda prefix, tail: prefix + tail,
        st.sampled_from(["", "a", "abcdefg", "abcdefgh", "abcdefghijklmn", "abcdefghijklmnop"]),
        st.text(alphabet="ab9é", max_size=9),
    ),
    max_size=40,
)


@given(sort_terms)
@SETTINGS
def test_term_ranks_equal_sorted_set(terms: list[str]) -> None:
    """term_ranks ranks the distinct non-empty terms as sorted(set(terms)) (UTF-8 byte order is
    str order), -1 for "", and names a field holding each ranked term."""
    blob = np.frombuffer(" ".join(terms).encode(), dtype=np.uint8)
    ranks, first = tokenize.term_ranks(blob, len(terms), ord(" "))
    want = sorted(set(terms) - {""})
    assert ranks.dtype == np.int32 and first.dtype == np.int32
    assert [terms[i] for i in first.tolist()] == want
    rank_of = {t: r for r, t in enumerate(want)}
    assert ranks.tolist() == [rank_of[t] if t else -1 for t in terms]


def test_ids_of_falls_back_for_unsplittable_terms() -> None:
    """Terms holding the field separator or NUL (no stemmer makes them) still get ids in sorted
    order, by the plain Python path."""
    terms = ["b c", "", "a\x00", "b c", "z"]
    vocab = {"z": 0}
    lut = Analyzer._ids_of(terms, " ".join(terms).encode(), vocab)
    assert lut.dtype == np.int32 and lut.tolist() == [2, -1, 1, 2, 0]
    assert list(vocab.items()) == [("z", 0), ("a\x00", 1), ("b c", 2)]


def _check_term_ids(analyzer: Analyzer, texts: list[str], vocab: dict[str, int]) -> None:
    want_vocab = dict(vocab)
    want_ids, want_starts = reference.ascii_term_ids(texts, want_vocab, analyzer._terms_of)
    got_ids, got_starts = analyzer.term_ids(texts, vocab)
    assert got_ids.dtype == np.int32 and got_starts.dtype == np.int64
    assert got_ids.tolist() == want_ids.tolist()
    assert got_starts.tolist() == want_starts.tolist()
    assert list(vocab.items()) == list(want_vocab.items()), "same ids, same insertion order"


@given(ascii_texts, prior_vocab)
@SETTINGS
def test_term_ids_equal_reference(texts: list[str], vocab: dict[str, int]) -> None:
    """term_ids of ASCII batches equals the former algorithm exactly: ids, starts, vocab growth,
    for both analyzers and for an empty or already filled vocab."""
    for analyzer in (STANDARD, SIMPLE):
        _check_term_ids(analyzer, texts, dict(vocab))


@pytest.mark.parametrize(
    "texts",
    [
        [],
        [""],
        ["", "", ""],
        ["\x00"],
        ["the of and", "...", "", "A an THE"],
        ["Running\x00runs", "x\x00\x00y", "\x00lead", "trail\x00"],
        ["a" * 10_000, "B" * 5000 + "!" + "b" * 5000, "run " * 2000],
        [" ".join(pair) for pair in COLLIDING],
    ],
)
def test_term_ids_edge_cases_equal_reference(texts: list[str]) -> None:
    """Empty batches, separators or stop words only, NUL inside texts, long and repeated tokens,
    hash collisions: term_ids equals the former algorithm."""
    for analyzer in (STANDARD, SIMPLE):
        for vocab in ({}, {"run": 0, "b": 1}):
            _check_term_ids(analyzer, texts, dict(vocab))


def test_term_ids_cold_cache_equals_reference() -> None:
    """A fresh analyzer (empty token -> term cache) gives the same ids as a warm one."""
    texts = ["Running dogs ran", "the cats RUN easily", "42 v2 runs"]
    fresh = Analyzer(name="standard", stop_words=STOP_WORDS, stem=True)
    _check_term_ids(fresh, texts, {})
    _check_term_ids(fresh, texts, {})


def test_term_ids_empty_string_in_vocab_still_dropped() -> None:
    """A vocab that (oddly) holds "" still gets no id for dropped stop words."""
    _check_term_ids(STANDARD, ["the run", "of"], {"": 0, "run": 1})


def test_non_ascii_batch_takes_the_unicode_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch with any non-ASCII text never reaches the ASCII kernel and matches tokenize."""

    def refuse(*args: object) -> None:
        raise AssertionError("ASCII kernel used for a non-ASCII batch")

    monkeypatch.setattr(analyzer_module, "ascii_tokens", refuse)
    texts = ["Café RUNNING", "plain ascii the end", "ＣＡＦÉ\x00naïve", ""]
    for analyzer in (STANDARD, SIMPLE):
        vocab: dict[str, int] = {}
        ids, starts = analyzer.term_ids(texts, vocab)
        names = {i: t for t, i in vocab.items()}
        got = [[names[x] for x in ids[starts[i] : starts[i + 1]].tolist()] for i in range(4)]
        assert got == [analyzer.tokenize(t) for t in texts]
