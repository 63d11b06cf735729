"""Text analysis for the lexical index: text -> terms, and batches of texts -> term ids.

Two analyzers, chosen by name when a store is created and recorded in it:

``"standard"``
    Unicode NFKC normalisation, then ``str.casefold``; tokens are maximal runs of Unicode letters
    and digits (underscore and every other character separate tokens: ``[^\\W_]+``); English
    stop words (``STOP_WORDS``) are dropped; the rest are stemmed with the Snowball English
    stemmer (PyStemmer), e.g. ``"running" -> "run"``.
``"simple"``
    The same tokens without stop-word removal or stemming.

Documents and queries go through the same analysis, so query terms meet index terms.

Thread-safety: an ``Analyzer`` may be used from several threads at once (index builders run in
worker threads). The PyStemmer object is not thread-safe, so each thread gets its own; the
token -> term cache is a plain dict that is only read with ``get`` and extended with ``update``
(atomic under the GIL), and a call never relies on an entry staying in it. For an ASCII batch,
``term_ids`` does the per-byte work in ``kernels.tokenize`` kernels that release the GIL and
allocate everything per call, so builders in several threads tokenize in parallel.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Collection
from itertools import compress, repeat

import attrs
import numpy as np
import numpy.typing as npt
import Stemmer

from hmsengine.kernels.tokenize import apply_lut, ascii_tokens, term_ranks

_TOKEN_RE = re.compile(r"[^\W_]+")
# Batch tokenizing: the texts are joined with NUL, which the pattern also matches as a token, so
# one findall over one string tokenizes the whole batch (1.3-1.5x faster than one findall per
# text: no per-text list objects, so also no garbage-collector passes over them). NUL is a
# starter that composes with nothing, so NFKC of the joined string is the join of each text's
# NFKC; NFKC and casefold never produce NUL. A text containing NUL itself is detected by the
# marker count and the batch falls back to one findall per text.
_SEP = "\x00"
_BATCH_RE = re.compile(r"[^\W_]+|\x00")
# ASCII-only text (checked in O(1) per string by CPython): NFKC is the identity, casefold is
# lower(), and after it ``[^\W_]`` matches exactly ``[0-9a-z]``, which an ASCII pattern scans
# ~2x faster. Same tokens, so the same index. An ASCII batch goes to the ``kernels.tokenize``
# kernels instead, which find the same tokens (tests/kernels/test_tokenize_kernel.py).
_ASCII_TOKEN_RE = re.compile(r"[0-9a-z]+", re.ASCII)
_SPACE = ord(" ")
# Bound on the token -> term cache; past it the cache starts over (a corpus of random strings
# must not grow memory without limit). About 100 MB of small strings at most.
_CACHE_MAX = 1 << 20

#: English stop words dropped by the "standard" analyzer (casefolded forms). Deliberately broad:
#: articles, conjunctions, prepositions, pronouns in every case, auxiliary and modal verbs,
#: question words, common determiners and adverbs, and the fragments that splitting English
#: contractions at the apostrophe leaves behind. Kept on purpose although often listed: "may"
#: (the month, in a temporal memory), "one" (a number) and "won" (of "win", not only "won't").
#: Dropping question words and pronouns raised BM25 recall on conversational memory benchmarks
#: (see shared/design/PERF-NOTES.md).
STOP_WORDS: frozenset[str] = frozenset(
    # A word list reads (and diffs) better as one block of text than as 200 quoted strings.
    """
    a an the
    and or but nor so yet if then else than because though although unless while whereas
    whether either neither both
    of in on at by for with without within from to into onto upon out off over under above
    below up down about around across along among amongst against between beyond through
    throughout during before after since until till via per toward towards behind beside
    besides near
    i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves oneself
    this that these those
    am is are was were be been being
    have has had having do does did doing done
    will would shall should can could might must ought
    what when where who whom whose which why how whatever whenever wherever whoever whichever
    however
    all any each every few more most other others some such no not only own same
    very too also just quite rather really even still already again ever never
    here there now once
    s t d ll m re ve don didn doesn isn wasn weren aren hasn haven hadn wouldn shouldn
    couldn mustn needn mightn shan ain
    yes ok okay oh
    """.split()  # noqa: SIM905
)


@attrs.frozen(kw_only=True)
class Analyzer:
    """A named text analysis; see the module docstring. Build one with ``get_analyzer``."""

    name: str
    stop_words: frozenset[str] = attrs.field(repr=False)
    stem: bool
    # raw token -> term ("" for a dropped stop word); shared by threads, see the module docstring.
    _cache: dict[str, str] = attrs.field(factory=dict, eq=False, repr=False)
    _local: threading.local = attrs.field(factory=threading.local, eq=False, repr=False)

    def _stemmer(self) -> Stemmer.Stemmer:
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            stemmer = Stemmer.Stemmer("english")
            self._local.stemmer = stemmer
        return stemmer

    def _terms_of(self, tokens: Collection[str]) -> dict[str, str]:
        """Map each distinct raw token to its term ("" when dropped)."""
        if not self.stem and not self.stop_words:
            return {t: t for t in tokens}
        get = self._cache.get
        out = {t: get(t) for t in tokens}
        missing = [t for t, term in out.items() if term is None]
        if missing:
            stop = self.stop_words
            kept = [t for t in missing if t not in stop]
            stems = self._stemmer().stemWords(kept) if self.stem else kept
            new = dict(zip(kept, stems, strict=True))
            new.update((t, "") for t in missing if t in stop)
            if len(self._cache) + len(new) > _CACHE_MAX:
                self._cache.clear()
            self._cache.update(new)
            out.update(new)
        return out  # type: ignore[return-value]  # every None was replaced above

    def tokenize(self, text: str) -> list[str]:
        """The terms of ``text`` in order, repeats kept (empty text -> [])."""
        if text.isascii():
            tokens = _ASCII_TOKEN_RE.findall(text.lower())
        else:
            tokens = _TOKEN_RE.findall(unicodedata.normalize("NFKC", text).casefold())
        if not self.stem and not self.stop_words:
            return tokens
        terms = self._terms_of(set(tokens))
        return [term for term in map(terms.__getitem__, tokens) if term]

    def query_terms(self, text: str) -> list[str]:
        """The terms of a query: the same analysis as documents, repeats kept (a repeated term
        weighs by its multiplicity). A query of stop words only has no terms."""
        return self.tokenize(text)

    def term_ids(
        self, texts: list[str], vocab: dict[str, int]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
        """Term ids of a batch of documents, growing ``vocab`` with their new terms.

        ``vocab`` maps term -> id with ids ``0..len(vocab)-1``; each new term gets the next id,
        new terms of one call numbered in sorted order (deterministic). Returns
        ``(term_ids_flat int32[total], doc_starts int64[len(texts)+1])``: document ``i``'s terms
        in order are ``term_ids_flat[doc_starts[i]:doc_starts[i+1]]``, ready for
        ``kernels.bm25.build_postings(term_ids_flat, doc_starts, len(vocab))``.
        """
        n = len(texts)
        big = _SEP.join(texts)
        if big.isascii():
            return self._ascii_term_ids(texts, big, vocab)
        flat: list[str] = _BATCH_RE.findall(unicodedata.normalize("NFKC", big).casefold())
        del big
        tokens = set(flat)
        if _SEP in tokens:
            tokens.remove(_SEP)
        terms = self._terms_of(tokens)
        if flat.count(_SEP) != max(n - 1, 0):
            # A text holds NUL itself: tokenize text by text (NUL separates tokens there).
            norm, findall = unicodedata.normalize, _TOKEN_RE.findall
            flat = []
            for text in texts:
                flat.extend(findall(norm("NFKC", text).casefold()))
                flat.append(_SEP)
            flat.pop()
        new_terms = set(terms.values()).difference(vocab)
        new_terms.discard("")
        for term in sorted(new_terms):
            vocab[term] = len(vocab)
        vget = vocab.get
        lut = {raw: vget(term, -1) if term else -1 for raw, term in terms.items()}
        lut[_SEP] = -2
        # A list first, then one conversion: ~1.5x faster than np.fromiter over the map.
        ids = np.array(list(map(lut.__getitem__, flat)), dtype=np.int32)
        del flat
        # Token i belongs to the document numbered by the count of separators before it.
        sep = ids == -2
        doc_of = np.cumsum(sep)
        keep = ids >= 0
        ids = ids[keep]
        lens = np.bincount(doc_of[keep], minlength=n) if n else np.zeros(0, dtype=np.int64)
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=starts[1:])
        return ids, starts

    def _ascii_term_ids(
        self, texts: list[str], big: str, vocab: dict[str, int]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
        # term_ids of an ASCII batch; ``big`` is the texts joined with NUL. The per-byte work
        # (folding, finding tokens, numbering the distinct ones) runs in nogil kernels, so
        # builders in several threads tokenize in parallel; Python only handles the distinct
        # tokens (stop words, stems, vocab), a small fraction of the occurrences.
        n = len(texts)
        # Document i's bytes, with the NUL after it (a separator, so harmless), are
        # big[bounds[i]:bounds[i+1]]; ASCII: one byte per character.
        bounds = np.zeros(n + 1, dtype=np.int64)
        if n:
            np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=n) + 1, out=bounds[1:])
            bounds[n] -= 1
        data = np.frombuffer(big.encode("ascii"), dtype=np.uint8)
        del big
        occ, occ_starts, distinct = ascii_tokens(data, bounds)
        del data
        raw: list[str] = str(distinct.data, "ascii").split()
        if self.stem or self.stop_words:
            # One cache lookup per distinct token (the common, warm case); only the misses go
            # through _terms_of. The values looked up are used as they were: another thread may
            # clear the cache meanwhile. A miss is None until the fix-up below, hence the ignore.
            mapped: list[str] = list(map(self._cache.get, raw))  # type: ignore[arg-type]
            if None in mapped:
                terms = self._terms_of([t for t, m in zip(raw, mapped, strict=True) if m is None])
                mapped = [terms[t] if m is None else m for t, m in zip(raw, mapped, strict=True)]
            blob = " ".join(mapped).encode()
        else:
            mapped = raw
            blob = distinct.tobytes()[:-1]  # the same fields, separated by one space each
        lut = self._ids_of(mapped, blob, vocab)
        return apply_lut(occ, occ_starts, lut)

    @staticmethod
    def _ids_of(
        terms: list[str], blob: bytes, vocab: dict[str, int]
    ) -> npt.NDArray[np.int32]:
        # The id of each of ``terms`` (-1 for ""), growing vocab with the new ones in sorted
        # order; ``blob`` is the terms joined by one space, UTF-8. The dedup and the sort run in
        # the nogil term_ranks kernel; Python only builds the new vocab entries.
        m = len(terms)
        if not m:
            return np.zeros(0, dtype=np.int32)
        if blob.count(b" ") != m - 1 or b"\x00" in blob:
            # A term with a space or NUL (no stemmer output has one) would break the fields.
            new_terms = set(terms).difference(vocab)
            new_terms.discard("")
            vocab.update(zip(sorted(new_terms), range(len(vocab), len(vocab) + len(new_terms)), strict=True))
            vget = vocab.get
            return np.array([vget(term, -1) if term else -1 for term in terms], dtype=np.int32)
        ranks, first = term_ranks(np.frombuffer(blob, dtype=np.uint8), m, _SPACE)
        ordered = list(map(terms.__getitem__, first.tolist()))  # distinct terms, sorted
        base = len(vocab)
        if vocab:
            ids = np.fromiter(map(vocab.get, ordered, repeat(-1)), dtype=np.int32, count=len(ordered))
            new = ids < 0
            n_new = int(np.count_nonzero(new))
            ids[new] = np.arange(base, base + n_new, dtype=np.int32)
            vocab.update(zip(compress(ordered, new.tolist()), range(base, base + n_new), strict=True))
        else:
            ids = np.arange(len(ordered), dtype=np.int32)
            vocab.update(zip(ordered, range(len(ordered)), strict=True))
        lut = np.full(m, -1, dtype=np.int32)
        kept = ranks >= 0
        lut[kept] = ids[ranks[kept]]
        return lut


_ANALYZERS = {
    "standard": Analyzer(name="standard", stop_words=STOP_WORDS, stem=True),
    "simple": Analyzer(name="simple", stop_words=frozenset(), stem=False),
}


def get_analyzer(name: str) -> Analyzer:
    """The analyzer called ``name`` (``"standard"`` or ``"simple"``); one shared instance each.

    Raises ValueError naming the known analyzers for any other name.
    """
    try:
        return _ANALYZERS[name]
    except (KeyError, TypeError):
        known = ", ".join(repr(k) for k in sorted(_ANALYZERS))
        raise ValueError(f"unknown analyzer {name!r}: expected one of {known}") from None
