"""Journal frames: checksums, all-zero rejection, torn tails, damage before the tail."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hmsengine.errors import CorruptStore, IncompatibleStore
from hmsengine.storage.codec import PLAIN
from hmsengine.storage.journal import (
    HEADER_SIZE,
    KIND_CHECKPOINT,
    KIND_TRANSACTION,
    encode_frame,
    scan,
)

LABEL = b"gen-00000001/journal.log"


def build(payloads: list[bytes], version: int = 1) -> tuple[bytes, list[int]]:
    out, offsets = b"", []
    for seq, payload in enumerate(payloads, start=1):
        offsets.append(len(out))
        out += encode_frame(PLAIN, kind=KIND_TRANSACTION, sequence=seq, payload=payload,
                            version=version, file_label=LABEL, offset=len(out))
    return out, offsets


def run_scan(data: bytes, max_version: int = 1):
    return scan(data, codec=PLAIN, where="journal.log", file_label=LABEL, max_version=max_version)


@given(st.lists(st.binary(max_size=300), max_size=8))
def test_roundtrip(payloads):
    """Encoded frames decode back to the same payloads and sequences."""
    data, _ = build(payloads)
    result = run_scan(data)
    assert [f.payload for f in result.frames] == payloads
    assert [f.sequence for f in result.frames] == list(range(1, len(payloads) + 1))
    assert result.valid_end == len(data) and not result.torn_tail


@pytest.mark.parametrize("size", [1, HEADER_SIZE, HEADER_SIZE + 100, 4096])
def test_all_zero_region_never_validates(size):
    """A region of zeros is never a frame: it is a torn tail, truncated to 0."""
    result = run_scan(bytes(size))
    assert result.frames == [] and result.valid_end == 0


def test_zero_length_payload_frame_is_not_all_zero():
    """Even a frame with an empty payload has a non-zero header and a header checksum."""
    frame = encode_frame(PLAIN, kind=KIND_TRANSACTION, sequence=1, payload=b"", version=1,
                         file_label=LABEL, offset=0)
    assert frame[:4] == b"HMJ1" and any(frame[28:32])


@given(st.lists(st.binary(min_size=1, max_size=200), min_size=1, max_size=6), st.data())
def test_any_truncation_is_a_torn_tail_and_keeps_the_prefix(payloads, data):
    """Cutting the file anywhere keeps exactly the whole frames before the cut."""
    blob, offsets = build(payloads)
    cut = data.draw(st.integers(0, len(blob)))
    result = run_scan(blob[:cut])
    ends = [*offsets[1:], len(blob)]
    whole = [i for i in range(len(offsets)) if ends[i] <= cut]
    assert [f.payload for f in result.frames] == [payloads[i] for i in whole]


@pytest.mark.parametrize("garbage", [bytes(1000), b"\xff" * 77, b"HMJ1" + bytes(40), b"random tail!"])
def test_garbage_appended_is_truncated(garbage):
    """Zeros or garbage after the last frame are a torn tail: frames kept, tail reported."""
    blob, _ = build([b"one", b"two"])
    result = run_scan(blob + garbage)
    assert [f.payload for f in result.frames] == [b"one", b"two"]
    assert result.valid_end == len(blob) and result.torn_tail


@given(st.data())
def test_flipped_byte_before_the_tail_is_corruption(data):
    """A flipped byte in any frame but the last raises CorruptStore naming the frame's offset."""
    payloads = [b"alpha" * 20, b"beta" * 30, b"gamma" * 10, b"delta"]
    blob, offsets = build(payloads)
    frame = data.draw(st.integers(0, len(payloads) - 2))
    end = offsets[frame + 1]
    pos = data.draw(st.integers(offsets[frame], end - 1))
    bit = data.draw(st.integers(0, 7))
    damaged = bytearray(blob)
    damaged[pos] ^= 1 << bit
    with pytest.raises(CorruptStore) as info:
        run_scan(bytes(damaged))
    assert info.value.file == "journal.log" and info.value.offset == offsets[frame]


def test_sequence_gap_is_corruption():
    """A valid frame whose sequence skips a revision is damage, not a tail."""
    first = encode_frame(PLAIN, kind=KIND_TRANSACTION, sequence=1, payload=b"a", version=1,
                         file_label=LABEL, offset=0)
    third = encode_frame(PLAIN, kind=KIND_TRANSACTION, sequence=3, payload=b"c", version=1,
                         file_label=LABEL, offset=len(first))
    with pytest.raises(CorruptStore, match="sequence gap"):
        run_scan(first + third)


def test_checkpoint_repeats_the_revision():
    """A checkpoint frame carries the current revision, not a new one."""
    first = encode_frame(PLAIN, kind=KIND_TRANSACTION, sequence=1, payload=b"a", version=1,
                         file_label=LABEL, offset=0)
    cp = encode_frame(PLAIN, kind=KIND_CHECKPOINT, sequence=1, payload=b"{}", version=1,
                      file_label=LABEL, offset=len(first))
    result = run_scan(first + cp)
    assert [f.kind for f in result.frames] == [KIND_TRANSACTION, KIND_CHECKPOINT]


def test_newer_frame_version_before_the_tail_is_incompatible():
    """A frame from a newer format followed by more frames is refused as incompatible."""
    blob, offsets = build([b"a", b"b", b"c"], version=1)
    newer = bytearray(blob)
    # Rewrite frame 2 as version 9 with a correct header checksum.
    start = offsets[1]
    struct.pack_into("<H", newer, start + 4, 9)
    import zlib

    from hmsengine.storage.journal import HEADER_CRC_XOR

    struct.pack_into("<I", newer, start + 28,
                     (zlib.crc32(bytes(newer[start:start + 28])) ^ HEADER_CRC_XOR) & 0xFFFFFFFF)
    with pytest.raises(IncompatibleStore):
        run_scan(bytes(newer))


def test_newer_frame_at_the_tail_is_refused_not_truncated():
    """A whole valid frame from a newer format at the end is IncompatibleStore, never cut off."""
    old, _ = build([b"a", b"b"], version=1)
    newer = encode_frame(PLAIN, kind=KIND_TRANSACTION, sequence=3, payload=b"c", version=2,
                         file_label=LABEL, offset=len(old))
    with pytest.raises(IncompatibleStore):
        run_scan(old + newer)


def test_unknown_codec_flags_are_refused():
    """A frame whose codec flags this build does not know is damage, not plain data."""
    import zlib

    from hmsengine.storage.journal import HEADER_CRC_XOR, PREFIX

    frame = bytearray(encode_frame(PLAIN, kind=KIND_TRANSACTION, sequence=1, payload=b"x",
                                   version=1, file_label=LABEL, offset=0))
    frame[7] |= 0x04
    struct.pack_into("<I", frame, 28, (zlib.crc32(bytes(frame[:PREFIX.size])) ^ HEADER_CRC_XOR) & 0xFFFFFFFF)
    with pytest.raises(CorruptStore, match="codec flags"):
        run_scan(bytes(frame))
