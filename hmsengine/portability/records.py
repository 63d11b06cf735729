"""The portable record: one JSON object per fact, plain document or tombstone.

The records of an export (and of a snapshot's ``facts.jsonl``) are::

    {"type": "fact", "id", "text", "kind", "namespace", "subject", "entities", "metadata",
     "embedding", "eventTime", "validFrom", "validTo", "ingestTime", "supersedes", "sources",
     "actor", "importance", "file"[, "retainUntil"]}
    {"type": "document", "id", "text", "metadata", "embedding"}    # written without the memory API
    {"type": "tombstone", "id", "purgedAt"}                         # a purged id: no content at all

A fact carries its whole stamp (valid and knowledge times, links, the file reference), so a
restore answers every ``as_of``/``known_at`` question as the original store did. Lines are
canonical JSON (sorted keys, no spaces, UTF-8), so equal stores give byte-identical files.

Reading a record validates it as ``remember`` validates its input (same limits, same messages)
and names the file and line of anything wrong; nothing is written until every line is good.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from ..engine import PutOp, check_embedding, check_id, check_metadata, check_text, put_op
from ..errors import InvalidRequest
from ..memory.files import check_uri
from ..memory.inputs import prepare
from ..memory.stamp import STAMP_KEY, parse_stamp, payload_digest, user_metadata
from ..memory.values import RememberInput

FACT_FIELDS = frozenset({
    "type", "id", "text", "kind", "namespace", "subject", "entities", "metadata", "embedding",
    "eventTime", "validFrom", "validTo", "ingestTime", "supersedes", "sources", "actor",
    "importance", "file", "retainUntil"})
DOCUMENT_FIELDS = frozenset({"type", "id", "text", "metadata", "embedding"})
TOMBSTONE_FIELDS = frozenset({"type", "id", "purgedAt"})
_SHA256 = re.compile(r"[0-9a-f]{64}")
FILE_FIELDS = ("uri", "offset", "length", "format", "sha256", "size", "mtime", "summary")


def canonical(record: Mapping[str, Any]) -> str:
    """The one serialisation of a record: sorted keys, no spaces, UTF-8, no NaN."""
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False)


def _embedding(value: Any) -> list[float] | None:
    if value is None:
        return None
    # float32 -> Python float is exact, and parsing the repr back to float32 gives the same bits.
    return [float(x) for x in np.asarray(value, dtype=np.float32)]


def record_of(doc_id: str, text: str, metadata: dict[str, Any] | None, embedding: Any) -> dict[str, Any]:
    """The record of one stored document (a fact when its metadata holds a stamp)."""
    stamp = parse_stamp(metadata.get(STAMP_KEY)) if metadata else None
    if stamp is None:
        return {"type": "document", "id": doc_id, "text": text, "metadata": metadata,
                "embedding": _embedding(embedding)}
    file = dict(zip(FILE_FIELDS, stamp.file, strict=True)) if stamp.file is not None else None
    record: dict[str, Any] = {
        "type": "fact", "id": doc_id, "text": text, "kind": stamp.kind,
        "namespace": stamp.namespace, "subject": stamp.subject, "entities": list(stamp.entities),
        "metadata": user_metadata(metadata), "embedding": _embedding(embedding),
        "eventTime": stamp.event_time, "validFrom": stamp.valid_from, "validTo": stamp.valid_to,
        "ingestTime": stamp.ingest_time, "supersedes": list(stamp.supersedes),
        "sources": list(stamp.sources), "actor": stamp.actor, "importance": stamp.importance,
        "file": file,
    }
    # Only when set, so the export of a store without retention is what it always was.
    if stamp.retain_until is not None:
        record["retainUntil"] = stamp.retain_until
    return record


def tombstone_record(doc_id: str, purged_at: int) -> dict[str, Any]:
    return {"type": "tombstone", "id": doc_id, "purgedAt": purged_at}


@attrs.frozen(kw_only=True)
class Incoming:
    """A validated record, ready to write: the engine put (None for a tombstone) and what the
    equivalence check compares (a fact's payload digest, a document's canonical content)."""

    id: str
    kind: str  # "fact" | "document" | "tombstone"
    put: PutOp | None
    identity: str | None
    purged_at: int | None = None
    retained: bool = False  # a fact with a retention end (its stamp needs format 2)
    # A fact's payload digest without its vector (see ``stored_content``).
    content: str | None = None


def _int_or_none(value: object, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest(f"{field}: expected an integer (ms since the epoch) or null")
    return value


def _fields(record: Mapping[str, Any], allowed: frozenset[str], kind: str) -> None:
    unknown = sorted(set(record) - allowed)
    if unknown:
        raise InvalidRequest(f"{unknown[0]}: unknown field for a {kind} record")


def _file(value: object) -> tuple[Any, ...] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidRequest("file: expected an object or null")
    unknown = sorted(set(value) - set(FILE_FIELDS))
    if unknown:
        raise InvalidRequest(f"file.{unknown[0]}: unknown field")
    if not isinstance(value.get("uri"), str) or not value["uri"]:
        raise InvalidRequest("file.uri: expected a non-empty string")
    try:  # named as a new reference would be: a path or a file:// URI, never another scheme
        check_uri(value["uri"])
    except InvalidRequest as exc:
        raise InvalidRequest(f"file.{exc.message}", hint=exc.hint) from None
    # "" is a reference whose checksum was never recorded (HotMem allows that): kept, and
    # hydrate refuses to vouch for its bytes.
    sha = value.get("sha256")
    if not isinstance(sha, str) or (sha and not _SHA256.fullmatch(sha)):
        raise InvalidRequest("file.sha256: expected 64 lowercase hex digits (or \"\" when unknown)")
    for name in ("offset", "length", "size", "mtime"):
        v = value.get(name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InvalidRequest(f"file.{name}: expected a non-negative integer")
    for name in ("format", "summary"):
        if value.get(name) is not None and not isinstance(value[name], str):
            raise InvalidRequest(f"file.{name}: expected a string or null")
    return tuple(value.get(name) for name in FILE_FIELDS)


def incoming(record: object) -> Incoming:
    """Validate one parsed line; ``InvalidRequest`` naming the field (the caller adds the place)."""
    if not isinstance(record, Mapping):
        raise InvalidRequest(f"expected a JSON object, got {type(record).__name__}")
    kind = record.get("type")
    if "id" not in record:
        raise InvalidRequest("id: required")
    doc_id = check_id(record["id"], "id")
    if kind == "tombstone":
        _fields(record, TOMBSTONE_FIELDS, kind)
        purged_at = _int_or_none(record.get("purgedAt"), "purgedAt")
        return Incoming(id=doc_id, kind=kind, put=None, identity=None, purged_at=purged_at or 0)
    if "text" not in record:
        raise InvalidRequest("text: required (a fact or document without text)")
    if kind == "document":
        _fields(record, DOCUMENT_FIELDS, kind)
        text = check_text(record["text"], "text")
        metadata = record.get("metadata")
        metadata_json = check_metadata(metadata, "metadata")
        embedding = check_embedding(record.get("embedding"), "embedding")
        put = put_op(doc_id, text, metadata_json, embedding)
        identity = canonical({"text": text, "metadata": metadata, "embedding": _embedding(embedding)})
        return Incoming(id=doc_id, kind=kind, put=put, identity=identity)
    if kind != "fact":
        raise InvalidRequest(f"type: expected 'fact', 'document' or 'tombstone', got {kind!r}")
    _fields(record, FACT_FIELDS, kind)
    ingest_time = record.get("ingestTime")
    if isinstance(ingest_time, bool) or not isinstance(ingest_time, int) or ingest_time < 0:
        raise InvalidRequest("ingestTime: expected a non-negative integer (ms since the epoch)")
    importance = record.get("importance")
    if isinstance(importance, float) and not math.isfinite(importance):
        raise InvalidRequest("importance: expected a finite number")
    for name in ("entities", "supersedes", "sources"):
        if not isinstance(record.get(name, []), list):
            raise InvalidRequest(f"{name}: expected a list of strings")
    item = RememberInput(
        text=record["text"], id=doc_id, subject=record.get("subject"),
        entities=tuple(record.get("entities") or ()), metadata=record.get("metadata"),
        embedding=record.get("embedding"),
        event_time=_int_or_none(record.get("eventTime"), "eventTime"),
        valid_from=_int_or_none(record.get("validFrom"), "validFrom"),
        valid_to=_int_or_none(record.get("validTo"), "validTo"),
        supersedes=tuple(record.get("supersedes") or ()), kind=record.get("kind", "fact"),
        namespace=record.get("namespace", "default"), sources=tuple(record.get("sources") or ()),
        actor=record.get("actor"), importance=importance,
        retain_until=_int_or_none(record.get("retainUntil"), "retainUntil"))
    prepared = prepare(item, file=_file(record.get("file")))
    op, _ = prepared.put(ingest_time)
    st = prepared.stamp
    content = payload_digest(
        text=prepared.text, kind=st.kind, namespace=st.namespace, subject=st.subject,
        entities=st.entities, metadata=prepared.metadata, embedding=None,
        event_time=st.event_time, valid_from=st.valid_from, valid_to=st.valid_to,
        supersedes=st.supersedes, sources=st.sources, actor=st.actor, importance=st.importance,
        file=st.file)
    return Incoming(id=doc_id, kind=kind, put=op, identity=st.digest,
                    retained=st.retain_until is not None, content=content)


def stored_identity(metadata: dict[str, Any] | None, text: str, embedding: Any) -> tuple[str, str | None]:
    """(kind, identity) of a stored document, comparable with ``Incoming.identity``."""
    stamp = parse_stamp((metadata or {}).get(STAMP_KEY))
    if stamp is not None:
        return "fact", stamp.digest
    return "document", canonical({"text": text, "metadata": metadata, "embedding": _embedding(embedding)})


def stored_content(metadata: dict[str, Any] | None, text: str) -> str | None:
    """A stored fact's payload digest without its vector, comparable with ``Incoming.content``
    (None for a plain document). A vector is the store's embedder's, derived from the text:
    ``hms reembed`` replaces it and keeps the fact, so a fact that comes back with another vector
    (an export of the store after a re-embedding) is the same fact."""
    stamp = parse_stamp((metadata or {}).get(STAMP_KEY))
    if stamp is None:
        return None
    return payload_digest(
        text=text, kind=stamp.kind, namespace=stamp.namespace, subject=stamp.subject,
        entities=stamp.entities, metadata=user_metadata(metadata), embedding=None,
        event_time=stamp.event_time, valid_from=stamp.valid_from, valid_to=stamp.valid_to,
        supersedes=stamp.supersedes, sources=stamp.sources, actor=stamp.actor,
        importance=stamp.importance, file=stamp.file)


__all__ = ["Incoming", "canonical", "incoming", "record_of", "stored_content", "stored_identity",
           "tombstone_record"]
