"""Persisted segment files (index/persist.py): the bytes are those of the format's plain
construction, and encoding a large segment never holds the GIL for long (a merge persists its
segment in a worker thread while the event loop answers queries)."""

from __future__ import annotations

import json
import random
import struct
import threading
import time

import numpy as np
import pytest
from segment_v1 import packed_arrays, sealed_file, version_1_file

from hmsengine.index import persist
from hmsengine.index.analyzer import get_analyzer
from hmsengine.index.segment import build_segment
from hmsengine.storage.codec import Codec
from hmsengine.storage.keys import SealedCodec


def _plain_encoding(segment, codec, name):  # type: ignore[no-untyped-def]
    """The format as docs/PERSISTED-FORMAT.md and persist's docstring describe it (version 2),
    written out the plain way: each array's bytes padded to 8, the ids and the terms (by id)
    joined by newlines as two more such arrays, a JSON header, the codec, the footer."""
    arrays, body = packed_arrays(_version_2_arrays(segment, segment.ids))
    header = json.dumps({"n_docs": segment.n_docs, "arrays": arrays}, ensure_ascii=False,
                        separators=(",", ":")).encode()
    return sealed_file(header, body, codec, name, version=2)


def _version_2_arrays(segment, ids):  # type: ignore[no-untyped-def]
    """A version 2 file's arrays: the segment's, then ``ids`` and its terms (by id) joined."""
    vocab = sorted(segment.vocab, key=segment.vocab.__getitem__)
    return [*((key, get(segment)) for key, get in persist._ARRAYS),
            ("ids_utf8", np.frombuffer("\n".join(ids).encode(), dtype=np.uint8)),
            ("vocab_utf8", np.frombuffer("\n".join(vocab).encode(), dtype=np.uint8))]


def _same_segment(back, segment) -> None:  # type: ignore[no-untyped-def]
    assert back.ids == segment.ids and back.vocab == segment.vocab
    assert list(back.vocab) == sorted(segment.vocab, key=segment.vocab.__getitem__)
    for key, get in persist._ARRAYS:
        want, got = get(segment), get(back)
        assert (want is None) == (got is None), key
        if want is not None:
            assert np.asarray(got).tobytes() == np.ascontiguousarray(want).tobytes(), key


def _segment(n: int, seed: int = 1, *, embeddings: bool = False):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(3000)] + ["naïve", "日本語", 'quo"te', "back\\slash"]
    texts = [" ".join(rng.choices(words, k=rng.randint(0, 30))) for _ in range(n)]
    ids = [f"doc-{i}-{rng.choice(['é', 'x', '✓'])}" for i in range(n)]
    vectors: list[np.ndarray | None] = [None] * n
    if embeddings:
        vectors = [np.asarray(np.random.default_rng(i).random(8), dtype=np.float32)
                   if i % 3 else None for i in range(n)]
    return build_segment(get_analyzer("standard"), ids=ids, texts=texts, embeddings=vectors,
                         first_docnum=10, dim=64, embedding_dim=8 if embeddings else None,
                         with_ngrams=n % 3 == 1)


@pytest.mark.parametrize("n", [0, 1, 7, 1000, 2017])
def test_segment_bytes_are_the_formats_plain_construction(n: int, monkeypatch) -> None:
    """The pieces-at-a-time encoding writes the very bytes of the plain construction: small and
    large segments (ids and terms joined in several pieces: 500 a piece here), non-ASCII ids
    and terms, embeddings; and reads back the same segment."""
    monkeypatch.setattr(persist, "_TEXT_PIECE", 500)
    segment = _segment(n, embeddings=n % 2 == 1)
    got = persist.encode_segment(segment, Codec(), "index/g/seg-1.hsi")
    assert bytes(got) == _plain_encoding(segment, Codec(), "index/g/seg-1.hsi")
    _same_segment(persist.decode_segment(bytes(got), Codec(), "index/g/seg-1.hsi", "seg-1"),
                  segment)


@pytest.mark.parametrize("n", [0, 1, 1000])
def test_version_1_files_read_as_before(n: int) -> None:
    """A file of the earlier builds (ids and vocabulary as header JSON, version 1 in its footer
    and associated data) decodes to the same segment, plain and encrypted."""
    segment = _segment(n, embeddings=n % 2 == 1)
    for codec in (Codec(), SealedCodec(bytes(range(32)))):
        old = version_1_file(segment, codec, "index/g/seg-5.hsi")
        _same_segment(persist.decode_segment(old, codec, "index/g/seg-5.hsi", "seg-5"), segment)


def test_a_term_with_a_newline_is_listed_in_the_header() -> None:
    """No analyzer makes such a term, but a file must not depend on it: a vocabulary that
    cannot be joined by newlines is written as header JSON, and reads back the same."""
    import attrs

    segment = _segment(50)
    odd = attrs.evolve(segment, vocab={("two\nlines" if i == 3 else t): i
                                       for t, i in segment.vocab.items()})
    got = bytes(persist.encode_segment(odd, Codec(), "index/g/seg-6.hsi"))
    payload = persist.decode_payload(got, Codec(), "index/g/seg-6.hsi", "seg-6")
    (size,) = struct.unpack_from("<I", payload, 0)
    header = json.loads(bytes(payload[4:4 + size]))
    assert header["vocab"] == sorted(odd.vocab, key=odd.vocab.__getitem__)
    assert "vocab_utf8" not in header["arrays"] and "ids_utf8" in header["arrays"]
    assert "ids" not in header
    back = persist.decode_segment(got, Codec(), "index/g/seg-6.hsi", "seg-6")
    assert back.vocab == odd.vocab and back.ids == odd.ids


