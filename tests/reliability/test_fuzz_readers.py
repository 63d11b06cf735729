"""Fuzzing the readers: the journal frame reader (``scan``, then ``decode_transaction`` on what it
returns), the text record reader (``decode_record``), the index segment decoder
(``decode_segment``), the JSON contract (``memory.call``), snapshot manifests and the records of
a snapshot or JSONL export (``portability.snapshot._load``, ``exchange.parse_records``).

On arbitrary bytes, on valid files with random mutations, and on mutated payloads re-sealed with
valid checksums (so the parsers behind the checksums are reached), the only exceptions allowed
are ``CorruptStore`` and ``IncompatibleStore`` (``InvalidRequest``, ``NotFound``, ``Conflict`` for
the JSON contract): no ``KeyError``, ``TypeError``, ``IndexError``, ``struct.error`` or
``ValueError`` leaks, and no example runs long (hypothesis' deadline bounds each one).

``HMS_FUZZ_EXAMPLES`` raises the example count of each target (default 300).
"""

from __future__ import annotations

import datetime as dt
import os
import struct
import zlib

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_host import TrioHost, report

from hmsengine import (
    Conflict,
    CorruptStore,
    Engine,
    IncompatibleStore,
    InvalidRequest,
    Memory,
    NotFound,
)
from hmsengine.engine.txn import decode_transaction
from hmsengine.index import persist
from hmsengine.storage.codec import PLAIN
from hmsengine.storage.journal import KIND_TRANSACTION, encode_frame, scan
from hmsengine.storage.manifest import FORMAT_VERSION
from hmsengine.storage.segments import decode_record, encode_record

