"""The "standard" and "simple" analyzers: normalisation, tokens, stop words, stems, term ids."""

from __future__ import annotations

import re
import threading
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hmsengine.index.analyzer import STOP_WORDS, Analyzer, get_analyzer
from hmsengine.kernels import bm25

STANDARD = get_analyzer("standard")
SIMPLE = get_analyzer("simple")


def test_nfkc_and_casefold() -> None:
    """Full-width and upper-case letters fold to the same terms ("ＣＡＦÉ" -> "café")."""
    assert SIMPLE.tokenize("ＣＡＦÉ") == ["café"]
    assert SIMPLE.tokenize("Café") == SIMPLE.tokenize("CAFE\u0301") == ["café"]
    assert SIMPLE.tokenize("Straße") == ["strasse"]
    assert STANDARD.tokenize("ＣＡＦÉ") == STANDARD.tokenize("café")


def test_underscore_and_punctuation_split() -> None:
    """Underscores and punctuation separate tokens; digits are kept."""
    assert SIMPLE.tokenize("snake_case-word, v2.0 ok") == ["snake", "case", "word", "v2", "0", "ok"]
    assert SIMPLE.tokenize("room 101 in 2024") == ["room", "101", "in", "2024"]


def test_stop_words_dropped_only_by_standard() -> None:
    """Standard drops stop words (question words, pronouns included); simple keeps them."""
    text = "What did she say about the meeting where we were?"
    assert SIMPLE.tokenize(text) == [
        "what", "did", "she", "say", "about", "the", "meeting", "where", "we", "were",
    ]  # fmt: skip
    assert STANDARD.tokenize(text) == ["say", "meet"]
    for word in ("what", "when", "where", "who", "why", "how", "i", "you", "they", "is", "the"):
        assert word in STOP_WORDS


def test_stemming() -> None:
    """Standard applies Snowball English stemming ("running" -> "run")."""
    assert STANDARD.tokenize("running runs ran easily") == ["run", "run", "ran", "easili"]
    assert SIMPLE.tokenize("running") == ["running"]


def test_empty_and_stop_only_text() -> None:
    """Empty text and text of stop words only give no terms."""
    assert STANDARD.tokenize("") == [] and SIMPLE.tokenize("") == []
    assert STANDARD.query_terms("what is it?") == []
    assert STANDARD.query_terms("Running dogs, running!") == ["run", "dog", "run"]


def test_unknown_analyzer_is_value_error() -> None:
    """An unknown analyzer name raises ValueError listing the known ones."""
    with pytest.raises(ValueError, match="standard"):
        get_analyzer("klingon")
    assert isinstance(STANDARD, Analyzer) and STANDARD.name == "standard"


def test_term_ids_match_tokenize_and_grow_vocab() -> None:
    """term_ids maps each document's tokenize() terms through vocab, adding new terms densely."""
    texts = ["The cats are running", "", "what is it", "Dogs chase cats; cats run!", "x_y 42"]
    vocab: dict[str, int] = {"dog": 0}
    ids, starts = STANDARD.term_ids(texts, vocab)
    assert ids.dtype == np.int32 and starts.dtype == np.int64
    assert starts.shape == (len(texts) + 1,)
    assert sorted(vocab.values()) == list(range(len(vocab)))
    inverse = {i: t for t, i in vocab.items()}
    for i, text in enumerate(texts):
        assert [inverse[t] for t in ids[starts[i] : starts[i + 1]].tolist()] == STANDARD.tokenize(
            text
        )
    again, _ = STANDARD.term_ids(texts, vocab)
    assert again.tolist() == ids.tolist(), "known terms keep their ids"
    offsets, doc_ids, tfs, lens = bm25.build_postings(ids, starts, len(vocab))
    assert lens.tolist() == [len(STANDARD.tokenize(t)) for t in texts]
    cat = vocab["cat"]
    assert doc_ids[offsets[cat] : offsets[cat + 1]].tolist() == [0, 3]
    assert tfs[offsets[cat] : offsets[cat + 1]].tolist() == [1.0, 2.0]


def test_term_ids_new_terms_numbered_deterministically() -> None:
    """New terms of one call get ids in sorted order, whatever the hash seed."""
    vocab: dict[str, int] = {}
    SIMPLE.term_ids(["zeta alpha mid", "alpha beta"], vocab)
    assert vocab == {"alpha": 0, "beta": 1, "mid": 2, "zeta": 3}