def test_a_version_2_payload_of_the_wrong_length_is_corrupt() -> None:
    """The joined ids must be exactly the segment's documents: one too many or too few is a
    damaged file (CorruptStore), never a segment with shifted ids."""
    from hmsengine import CorruptStore

    segment = _segment(20)
    for ids in (segment.ids[:-1], (*segment.ids, "extra")):
        arrays, body = packed_arrays(_version_2_arrays(segment, ids))
        header = json.dumps({"n_docs": segment.n_docs, "arrays": arrays}).encode()
        bad = sealed_file(header, body, Codec(), "s", version=2)
        with pytest.raises(CorruptStore):
            persist.decode_segment(bad, Codec(), "s", "s")


def test_sealed_segment_decodes_to_the_same_segment() -> None:
    """Encrypted (a fresh nonce each time, so compared through a decode)."""
    codec = SealedCodec(bytes(range(32)))
    segment = _segment(500)
    got = persist.encode_segment(segment, codec, "index/g/seg-2.hsi")
    back = persist.decode_segment(bytes(got), codec, "index/g/seg-2.hsi", "seg-2")
    assert back.ids == segment.ids and back.vocab == segment.vocab
    assert back.terms.doc_ids.tobytes() == segment.terms.doc_ids.tobytes()


def _longest_wait(encode) -> float:  # type: ignore[no-untyped-def]
    """The longest a thread sleeping 0.5 ms at a time waited to run again while ``encode()``
    ran in this one (it needs the GIL to wake)."""
    late: list[float] = []
    done = threading.Event()

    def sleeper() -> None:
        while not done.is_set():
            t = time.perf_counter()
            time.sleep(0.0005)
            late.append(time.perf_counter() - t)

    thread = threading.Thread(target=sleeper)
    thread.start()
    try:
        time.sleep(0.05)
        encode()
    finally:
        done.set()
        thread.join()
    return max(late)


def test_encoding_a_large_segment_lets_other_threads_run() -> None:
    """While a ~200k-document segment is encoded, a thread that sleeps 0.5 ms at a time waits
    far less to run again than beside the format's plain construction (tobytes and joins over
    the whole segment, which hold the GIL).
    Compared within the test, not against a fixed time, so a busy machine cannot fail it."""
    import attrs

    rng = np.random.default_rng(3)
    n = 200_000
    base = _segment(50)
    postings = 30 * n
    terms = persist.Postings(offsets=np.linspace(0, postings, 3001).astype(np.int64),
                             doc_ids=rng.integers(0, n, postings).astype(np.int32),
                             values=rng.random(postings).astype(np.float32))
    segment = attrs.evolve(base, ids=tuple(f"d{i}" for i in range(n)),
                           docnums=np.arange(n, dtype=np.int64),
                           vocab={f"t{i}": i for i in range(3000)}, terms=terms, forward=terms,
                           doc_lens=np.full(n, 30, dtype=np.int32),
                           df=np.zeros(3000, dtype=np.int64), ngrams=None, embeddings=None,
                           has_embedding=np.zeros(n, dtype=np.uint8))
    name = "index/g/seg-3.hsi"
    plain = _longest_wait(lambda: _plain_encoding(segment, Codec(), name))
    pieces = _longest_wait(lambda: persist.encode_segment(segment, Codec(), name))
    assert pieces < plain / 3, f"waited {pieces * 1e3:.0f} ms, {plain * 1e3:.0f} ms beside the plain one"


def test_a_vocabulary_out_of_insertion_order_is_written_by_id() -> None:
    """A vocabulary whose ids do not number it in insertion order (no build makes one, but a
    file must not depend on that) is written sorted by id, as the plain construction writes
    it, and reads back the same."""
    segment = _segment(300)
    terms = list(segment.vocab)
    shuffled = terms[:]
    random.Random(5).shuffle(shuffled)
    import attrs

    reordered = attrs.evolve(segment, vocab={term: segment.vocab[term] for term in shuffled})
    assert list(reordered.vocab) != terms
    got = persist.encode_segment(reordered, Codec(), "index/g/seg-4.hsi")
    assert bytes(got) == _plain_encoding(reordered, Codec(), "index/g/seg-4.hsi")
    back = persist.decode_segment(bytes(got), Codec(), "index/g/seg-4.hsi", "seg-4")
    assert back.vocab == segment.vocab and list(back.vocab) == terms


def test_a_large_vocabulary_is_written_without_a_long_hold_of_the_gil() -> None:
    """The vocabulary of a segment of 600k terms goes into its file without the one sort by
    id that held the GIL for the whole vocabulary (~70-80 ms here): another thread waits far
    less to run (~7 ms) while its terms are put in order. Compared within the test."""
    import attrs

    n = 600_000
    segment = attrs.evolve(_segment(5), vocab={f"term{i:07d}": i for i in range(n)})

    def sorted_header() -> None:
        sorted(segment.vocab, key=segment.vocab.__getitem__)

    plain = _longest_wait(sorted_header)
    pieces = _longest_wait(lambda: persist._terms_by_id(segment.vocab))
    assert persist._terms_by_id(segment.vocab) == sorted(segment.vocab, key=segment.vocab.__getitem__)
    assert pieces < plain / 2, f"waited {pieces * 1e3:.0f} ms, {plain * 1e3:.0f} ms beside a sort"
    assert persist._lines(persist._terms_by_id(segment.vocab))  # and the terms are joined