EXAMPLES = int(os.environ.get("HMS_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=dt.timedelta(seconds=5),
                suppress_health_check=list(HealthCheck))
STORAGE_ERRORS = (CorruptStore, IncompatibleStore)
CASES = {"journal": 0, "record": 0, "segment": 0, "json": 0, "manifest": 0, "jsonl": 0,
         "table_snapshot": 0}
LABEL = b"gen-00000001/journal.log"


def _build_store(path: str) -> None:
    async def main() -> None:
        async with Engine.open(path) as engine:
            memory = Memory(engine)
            for i in range(8):
                await memory.remember(f"fuzz seed fact {i} about zebus", id=f"f{i}",
                                      subject="s", metadata={"n": i}, valid_from=1000 * i,
                                      supersedes=[f"f{i - 1}"] if i else [])
            await engine.put_document("d", "plain document", embedding=[0.1, 0.2, 0.3])
            await engine.compact()
            await memory.remember("after compaction", id="g")

    trio.run(main)


@pytest.fixture(scope="module")
def store_files(tmp_path_factory) -> dict[str, bytes]:
    path = str(tmp_path_factory.mktemp("fuzz") / "store")
    _build_store(path)
    files = {}
    for folder, _, names in os.walk(path):
        for name in names:
            rel = os.path.relpath(os.path.join(folder, name), path)
            with open(os.path.join(folder, name), "rb") as f:
                files[rel] = f.read()
    return files


def _journal(files: dict[str, bytes]) -> tuple[str, bytes]:
    name = max(n for n in files if n.endswith("journal.log"))
    return name, files[name]


def _segments(files: dict[str, bytes]) -> list[tuple[str, bytes]]:
    return [(n, d) for n, d in sorted(files.items())
            if "/index/" in n and not n.endswith("MANIFEST") and len(d) >= persist.FOOTER_SIZE]


mutation = st.tuples(st.sampled_from(("flip", "set", "cut", "insert", "delete")),
                     st.integers(min_value=0), st.integers(0, 255), st.integers(1, 64))


def mutate(data: bytes, ops: list[tuple[str, int, int, int]]) -> bytes:
    out = bytearray(data)
    for kind, pos, value, length in ops:
        if not out:
            out.extend(bytes([value]))
            continue
        pos %= len(out)
        if kind == "flip":
            out[pos] ^= 1 << (value % 8)
        elif kind == "set":
            out[pos] = value
        elif kind == "cut":
            del out[pos:]
        elif kind == "insert":
            out[pos:pos] = bytes([value]) * length
        else:
            del out[pos:pos + length]
    return bytes(out)


def read_journal(data: bytes, label: bytes = LABEL) -> None:
    CASES["journal"] += 1
    try:
        result = scan(data, codec=PLAIN, where="fuzz", file_label=label, max_version=FORMAT_VERSION)
        for frame in result.frames:
            if frame.kind != 2:  # checkpoints carry their own small payload
                decode_transaction(frame.payload, where="fuzz", offset=frame.offset)
    except STORAGE_ERRORS:
        pass


@FUZZ
@given(st.binary(max_size=2048))
def test_journal_reader_on_arbitrary_bytes(data):
    read_journal(data)


@FUZZ
@given(st.lists(mutation, min_size=1, max_size=6))
def test_journal_reader_on_mutated_journals(store_files, ops):
    name, journal = _journal(store_files)
    read_journal(mutate(journal, ops), name.encode())


@FUZZ
@given(st.binary(max_size=512) | st.sampled_from((b"{}", b'{"ops": 1}', b'{"ops": [{}]}',
                                                    b'{"ops": [{"o": "p"}]}', b"[]", b"null")),
       st.integers(1, 5))
def test_journal_payload_parser_behind_valid_checksums(payload, sequence):
    """A frame whose checksum is right but whose payload is not a transaction."""
    frame = encode_frame(PLAIN, kind=KIND_TRANSACTION, sequence=1, payload=payload,
                         version=FORMAT_VERSION, file_label=LABEL, offset=0)
    read_journal(frame)


@FUZZ
@given(st.binary(max_size=256), st.lists(mutation, max_size=4), st.booleans())
def test_text_record_reader(raw, ops, arbitrary):
    CASES["record"] += 1
    record = raw if arbitrary else encode_record(PLAIN, raw, offset=0, file_label=b"t",
                                                 version=FORMAT_VERSION)
    try:
        decode_record(PLAIN, mutate(record, ops) if ops else record, offset=0, where="fuzz",
                      file_label=b"t", version=FORMAT_VERSION)
    except STORAGE_ERRORS:
        pass


def reseal(raw: bytes) -> bytes:
    """Segment bytes with valid footer and checksums around an arbitrary payload."""
    flags, stored = PLAIN.encode(raw, aad=b"")
    prefix = struct.pack("<4sHBBQII", persist.MAGIC, persist.VERSION, flags, 1, len(stored),
                         zlib.crc32(stored) & 0xFFFFFFFF, 0)
    return stored + prefix + struct.pack("<I", (zlib.crc32(prefix) ^ persist.FOOTER_CRC_XOR)
                                         & 0xFFFFFFFF)


def read_segment(data: bytes) -> None:
    CASES["segment"] += 1
    try:
        persist.decode_segment(data, PLAIN, "fuzz", "fuzz")
    except STORAGE_ERRORS:
        pass


@FUZZ
@given(st.data(), st.lists(mutation, min_size=1, max_size=6), st.booleans())
def test_segment_decoder(store_files, data, ops, resealed):
    segments = _segments(store_files)
    assert segments
    _name, seg = data.draw(st.sampled_from(segments))
    if resealed:
        # Mutate the decompressed payload and seal it again: the JSON header and arrays parser.
        import zstandard

        raw = zstandard.ZstdDecompressor().decompress(seg[:-persist.FOOTER_SIZE])
        read_segment(reseal(mutate(raw, ops)))
    else:
        read_segment(mutate(seg, ops))


@FUZZ
@given(st.binary(max_size=1024))
def test_segment_decoder_on_arbitrary_bytes(data):
    read_segment(data)
    read_segment(reseal(data))


# -- the JSON contract ---------------------------------------------------------------------------

OPS = ("remember", "rememberMany", "recall", "explain", "forget", "history", "get",
       "applyForgetting", "consolidate", "load", "capture", "profile")
KEYS = ("text", "id", "query", "k", "asOf", "knownAt", "history", "subject", "scope", "ids",
        "includeChain", "dryRun", "purge", "validFrom", "validTo", "supersedes", "inputs", "kinds",
        "metadata", "embedding", "namespace", "entities", "eventTime", "document", "budgetChars",
        "candidateLimit", "explain", "kind", "importance", "allowDestructive", "chunkChars")
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63) | st.floats(allow_nan=False)
    | st.text(max_size=20) | st.sampled_from(("fact", "all", "f0", "zebu", "s")),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
bodies = st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), json_values, max_size=5) \
    | json_values


@pytest.fixture(scope="module")
def host():
    h = TrioHost()
    engine = h.open_engine(None)
    h.memory = Memory(engine)
    h.run(lambda: h.memory.remember("zebu seed", id="f0", subject="s"))
    yield h
    h.stop()


@FUZZ
@given(op=st.sampled_from(OPS) | st.text(max_size=12), body=bodies)
def test_json_contract(host, op, body):
    CASES["json"] += 1
    try:
        result = host.run(lambda: host.memory.call(op, body))
    except (InvalidRequest, NotFound, Conflict):
        return
    assert isinstance(result, dict)


# -- snapshots and JSONL exports ---------------------------------------------------------------

PORTABLE_ERRORS = (CorruptStore, IncompatibleStore, InvalidRequest)


@pytest.fixture(scope="module")
def snapshot_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-snap")

    async def main() -> None:
        async with Engine.open(None) as engine:
            memory = Memory(engine)
            for i in range(6):
                await memory.remember(f"snapshot fuzz fact {i}", id=f"s{i}", subject="s",
                                      valid_from=1000 * i, metadata={"n": i},
                                      supersedes=[f"s{i - 1}"] if i else [])
            await engine.put_document("d", "plain", embedding=[0.5, 0.25])
            await engine.snapshot(root / "snap")

    trio.run(main)
    return root / "snap"


