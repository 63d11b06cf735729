"""Attacks on ``hms serve`` (issue 29), each against a real server on 127.0.0.1: methods that
must not run a route, what a web page can send a local server, per-tenant file bases, server
paths in error messages, and lone surrogates in request bodies."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serverproc import ServerProcess, raw_http, request_bytes, run_serve, write_json

from hmsengine import HmsError
from hmsengine.client import Client
from hmsengine.server.auth import hash_key

KEY = "alpha-key-0123456789abcdef"
API = "/api/v1"
REMEMBER = f"{API}/memory/remember"
JSON = {"Content-Type": "application/json"}
ORIGIN = "https://app.example"


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server with --api-keys: tenant alpha holds KEY."""
    base = tmp_path_factory.mktemp("attacks-keyed")
    keys = write_json(base / "keys.json", {"alpha": [hash_key(KEY)]})
    proc = ServerProcess(base / "root", "--api-keys", str(keys))
    yield proc
    assert proc.stop() == 0, proc.stderr()


@pytest.fixture(scope="module")
def allowing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    """A keyless server with a file base, one allowed origin and one allowed host name."""
    base = tmp_path_factory.mktemp("attacks-open")
    files = base / "files"
    for tenant in ("alpha", "beta"):
        (files / tenant).mkdir(parents=True)
        (files / tenant / f"{tenant}.txt").write_bytes(f"{tenant} secret\n".encode())
    config = write_json(base / "config.json", {"fileBase": str(files)})
    proc = ServerProcess(base / "root", "--memory-config", str(config), "--allow-origin", ORIGIN,
                         "--allow-host", "hms.internal")
    yield proc, files
    assert proc.stop() == 0, proc.stderr()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _raw(url: str, method: str, path: str, headers: list[tuple[str, str]],
         body: bytes = b"") -> tuple[int, dict[str, str], dict]:
    status, answer_headers, answer = raw_http(url, request_bytes(method, path, headers, body))
    is_json = answer_headers.get("content-type", "").startswith("application/json")
    return status, answer_headers, json.loads(answer) if answer and is_json else {}


def test_head_and_unknown_methods_never_delete(keyed: ServerProcess) -> None:
    """HEAD (with ?purge=true too), OPTIONS, PATCH and made-up methods on a document or fact
    are 405 with an Allow header, and the document and the fact are still there after."""
    auth = {"Authorization": f"Bearer {KEY}", "X-HMS-Tenant": "alpha"}
    with Client(keyed.url, api_key=KEY, tenant="alpha") as hms:
        hms.documents.put("d1", "a document that must survive")
        fact = hms.memory.remember("a fact that must survive", id="f1")
    with httpx.Client(base_url=keyed.url, headers=auth) as http:
        for path in (f"{API}/documents/d1", f"{API}/documents/d1?purge=true",
                     f"{API}/documents/f1", f"{API}/documents/f1?purge=true"):
            for method in ("HEAD", "OPTIONS", "PATCH", "PURGE", "FOO"):
                r = http.request(method, path)
                assert r.status_code == 405, (method, path, r.status_code)
                assert r.headers["allow"] == "DELETE, GET, PUT"
        for method in ("HEAD", "GET", "PUT", "DELETE", "FOO"):
            r = http.request(method, f"{API}/memory/recall")
            assert r.status_code == 405 and r.headers["allow"] == "POST", method
        for method in ("HEAD", "FOO"):  # GET, PUT, DELETE name the document "search"
            assert http.request(method, f"{API}/documents/search").status_code == 405
        assert http.get(f"{API}/documents/d1").json()["text"] == "a document that must survive"
        assert http.get(f"{API}/documents/f1").status_code == 200
    with Client(keyed.url, api_key=KEY, tenant="alpha") as hms:
        assert hms.memory.get(fact.id) is not None


@pytest.mark.parametrize("content_type", [None, "text/plain", "text/plain;charset=UTF-8",
                                          "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x",
                                          "application/json; charset=latin-1",
                                          "application/jsonx"])
