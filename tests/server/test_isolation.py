"""Tenant isolation: for every route, tenant B's answer about tenant A's ids is byte for byte the
answer about an id that exists nowhere."""

from __future__ import annotations

from collections.abc import Callable

import httpx
from serverproc import ServerProcess

from hmsengine.client import Client

SECRET = "zanzibar-quokka-secret"


def _probes(fact_id: str, doc_id: str, text: str) -> list[tuple[str, Callable[[httpx.Client],
                                                                             httpx.Response]]]:
    """Every route, asked about A's ids and words: (name, request)."""
    memory = "/api/v1/memory/"
    return [
        ("get", lambda h: h.post(memory + "get", json={"id": fact_id})),
        ("history", lambda h: h.post(memory + "history", json={"id": fact_id})),
        ("explain", lambda h: h.post(memory + "explain", json={"query": text, "id": fact_id})),
        ("recall", lambda h: h.post(memory + "recall", json={"query": text})),
        ("recall-all", lambda h: h.post(memory + "recall", json={
            "query": text, "history": "all", "subject": "a/secret", "entity": "Quokka"})),
        ("forget-dry", lambda h: h.post(memory + "forget", json={
            "scope": {"ids": [fact_id]}, "dryRun": True})),
        ("forget-subject-dry", lambda h: h.post(memory + "forget", json={
            "scope": {"subject": "a/secret"}, "dryRun": True})),
        ("forget", lambda h: h.post(memory + "forget", json={"scope": {"ids": [fact_id]}})),
        ("forget-chain", lambda h: h.post(memory + "forget", json={
            "scope": {"ids": [fact_id]}, "includeChain": True})),
        ("forget-entity", lambda h: h.post(memory + "forget", json={"scope": {"entity": "Quokka"}})),
        ("remember-superseding", lambda h: h.post(memory + "remember", json={
            "text": "x", "id": "probe-fact", "supersedes": [fact_id]})),
        ("documents-get", lambda h: h.get(f"/api/v1/documents/{doc_id}")),
        ("documents-delete", lambda h: h.delete(f"/api/v1/documents/{doc_id}")),
        ("documents-purge", lambda h: h.delete(f"/api/v1/documents/{doc_id}",
                                               params={"purge": "true"})),
        ("documents-search", lambda h: h.post("/api/v1/documents/search", json={"query": text})),
        ("documents-search-ids", lambda h: h.post("/api/v1/documents/search", json={
            "query": text, "ids": [doc_id, fact_id]})),
        ("profile", lambda h: h.post(memory + "profile", json={})),
    ]


def _answers(url: str, tenant: str, probes: list) -> dict[str, tuple[int, bytes]]:
    with httpx.Client(base_url=url, headers={"X-HMS-Tenant": tenant}) as http:
        return {name: (r.status_code, r.content) for name, request in probes
                for r in [request(http)]}


def test_tenant_b_cannot_see_or_touch_tenant_a(server: ServerProcess) -> None:
    """Every route answers B about A's ids exactly as about ids that exist nowhere, before and
    after A wrote them, and A's data survives all of B's attempts."""
    fact_id, doc_id = "iso-fact-1", "iso-doc-1"
    text = f"the {SECRET} lives in Quokka town"
    probes = _probes(fact_id, doc_id, text)
    before = _answers(server.url, "iso-b", probes)  # A has written nothing yet
    with Client(server.url, tenant="iso-a") as a:
        a.memory.remember(text, id=fact_id, subject="a/secret", entities=("Quokka",))
        a.memory.remember(f"older {SECRET}", id="iso-fact-0", subject="a/secret")
        a.documents.put(doc_id, text)
    after = _answers(server.url, "iso-b", probes)
    nowhere = _answers(server.url, "iso-c", probes)  # a tenant that never saw these ids
    for name, _ in probes:
        assert after[name] == before[name] == nowhere[name], name
    # What B got is "not found" or empty, never A's data.
    assert after["get"][0] == after["history"][0] == after["explain"][0] == 404
    assert after["documents-get"][0] == after["documents-delete"][0] == 404
    assert after["remember-superseding"][0] == 422  # no such fact to supersede in B
    for name, (_status, body) in after.items():
        assert SECRET.encode() not in body and b"iso-fact-0" not in body, name
    # A still has everything.
    with Client(server.url, tenant="iso-a") as a:
        assert a.memory.get(fact_id) is not None and a.documents.get(doc_id) is not None
        assert {h.fact.id for h in a.memory.recall(SECRET)} >= {"iso-fact-0", "iso-fact-1"}
        assert [f.id for f in a.memory.history(fact_id)] == [fact_id]


def test_same_id_in_two_tenants_is_two_facts(server: ServerProcess) -> None:
    """B can remember under A's id with another text: no conflict, and neither sees the other."""
    with Client(server.url, tenant="same-a") as a, Client(server.url, tenant="same-b") as b:
        assert a.memory.remember("A's version", id="shared-id").created
        assert b.memory.remember("B's version", id="shared-id").created
        fa, fb = a.memory.get("shared-id"), b.memory.get("shared-id")
        assert fa is not None and fb is not None
        assert (fa.text, fb.text) == ("A's version", "B's version")
        assert [h.fact.text for h in b.memory.recall("version")] == ["B's version"]
