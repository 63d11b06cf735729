"""``hms serve`` as a real subprocess, driven through ``Client``: operations, errors, tenants,
start-up checks and a graceful SIGTERM."""

from __future__ import annotations

import datetime as dt
import logging
import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
import trio
from serverproc import ServerProcess, run_serve, tenant_dirs, write_json

from hmsengine import Conflict, ForgetScope, InvalidRequest, NotFound, RememberInput
from hmsengine.client import Client
from hmsengine.engine.values import Document, Hit, PutResult
from hmsengine.memory.jsonapi import OPERATIONS
from hmsengine.memory.values import (
    ConsolidateReport,
    Explanation,
    Fact,
    ForgetReport,
    LoadResult,
    Profile,
    RecallHit,
    RememberResult,
)
from hmsengine.server.app import INTERNAL_MESSAGE, ServerApp
from hmsengine.server.openapi import NOT_OVER_JSON
from hmsengine.server.serve import ServeOptions, exposure_warning, is_loopback
from hmsengine.server.tenants import TenantPool

UTC = dt.UTC
T2020 = dt.datetime(2020, 1, 1, tzinfo=UTC)
T2021_MS = 1_609_459_200_000


def test_every_memory_operation_round_trips(server: ServerProcess) -> None:
    """Every operation of the JSON contract goes through Client and comes back as its value."""
    with Client(server.url, tenant="ops") as hms:
        m = hms.memory
        first = m.remember("Alice lives in Berlin", id="city-1", subject="alice/city",
                           entities=("Alice", "Berlin"), metadata={"source": "chat"},
                           valid_from=T2020, kind="fact", sources=("msg-1",), actor="alice",
                           importance=0.5)
        assert first == RememberResult(id="city-1", created=True)
        assert m.remember("Alice lives in Berlin", id="city-1", subject="alice/city",
                          entities=("Alice", "Berlin"), metadata={"source": "chat"},
                          valid_from=T2020, sources=("msg-1",), actor="alice",
                          importance=0.5).created is False
        second = m.remember("Alice moved to Lisbon", id="city-2", subject="alice/city",
                            valid_from=T2021_MS, supersedes=("city-1",))
        assert second.superseded == ("city-1",)
        many = m.remember_many([RememberInput(text="Bob likes tea", subject="bob/drink"),
                                {"text": "Carmen plays chess", "kind": "profile"}])
        assert [r.created for r in many] == [True, True]
        hits = m.recall("where does Alice live", explain=True)
        assert isinstance(hits[0], RecallHit) and hits[0].fact.id == "city-2"
        assert isinstance(hits[0].explanation, Explanation)
        assert [h.fact.id for h in m.recall("Alice", history="all", as_of=T2020)] \
            and m.recall("Alice", as_of=dt.datetime(2020, 6, 1, tzinfo=UTC))[0].fact.id == "city-1"
        why = m.explain("Alice Lisbon", "city-2")
        assert why.rank == 1 and why.chain == ("city-1", "city-2")
        chain = m.history("city-2")
        assert [f.id for f in chain] == ["city-1", "city-2"] and isinstance(chain[0], Fact)
        fact = m.get("city-1")
        assert fact is not None and fact.valid_from == T2021_MS - 366 * 86_400_000
        assert fact.entities == ("Alice", "Berlin") and fact.metadata == {"source": "chat"}
        assert m.get("no-such-fact") is None
        assert m.apply_forgetting() == ForgetReport(removed=(), relinked=(), dry_run=True)
        assert isinstance(m.consolidate(), ConsolidateReport)
        if "load" in OPERATIONS:
            loaded = m.load("guide", "# Guide\n\nStep one.\n\n## Two\n\nStep two.")
            assert isinstance(loaded, LoadResult) and loaded.episodes[0] == "guide-0001"
        if "profile" in OPERATIONS:
            profile = m.profile()
            assert isinstance(profile, Profile) and "Lisbon" in profile.block
        report = m.forget(ForgetScope.ids(["city-2"]))
        assert report.removed == ("city-2",)
        assert m.recall("where does Alice live")[0].fact.id == "city-1"
        assert m.forget(ForgetScope.subject("bob/drink"), dry_run=True).dry_run is True
        assert m.call("get", {"id": "city-1"})["id"] == "city-1"


