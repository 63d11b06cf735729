"""The wire forms: one converter for values, one table for errors, both directions."""

from __future__ import annotations

import inspect

import pytest

from hmsengine import errors, wire
from hmsengine.engine import Document, Hit, PutResult
from hmsengine.memory.values import (
    ConsolidateReport,
    Explanation,
    Fact,
    FileRef,
    ForgetReport,
    LoadResult,
    Profile,
    RecallHit,
    RememberResult,
)

FACT = Fact(id="f1", text="Alice lives in Berlin", kind="fact", namespace="default",
            subject="alice/city", entities=("alice", "berlin"), metadata={"tags": ["a", "b"]},
            embedding=(0.25, -1.5), event_time=10, valid_from=20, valid_to=None, ingest_time=30,
            supersedes=("f0",), sources=("doc",), actor="agent", importance=0.5,
            file=FileRef(uri="file:///x.csv", offset=0, length=4, format="csv", sha256="0" * 64,
                         size=4, mtime=1, summary="a table"))
EXPLANATION = Explanation(id="f1", lexical=1.25, semantic=None, fusion="bm25",
                          weights={"lexical": 1.0}, matched_terms=("alic",),
                          recency_multiplier=1.0, historical_multiplier=1.0, status="current",
                          evaluated_at=40, valid_from=20, valid_to=None, rank=1,
                          chain=("f0", "f1"), score=1.25)
VALUES = [
    FACT, RecallHit(fact=FACT, score=1.25, status="current", explanation=EXPLANATION),
    RememberResult(id="f1", created=True, superseded=("f0",)), EXPLANATION,
    ForgetReport(removed=("f1",), relinked=(), dry_run=False),
    ConsolidateReport(created=("c",), superseded=("a", "b"), removed=(), dry_run=True),
    LoadResult(episodes=("doc-0001",), facts=()), Profile(block="- x", counts={"fact": 1}),
    Hit(id="d", score=0.5, lexical=0.5, semantic=None), PutResult(id="d", created=True, revision=3),
    Document(id="d", text="t", metadata={"k": 1}, embedding=(1.0,)),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_every_public_value_round_trips_through_the_converter(value: object) -> None:
    """What the server renders with wire.to_json, the client reads back as the equal value."""
    body = wire.to_json(value)
    assert all(k == wire.camel(wire.snake(k)) for k in body), "camelCase names"
    assert wire.from_json(type(value), body) == value


def test_json_contract_names_are_camel_case_and_plain_keeps_python_names() -> None:
    """WIRE spells fields in camelCase, PLAIN (the CLI's --json) as the attributes are."""
    assert wire.to_json(FACT)["ingestTime"] == 30 and wire.to_json(FACT)["file"]["sha256"]
    assert wire.PLAIN.unstructure(FACT)["ingest_time"] == 30
    assert wire.to_json(FACT)["entities"] == ["alice", "berlin"]


def test_a_value_that_does_not_fit_is_a_decode_error_naming_the_field() -> None:
    """A malformed answer is DecodeError (never a cattrs exception group) naming what is wrong."""
    with pytest.raises(wire.DecodeError, match=r"\$\.score"):
        wire.from_json(RecallHit, {"fact": wire.to_json(FACT), "status": "current"})


def test_every_error_class_has_one_row_and_round_trips() -> None:
    """Each HmsError of errors.py has one status in wire.ERRORS, and the body the server sends
    for it is read back by the client as the same class with that status."""
    classes = {cls for _, cls in inspect.getmembers(errors, inspect.isclass)
               if issubclass(cls, errors.HmsError) and cls is not errors.HmsError}
    assert classes == {cls for cls, _, _ in wire.ERRORS}
    for cls, status, _ in wire.ERRORS:
        exc = cls("x", reason="r") if cls is errors.ProvenanceError else cls("x")  # type: ignore[call-arg]
        assert wire.http_status(exc)[0] == status  # type: ignore[index]
        back = wire.error_from_body(status, wire.error_body(exc.code, "the message", "the hint"))
        assert type(back) is cls and back.status == status  # type: ignore[attr-defined]
        assert back.message == "the message" and back.hint == "the hint"
    unknown = wire.error_from_body(413, wire.error_body("payload_too_large", "big"))
    assert isinstance(unknown, errors.InvalidRequest) and unknown.code == "payload_too_large"
