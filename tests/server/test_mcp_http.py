"""``hms serve``'s ``/mcp``: the MCP tools over Streamable HTTP, driven by the official ``mcp``
SDK's HTTP client; the same API keys, tenant header and Host/Origin/Content-Type checks as the
JSON routes; and ``GET /api/v1/memories`` paging."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from serverproc import ServerProcess, write_json

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory):
    """A server with API keys: k-alice for tenant alice, k-bob for tenant bob."""
    base = tmp_path_factory.mktemp("mcp_http")
    keys = write_json(base / "keys.json", {
        "alice": [hashlib.sha256(b"k-alice").hexdigest()],
        "bob": [hashlib.sha256(b"k-bob").hexdigest()]})
    proc = ServerProcess(base / "root", "--api-keys", str(keys))
    yield proc
    assert proc.stop() == 0, proc.stderr()


def _text(result) -> str:
    assert result.content and result.content[0].type == "text"
    return result.content[0].text


async def _session_calls(url: str, tenant: str, key: str, calls) -> list:
    headers = {"Authorization": f"Bearer {key}", "X-HMS-Tenant": tenant}
    async with httpx2.AsyncClient(headers=headers) as http, \
            streamable_http_client(url + "/mcp", http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        return [await call(session) for call in calls]


async def test_tools_over_http_per_tenant(keyed: ServerProcess) -> None:
    """Through the SDK's HTTP client: the tools are listed; remember, recall, list and forget
    work on the key's tenant; another tenant sees none of it."""
    listed, remembered, recalled, page = await _session_calls(keyed.url, "alice", "k-alice", [
        lambda s: s.list_tools(),
        lambda s: s.call_tool("remember", {"text": "Alice moved to Lisbon", "subject": "alice/city"}),
        lambda s: s.call_tool("recall", {"query": "where does Alice live"}),
        lambda s: s.call_tool("list", {"limit": 5}),
    ])
    assert {"remember", "recall", "explain", "forget", "list", "history"} <= \
        {t.name for t in listed.tools}
    fact_id = json.loads(_text(remembered))["id"]
    assert json.loads(_text(recalled))["items"][0]["fact"]["id"] == fact_id
    assert [f["id"] for f in json.loads(_text(page))["items"]] == [fact_id]
    (other,) = await _session_calls(keyed.url, "bob", "k-bob", [
        lambda s: s.call_tool("recall", {"query": "where does Alice live"})])
    assert json.loads(_text(other))["items"] == []
    forgotten, after = await _session_calls(keyed.url, "alice", "k-alice", [
        lambda s: s.call_tool("forget", {"ids": [fact_id]}),
        lambda s: s.call_tool("recall", {"query": "where does Alice live"})])
    assert json.loads(_text(forgotten))["removed"] == [fact_id]
    assert json.loads(_text(after))["items"] == []


async def test_wrong_or_missing_key_is_refused(keyed: ServerProcess) -> None:
    """The SDK client cannot initialize with a wrong key; over plain HTTP a missing or unknown
    key is 401 and another tenant's key 403, with the JSON routes' error body."""
    with pytest.raises((MCPError, ExceptionGroup)):
        await _session_calls(keyed.url, "alice", "wrong", [])
    url = keyed.url + "/mcp"
    for headers, status in (({}, 401), ({"Authorization": "Bearer nope"}, 401),
                            ({"Authorization": "Bearer k-bob"}, 403),
                            ({"Authorization": "Bearer k-alice"}, 200)):
        r = httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "X-HMS-Tenant": "alice",
                                                      **headers})
        assert r.status_code == status, r.text
        if status != 200:
            assert r.json()["error"]["code"] in ("unauthorized", "forbidden")


def test_guard_applies_to_mcp(keyed: ServerProcess) -> None:
    """/mcp answers only names the server is known by (421), refuses a foreign web Origin
    (403) and a body not sent as JSON (415), before any key or store is looked at; a bad
    tenant name is 400."""
    url = keyed.url + "/mcp"
    auth = {**MCP_HEADERS, "Authorization": "Bearer k-alice", "X-HMS-Tenant": "alice"}
    assert httpx.post(url, json=INITIALIZE, headers={**auth, "Host": "evil.example"}
                      ).status_code == 421
    assert httpx.post(url, json=INITIALIZE, headers={**auth, "Origin": "https://evil.example"}
                      ).status_code == 403
    r = httpx.post(url, content=json.dumps(INITIALIZE), headers={**auth, "Content-Type": "text/plain"})
    assert r.status_code == 415
    assert httpx.post(url, json=INITIALIZE, headers={**auth, "X-HMS-Tenant": "../x"}
                      ).status_code == 400


def test_list_route_pages_through_a_tenant(tmp_path: Path) -> None:
    """GET /api/v1/memories (and /v1/memories) pages newest first with nextCursor; limit
    over 1000, an unknown parameter or a foreign cursor is 422."""
    proc = ServerProcess(tmp_path / "root")
    try:
        url = proc.url
        for n in range(5):
            r = httpx.post(f"{url}/api/v1/memory/remember",
                           json={"text": f"note {n}", "id": f"n{n}", "namespace": "notes"})
            assert r.status_code == 200
        seen, cursor = [], None
        while True:
            params = {"namespace": "notes", "limit": "2", **({"cursor": cursor} if cursor else {})}
            body = httpx.get(f"{url}/api/v1/memories", params=params).json()
            seen += [f["id"] for f in body["items"]]
            cursor = body["nextCursor"]
            if cursor is None:
                break
        assert seen == ["n4", "n3", "n2", "n1", "n0"]
        assert httpx.get(f"{url}/v1/memories", params={"limit": "1"}).json()["items"][0]["id"] == "n4"
        count = httpx.post(f"{url}/api/v1/memory/count", json={"namespace": "notes"}).json()
        assert count == {"count": 5}
        for params in ({"limit": "1001"}, {"colour": "red"}, {"cursor": "zzz"},
                       {"limit": "x"}):
            assert httpx.get(f"{url}/api/v1/memories", params=params).status_code == 422
    finally:
        assert proc.stop() == 0, proc.stderr()