def test_a_body_not_labelled_json_is_415(server: ServerProcess, content_type: str | None) -> None:
    """A CORS "simple request" (text/plain, a form) cannot write: a POST or PUT body that is not
    labelled application/json is 415 before it is read, and nothing is stored."""
    headers = [("X-HMS-Tenant", "csrf")] + ([("Content-Type", content_type)] if content_type
                                            else [("Content-Type", "")])
    if content_type is None:
        raw = request_bytes("POST", REMEMBER, [("X-HMS-Tenant", "csrf")], b'{"text": "x"}')
        raw = raw.replace(b"Content-Type: application/json\r\n", b"")
        status, _, answer = raw_http(server.url, raw)
        body = json.loads(answer)
    else:
        status, _, body = _raw(server.url, "POST", REMEMBER, headers,
                               b'{"text": "written by a web page", "id": "csrf-1"}')
    assert status == 415 and body["error"]["code"] == "unsupported_media_type"
    status, _, body = _raw(server.url, "PUT", f"{API}/documents/csrf-doc",
                           [("X-HMS-Tenant", "csrf"), ("Content-Type", content_type or "x/y")],
                           b'{"text": "t"}')
    assert status == 415
    with Client(server.url, tenant="csrf") as hms:
        assert hms.memory.get("csrf-1") is None and hms.documents.get("csrf-doc") is None


def test_json_with_a_utf8_charset_is_accepted(server: ServerProcess) -> None:
    """application/json with charset=utf-8 (any case) is a JSON body like any other."""
    for value in ("application/json; charset=utf-8", "Application/JSON;Charset=\"UTF-8\""):
        status, _, body = _raw(server.url, "POST", REMEMBER,
                               [("X-HMS-Tenant", "csrf"), ("Content-Type", value)],
                               b'{"text": "labelled properly"}')
        assert status == 200, body


def test_a_foreign_origin_is_refused_before_anything_runs(server: ServerProcess) -> None:
    """A request from a web page (an Origin header) is 403 on every data route, whatever it
    asks: nothing written, read or deleted; /healthz stays open."""
    with Client(server.url, tenant="origin") as hms:
        hms.documents.put("kept", "secret text")
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{_port(server.url)}"):
        headers = [("X-HMS-Tenant", "origin"), ("Origin", origin)]
        for method, path, body in (("POST", REMEMBER, b'{"text": "x", "id": "o1"}'),
                                   ("GET", f"{API}/documents/kept", b""),
                                   ("DELETE", f"{API}/documents/kept?purge=true", b""),
                                   ("OPTIONS", f"{API}/documents/kept", b"")):
            status, _, answer = _raw(server.url, method, path, headers, body)
            assert status == 403 and answer["error"]["code"] == "forbidden_origin", (origin, method)
            assert "secret text" not in json.dumps(answer)
        status, _, _ = _raw(server.url, "GET", "/healthz", [("Origin", origin)])
        assert status == 200
    with Client(server.url, tenant="origin") as hms:
        assert hms.documents.get("kept") is not None and hms.memory.get("o1") is None


def test_a_foreign_host_is_refused(server: ServerProcess) -> None:
    """DNS rebinding: a request whose Host names another site is 421 and reads nothing; the
    loopback names (with or without a port) are served."""
    port = _port(server.url)
    with Client(server.url, tenant="rebind") as hms:
        hms.documents.put("kept", "secret text")
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}",
                 f"localhost.evil.example:{port}"):
        headers = [("Host", host), ("X-HMS-Tenant", "rebind")]
        status, _, answer = _raw(server.url, "GET", f"{API}/documents/kept", headers)
        assert status == 421 and answer["error"]["code"] == "invalid_host", host
        assert "secret text" not in json.dumps(answer)
        status, _, _ = _raw(server.url, "POST", REMEMBER, headers, b'{"text": "x", "id": "h1"}')
        assert status == 421
        assert _raw(server.url, "GET", "/healthz", [("Host", host)])[0] == 200
    for host in (f"localhost:{port}", f"LOCALHOST:{port}", f"127.0.0.1:{port}", "127.0.0.1",
                 f"[::1]:{port}", f"127.0.0.2:{port}"):
        status, _, answer = _raw(server.url, "GET", f"{API}/documents/kept",
                                 [("Host", host), ("X-HMS-Tenant", "rebind")])
        assert status == 200 and answer["text"] == "secret text", host
    with Client(server.url, tenant="rebind") as hms:
        assert hms.memory.get("h1") is None


