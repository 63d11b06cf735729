"""Helpers of the server tests: a real ``hms serve`` subprocess on 127.0.0.1, port 0."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

START_TIMEOUT = 60.0


class ServerProcess:
    """``hms serve --port 0`` in a child process; ``url`` is read from the line it prints."""

    def __init__(self, root: Path, *args: str, log: Path | None = None) -> None:
        self.root = root
        self.log = log or root.parent / f"{root.name}.log"
        self._log_file = open(self.log, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hmsengine.cli", "serve", "--root", str(root),
             "--host", "127.0.0.1", "--port", "0", *args],
            stdout=subprocess.PIPE, stderr=self._log_file, stdin=subprocess.DEVNULL)
        self.url = self._read_url()

    def _read_url(self) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline().decode()
                if not line:
                    break
                if "listening on " in line:
                    return line.rsplit("listening on ", 1)[1].strip()
            elif self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError(f"hms serve did not start: {self.stderr()}")

    def stderr(self) -> str:
        if not self._log_file.closed:
            self._log_file.flush()
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log_file.close()
        return rc


def run_serve(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """``hms serve ARGS`` expected to stop by itself (a start-up refusal)."""
    return subprocess.run([sys.executable, "-m", "hmsengine.cli", "serve", *args],
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def write_json(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value))
    return path


def tenant_dirs(root: Path) -> set[str]:
    return set(os.listdir(root)) if root.exists() else set()


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def raw_http(url: str, request: bytes, *, timeout: float = 10.0
             ) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` bytes as they are (no client-side checks), read one response."""
    import socket

    import h11

    conn = h11.Connection(h11.CLIENT)
    # h11 must believe it sent a request to parse the response: give it a minimal one.
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    with socket.create_connection(address(url), timeout=timeout) as sock:
        sock.sendall(request)
        status, headers, body = 0, {}, b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(sock.recv(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
                headers = {k.decode(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return status, headers, body


def request_bytes(method: str, path: str, headers: list[tuple[str, str]], body: bytes = b"",
                  *, close: bool = True) -> bytes:
    """The bytes of one request; a POST or PUT says Content-Type: application/json unless
    ``headers`` name a Content-Type (or a Host) of their own."""
    named = {k.lower() for k, _ in headers}
    lines = [f"{method} {path} HTTP/1.1", *([] if "host" in named else ["Host: 127.0.0.1"]),
             *(["Connection: close"] if close else []),
             *(["Content-Type: application/json"]
               if method in ("POST", "PUT") and "content-type" not in named else []),
             f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
