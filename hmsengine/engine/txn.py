"""The payloads of journal frames: transactions and checkpoints, as compact JSON.

A transaction payload (before the codec compresses it)::

    {"ops": [
        {"o": "p", "id": ID, "t": TEXT, "m": METADATA?, "e": EMBEDDING_B64?,
         "off": OFFSET, "len": LENGTH, "crc": CRC},            # put: stored text record
        {"o": "d", "id": ID},                                  # delete
     ],
     "dim": N?,                                               # embedding dimension fixed here
     "ts": MS?,                                               # commit time (engine clock)
     "origin": "restore"?}                                    # base frames written by a restore

A base frame (kind 3, written by compaction) has the same form with puts only, each carrying
``"k"``: the document's version key (revision x 16384 + position), kept across compactions.

``off``/``len``/``crc`` locate the document's record in ``documents.text``. The text travels in
the journal too: the journal is the source of truth, and recovery re-creates any text record that
a crash left unwritten (the segment is synced lazily, see engine/recovery.py). Embeddings are the
float32 little-endian bytes in base64.

A checkpoint payload::

    {"text_synced": BYTES, "zeroed_through": REVISION, "moved": [[ID, REV, OFF, LEN, CRC], ...]}

meaning: ``documents.text`` was fsynced with its first BYTES bytes final, every record that died
(deleted or replaced) at or before REVISION was overwritten with zeros and synced, and the listed
live documents' records were re-written at new positions during recovery.
"""

from __future__ import annotations

import base64
import json
from typing import Final, NamedTuple

import attrs
import numpy as np

from ..errors import CorruptStore

# Compact JSON of a decoded metadata object, as json.dumps(..., ensure_ascii=False,
# separators=(",", ":")) writes it; one encoder for every call (json.dumps with arguments builds
# a new one each time: a third of the cost of replaying a put's metadata at open or restore).
_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# A JSON string literal exactly as json.dumps(..., ensure_ascii=False) writes it (C-accelerated).
_string = json.encoder.encode_basestring


# A put as journaled: the validated document plus where its text record was written, as a plain
# tuple in this order: (id, text, metadata_json, embedding, offset, length, crc, key); ``key``
# only in base frames (the version key the document keeps), else None. Read by position
# (``PUT_*``) or unpacked; told from a StoredDelete by ``isinstance(op, tuple)``.
#
# A plain tuple, not a named tuple or an attrs class: one is made for every put on the write path
# and at every replay, and the cyclic garbage collector stops tracking a plain tuple of strings,
# numbers and None at its first young collection, never a named tuple's instance. A bulk put's
# batch outlives the young collections, so each tracked object per document fed the full
# collections that read the whole heap (at 200k documents put in batches of 10,000: with this
# and TailDoc as plain tuples, full collections 12 instead of 14 and ~20% less time in them;
# the build ~18% faster in three alternated runs, bench/results/lexical.notes.md).
StoredPut = tuple[str, str, str | None, np.ndarray | None, int, int, int, int | None]
# The positions (Final, so that a type checker reads the field's own type at each).
PUT_ID: Final = 0
PUT_TEXT: Final = 1
PUT_METADATA: Final = 2
PUT_EMBEDDING: Final = 3
PUT_OFFSET: Final = 4
PUT_LENGTH: Final = 5
PUT_CRC: Final = 6
PUT_KEY: Final = 7


def stored_put(id: str, text: str, metadata_json: str | None, embedding: np.ndarray | None,
               offset: int, length: int, crc: int, key: int | None = None) -> StoredPut:
    """A ``StoredPut`` of these fields (the cold paths' constructor: the write path builds the
    tuple in place)."""
    return (id, text, metadata_json, embedding, offset, length, crc, key)


@attrs.frozen(kw_only=True)
class StoredDelete:
    id: str


StoredOp = StoredPut | StoredDelete


@attrs.frozen(kw_only=True)
class Checkpoint:
    text_synced: int
    zeroed_through: int
    moved: tuple[tuple[str, int, int, int, int], ...] = ()