def test_the_same_rules_hold_with_api_keys(keyed: ServerProcess) -> None:
    """With --api-keys a valid key does not lift the Content-Type, Origin or Host checks."""
    auth = [("Authorization", f"Bearer {KEY}"), ("X-HMS-Tenant", "alpha")]
    assert _raw(keyed.url, "POST", REMEMBER, [*auth, ("Content-Type", "text/plain")],
                b'{"text": "x"}')[0] == 415
    assert _raw(keyed.url, "POST", REMEMBER, [*auth, ("Origin", "http://evil.example")],
                b'{"text": "x"}')[0] == 403
    assert _raw(keyed.url, "POST", REMEMBER, [*auth, ("Host", "evil.example")],
                b'{"text": "x"}')[0] == 421


def test_allowed_origin_and_host_are_served_with_cors(
        allowing: tuple[ServerProcess, Path]) -> None:
    """--allow-origin: its pages get CORS answers and preflights; --allow-host: that name is
    served. Any other origin is still 403, also for a preflight."""
    proc, _ = allowing
    port = _port(proc.url)
    status, headers, answer = _raw(proc.url, "POST", REMEMBER,
                                   [("Origin", ORIGIN), ("X-HMS-Tenant", "alpha")],
                                   b'{"text": "from the allowed app"}')
    assert status == 200 and headers["access-control-allow-origin"] == ORIGIN, answer
    preflight = [("Origin", ORIGIN), ("Access-Control-Request-Method", "POST"),
                 ("Access-Control-Request-Headers", "content-type, x-hms-tenant, authorization")]
    status, headers, _ = _raw(proc.url, "OPTIONS", REMEMBER, preflight)
    assert status == 200 and headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in headers["access-control-allow-methods"]
    assert "x-hms-tenant" in headers["access-control-allow-headers"].lower()
    status, _, answer = _raw(proc.url, "OPTIONS", REMEMBER,
                             [("Origin", "https://evil.example"), *preflight[1:]])
    assert status == 403 and answer["error"]["code"] == "forbidden_origin"
    status, _, _ = _raw(proc.url, "POST", f"{API}/memory/profile",
                        [("Host", f"hms.internal:{port}"), ("X-HMS-Tenant", "alpha")], b"{}")
    assert status == 200


def test_tenant_file_bases_are_separate(allowing: tuple[ServerProcess, Path]) -> None:
    """Each tenant reads files only under <fileBase>/<tenant>: another tenant's file is refused
    by a relative path, an absolute one and a file:// URI, and no message names a server path."""
    proc, files = allowing
    with Client(proc.url, tenant="alpha") as hms:
        own = hms.memory.call("rememberFile", {"uri": "alpha.txt", "summary": "alpha's file"})
        assert base64.b64decode(hms.memory.call("hydrate", {"id": own["id"]})["base64"]) \
            == b"alpha secret\n"
        other = files / "beta" / "beta.txt"
        for uri in ("../beta/beta.txt", str(other), other.as_uri(), "nope.txt", "/etc/hostname",
                    "../../root/alpha/gen-00000001/journal.log"):
            with pytest.raises(HmsError) as refused:
                hms.memory.call("rememberFile", {"uri": uri})
            assert getattr(refused.value, "status", None) == 422, (uri, refused.value)
            message = f"{refused.value}"
            assert repr(uri) in message, message  # the uri as sent, nothing the server resolved
            if not uri.startswith(("/", "file:")):
                assert str(files) not in message and str(proc.root) not in message, message
                assert os.path.realpath(files) not in message