def test_documents_round_trip(server: ServerProcess) -> None:
    """PUT, GET, search and DELETE of documents, with ids that need escaping in a URL."""
    with Client(server.url, tenant="docs") as hms:
        d = hms.documents
        for doc_id in ("plain", "a/b/c", "..", ".", "sp ace?#%", "ünï-✓", "search"):
            put = d.put(doc_id, f"text of {doc_id} zebra", metadata={"k": doc_id})
            assert put == PutResult(id=doc_id, created=True, revision=put.revision)
            assert d.get(doc_id) == Document(id=doc_id, text=f"text of {doc_id} zebra",
                                             metadata={"k": doc_id})
        assert d.put("plain", "replaced", embedding=[1.0, 0.0]).created is False
        hits = d.search("zebra", k=3)
        assert len(hits) == 3 and all(isinstance(h, Hit) for h in hits)
        assert [h.id for h in d.search("zebra", ids=["a/b/c"])] == ["a/b/c"]
        assert [h.id for h in d.search("zebra", metadata={"k": ".."})] == [".."]
        assert d.delete("a/b/c") is True and d.delete("a/b/c") is False
        assert d.get("a/b/c") is None
        assert d.delete("..", purge=True) is True and d.get("..") is None


def test_errors_map_to_hms_error_classes(server: ServerProcess) -> None:
    """422, 404 and 409 come back as InvalidRequest, NotFound and Conflict with .status."""
    with Client(server.url, tenant="errors") as hms:
        hms.memory.remember("x", id="e-1")
        with pytest.raises(InvalidRequest) as invalid:
            hms.memory.recall("x", k=0)
        assert invalid.value.status == 422 and "k:" in invalid.value.message
        with pytest.raises(NotFound) as missing:
            hms.memory.history("nope")
        assert missing.value.status == 404 and missing.value.code == "not_found"
        with pytest.raises(NotFound):
            hms.memory.explain("x", "nope")
        with pytest.raises(Conflict) as conflict:
            hms.memory.remember("y", id="e-1")
        assert conflict.value.status == 409 and conflict.value.hint
        with pytest.raises(InvalidRequest):
            hms.memory.call("remember", {"text": "x", "bogus": 1})
        with pytest.raises(InvalidRequest):  # a naive datetime is refused before sending
            hms.memory.remember("x", valid_from=dt.datetime(2020, 1, 1))


def _error(response: httpx.Response) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"} and {"code", "message"} <= set(body["error"])
    return dict(body["error"])


def test_transport_errors_are_json(server: ServerProcess) -> None:
    """Bad JSON is 400, a wrong method 405, an unknown route or operation 404: all JSON errors."""
    with httpx.Client(base_url=server.url, headers={"Content-Type": "application/json"}) as http:
        r = http.post("/api/v1/memory/recall", content=b"{not json")
        assert r.status_code == 400 and _error(r)["code"] == "invalid_json"
        r = http.post("/api/v1/memory/recall", content=b'{"query": NaN}')
        assert r.status_code == 400 and _error(r)["code"] == "invalid_json"
        r = http.post("/api/v1/memory/recall", content=b"\xff\xfe")
        assert r.status_code == 400 and _error(r)["code"] == "invalid_json"
        r = http.post("/api/v1/memory/recall", content=b"[" * 100_000)
        assert r.status_code == 400 and _error(r)["code"] == "invalid_json"
        r = http.get("/api/v1/memory/recall")
        assert r.status_code == 405 and _error(r)["code"] == "method_not_allowed"
        assert "POST" in r.headers["allow"]
        r = http.patch("/api/v1/documents/x", content=b"{}")
        assert r.status_code == 405 and _error(r)["code"] == "method_not_allowed"
        r = http.get("/nowhere")
        assert r.status_code == 404 and _error(r)["code"] == "not_found"
        r = http.post("/api/v1/memory/noSuchOp", json={})
        assert r.status_code == 404 and _error(r)["code"] == "not_found"
        r = http.post("/api/v1/memory/recall", json=[1, 2])
        assert r.status_code == 422 and _error(r)["code"] == "invalid_request"
        r = http.put("/api/v1/documents/x", json={"text": "t", "extra": 1})
        assert r.status_code == 422 and "extra" in _error(r)["message"]
        r = http.delete("/api/v1/documents/x", params={"purge": "maybe"})
        assert r.status_code == 422