def encode_embedding(vector: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_embedding(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float32)


# Bytes that JSON escapes inside a string (json's encoder with ensure_ascii=False escapes exactly
# the quote, the backslash and the control characters below 0x20): a text without any of them is
# its JSON string literal between two quotes.
_ESCAPED = bytes(range(0x20)) + b'"\\'
# A put as journaled when it has no metadata, embedding or key (a bulk put's every document).
_PLAIN_PUT = '{"o":"p","id":%s,"t":%s,"off":%d,"len":%d,"crc":%d}'


def _needs_no_escape(texts: list[str]) -> bool:
    """True when no string of ``texts`` holds a character JSON escapes: one C pass over the
    batch (~0.3 us a 280-character text, against ~1.4 us for encoding each literal)."""
    joined = "".join(texts).encode("utf-8", "surrogatepass")
    return len(joined.translate(None, _ESCAPED)) == len(joined)


def encode_transaction(ops: list[StoredOp], *, embedding_dim: int | None,
                       commit_ms: int | None = None, origin: str | None = None) -> bytes:
    """The compact JSON payload of a transaction (or base) frame.

    Assembled piece by piece rather than through a dict and ``json.dumps``: the metadata is
    already compact JSON (values.check_metadata) and is spliced in as is instead of being parsed
    and dumped again, and when no text of the transaction holds a character JSON escapes (one
    check over all of them) each text is put between quotes as it is. The bytes are exactly
    ``json.dumps(body, ensure_ascii=False, separators=(",", ":"))`` of the documented body
    (tests/storage/test_journal.py checks it).
    """
    texts = [op[PUT_TEXT] for op in ops if type(op) is tuple]
    string = _quoted if len(texts) > 1 and _needs_no_escape(texts) else _string
    out: list[str] = []
    for op in ops:
        if isinstance(op, tuple):
            op_id, text, meta, vector, offset, length, crc, key = op
            if meta is None and vector is None and key is None:
                out.append(_PLAIN_PUT % (_string(op_id), string(text), offset, length, crc))
                continue
            item = f'{{"o":"p","id":{_string(op_id)},"t":{string(text)}'
            if meta is not None:
                item += f',"m":{meta}'
            if vector is not None:
                item += f',"e":"{encode_embedding(vector)}"'
            item += f',"off":{int(offset)},"len":{int(length)},"crc":{int(crc)}'
            if key is not None:
                item += f',"k":{int(key)}'
            out.append(item + "}")
        else:
            out.append(f'{{"o":"d","id":{_string(op.id)}}}')
    body = '{"ops":[' + ",".join(out) + "]"
    if embedding_dim is not None:
        body += f',"dim":{int(embedding_dim)}'
    if commit_ms is not None:
        body += f',"ts":{int(commit_ms)}'
    if origin is not None:
        body += f',"origin":{_string(origin)}'
    return (body + "}").encode("utf-8")


def _quoted(text: str) -> str:
    """The JSON literal of a string that holds nothing JSON escapes (``_needs_no_escape``)."""
    return '"' + text + '"'


class DecodedTransaction(NamedTuple):
    """A transaction (or base) payload: its operations, the embedding dimension it fixes, when
    it was committed (ms, the engine's clock; None in frames of builds before it was written)
    and, for a base frame, what wrote it (``"restore"``, or None for a compaction)."""

    ops: list[StoredOp]
    dim: int | None
    ts: int | None
    origin: str | None


def decode_transaction(payload: bytes, *, where: str, offset: int) -> tuple[list[StoredOp], int | None]:
    """Decode a transaction payload; a malformed one is :class:`CorruptStore` (it passed its crc)."""
    decoded = decode_transaction_full(payload, where=where, offset=offset)
    return decoded.ops, decoded.dim


def decode_transaction_full(payload: bytes, *, where: str, offset: int) -> DecodedTransaction:
    """:func:`decode_transaction` with the commit time and origin as well."""
    try:
        body = json.loads(payload)
        ops: list[StoredOp] = []
        for item in body["ops"]:
            if item["o"] == "p":
                meta = item.get("m")
                ops.append(stored_put(
                    item["id"], item["t"], None if meta is None else _compact(meta),
                    decode_embedding(item["e"]) if "e" in item else None,
                    int(item["off"]), int(item["len"]), int(item["crc"]),
                    int(item["k"]) if "k" in item else None,
                ))
            elif item["o"] == "d":
                ops.append(StoredDelete(id=item["id"]))
            else:
                raise ValueError(f"unknown operation {item['o']!r}")
        dim, ts, origin = body.get("dim"), body.get("ts"), body.get("origin")
        return DecodedTransaction(ops, int(dim) if dim is not None else None,
                                  int(ts) if ts is not None else None,
                                  str(origin) if origin is not None else None)
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptStore(f"undecodable transaction payload ({exc})", file=where, offset=offset) from exc


def encode_checkpoint(cp: Checkpoint) -> bytes:
    body = {"text_synced": cp.text_synced, "zeroed_through": cp.zeroed_through,
            "moved": [list(m) for m in cp.moved]}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def decode_checkpoint(payload: bytes, *, where: str, offset: int) -> Checkpoint:
    try:
        body = json.loads(payload)
        moved = tuple(
            (str(m[0]), int(m[1]), int(m[2]), int(m[3]), int(m[4])) for m in body.get("moved", ())
        )
        return Checkpoint(text_synced=int(body["text_synced"]),
                          zeroed_through=int(body["zeroed_through"]), moved=moved)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise CorruptStore(f"undecodable checkpoint payload ({exc})", file=where, offset=offset) from exc