def _reseal_manifest(manifest: dict) -> dict:
    from hmsengine.portability import snapshot as snap

    manifest = {k: v for k, v in manifest.items() if k != "manifestDigest"}
    manifest["manifestDigest"] = snap._manifest_digest(manifest)
    return manifest


def load_snapshot(root) -> None:
    from hmsengine.portability import snapshot as snap

    CASES["manifest"] += 1
    try:
        snap._load(root)
    except PORTABLE_ERRORS:
        pass


@FUZZ
@given(st.lists(mutation, min_size=1, max_size=6), st.booleans())
def test_snapshot_manifest_reader(snapshot_dir, tmp_path_factory, ops, as_json):
    """A mutated manifest, as bytes, or as a JSON value resealed with a valid manifestDigest (so
    the checks behind the digest are reached)."""
    import json
    import shutil

    work = tmp_path_factory.mktemp("m") / "snap"
    shutil.copytree(snapshot_dir, work)
    original = (snapshot_dir / "manifest.json").read_bytes()
    if as_json:
        manifest = json.loads(original)
        key = sorted(manifest)[ops[0][1] % len(manifest)]
        mangled = mutate(json.dumps(manifest[key]).encode(), ops)
        try:
            manifest[key] = json.loads(mangled)
        except ValueError:
            manifest[key] = mangled.decode("latin-1")
        (work / "manifest.json").write_text(json.dumps(_reseal_manifest(manifest)))
    else:
        (work / "manifest.json").write_bytes(mutate(original, ops))
    load_snapshot(work)


@FUZZ
@given(st.lists(mutation, min_size=1, max_size=6))
def test_snapshot_records_behind_valid_checksums(snapshot_dir, tmp_path_factory, ops):
    """facts.jsonl mutated and every digest of the manifest recomputed: the record parser."""
    import hashlib
    import json
    import shutil

    from hmsengine.portability import snapshot as snap

    work = tmp_path_factory.mktemp("r") / "snap"
    shutil.copytree(snapshot_dir, work)
    facts = mutate((work / "facts.jsonl").read_bytes(), ops)
    (work / "facts.jsonl").write_bytes(facts)
    manifest = json.loads((work / "manifest.json").read_text())
    manifest["files"] = [{"path": "facts.jsonl", "size": len(facts),
                          "sha256": hashlib.sha256(facts).hexdigest()}]
    manifest["digest"] = snap._files_digest(manifest["files"])
    manifest["snapshotId"] = snap._snapshot_id(facts)
    (work / "manifest.json").write_text(json.dumps(_reseal_manifest(manifest)))
    load_snapshot(work)


@FUZZ
@given(st.lists(st.binary(max_size=200) | st.sampled_from((
    b'{"type":"header","format":"hmsengine-jsonl","schemaVersion":1}', b'{"type":"fact"}',
    b'{"type":"fact","id":"a","text":"t","ingestTime":1,"file":{}}', b'{"type":"tombstone","id":"x"}',
    b'{"type":"document","id":"d","text":"x","embedding":[1e400]}', b"[]", b"null")), max_size=6))
def test_jsonl_record_parser(lines):
    from hmsengine.portability.exchange import parse_records

    CASES["jsonl"] += 1
    try:
        parse_records(list(enumerate(lines, start=1)), "fuzz.jsonl")
    except PORTABLE_ERRORS:
        pass


# -- the table snapshot ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def table_snapshot(store_files) -> tuple[str, bytes]:
    names = [n for n in store_files if n.endswith("table.snap")]
    assert names, "the fuzz store's close wrote no table snapshot"
    return names[0], store_files[names[0]]


@FUZZ
@given(st.lists(mutation, min_size=1, max_size=6), st.booleans())
def test_table_snapshot_decoder(table_snapshot, ops, resealed):
    """A damaged snapshot decodes to None (the open then replays the journal), whether the damage
    is in its bytes or behind a valid checksum; it never raises."""
    from hmsengine.storage import tablesnap

    CASES["table_snapshot"] += 1
    name, data = table_snapshot
    label = name.encode()
    if resealed:
        prefix = tablesnap._PREFIX
        magic, flags, _length, _crc = prefix.unpack_from(data, 0)
        raw = PLAIN.decode(flags, data[prefix.size:], aad=label, where="fuzz", offset=0)
        flags, stored = PLAIN.encode(mutate(raw, ops), aad=label)
        damaged = prefix.pack(magic, flags, len(stored), zlib.crc32(stored) & 0xFFFFFFFF) + stored
    else:
        damaged = mutate(data, ops)
    result = tablesnap.decode(PLAIN, label, damaged, "fuzz")
    assert result is None or isinstance(result, tablesnap.TableSnapshot)


def test_fuzz_figures():
    """Runs last in this module: prints the cases run by the targets above."""
    report(f"fuzz cases: {CASES} total {sum(CASES.values())}, 0 violations")