def test_error_messages_name_no_server_path(allowing: tuple[ServerProcess, Path]) -> None:
    """A tenant whose directory is not a store gets a 422 that names it relative to the root,
    never by the server's absolute path."""
    proc, _ = allowing
    (proc.root / "squatted").mkdir(parents=True, exist_ok=True)
    (proc.root / "squatted" / "notes.txt").write_text("not a store")
    status, _, answer = _raw(proc.url, "POST", f"{API}/memory/recall",
                             [("X-HMS-Tenant", "squatted")], b'{"query": "x"}')
    assert status == 422, answer
    text = json.dumps(answer)
    assert str(proc.root) not in text and os.path.realpath(proc.root) not in text, text
    assert "notes.txt" in text


def test_file_base_overlapping_the_root_is_refused_at_start_up(tmp_path: Path) -> None:
    """A fileBase that holds the root (or lies inside it) stops start-up, exit 2: tenants could
    otherwise read store files."""
    root = tmp_path / "data" / "root"
    for base in (tmp_path / "data", root / "files", root):
        config = write_json(tmp_path / "c.json", {"fileBase": str(base)})
        done = run_serve("--root", str(root), "--port", "0", "--memory-config", str(config))
        assert done.returncode == 2 and "overlaps" in done.stderr, done.stderr
        assert "listening" not in done.stdout
    for bad in (["--allow-origin", "evil.example"], ["--allow-origin", "https://*.example"],
                ["--allow-host", "a/b"]):
        done = run_serve("--root", str(root), "--port", "0", *bad)
        assert done.returncode == 2 and "error" in done.stderr, bad


@pytest.mark.parametrize("path,body", [
    (REMEMBER, '{"text": "t", "metadata": {"\\ud800": 1}}'),
    (REMEMBER, '{"text": "t", "metadata": {"k": {"\\udfff deep": [1]}}}'),
    (REMEMBER, '{"text": "t", "subject": "s\\ud83d"}'),
    (f"{API}/memory/recall", '{"query": "a\\ud800b"}'),
    (f"{API}/memory/explain", '{"query": "q", "id": "\\ud800"}'),
    (f"{API}/memory/forget", '{"scope": {"metadata": {"\\ud800": 1}}}'),
    (f"{API}/memory/rememberMany", '{"inputs": [{"text": "ok"}, {"text": "\\udc00"}]}'),
    (f"{API}/documents/search", '{"query": "q", "metadata": {"\\ud800": 1}}'),
])
def test_a_lone_surrogate_anywhere_is_422(server: ServerProcess, path: str, body: str) -> None:
    """JSON's \\ud800 escape decodes to a lone surrogate: anywhere in a body (keys included)
    it is a 422 naming the field, never a 500, and nothing is written."""
    status, _, answer = _raw(server.url, "POST", path, [("X-HMS-Tenant", "unicode")],
                             body.encode())
    assert status == 422 and answer["error"]["code"] == "invalid_request", answer
    assert "surrogate" in answer["error"]["message"]
    status, _, answer = _raw(server.url, "PUT", f"{API}/documents/u1", [("X-HMS-Tenant", "unicode")],
                             b'{"text": "t", "metadata": {"\\ud800": 1}}')
    assert status == 422 and "surrogate" in answer["error"]["message"]
    with Client(server.url, tenant="unicode") as hms:
        assert hms.documents.get("u1") is None
        assert hms.memory.recall("ok") == []


def test_a_refused_body_leaves_the_client_a_usable_connection(keyed: ServerProcess) -> None:
    """A refusal before the body is read (415, 401, 403 forbidden_origin) says Connection:
    close, so a keep-alive client sends its next request on a new connection, not a dead one."""
    body = b'{"text": "' + b"a" * 2_000_000 + b'"}'
    auth = {"Authorization": f"Bearer {KEY}", "X-HMS-Tenant": "alpha"}
    with httpx.Client(base_url=keyed.url, timeout=30) as http:
        for headers, status in (({**auth, "Content-Type": "text/plain"}, 415),
                                ({**JSON, "X-HMS-Tenant": "alpha"}, 401),
                                ({**auth, **JSON, "Origin": "http://evil.example"}, 403)):
            r = http.post(REMEMBER, content=body, headers=headers)
            assert r.status_code == status and r.headers["connection"] == "close"
            r = http.post(f"{API}/memory/profile", json={}, headers=auth)
            assert r.status_code == 200
