"""Validation of what callers remember: every limit of API.md, with the field named."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from ..clock import to_ms
from ..engine import PutOp, check_embedding, check_id, check_metadata, check_text, put_op
from ..errors import InvalidRequest
from .config import KINDS
from .stamp import STAMP_KEY, Stamp, payload_digest, with_stamp
from .values import RememberInput

MAX_FACT_TEXT_BYTES = 64 * 1024
MAX_FACT_WORDS = 4096
MAX_NAME = 512
MAX_LIST = 1024


@attrs.frozen(kw_only=True)
class PreparedFact:
    """A validated fact, each part checked once: its id (given or derived), its stamp (ingest
    time still 0), its text, its caller metadata (the value for the digest, and the compact JSON
    that goes to the store) and its embedding (float32).

    ``put(ingest_time)`` is what the engine writes: no part is validated again on the way."""

    id: str
    text: str
    metadata: dict[str, Any] | None
    metadata_json: str | None
    embedding: np.ndarray | None
    stamp: Stamp

    def put(self, ingest_time: int) -> tuple[PutOp, Stamp]:
        """The engine put of this fact ingested at ``ingest_time``, and its stamp (as stored)."""
        stamp = self.stamp.with_ingest_time(ingest_time)
        return put_op(self.id, self.text, with_stamp(self.metadata_json, stamp),
                      self.embedding), stamp


def _name(value: object, field: str, *, optional: bool) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"{field}: expected a non-empty string, got {value!r}")
    if len(value) > MAX_NAME:
        raise InvalidRequest(f"{field}: longer than {MAX_NAME} characters")
    check_text(value, field)
    return value


def _names(value: object, field: str) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidRequest(f"{field}: expected a list of strings")
    if len(value) > MAX_LIST:
        raise InvalidRequest(f"{field}: more than {MAX_LIST} items")
    out: list[str] = []
    for i, v in enumerate(value):
        name = _name(v, f"{field}[{i}]", optional=False)
        assert name is not None
        if name not in out:
            out.append(name)
    return tuple(out)


def _time(value: object, field: str) -> int | None:
    return None if value is None else to_ms(value, field=field)  # type: ignore[arg-type]


def prepare(item: RememberInput, *, embedder_vector: Any = None, where: str = "",
            file: tuple[Any, ...] | None = None) -> PreparedFact:
    """Validate one input; the id is derived from the payload when not given. ``file`` is a
    file-backed fact's reference (memory/files.py), part of its payload and its stamp."""
    text = check_text(item.text, f"{where}text", MAX_FACT_TEXT_BYTES)
    if file is None and not text.strip():
        # Nothing to recall it by, and a retry of a typo'd empty argument would store it again.
        # (A file-backed fact's text is its optional summary: it may be empty.)
        raise InvalidRequest(f"{where}text: empty or only white space",
                             hint="give the fact's text")
    words = len(text.split())
    if words > MAX_FACT_WORDS:
        raise InvalidRequest(f"{where}text: {words} words is over the limit of {MAX_FACT_WORDS}",
                             hint="split long text into several facts")
    if item.kind not in KINDS:
        raise InvalidRequest(f"{where}kind: expected one of {', '.join(KINDS)}, got {item.kind!r}")
    namespace = _name(item.namespace, f"{where}namespace", optional=False)
    subject = _name(item.subject, f"{where}subject", optional=True)
    actor = _name(item.actor, f"{where}actor", optional=True)
    entities = _names(item.entities, f"{where}entities")
    sources = _names(item.sources, f"{where}sources")
    supersedes = tuple(check_id(s, f"{where}supersedes[{i}]") for i, s in enumerate(
        _names(item.supersedes, f"{where}supersedes")))
    metadata = item.metadata
    metadata_json: str | None = None
    if metadata is not None:
        if not isinstance(metadata, Mapping):
            raise InvalidRequest(f"{where}metadata: expected a JSON object")
        if STAMP_KEY in metadata:
            raise InvalidRequest(f"{where}metadata.{STAMP_KEY}: reserved for the fact stamp")
        metadata_json = check_metadata(metadata, f"{where}metadata")
        metadata = dict(metadata) or None
        if metadata is None:
            metadata_json = None
    embedding = check_embedding(item.embedding if item.embedding is not None else embedder_vector,
                                f"{where}embedding")
    event_time = _time(item.event_time, f"{where}event_time")
    valid_from = _time(item.valid_from, f"{where}valid_from")
    valid_to = _time(item.valid_to, f"{where}valid_to")
    if valid_from is not None and valid_to is not None and valid_to <= valid_from:
        raise InvalidRequest(f"{where}valid_to: must be after valid_from")
    retain_until = _time(item.retain_until, f"{where}retain_until")
    importance = item.importance
    if importance is not None:
        if isinstance(importance, bool) or not isinstance(importance, (int, float)) \
                or not math.isfinite(importance):
            raise InvalidRequest(f"{where}importance: expected a finite number")
        importance = float(importance)
    assert namespace is not None
    digest = payload_digest(text=text, kind=item.kind, namespace=namespace, subject=subject,
                            entities=entities, metadata=metadata, embedding=embedding,
                            event_time=event_time, valid_from=valid_from, valid_to=valid_to,
                            supersedes=supersedes, sources=sources, actor=actor,
                            importance=importance, file=file)
    fact_id = check_id(item.id, f"{where}id") if item.id is not None else f"m-{digest}"
    if fact_id in supersedes:
        raise InvalidRequest(f"{where}supersedes: a fact cannot supersede itself")
    stamp = Stamp(digest=digest, kind=item.kind, namespace=namespace, subject=subject,
                  entities=entities, event_time=event_time, valid_from=valid_from,
                  valid_to=valid_to, ingest_time=0, supersedes=supersedes, sources=sources,
                  actor=actor, importance=importance, file=file, retain_until=retain_until)
    return PreparedFact(id=fact_id, text=text, metadata=metadata, metadata_json=metadata_json,
                        embedding=embedding, stamp=stamp)


def as_input(value: object, where: str = "") -> RememberInput:
    if isinstance(value, RememberInput):
        return value
    if isinstance(value, Mapping):
        fields = {f.name for f in attrs.fields(RememberInput)}
        unknown = sorted(set(value) - fields)
        if unknown:
            raise InvalidRequest(f"{where}{unknown[0]}: unknown field")
        if "text" not in value:
            raise InvalidRequest(f"{where}text: required")
        return RememberInput(**value)
    raise InvalidRequest(
        f"{where.rstrip('.') or 'input'}: expected a RememberInput, got {type(value).__name__}")
