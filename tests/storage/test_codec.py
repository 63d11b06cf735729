"""The codecs' zstd framing: small payloads in a raw block, larger ones compressed.

A raw-block frame must be exactly what zstd itself writes for incompressible input, so that any
zstd decoder (and so every earlier build of hmsengine) reads it; compaction compresses what the
write path left raw.
"""

from __future__ import annotations

import random
import zlib

import pytest
import trio
import zstandard

from hmsengine import Engine
from hmsengine.errors import CorruptStore
from hmsengine.storage.codec import (
    FLAG_ZSTD,
    PLAIN,
    SMALL_PAYLOAD_BYTES,
    Codec,
    raw_zstd_frame,
    zstd_frame,
)
from hmsengine.storage.keys import SealedCodec
from hmsengine.storage.segments import (
    RECORD_CRC_XOR,
    RECORD_HEADER,
    RECORD_HEADER_SIZE,
    TEXT_MAGIC,
    decode_record,
    encode_record,
    plain_small_payload,
    record_crc,
)

ENGLISH = ("Caroline went to the LGBTQ support group yesterday and said it was powerful. "
           "Melanie is painting a sunrise over the lake for her kids. ")


def test_raw_frame_is_byte_identical_to_zstds_own_for_incompressible_input() -> None:
    rng = random.Random(7)
    zstd = zstandard.ZstdCompressor(level=3, write_content_size=True)
    for size in range(SMALL_PAYLOAD_BYTES):
        data = rng.randbytes(size)
        assert raw_zstd_frame(data) == zstd.compress(data), size


def test_raw_frames_decode_through_zstd_and_both_codecs_at_every_size() -> None:
    rng = random.Random(11)
    sealed = SealedCodec(bytes(range(32)))
    for size in range(SMALL_PAYLOAD_BYTES):
        data = rng.randbytes(size) if size % 2 else (ENGLISH * 20).encode()[:size]
        frame = zstd_frame(data)
        assert frame == raw_zstd_frame(data)
        assert zstandard.ZstdDecompressor().decompress(frame) == data  # any zstd decoder
        assert zstandard.frame_content_size(frame) == size
        flags, stored = PLAIN.encode(data, aad=b"")
        assert flags == FLAG_ZSTD and stored == frame
        assert PLAIN.decode(flags, stored, aad=b"", where="t", offset=0) == data
        assert bytes(PLAIN.decode_writable(flags, stored, aad=b"", where="t", offset=0)) == data
        flags, stored = sealed.encode(data, aad=b"here")
        assert sealed.decode(flags, stored, aad=b"here", where="t", offset=0) == data
        assert bytes(sealed.decode_writable(flags, stored, aad=b"here", where="t", offset=0)) == data


def test_a_raw_frame_holds_only_small_payloads() -> None:
    with pytest.raises(ValueError, match="under 1024 bytes"):
        raw_zstd_frame(bytes(SMALL_PAYLOAD_BYTES))


def test_payloads_from_the_threshold_up_are_compressed() -> None:
    text = (ENGLISH * 20).encode()[:SMALL_PAYLOAD_BYTES]
    frame = zstd_frame(text)
    assert len(frame) < len(text) // 2
    assert zstandard.ZstdDecompressor().decompress(frame) == text


def test_fast_frames_are_zstd_level_1_and_decode_like_any_other() -> None:
    """Files derived from the journal are written at ZSTD_FAST_LEVEL; the journal and texts keep
    ZSTD_LEVEL. Either is one plain zstd frame with its content size."""
    text = (ENGLISH * 200).encode()
    fast = zstd_frame(text, fast=True)
    assert fast == zstandard.ZstdCompressor(level=1, write_content_size=True).compress(text)
    assert zstd_frame(text) == zstandard.ZstdCompressor(level=3, write_content_size=True).compress(text)
    assert fast != zstd_frame(text)
    assert zstandard.ZstdDecompressor().decompress(fast) == text
    small = ENGLISH.encode()[:100]
    assert zstd_frame(small, fast=True) == raw_zstd_frame(small)  # small stays raw
    flags, stored = Codec().encode(text, aad=b"x", fast=True)
    assert stored == fast and Codec().decode(flags, stored, aad=b"x", where="f", offset=0) == text
    sealed = SealedCodec(bytes(range(32)))
    flags, stored = sealed.encode(text, aad=b"y", fast=True)
    assert sealed.decode(flags, stored, aad=b"y", where="f", offset=0) == text


