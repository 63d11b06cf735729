"""Coverage-guided fuzzing with atheris (libFuzzer) of the readers that take bytes from disk or
from a caller: the journal frame reader and transaction decoder, the text record reader, the
index segment decoder, the JSONL record parser of imports, and snapshot manifests.

Run one target: ``python tests/reliability/atheris_fuzz.py TARGET [libFuzzer flags]``, for
example ``python tests/reliability/atheris_fuzz.py journal -runs=100000`` or
``-max_total_time=600``. Targets: journal, record, segment, jsonl, manifest. An exception other
than the readers' documented errors (``CorruptStore``, ``IncompatibleStore``, ``InvalidRequest``)
is a crash: libFuzzer prints it, writes the input as ``crash-*`` and exits non-zero.
tests/reliability/test_atheris.py runs every target briefly in the default suite;
``make stress`` runs them for minutes each.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["hmsengine"]):
    from hmsengine.engine.txn import decode_transaction
    from hmsengine.errors import CorruptStore, IncompatibleStore, InvalidRequest
    from hmsengine.index import persist
    from hmsengine.portability import snapshot as snap
    from hmsengine.portability.exchange import parse_records
    from hmsengine.storage.codec import PLAIN
    from hmsengine.storage.journal import scan
    from hmsengine.storage.manifest import FORMAT_VERSION
    from hmsengine.storage.segments import decode_record

ALLOWED = (CorruptStore, IncompatibleStore, InvalidRequest)
SCRATCH = Path(tempfile.mkdtemp(prefix="hms-atheris-"))


def journal(data: bytes) -> None:
    result = scan(data, codec=PLAIN, where="fuzz", file_label=b"gen-00000001/journal.log",
                  max_version=FORMAT_VERSION)
    for frame in result.frames:
        if frame.kind != 2:
            decode_transaction(frame.payload, where="fuzz", offset=frame.offset)


def record(data: bytes) -> None:
    decode_record(PLAIN, data, offset=0, where="fuzz", file_label=b"t", version=FORMAT_VERSION)


def segment(data: bytes) -> None:
    persist.decode_segment(data, PLAIN, "fuzz", "fuzz")


def jsonl(data: bytes) -> None:
    parse_records(list(enumerate(data.split(b"\n"), start=1)), "fuzz.jsonl")


def manifest(data: bytes) -> None:
    """The bytes as manifest.json, resealed when they parse as an object (so the checks behind
    manifestDigest run), beside a small valid facts.jsonl."""
    facts = b'{"type":"fact","id":"a","text":"t","ingestTime":1}\n'
    (SCRATCH / "facts.jsonl").write_bytes(facts)
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        value.pop("manifestDigest", None)
        value["manifestDigest"] = snap._manifest_digest(value)
        data = json.dumps(value).encode()
    (SCRATCH / "manifest.json").write_bytes(data)
    snap._load(SCRATCH)


TARGETS = {"journal": journal, "record": record, "segment": segment, "jsonl": jsonl,
           "manifest": manifest}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        raise SystemExit(f"usage: atheris_fuzz.py {{{','.join(TARGETS)}}} [libFuzzer flags]")
    target = TARGETS[sys.argv[1]]

    def one_input(data: bytes) -> None:
        try:
            target(data)
        except ALLOWED:
            pass

    atheris.Setup([sys.argv[0], *sys.argv[2:]], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
