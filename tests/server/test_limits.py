"""Limits: --max-body (whole and chunked bodies) and slow clients (--timeout)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from serverproc import ServerProcess, address, raw_http, request_bytes

MAX_BODY = 2048
TIMEOUT = 1.0
REMEMBER = "/api/v1/memory/remember"
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server with a 2 KiB body limit and a 1 s timeout for slow clients."""
    base = tmp_path_factory.mktemp("limits")
    proc = ServerProcess(base / "root", "--max-body", str(MAX_BODY), "--timeout", str(TIMEOUT))
    yield proc
    assert proc.stop() == 0, proc.stderr()


def _body(size: int) -> bytes:
    """A valid remember body of exactly ``size`` bytes."""
    empty = len(json.dumps({"text": ""}).encode())
    return json.dumps({"text": "a" * (size - empty)}).encode()


def test_body_at_the_limit_is_accepted(limited: ServerProcess) -> None:
    """A body of exactly --max-body bytes is read and served."""
    r = httpx.post(limited.url + REMEMBER, headers=JSON, content=_body(MAX_BODY))
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("size", [MAX_BODY + 1, 64 * 1024, 4 * 1024 * 1024])
def test_whole_body_over_the_limit_is_413(limited: ServerProcess, size: int) -> None:
    """A body over --max-body sent with Content-Length is 413, the connection closed after."""
    r = httpx.post(limited.url + REMEMBER, headers=JSON, content=_body(size))
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "payload_too_large"
    assert r.headers["connection"] == "close"


def test_chunked_body_over_the_limit_is_413(limited: ServerProcess) -> None:
    """A chunked body (no Content-Length) is counted as it streams: 413 past the limit."""
    def chunks() -> Iterator[bytes]:
        yield b'{"text": "'
        for _ in range(40):
            yield b"b" * 256
        yield b'"}'

    r = httpx.post(limited.url + REMEMBER, headers=JSON, content=chunks())
    assert r.request.headers.get("transfer-encoding") == "chunked"
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"


def test_chunked_body_under_the_limit_is_served(limited: ServerProcess) -> None:
    """A chunked body within the limit is assembled and served."""
    def chunks() -> Iterator[bytes]:
        yield b'{"text": "chunked'
        yield b' body"}'

    r = httpx.post(limited.url + REMEMBER, headers=JSON, content=chunks())
    assert r.status_code == 200 and r.json()["created"] is True


def test_lying_content_length_is_caught(limited: ServerProcess) -> None:
    """A Content-Length under the limit followed by more bytes cannot smuggle a larger body."""
    body = _body(MAX_BODY * 2)
    raw = request_bytes("POST", REMEMBER, [], body, close=False).replace(
        f"Content-Length: {len(body)}".encode(), b"Content-Length: 100")
    status, _, answer = raw_http(limited.url, raw)
    # The body is the first 100 bytes (not JSON: 400); the rest is a malformed next request,
    # which hypercorn refuses on its own.
    assert status == 400 and json.loads(answer)["error"]["code"] == "invalid_json"


def _closed_within(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """Whether the server closed ``sock`` within ``seconds``, and what it sent before."""
    sock.settimeout(seconds)
    received = b""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            data = sock.recv(65536)
            if not data:
                return True, received
            received += data
    except (TimeoutError, ConnectionResetError):
        pass
    return False, received


def test_slow_headers_time_out(limited: ServerProcess) -> None:
    """A client that never finishes its headers is disconnected after about --timeout."""
    with socket.create_connection(address(limited.url)) as sock:
        sock.sendall(b"POST /api/v1/memory/remember HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        closed, _ = _closed_within(sock, TIMEOUT + 4)
        assert closed and time.monotonic() - started < TIMEOUT + 4


def test_slow_body_times_out(limited: ServerProcess) -> None:
    """A client that stops sending its body is answered 408 or disconnected after --timeout."""
    with socket.create_connection(address(limited.url)) as sock:
        sock.sendall(b"POST /api/v1/memory/remember HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"text\": ")
        closed, received = _closed_within(sock, TIMEOUT + 4)
        assert closed
        assert received == b"" or b" 408 " in received.split(b"\r\n", 1)[0]


def test_trickling_body_times_out(limited: ServerProcess) -> None:
    """A body trickled a byte at a time, each in time, still ends at the whole-body limit."""
    with socket.create_connection(address(limited.url)) as sock:
        sock.sendall(b"POST /api/v1/memory/remember HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
        started = time.monotonic()
        received = b""
        try:
            for _ in range(int((TIMEOUT + 3) / 0.2)):
                sock.sendall(b" ")
                time.sleep(0.2)
                sock.setblocking(False)
                try:
                    received += sock.recv(65536)
                except BlockingIOError:
                    pass
                finally:
                    sock.setblocking(True)
                if received:
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass
        elapsed = time.monotonic() - started
        # The first bytes may be the headers alone: read the rest, up to the server's close.
        _closed, rest = _closed_within(sock, 5)
        received += rest
        assert b" 408 " in received.split(b"\r\n", 1)[0], received
        assert b"request_timeout" in received
        assert elapsed < TIMEOUT + 3
