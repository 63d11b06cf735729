"""Fuzzing with schemathesis against the server's own /openapi.json, with every check
schemathesis has: requests generated from the request schemas, both fitting them (positive) and
breaking them (negative). No answer may be a 500, have an undocumented status, content type or
header, or break its response schema; every schema-breaking request must be refused (4xx) and
every schema-fitting one accepted (2xx, or 404/409 for what the store does not hold or holds
otherwise). So the document is exactly as strict as the server: booleans, integers (582.0 is the
integer 582, as JSON Schema says; 582.5 is refused), ids without control characters, texts that
are not only white space, float32-sized vectors of the server's ``--input-dim``.

What JSON Schema cannot say is said in the document's descriptions, and the positive requests are
fitted to it before they are sent (:func:`fit`, the one transformation, each documented): a
``validTo`` after its ``validFrom`` (a relation between two fields), ``supersedes`` naming facts
that exist, a ``rememberFile`` naming a file in the tenant's file base (what the store and
the disk hold), and a listing's ``cursor`` being the ``nextCursor`` of an earlier page (a token
only the server makes: positive requests go without one). Negative requests are sent as generated.

The default suite sends ``HMS_SERVER_FUZZ_CASES`` (600) requests; the slow tier (``make
fuzz-server``, and ``make stress``) sends 5,000 or more (docs/TESTING.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
import schemathesis.specs.openapi.checks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import CHECKS
from schemathesis.generation.modes import GenerationMode
from serverproc import ServerProcess, write_json

from hmsengine.clock import MAX_MS

CASES = int(os.environ.get("HMS_SERVER_FUZZ_CASES", "600"))
INPUT_DIM = 4
TENANT = "fuzz"
FILE = "notes.txt"
FILE_BYTES = b"a file in the tenant's file base, for rememberFile and hydrate\n"


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A server with a fixed embedding dimension and a file base holding one file."""
    top = tmp_path_factory.mktemp("fuzz")
    base = top / "files"
    (base / TENANT).mkdir(parents=True)
    (base / TENANT / FILE).write_bytes(FILE_BYTES)
    config = write_json(top / "config.json", {"fileBase": str(base)})
    proc = ServerProcess(top / "root", "--input-dim", str(INPUT_DIM), "--memory-config", str(config))
    yield proc
    assert proc.stop() == 0, proc.stderr()


def _window(item: dict[str, Any]) -> None:
    """A validTo after its validFrom (dropped where validFrom leaves no later time)."""
    start, end = item.get("validFrom"), item.get("validTo")
    if isinstance(start, (int, float)) and isinstance(end, (int, float)) and end <= start:
        item["validTo"] = int(start) + 1 if start < MAX_MS else None


def fit(case: Any) -> None:
    """Fit a positive request to what its schema cannot say (see the module docstring)."""
    op = case.path.rsplit("/", 1)[-1]
    if op == "memories" and isinstance(case.query, dict):
        case.query.pop("cursor", None)
    body = case.body if isinstance(case.body, dict) else None
    if op == "list" and body is not None:
        body.pop("cursor", None)
    if body is None:
        return
    items = body.get("inputs") if op == "rememberMany" else [body]
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and op in ("remember", "rememberMany", "rememberFile"):
            _window(item)
            if item.get("supersedes"):
                item["supersedes"] = []
    if op == "rememberFile":
        body["uri"] = FILE
        if body.get("byteRange") is not None:
            offset = min(body["byteRange"][0], len(FILE_BYTES))
            body["byteRange"] = [offset, min(body["byteRange"][1], len(FILE_BYTES) - offset)]


def test_fuzz_against_openapi(fuzz_server: ServerProcess) -> None:
    """HMS_SERVER_FUZZ_CASES generated requests over every route, every check: 0 failures."""
    schema = schemathesis.openapi.from_url(fuzz_server.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    checks = CHECKS.get_all()
    assert {"negative_data_rejection", "positive_data_acceptance"} <= {c.__name__ for c in checks}
    tenant = {"X-HMS-Tenant": TENANT}
    strategies = [op.as_strategy(mode, headers=tenant if mode is GenerationMode.POSITIVE else None)
                  for op in operations
                  for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)]
    statuses: list[int] = []
    with requests.Session() as session:

        @settings(max_examples=CASES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=st.one_of(strategies))
        def one(case: Any) -> None:
            if case.meta is not None and case.meta.generation.mode is GenerationMode.POSITIVE:
                fit(case)
            response = case.call(base_url=fuzz_server.url, session=session, timeout=30)
            statuses.append(response.status_code)
            case.validate_response(response, checks=checks)  # raises the failures it finds

        one()
    print(f"\nserver fuzzing: {len(statuses)} requests, every check ({len(checks)}), 0 failures")
    assert len(statuses) >= CASES * 0.9, len(statuses)
    assert 500 not in statuses
    assert {200, 404, 422} <= set(statuses)  # both sides of the checks were reached
    assert (Path(fuzz_server.root) / TENANT).is_dir()
