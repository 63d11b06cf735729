"""The HTTP API is exactly as strict as its OpenAPI document (issue 23, item 7): booleans are
booleans, an integer field takes 582 and 582.0 (JSON Schema's integer) but not 582.5, a
validTo must come after its validFrom, every message names fields as the request does
(camelCase), and an empty body is refused as the document's required body says."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from serverproc import ServerProcess

API = "/api/v1"


def _post(server: ServerProcess, op: str, body: Any, tenant: str = "strict") -> httpx.Response:
    return httpx.post(f"{server.url}{API}/memory/{op}", json=body, headers={"X-HMS-Tenant": tenant},
                      timeout=30)


def _request_schema(document: dict[str, Any], path: str) -> Draft202012Validator:
    schema = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return Draft202012Validator({**schema, "components": document["components"]})


@pytest.mark.parametrize("op,body,field", [
    ("recall", {"query": "x", "explain": "false"}, "explain"),
    ("recall", {"query": "x", "k": 582.5}, "k"),
    ("recall", {"query": "x", "asOf": 1.5}, "asOf"),
    ("forget", {"scope": {"subject": "s"}, "dryRun": "true"}, "dryRun"),
    ("forget", {"scope": {"eventBefore": 10.5}}, "scope.eventBefore"),
    ("remember", {"text": "x", "validFrom": 100, "validTo": 100}, "validTo"),
    ("remember", {"text": "x", "validFrom": 100, "validTo": 50}, "validTo"),
    ("rememberMany", {"inputs": [{"text": "y"}, {"text": "x", "eventTime": 3.25}]},
     "inputs[1].eventTime"),
    ("load", {"document": "d", "text": "# t", "chunkChars": 100.5}, "chunkChars"),
    ("profile", {"budgetChars": True}, "budgetChars"),
    ("remember", {"text": " \n "}, "text"),
    ("history", {"id": {}}, "id"),
    ("explain", {"query": "x", "id": ["a"]}, "id"),
    ("list", {"subject": "s" * 513}, "subject"),
    ("setRetention", {"namespace": "chat", "keepForMs": 1.5}, "keepForMs"),
])
def test_what_the_document_refuses_is_422_naming_the_wire_field(server: ServerProcess, op: str,
                                                                body: dict[str, Any],
                                                                field: str) -> None:
    """Each body is 422 naming its field in camelCase (never a 500, never Python's name), and
    the OpenAPI document refuses it too, except validTo after validFrom, which JSON Schema cannot
    say (its schema's description does)."""
    response = _post(server, op, body)
    assert response.status_code == 422, response.text
    message = response.json()["error"]["message"]
    assert message.startswith(f"{field}:"), message
    assert "_" not in message.split(":")[0]
    document = httpx.get(server.url + "/openapi.json").json()
    valid = _request_schema(document, f"{API}/memory/{op}").is_valid(body)
    assert valid == (field == "validTo")


def test_a_whole_float_is_the_integer(server: ServerProcess) -> None:
    """582.0 where an integer is expected is 582 (as JSON Schema says), in every place."""
    r = _post(server, "remember", {"text": "Alice lives in Oslo", "id": "oslo",
                                   "validFrom": 1000.0, "validTo": 5000.0})
    assert r.status_code == 200, r.text
    fact = _post(server, "get", {"id": "oslo"}).json()
    assert (fact["validFrom"], fact["validTo"]) == (1000, 5000)
    r = _post(server, "recall", {"query": "Oslo", "k": 3.0, "asOf": 2000.0, "candidateLimit": 50.0})
    assert r.status_code == 200 and r.json()["items"][0]["fact"]["id"] == "oslo"
    r = _post(server, "forget", {"scope": {"ingestedBefore": 1.0}, "dryRun": True})
    assert r.status_code == 200 and r.json()["removed"] == []
    r = httpx.post(f"{server.url}{API}/documents/search", json={"query": "Oslo", "k": 2.0},
                   headers={"X-HMS-Tenant": "strict"})
    assert r.status_code == 200, r.text
    r = _post(server, "setRetention", {"namespace": "chat", "keepForMs": 86400000.0})
    assert r.status_code == 200 and r.json()["retention"] == {"chat": 86400000}, r.text
    r = _post(server, "list", {"limit": 5.0})
    assert r.status_code == 200, r.text


def test_messages_name_fields_as_the_request_does(server: ServerProcess) -> None:
    """Messages and hints from the document routes and the contract use the wire names; quoted
    values are left as they were sent."""
    r = httpx.post(f"{server.url}{API}/documents/search",
                   json={"query": "x", "semanticWeight": -1}, headers={"X-HMS-Tenant": "strict"})
    assert r.status_code == 422 and r.json()["error"]["message"].startswith("semanticWeight:")
    r = _post(server, "history", {"id": "no_such_fact"})
    assert r.status_code == 404 and "'no_such_fact'" in r.json()["error"]["message"]


def test_an_empty_body_is_refused_as_the_document_says(server: ServerProcess) -> None:
    """Every POST body is required JSON: an empty one is 400, {} is a request without
    parameters; the document marks every request body required."""
    for raw in (b"", b"  "):
        r = httpx.post(f"{server.url}{API}/memory/applyForgetting", content=raw,
                       headers={"Content-Type": "application/json", "X-HMS-Tenant": "strict"})
        assert r.status_code == 400 and "empty" in r.json()["error"]["message"]
    assert _post(server, "applyForgetting", {}).status_code == 200
    document = httpx.get(server.url + "/openapi.json").json()
    for methods in document["paths"].values():
        for operation in methods.values():
            if "requestBody" in operation:
                assert operation["requestBody"]["required"] is True