def test_compress_small_keeps_the_shorter_frame() -> None:
    english = ENGLISH.encode()
    assert len(zstd_frame(english, compress_small=True)) < len(raw_zstd_frame(english))
    tiny = b"ok"  # a compressed frame of two bytes is no shorter than the raw one
    assert zstd_frame(tiny, compress_small=True) == raw_zstd_frame(tiny)
    noise = random.Random(3).randbytes(300)
    assert zstd_frame(noise, compress_small=True) == raw_zstd_frame(noise)


def test_a_damaged_raw_frame_is_corruption_not_garbage() -> None:
    frame = bytearray(raw_zstd_frame(b"hello world"))
    frame[6] ^= 0x40  # the block header: now claims another size
    with pytest.raises(CorruptStore):
        PLAIN.decode(FLAG_ZSTD, bytes(frame), aad=b"", where="t", offset=0)


def test_the_record_shortcut_is_what_zstd_decodes() -> None:
    """The shortcut of a text read (``plain_small_payload``, which ``decode_record`` takes for a
    plain store) gives zstd's own decoding of the record's raw frame at every size, with or
    without the expected checksum, and None (the general path) when any byte of the frame's
    header differs: a reader without the shortcut reads exactly the same texts."""
    rng = random.Random(5)
    zstd = zstandard.ZstdDecompressor()
    for size in range(SMALL_PAYLOAD_BYTES):
        data = rng.randbytes(size)
        record = encode_record(PLAIN, data, offset=0, file_label=b"g", version=1)
        assert plain_small_payload(record) == plain_small_payload(record, record_crc(record)) \
            == zstd.decompress(record[RECORD_HEADER_SIZE:]) == data, size
        for at in range(RECORD_HEADER_SIZE, len(record) - size):  # the frame's header
            damaged = bytearray(record)
            damaged[at] ^= 0x01
            assert plain_small_payload(bytes(damaged)) is None, (size, at)


def test_text_records_decode_the_same_through_the_shortcut_and_through_zstd() -> None:
    """decode_record returns the text of raw, compressed and sealed records at sizes around
    the threshold, and refuses a raw record whose frame was altered (crc recomputed) as
    corruption, as zstd does, not as a shorter or longer text."""
    sealed = SealedCodec(bytes(range(32)))
    for size in (0, 1, 255, 256, 257, 700, SMALL_PAYLOAD_BYTES - 1, SMALL_PAYLOAD_BYTES, 5000):
        data = (ENGLISH * 40).encode()[:size]
        for codec, small in ((PLAIN, False), (PLAIN, True), (sealed, False)):
            record = encode_record(codec, data, offset=64, file_label=b"t", version=1,
                                   compress_small=small)
            assert decode_record(codec, record, offset=64, where="t", file_label=b"t",
                                 version=1, expected_crc=record_crc(record)) == data
    record = bytearray(encode_record(PLAIN, b"hello world", offset=0, file_label=b"t", version=1))
    record[RECORD_HEADER_SIZE + 6] ^= 0x40  # the block header now claims another size
    crc = zlib.crc32(bytes(record[RECORD_HEADER_SIZE:]), zlib.crc32(bytes(record[:16])))
    record[16:20] = ((crc ^ RECORD_CRC_XOR) & 0xFFFFFFFF).to_bytes(4, "little")
    with pytest.raises(CorruptStore):
        decode_record(PLAIN, bytes(record), offset=0, where="t", file_label=b"t", version=1)


def _records(data: bytes) -> list[tuple[int, bytes]]:
    """(raw length, stored bytes) of each record in a documents.text image, in order."""
    out, pos = [], 0
    while pos + RECORD_HEADER_SIZE <= len(data):
        _magic, _flags, stored_len, raw_len, _crc = RECORD_HEADER.unpack_from(data, pos)
        start = pos + RECORD_HEADER_SIZE
        out.append((raw_len, data[start:start + stored_len]))
        pos = start + stored_len
    return out