def test_threads_tokenize_consistently() -> None:
    """Several threads tokenizing at once get the same result as one thread."""
    texts = [f"Running {i} foxes jumped over lazy dogs number{i % 50} quickly" for i in range(400)]
    analyzer = Analyzer(name="standard", stop_words=STOP_WORDS, stem=True)  # fresh, empty cache
    expected = [STANDARD.tokenize(t) for t in texts]
    results: list[list[list[str]]] = [[] for _ in range(6)]
    id_terms: list[list[str]] = [[] for _ in range(6)]
    barrier = threading.Barrier(6)

    def work(slot: int) -> None:
        barrier.wait()
        for _ in range(3):
            results[slot] = [analyzer.tokenize(t) for t in texts]
            vocab: dict[str, int] = {}
            ids, _ = analyzer.term_ids(texts, vocab)
            inverse = {i: t for t, i in vocab.items()}
            id_terms[slot] = [inverse[x] for x in ids.tolist()]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    flat = [term for terms in expected for term in terms]
    assert all(r == expected for r in results)
    assert all(terms == flat for terms in id_terms)


@pytest.mark.parametrize(
    "texts",
    [
        ["alpha\x00beta gamma", "delta"],
        ["solo\x00text"],
        ["\x00", "", "x\x00\x00y"],
        [],
        ["", ""],
        ["e\u0301tude", "\u0301accent first", "ﬁne ＡＢＣ"],
    ],
)
def test_term_ids_batch_equals_per_text_tokenize(texts: list[str]) -> None:
    """Batch term ids equal per-text tokenize, also with NUL inside texts and combining marks."""
    for analyzer in (STANDARD, SIMPLE):
        vocab: dict[str, int] = {}
        ids, starts = analyzer.term_ids(texts, vocab)
        inverse = {i: t for t, i in vocab.items()}
        assert starts.tolist()[0] == 0 and len(starts) == len(texts) + 1
        got = [
            [inverse[x] for x in ids[starts[i] : starts[i + 1]].tolist()] for i in range(len(texts))
        ]
        assert got == [analyzer.tokenize(t) for t in texts]


@settings(max_examples=200)
@given(texts=st.lists(st.text(alphabet=st.characters(max_codepoint=127)), min_size=1, max_size=5))
def test_ascii_fast_path_tokenizes_like_the_unicode_path(texts):
    """ASCII text (the fast pattern, no NFKC) gives exactly the Unicode path's tokens, alone and
    in a batch."""
    unicode_re = re.compile(r"[^\W_]+")
    simple = get_analyzer("simple")
    for text in texts:
        assert simple.tokenize(text) == unicode_re.findall(
            unicodedata.normalize("NFKC", text).casefold())
    vocab: dict[str, int] = {}
    flat, starts = simple.term_ids(texts, vocab)
    names = {i: t for t, i in vocab.items()}
    for i, text in enumerate(texts):
        assert [names[t] for t in flat[starts[i]:starts[i + 1]].tolist()] == simple.tokenize(text)


_WORDS = ["The", "what", "IS", "running", "Runs", "dogs", "café", "x_y", "42", "v2", "\x00", "ＡＢＣ"]


@settings(max_examples=100, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(_WORDS) | st.text(max_size=6), max_size=8).map(" ".join),
        max_size=6,
    ),
    ascii_only=st.booleans(),
)
def test_term_ids_agree_with_tokenize_both_analyzers(texts: list[str], ascii_only: bool) -> None:
    """term_ids (ASCII kernel path or Unicode path) gives each document its tokenize() terms, for
    both analyzers, so query terms meet index terms."""
    if ascii_only:
        texts = [t.encode("ascii", "ignore").decode("ascii") for t in texts]
    for analyzer in (STANDARD, SIMPLE):
        vocab: dict[str, int] = {}
        flat, starts = analyzer.term_ids(texts, vocab)
        assert sorted(vocab.values()) == list(range(len(vocab)))
        names = {i: t for t, i in vocab.items()}
        got = [[names[t] for t in flat[starts[i] : starts[i + 1]].tolist()] for i in range(len(texts))]
        assert got == [analyzer.tokenize(t) for t in texts]