def test_healthz_and_openapi_describe_every_route(server: ServerProcess) -> None:
    """/healthz answers ok; /openapi.json has a request and a response schema for every op."""
    with Client(server.url) as hms:
        assert hms.healthz() == {"status": "ok"}
    doc = httpx.get(server.url + "/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    assert "/api/v1/memory/capture" not in doc["paths"]  # no JSON body can carry it out
    for op in set(OPERATIONS) - NOT_OVER_JSON:
        post = doc["paths"][f"/api/v1/memory/{op}"]["post"]
        assert post["requestBody"]["content"]["application/json"]["schema"]
        assert post["responses"]["200"]["content"]["application/json"]["schema"]
        assert post["responses"]["422"]["content"]["application/json"]["schema"] == \
            {"$ref": "#/components/schemas/Error"}
    assert set(doc["paths"]["/api/v1/documents/{id}"]) == {"put", "get", "delete"}
    assert "post" in doc["paths"]["/api/v1/documents/search"]


@pytest.mark.parametrize("value", ["", "a" * 65, "../x", "a b", "ünï", "a.b", "x/y", "%2e%2e"])
def test_invalid_tenant_is_400_and_creates_nothing(server: ServerProcess, value: str) -> None:
    """A tenant header outside [A-Za-z0-9_-]{1,64} is 400 invalid_tenant; no directory appears."""
    before = tenant_dirs(server.root)
    r = httpx.post(server.url + "/api/v1/memory/remember", json={"text": "x"},
                   headers={"X-HMS-Tenant": value.encode()})
    assert r.status_code == 400 and _error(r)["code"] == "invalid_tenant"
    assert tenant_dirs(server.root) == before


def test_tenants_are_case_sensitive_and_long_names_work(server: ServerProcess) -> None:
    """'Case' and 'case' are two stores; a 64-character name is valid and gets its directory."""
    long_name = "L" * 32 + "-_" + "9" * 30
    with Client(server.url, tenant="Case") as upper, Client(server.url, tenant="case") as lower, \
            Client(server.url, tenant=long_name) as long:
        upper.memory.remember("upper only", id="u")
        assert lower.memory.get("u") is None
        long.memory.remember("long", id="l")
    assert {"Case", "case", long_name} <= tenant_dirs(server.root)


def test_non_loopback_without_keys_warns() -> None:
    """Binding a non-loopback address without --api-keys warns; loopback or keys do not."""
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")
    root = Path("unused")
    assert exposure_warning(ServeOptions(root=root, host="0.0.0.0")) is not None
    assert exposure_warning(ServeOptions(root=root, host="127.0.0.1")) is None


def test_bad_memory_config_stops_the_server(tmp_path: Path) -> None:
    """A bad --memory-config file stops start-up with a message naming the field, exit 2."""
    bad = write_json(tmp_path / "bad.json", {"supersession": "sometimes"})
    done = run_serve("--root", str(tmp_path / "root"), "--port", "0", "--memory-config", str(bad))
    assert done.returncode == 2 and "config.supersession" in done.stderr
    assert "listening" not in done.stdout
    done = run_serve("--root", str(tmp_path / "root"), "--memory-config", str(tmp_path / "none"))
    assert done.returncode == 2 and "cannot read" in done.stderr
    (tmp_path / "c.json").write_text("{not json")
    done = run_serve("--root", str(tmp_path / "root"), "--memory-config", str(tmp_path / "c.json"))
    assert done.returncode == 2 and "not valid JSON" in done.stderr


def test_memory_config_applies_to_every_tenant(tmp_path: Path) -> None:
    """A valid --memory-config (latest-by-subject) governs remember in each tenant; SIGINT
    stops the server cleanly."""
    config = write_json(tmp_path / "config.json", {"supersession": "latest-by-subject"})
    proc = ServerProcess(tmp_path / "root", "--memory-config", str(config))
    try:
        with Client(proc.url, tenant="t1") as hms:
            hms.memory.remember("Alice lives in Berlin", id="a1", subject="alice/city",
                                valid_from=1000)
            result = hms.memory.remember("Alice lives in Lisbon", id="a2",
                                         subject="alice/city", valid_from=2000)
            assert result.superseded == ("a1",)
    finally:
        assert proc.stop(signal.SIGINT) == 0  # SIGINT drains and exits 0 like SIGTERM


def test_sigterm_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    """Writes acknowledged before and during a SIGTERM drain are all there after a restart,
    and the server exits 0."""
    root = tmp_path / "root"
    proc = ServerProcess(root)
    acknowledged: list[str] = []
    stop = threading.Event()

    def writer(n: int) -> None:
        with Client(proc.url, tenant="durable", timeout=10) as hms:
            i = 0
            while not stop.is_set():
                fact_id = f"w{n}-{i}"
                try:
                    hms.memory.remember(f"fact number {i} from writer {n}", id=fact_id)
                except Exception:
                    return  # refused or connection closed: the server is going away
                acknowledged.append(fact_id)
                i += 1

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 20
    while len(acknowledged) < 100 and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.proc.send_signal(signal.SIGTERM)
    rc = proc.proc.wait(30)
    stop.set()
    for t in threads:
        t.join(10)
    assert rc == 0, proc.stderr()
    proc.stop()
    assert len(acknowledged) >= 100
    again = ServerProcess(root)
    try:
        with Client(again.url, tenant="durable") as hms:
            missing = [i for i in acknowledged if hms.memory.get(i) is None]
        assert missing == []
    finally:
        assert again.stop() == 0


async def test_internal_error_is_500_with_a_fixed_message(tmp_path: Path, caplog,
                                                          monkeypatch) -> None:
    """An unexpected exception is a 500 with a fixed message; the details go to the log."""
    from hmsengine.memory.memory import Memory

    async def broken(self, op, body):
        raise RuntimeError("secret detail of the failure")

    monkeypatch.setattr(Memory, "call", broken)
    caplog.set_level(logging.ERROR, logger="hmsengine.server")
    async with TenantPool.open(tmp_path / "root") as pool:
        app = ServerApp(pool).app
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            r = await http.post("/api/v1/memory/recall", json={"query": "x"})
    assert r.status_code == 500
    assert r.json() == {"error": {"code": "internal", "message": INTERNAL_MESSAGE}}
    assert "secret detail" not in r.text
    assert "secret detail of the failure" in caplog.text and "Traceback" in caplog.text


async def test_tenant_pool_closes_the_least_recently_used(tmp_path: Path) -> None:
    """Past the cap, the least recently used idle tenant is closed; its data comes back."""
    async with TenantPool.open(tmp_path / "root", max_open=2) as pool:
        async with pool.use("a") as memory:
            await memory.remember("kept across a close", id="k")
        await trio.sleep(0.01)
        async with pool.use("b"):
            pass
        async with pool.use("c"):
            pass
        await trio.sleep(0.05)  # let the holder of "a" close
        assert pool.open_tenants == ["b", "c"]
        async with pool.use("a") as memory:
            assert (await memory.get("k")) is not None
        await trio.sleep(0.05)
        assert pool.open_tenants == ["a", "c"]
    assert sorted(os.listdir(tmp_path / "root")) == ["a", "b", "c"]


def test_start_up_failures_are_messages_not_tracebacks(tmp_path: Path) -> None:
    """A taken port exits 4 and a --root that is a file exits 2, each with a one-line message."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = run_serve("--root", str(tmp_path / "root"), "--port",
                         str(taken.getsockname()[1]))
    assert done.returncode == 4 and "Address already in use" in done.stderr
    assert "Traceback" not in done.stderr
    (tmp_path / "file").write_text("x")
    done = run_serve("--root", str(tmp_path / "file"), "--port", "0")
    assert done.returncode == 2 and "not a directory" in done.stderr