def test_small_texts_are_written_raw_and_compaction_compresses_them(tmp_path) -> None:
    small = ENGLISH  # ~140 bytes: a raw block on the write path
    large = ENGLISH * 12  # over the threshold: compressed at once

    async def main() -> None:
        async with Engine.open(tmp_path / "s") as engine:
            await engine.put_document("small", small)
            await engine.put_document("large", large)
        (gen,) = [p for p in (tmp_path / "s").iterdir() if p.name.startswith("gen-")]
        written = _records((gen / "documents.text").read_bytes())
        assert written[0] == (len(small), raw_zstd_frame(small.encode()))
        assert written[1][0] == len(large) and len(written[1][1]) < len(large) // 4
        # The journal's frame for the small put holds its payload in a raw block too.
        assert small.encode() in (gen / "journal.log").read_bytes()

        async with Engine.open(tmp_path / "s") as engine:
            assert (await engine.get_document("small")).text == small
            await engine.compact()
            assert (await engine.get_document("small")).text == small
            assert (await engine.get_document("large")).text == large
        (gen,) = [p for p in (tmp_path / "s").iterdir() if p.name.startswith("gen-")]
        compacted = dict(_records((gen / "documents.text").read_bytes()))
        assert len(compacted[len(small)]) < len(small)
        assert zstandard.ZstdDecompressor().decompress(compacted[len(small)]) == small.encode()
        assert small.encode() not in (gen / "journal.log").read_bytes()

        async with Engine.open(tmp_path / "s") as engine:
            assert (await engine.get_document("small")).text == small

    trio.run(main)


def test_plain_small_records_from_the_prefix_table_equal_the_general_encoding() -> None:
    """A plain small record built from its size's precomputed prefix is byte for byte the
    general path's (header, crc, raw frame), at every size under the threshold and at it."""
    rng = random.Random(5)
    for n in [*range(0, 300), *range(SMALL_PAYLOAD_BYTES - 5, SMALL_PAYLOAD_BYTES + 3)]:
        raw = bytes(rng.getrandbits(8) for _ in range(n))
        flags, stored = PLAIN.encode(raw, aad=b"")
        head = RECORD_HEADER.pack(TEXT_MAGIC, flags, len(stored), n, 0)[:16]
        crc = (zlib.crc32(stored, zlib.crc32(head)) ^ RECORD_CRC_XOR) & 0xFFFFFFFF
        general = head + crc.to_bytes(4, "little") + stored
        got = encode_record(PLAIN, raw, offset=64, file_label=b"g", version=1)
        assert got == general, n
        assert decode_record(PLAIN, got, offset=64, where="t", file_label=b"g", version=1) == raw


def test_the_read_shortcut_takes_only_whole_plain_small_records() -> None:
    """``plain_small_payload`` returns exactly what ``decode_record`` returns for a plain small
    record with its own checksum, at every size; anything else (a byte changed anywhere, a
    cut or lengthened record, another checksum, a compressed, large or sealed record) is left
    to the general path (None), which refuses the damaged ones."""
    rng = random.Random(9)
    sealed = SealedCodec(bytes(range(32)))
    for n in [*range(0, 300), *range(SMALL_PAYLOAD_BYTES - 5, SMALL_PAYLOAD_BYTES + 3)]:
        raw = bytes(rng.getrandbits(8) for _ in range(n))
        record = encode_record(PLAIN, raw, offset=64, file_label=b"g", version=1)
        crc = record_crc(record)
        if n < SMALL_PAYLOAD_BYTES:
            assert plain_small_payload(record, crc) == raw == decode_record(
                PLAIN, record, offset=64, where="t", file_label=b"g", version=1, expected_crc=crc)
        else:
            assert plain_small_payload(record, crc) is None
        assert plain_small_payload(record, crc ^ 1) is None
        assert plain_small_payload(record[:-1], crc) is None
        assert plain_small_payload(record + b"\0", crc) is None
        if n % 7 == 0:
            for at in range(len(record)):
                damaged = bytearray(record)
                damaged[at] ^= 0x10
                assert plain_small_payload(bytes(damaged), crc) is None, (n, at)
                with pytest.raises(CorruptStore):
                    decode_record(PLAIN, bytes(damaged), offset=64, where="t", file_label=b"g",
                                  version=1, expected_crc=crc)
        locked = encode_record(sealed, raw, offset=64, file_label=b"g", version=1)
        assert plain_small_payload(locked, record_crc(locked)) is None
    text = (ENGLISH * 3).encode()
    squeezed = encode_record(PLAIN, text, offset=0, file_label=b"g", version=1, compress_small=True)
    assert len(squeezed) < len(text) and plain_small_payload(squeezed, record_crc(squeezed)) is None
